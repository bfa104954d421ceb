"""Encryption at rest, the pure part: a keyring and the AES-GCM seal of one value.

A sealed value is text, ``sx1:<key id>:<base64url of nonce + ciphertext>``: the key id
in clear says which key opens it, so keys can rotate while old records stay readable.
Each seal is bound to its record by associated data (the scope and the ids of the
record), so a ciphertext copied onto another row does not open there. Opening checks
the GCM tag: a wrong key, an altered byte or a moved ciphertext raise `DecryptionFailed`,
never a garbled value. `sessionary.stores.encrypted` applies this to every record.

Needs the ``crypto`` extra: ``pip install 'sessionary[crypto]'``.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from sessionary._optional import require
from sessionary.errors import DecryptionFailed, InvalidInput, UnknownKey

if TYPE_CHECKING:
    from sessionary.model import Message

__all__ = ["PREFIX", "Encryption", "Keyring", "Rotation", "generate_key", "is_sealed"]

PREFIX = "sx1:"
"""How every sealed value starts (format version 1)."""

_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,32}\Z")
_NONCE_BYTES = 12
_KEY_SIZES = (16, 24, 32)


def generate_key() -> str:
    """Return a new random 256-bit key, base64-encoded (for `Keyring.from_text`)."""
    return base64.b64encode(os.urandom(32)).decode()


def is_sealed(value: object) -> TypeGuard[str]:
    """Whether `value` is text in the sealed format."""
    return isinstance(value, str) and value.startswith(PREFIX)


def _aad(binding: tuple[str | None, ...]) -> bytes:
    # Each field carries its length, so no choice of field values can forge another
    # binding (a separator inside a field changes nothing); None is "-".
    fields = ("-" if f is None else f"{len(f)}:{f}" for f in binding)
    return ("sessionary/1|" + "|".join(fields)).encode()


class Keyring:
    """The keys that seal and open records: a current key for writing, every key for reading.

    Args:
        keys: Key id -> raw key of 16, 24 or 32 bytes (AES-128/192/256). Ids match
            ``[A-Za-z0-9_.-]{1,32}``.
        current: The id of the key new seals use; it must be in `keys`.

    Raises:
        InvalidInput: If an id, a key or `current` is malformed.
        BackendNotInstalled: If the ``cryptography`` package is missing.
    """

    def __init__(self, keys: Mapping[str, bytes], current: str) -> None:
        aead = require(
            "cryptography.hazmat.primitives.ciphers.aead", extra="crypto", what="encryption"
        )
        if current not in keys:
            raise InvalidInput(f"the current key id {current!r} is not in the keyring")
        self._invalid_tag: type[Exception] = require(
            "cryptography.exceptions", extra="crypto", what="encryption"
        ).InvalidTag
        self._ciphers: dict[str, Any] = {}
        for key_id, key in keys.items():
            if not isinstance(key_id, str) or not _KEY_ID.match(key_id):
                raise InvalidInput(f"a key id must match [A-Za-z0-9_.-]{{1,32}}: {key_id!r}")
            if not isinstance(key, bytes) or len(key) not in _KEY_SIZES:
                raise InvalidInput(f"key {key_id!r} must be 16, 24 or 32 bytes")
            self._ciphers[key_id] = aead.AESGCM(key)
        self.current = current

    @classmethod
    def from_text(cls, text: str) -> Keyring:
        """Build a keyring from ``id=base64key,id=base64key``; the first key is current.

        The form `SESSIONARY_KEYS` takes (see `from_env`).

        Raises:
            InvalidInput: If the text is malformed (the message never shows a key).
        """
        keys: dict[str, bytes] = {}
        for item in (piece.strip() for piece in text.split(",")):
            key_id, sep, encoded = item.partition("=")
            if not sep or not key_id:
                raise InvalidInput("a keyring is written id=base64key,id=base64key")
            try:
                keys[key_id] = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
            except (binascii.Error, ValueError):
                raise InvalidInput(f"key {key_id!r} is not base64") from None
        if not keys:
            raise InvalidInput("the keyring is empty")
        return cls(keys, next(iter(keys)))

    @classmethod
    def from_env(cls, name: str = "SESSIONARY_KEYS") -> Keyring:
        """Build a keyring from the environment variable `name` (see `from_text`).

        Raises:
            InvalidInput: If the variable is unset or malformed.
        """
        text = os.environ.get(name)
        if not text:
            raise InvalidInput(f"the environment variable {name} holds no keyring")
        return cls.from_text(text)

    @property
    def key_ids(self) -> frozenset[str]:
        """The ids of every key held."""
        return frozenset(self._ciphers)

    def __repr__(self) -> str:
        return f"Keyring(current={self.current!r}, key_ids={sorted(self._ciphers)!r})"

    def seal(self, plaintext: str, binding: tuple[str | None, ...]) -> str:
        """Encrypt `plaintext` with the current key, bound to `binding` (the record's ids)."""
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._ciphers[self.current].encrypt(nonce, plaintext.encode(), _aad(binding))
        return f"{PREFIX}{self.current}:{base64.urlsafe_b64encode(nonce + sealed).decode()}"

    def key_of(self, sealed: str) -> str:
        """Return the key id a sealed value names.

        Raises:
            DecryptionFailed: If `sealed` is not in the sealed format.
        """
        if not is_sealed(sealed):
            raise DecryptionFailed("the record is not encrypted")
        key_id, sep, _ = sealed[len(PREFIX) :].partition(":")
        if not sep:
            raise DecryptionFailed("the sealed value is malformed")
        return key_id

    def open(self, sealed: str, binding: tuple[str | None, ...]) -> str:
        """Decrypt a sealed value that was bound to `binding`.

        Raises:
            UnknownKey: If the key it names is not in the keyring.
            DecryptionFailed: If it does not open: wrong key, altered, or bound elsewhere.
        """
        key_id = self.key_of(sealed)
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise UnknownKey(f"the record is sealed with key {key_id!r}, not in the keyring")
        body = sealed[len(PREFIX) + len(key_id) + 1 :]
        try:
            raw = base64.urlsafe_b64decode(body)
        except (binascii.Error, ValueError):
            raise DecryptionFailed("the sealed value is malformed") from None
        try:
            plain: bytes = cipher.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], _aad(binding))
        except (self._invalid_tag, ValueError):
            raise DecryptionFailed(
                f"a record sealed with key {key_id!r} does not open: a wrong key, an altered "
                "value, or a value moved from another record"
            ) from None
        return plain.decode()


@dataclass(frozen=True)
class Encryption:
    """How `AsyncEncryptedStore` encrypts (and what it leaves in clear for search).

    Args:
        keyring: The keys; new records use its current key.
        index: Message -> text to keep in clear in the search index (None: nothing).
        index_document: (namespace, key, text) -> a document's text to keep in clear
            for document search (None: nothing).
        reencrypt_on_read: Rewrite a record read under an old key with the current key.
        accept_plaintext: Read records stored before encryption was turned on as they
            are (and let `rotate` encrypt them); otherwise they raise `DecryptionFailed`.
    """

    keyring: Keyring
    index: Callable[[Message], str | None] | None = None
    index_document: Callable[[str, str, str], str] | None = None
    reencrypt_on_read: bool = False
    accept_plaintext: bool = False


@dataclass
class Rotation:
    """What `AsyncEncryptedStore.rotate` rewrote."""

    messages: int = 0
    states: int = 0
    documents: int = 0
