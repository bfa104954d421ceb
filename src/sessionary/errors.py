"""The error tree: every error sessionary raises derives from `SessionaryError`.

```
SessionaryError
├── InvalidInput            the caller's mistake; nothing was changed (also a ValueError)
│   ├── InvalidMessage      a message or part that does not validate
│   │   └── NotSerializable a value with no JSON form (also a TypeError, as json.dumps raises)
│   ├── InvalidId           an id with forbidden characters, empty, or too long
│   ├── InvalidQuery        a search query with nothing to match, or too long
│   ├── InvalidURL          a store URL that names no known backend or is malformed
│   ├── InvalidPatch        a state patch that is not a JSON object
│   ├── InvalidDocument     a malformed document namespace, key, body, text, author, version
│   ├── LossyConversion     a strict format conversion that would drop data
│   ├── PayloadTooLarge     a message, state or document over the store's size limit
│   ├── ReadOnlyBlock       a write to a context block that cannot be written
│   ├── BlockLimitExceeded  a write that would take a block over its token limit
│   └── MessageHasChildren  a delete of messages that would leave a child without its parent
├── NotFound                the thing asked for does not exist in this scope (also a LookupError)
│   ├── SessionNotFound
│   ├── MessageNotFound
│   └── BlockNotFound       no context block with that label on this session
├── Conflict                another writer got there first; re-read and retry
│   ├── AlreadyExists       a session id that is taken
│   ├── HeadConflict        the session's head moved since the caller looked
│   └── VersionConflict     a state's or document's version moved since the caller looked
├── Closed                  used after `close()` (a store, manager or adapter); also a RuntimeError
├── Unsupported             the backend lacks a capability (e.g. full-text search)
├── DecryptionFailed        a stored ciphertext does not open: wrong key, tampered, or moved
│   └── UnknownKey          the ciphertext names a key id the keyring does not hold
├── SummarizerError         a compaction's summarizer or memory extractor failed
├── CompactionStalled       a warning: automatic compaction cannot get under its trigger
└── StoreError              the backend failed
    ├── StoreUnavailable    the server or file cannot be reached or opened, or stopped answering
    ├── BackendNotInstalled the backend's optional dependency is missing
    └── SchemaError         the schema is newer than this code, or a migration failed
```

Backends map their driver's exceptions onto these types in one place, with
`raise ... from exc`, so callers never need to catch a driver's own errors.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExists",
    "BackendNotInstalled",
    "BlockLimitExceeded",
    "BlockNotFound",
    "Closed",
    "CompactionStalled",
    "Conflict",
    "DecryptionFailed",
    "HeadConflict",
    "InvalidDocument",
    "InvalidId",
    "InvalidInput",
    "InvalidMessage",
    "InvalidPatch",
    "InvalidQuery",
    "InvalidURL",
    "LossyConversion",
    "MessageHasChildren",
    "MessageNotFound",
    "NotFound",
    "NotSerializable",
    "PayloadTooLarge",
    "ReadOnlyBlock",
    "SchemaError",
    "SessionNotFound",
    "SessionaryError",
    "StoreError",
    "StoreUnavailable",
    "SummarizerError",
    "UnknownKey",
    "Unsupported",
    "VersionConflict",
]


class SessionaryError(Exception):
    """The root of every error sessionary raises."""


class InvalidInput(SessionaryError, ValueError):
    """The caller passed something invalid; nothing was changed."""


class InvalidMessage(InvalidInput):
    """A message or one of its parts does not validate."""


class NotSerializable(InvalidMessage, TypeError):
    """A value has no JSON form (an object, a set, bytes); a TypeError, as `json.dumps` raises."""


class InvalidId(InvalidInput):
    """An id is empty, too long, or contains characters ids may not hold."""


class InvalidQuery(InvalidInput):
    """A search query has nothing to match, or is too long."""


class InvalidURL(InvalidInput):
    """A store URL is malformed or names no known backend."""


class InvalidPatch(InvalidInput):
    """A state patch is not a JSON object."""


class InvalidDocument(InvalidInput):
    """A document's namespace, key, body, text, author or version is malformed."""


class LossyConversion(InvalidInput):
    """A conversion asked to be strict would drop data the target format cannot carry.

    `dropped` lists what would have been lost, each item saying where and what.
    """

    def __init__(self, message: str, dropped: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.dropped = dropped


class PayloadTooLarge(InvalidInput):
    """A message, state or document is over the store's size limit."""


class ReadOnlyBlock(InvalidInput):
    """A write to a context block that is readonly, or to a keyed block as a whole."""


class BlockLimitExceeded(InvalidInput):
    """A write would take a context block over its token limit; nothing was written."""


class MessageHasChildren(InvalidInput):
    """A message to delete has a child that is not deleted with it; nothing was deleted.

    `delete_messages` deletes exactly the ids it is given, so every child of each must be
    among them; `delete` removes a message with its whole subtree instead.
    """


class NotFound(SessionaryError, LookupError):
    """The thing asked for does not exist in this scope."""


class SessionNotFound(NotFound):
    """No session with that id exists in this scope."""


class MessageNotFound(NotFound):
    """No message with that id exists in this session."""


class BlockNotFound(NotFound):
    """No context block with that label is configured on this session."""


class Conflict(SessionaryError):
    """Another writer changed the data since the caller read it."""


class AlreadyExists(Conflict):
    """A session with that id already exists in this scope."""


class HeadConflict(Conflict):
    """The session's head is no longer the one the caller expected."""


class VersionConflict(Conflict):
    """A state's or document's version is no longer the one the caller expected."""


class Closed(SessionaryError, RuntimeError):
    """The object was closed and cannot be used again; a RuntimeError, as the frameworks raise."""


class Unsupported(SessionaryError):
    """The backend does not have the capability this call needs."""


class DecryptionFailed(SessionaryError):
    """A stored ciphertext does not open under its key: nothing is returned in its place.

    The key is wrong, the ciphertext was altered, or it was moved from another record
    (each is bound to its record's scope and ids), or the record is not encrypted at all.
    """


class UnknownKey(DecryptionFailed):
    """A ciphertext names a key id that the keyring does not hold (a retired key)."""


class SummarizerError(SessionaryError):
    """A compaction's summarizer (or memory extractor) failed; the history is as it was.

    A model error, a timeout, or an answer that is blank or not text.
    """


class CompactionStalled(SessionaryError):
    """Automatic compaction cannot bring a session under its trigger (a warning).

    It is never raised: it is handed to the compaction policy's `on_error` hook (or
    logged) once when automatic compaction holds off; see `sessionary.compaction.guard`.
    """


class StoreError(SessionaryError):
    """The storage backend failed."""


class StoreUnavailable(StoreError):
    """The backend's server or file cannot be reached or opened, or stopped answering.

    Connecting and every request to a server are bounded (the `connect_timeout` and
    `timeout` options of the store's URL); running out of either raises this.
    """


class BackendNotInstalled(StoreError):
    """The optional dependency a backend needs is not installed."""


class SchemaError(StoreError):
    """The stored schema is newer than this code, or a migration failed."""
