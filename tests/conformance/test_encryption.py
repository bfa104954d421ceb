"""Encryption at rest on every backend: the store holds ciphertext; only the right key opens it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from _stored_bytes import raw_text

import sessionary
from sessionary import (
    DecryptionFailed,
    Encryption,
    Keyring,
    Message,
    SessionManager,
    ToolCallPart,
    UnknownKey,
)
from sessionary.records import Scope
from sessionary.stores.encrypted import SEALED_PART

SECRET = "pineapple-zebra"
K1 = os.urandom(32)
K2 = os.urandom(32)


@pytest.fixture
def plain(store_url: str) -> Iterator[Any]:
    """The store without encryption: managers with keys share it (memory:// included)."""
    store = sessionary.open_store(store_url)
    yield store
    store.close()


def encrypted(plain: Any, keys: dict[str, bytes], current: str, **options: Any) -> SessionManager:
    return SessionManager(plain, encryption=Encryption(Keyring(keys, current), **options))


def fill(manager: SessionManager) -> str:
    chat = manager.create(name="chat")
    call = ToolCallPart(id="call-1", name="lookup", arguments={"q": SECRET})
    chat.append(Message.user(f"my code is {SECRET}", metadata={"note": SECRET}))
    chat.append(Message.assistant(tool_calls=[call]))
    chat.append(Message.tool("call-1", {"found": SECRET}))
    chat.update_state({"plan": SECRET})
    manager.update_state({"pref": SECRET}, level="user")
    manager.store.put_document(
        manager.scope, "user", None, "notes", "n1", {"v": SECRET}, SECRET, "alice", None
    )
    return chat.id


def test_what_is_stored_is_ciphertext(plain: Any, store_url: str) -> None:
    manager = encrypted(plain, {"k1": K1}, "k1")
    session_id = fill(manager)
    history = manager.session(session_id).history()
    assert history[0].text == f"my code is {SECRET}"
    assert history[0].metadata == {"note": SECRET}
    assert history[1].tool_calls[0].arguments == {"q": SECRET}
    assert history[2].tool_results[0].output == {"found": SECRET}
    assert manager.session(session_id).get_state().data == {"plan": SECRET}
    assert manager.get_state(level="user").data == {"pref": SECRET}
    doc = manager.store.get_document(manager.scope, "user", None, "notes", "n1", None)
    assert (doc.body, doc.text, doc.author) == ({"v": SECRET}, SECRET, "alice")

    raw = raw_text(store_url, plain)
    assert "sx1:k1:" in raw
    assert SECRET not in raw


def test_a_plain_store_sees_only_sealed_records(plain: Any) -> None:
    manager = encrypted(plain, {"k1": K1}, "k1")
    session_id = fill(manager)
    stored = plain.get_path(manager.scope, session_id, None, None)
    assert [m.role for m in stored] == ["user", "assistant", "tool"]
    for message in stored:
        assert not message.metadata
        assert any(getattr(p, "name", None) == SEALED_PART for p in message.parts)
    assert stored[2].tool_results[0].call_id == "call-1"  # a tool message keeps its call ids


def test_a_wrong_key_raises_a_typed_error(plain: Any) -> None:
    session_id = fill(encrypted(plain, {"k1": K1}, "k1"))
    wrong = encrypted(plain, {"k1": K2}, "k1")
    with pytest.raises(DecryptionFailed):
        wrong.session(session_id).history()
    with pytest.raises(DecryptionFailed):
        wrong.session(session_id).get_state()
    with pytest.raises(DecryptionFailed):
        wrong.store.get_document(wrong.scope, "user", None, "notes", "n1", None)


def test_a_missing_key_raises_unknown_key(plain: Any) -> None:
    session_id = fill(encrypted(plain, {"k1": K1}, "k1"))
    missing = encrypted(plain, {"k2": K2}, "k2")
    with pytest.raises(UnknownKey, match="k1"):
        missing.session(session_id).history()
    with pytest.raises(UnknownKey):
        missing.get_state(level="user")


def test_plaintext_records_are_refused_unless_accepted(plain: Any) -> None:
    chat = SessionManager(plain).create()
    chat.append(Message.user("written before encryption"))
    strict = encrypted(plain, {"k1": K1}, "k1")
    with pytest.raises(DecryptionFailed, match="not encrypted"):
        strict.session(chat.id).history()
    lenient = encrypted(plain, {"k1": K1}, "k1", accept_plaintext=True)
    assert lenient.session(chat.id).history()[0].text == "written before encryption"
    assert lenient.store.rotate().messages == 1
    assert strict.session(chat.id).history()[0].text == "written before encryption"


def test_tampered_ciphertext_raises(plain: Any) -> None:
    manager = encrypted(plain, {"k1": K1}, "k1")
    chat = manager.create()
    first = chat.append(Message.user("first"))
    chat.append(Message.user("second"))
    scope = manager.scope
    stored = plain.get_message(scope, chat.id, first.id)
    sealed = next(p for p in stored.parts if getattr(p, "name", None) == SEALED_PART)
    flipped = sealed.data[:-4] + ("A" if sealed.data[-4] != "A" else "B") + sealed.data[-3:]
    plain.update_message(scope, chat.id, replace(stored, parts=[replace(sealed, data=flipped)]))
    with pytest.raises(DecryptionFailed):
        manager.session(chat.id).get_message(first.id)


def test_a_ciphertext_moved_to_another_record_does_not_open(plain: Any) -> None:
    manager = encrypted(plain, {"k1": K1}, "k1")
    chat = manager.create()
    first = chat.append(Message.user("first"))
    second = chat.append(Message.user("second"))
    scope = manager.scope
    moved = plain.get_message(scope, chat.id, second.id)
    plain.update_message(scope, chat.id, replace(moved, id=first.id, parent_id=None))
    with pytest.raises(DecryptionFailed):
        manager.session(chat.id).get_message(first.id)
    # Another user's state holding this user's ciphertext does not open either.
    manager.update_state({"mine": True}, level="user")
    ours = plain.get_state(scope, "user", None)
    other = Scope(scope.tenant, "mallory")
    plain.update_state(other, "user", None, ours.data, None)
    with pytest.raises(DecryptionFailed):
        manager.for_user("mallory").get_state(level="user")


def test_rotate_rewrites_old_records_under_the_current_key(plain: Any, store_url: str) -> None:
    session_id = fill(encrypted(plain, {"k1": K1}, "k1"))
    both = encrypted(plain, {"k2": K2, "k1": K1}, "k2")
    assert both.session(session_id).history()[0].text == f"my code is {SECRET}"
    done = both.store.rotate()
    assert (done.messages, done.states) == (3, 2)
    assert done.documents == 1
    assert both.store.rotate().messages == 0  # a second run finds nothing left
    raw = raw_text(store_url, plain)
    assert "sx1:k2:" in raw and SECRET not in raw

    only_new = encrypted(plain, {"k2": K2}, "k2")
    history = only_new.session(session_id).history()
    assert history[2].tool_results[0].output == {"found": SECRET}
    assert only_new.session(session_id).get_state().data == {"plan": SECRET}
    assert only_new.get_state(level="user").data == {"pref": SECRET}
    doc = only_new.store.get_document(only_new.scope, "user", None, "notes", "n1", None)
    assert doc.body == {"v": SECRET} and doc.version == 2
    with pytest.raises(UnknownKey):  # the first version keeps the key it was sealed with
        only_new.store.get_document(only_new.scope, "user", None, "notes", "n1", 1)


def test_reencrypt_on_read(plain: Any) -> None:
    session_id = fill(encrypted(plain, {"k1": K1}, "k1"))
    reader = encrypted(plain, {"k2": K2, "k1": K1}, "k2", reencrypt_on_read=True)
    reader.session(session_id).history()
    reader.session(session_id).get_state()
    only_new = encrypted(plain, {"k2": K2}, "k2")
    assert len(only_new.session(session_id).history()) == 3
    assert only_new.session(session_id).get_state().data == {"plan": SECRET}
    with pytest.raises(UnknownKey):  # not read yet, so still under k1
        only_new.get_state(level="user")


def test_state_patches_merge_under_encryption(plain: Any) -> None:
    manager = encrypted(plain, {"k1": K1}, "k1")
    chat = manager.create()
    chat.update_state({"a": 1, "b": {"c": 2}})
    state = chat.update_state({"b": {"d": 3}, "a": None})
    assert state.data == {"b": {"c": 2, "d": 3}}
    assert state.version == 2
    with pytest.raises(sessionary.VersionConflict):
        chat.update_state({"x": 1}, expected_version=1)
    with pytest.raises(sessionary.InvalidPatch):
        chat.update_state(["not", "an", "object"])  # type: ignore[arg-type]
    assert chat.get_state() == state


def test_bad_messages_are_refused_before_sealing(plain: Any) -> None:
    manager = encrypted(plain, {"k1": K1}, "k1")
    chat = manager.create()
    with pytest.raises(sessionary.InvalidMessage):
        chat.append(Message(role="tool", parts=[]))
    big = "x" * (manager.store.max_message_bytes + 1)
    with pytest.raises(sessionary.PayloadTooLarge):
        chat.append(Message.user(big))
    assert chat.history() == []


@pytest.mark.requires("search")
def test_search_sees_only_the_text_kept_in_clear(plain: Any, store_url: str) -> None:
    dark = encrypted(plain, {"k1": K1}, "k1")
    chat = dark.create()
    chat.append(Message.user(f"the password is {SECRET}"))
    assert dark.search("password") == []

    def subject_only(message: Message) -> str | None:
        return message.metadata.get("subject")  # type: ignore[return-value]

    lit = encrypted(plain, {"k1": K1}, "k1", index=subject_only)
    other = lit.create()
    other.append(Message.user(f"about {SECRET}", metadata={"subject": "billing question"}))
    hits = lit.search("billing")
    assert [h.message_id for h in hits] == [other.history()[0].id]
    assert lit.search("about") == []
    assert SECRET not in raw_text(store_url, plain)


def test_the_raw_reader_sees_what_a_plain_store_holds(plain: Any, store_url: str) -> None:
    # Guards the checks above: without encryption the secret is there to be found.
    fill(SessionManager(plain))
    assert SECRET in raw_text(store_url, plain)


def test_a_raw_copy_opens_with_the_same_keys(plain: Any, tmp_path: Any) -> None:
    from sessionary.migrate import migrate

    session_id = fill(encrypted(plain, {"k1": K1}, "k1"))
    target = sessionary.open_store(f"sqlite:///{tmp_path}/copy.db")
    try:
        migrate(plain, target)  # no keys: the ciphertext is copied as it is
        copy = encrypted(target, {"k1": K1}, "k1")
        assert copy.session(session_id).history()[2].tool_results[0].output == {"found": SECRET}
        assert copy.get_state(level="user").data == {"pref": SECRET}
    finally:
        target.close()


@pytest.mark.requires("document_search")
def test_document_search_sees_only_the_text_kept_in_clear(plain: Any) -> None:
    def title_only(namespace: str, key: str, text: str) -> str:
        return text.split("\n", 1)[0]

    manager = encrypted(plain, {"k1": K1}, "k1", index_document=title_only)
    manager.store.put_document(
        manager.scope, "user", None, "notes", "n1", {}, f"Travel plans\n{SECRET}", "me", None
    )
    found = manager.store.search_documents(
        manager.scope, "user", None, "notes", sessionary.query.parse_query("travel"), 5
    )
    assert [hit.key for hit in found] == ["n1"]
    hidden = manager.store.search_documents(
        manager.scope, "user", None, "notes", sessionary.query.parse_query("pineapple"), 5
    )
    assert hidden == []


class _EditsAfterPaging:
    """The store, with another writer's edit landing just after the first page is read."""

    def __init__(self, inner: Any, edit: Any) -> None:
        self.inner, self.edit = inner, edit
        self.capabilities = inner.capabilities
        self.max_message_bytes = inner.max_message_bytes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def page_messages(self, *args: Any) -> Any:
        page = self.inner.page_messages(*args)
        edit, self.edit = self.edit, None
        if edit is not None:
            edit()
        return page


@pytest.mark.parametrize("how", ["rotate", "reencrypt_on_read"])
def test_a_rewrite_under_the_new_key_keeps_an_edit_made_meanwhile(plain: Any, how: str) -> None:
    old = encrypted(plain, {"k1": K1}, "k1")
    chat = old.create(id="s")
    first = chat.append(Message.user("original"))
    writer = encrypted(plain, {"k2": K2, "k1": K1}, "k2")

    def edit() -> None:
        writer.session("s").update(Message.user("edited", id=first.id))

    keys = Encryption(Keyring({"k2": K2, "k1": K1}, "k2"), reencrypt_on_read=how != "rotate")
    rewriter = sessionary.EncryptedStore(_EditsAfterPaging(plain, edit), keys, owns_inner=False)
    if how == "rotate":
        assert rewriter.rotate().messages == 0  # the edit sealed it with k2 already
    else:
        rewriter.page_messages(old.scope, "s", None, 10)
    assert writer.session("s").get_message(first.id).text == "edited"


@pytest.mark.parametrize("what", ["message", "state", "document"])
def test_records_exported_without_the_keys_are_not_sealed_twice(
    plain: Any, what: str, capabilities: frozenset[str]
) -> None:
    if what == "document" and "documents" not in capabilities:
        pytest.skip("no documents")
    source = encrypted(sessionary.open_store("memory://"), {"k1": K1}, "k1")
    chat = source.create(id="s")
    if what == "message":
        chat.append(Message.user(SECRET))
    elif what == "state":
        source.update_state({"pref": SECRET}, level="user")
    else:
        source.store.put_document(source.scope, "user", None, "n", "k", {}, SECRET, "me", None)
    raw = list(SessionManager(source.store.inner).export())  # the ciphertext, as stored
    target = encrypted(plain, {"k1": K1}, "k1")
    with pytest.raises(sessionary.InvalidInput, match="already encrypted"):
        target.import_records(raw)
    assert list(SessionManager(plain).export()) == []
