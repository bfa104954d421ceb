"""OpenAI Agents SDK: a `Session` stored in sessionary.

`SessionarySession` implements the SDK's session protocol (`get_items`, `add_items`,
`pop_item`, `clear_session`), so it replaces `SQLiteSession` or `SQLAlchemySession`::

    session = SessionarySession("chat-42", "sqlite:///agents.db")
    result = await Runner.run(agent, "Hello", session=session)

Each Responses input item becomes one sessionary `Message` (through
`sessionary.formats.openai_responses`), so the history is searchable, branchable and
readable in every other format. What the SDK stored is exactly what it gets back: an item
the converter cannot reproduce field for field is stored whole, in a data part beside
the converted parts, and returned as it was.

The session's items are its history: the path from the root to the head. `pop_item`
removes the head; if the head has children on other branches it only steps the head
back, so no branch is lost. Either is a compare-and-set on the head, so pops racing
adds or other pops (several processes on one session) never hide an item or return one
twice.

It behaves as the SDK's own sessions do where a user can tell: it works from any event
loop and thread (`Runner.run_sync` in several threads at once), an item the SDK could not
serialise raises a `TypeError` (`sessionary.NotSerializable`), settings given as a dict
are coerced (unknown keys raise `TypeError`), and a session opened from a URL is terminal
after `close()`: every call then raises a `RuntimeError` (`sessionary.Closed`), as
`SQLiteSession` does. `close()` on a session over your own manager leaves it usable, as
`RedisSession` over an injected client does. Needs `pip install 'sessionary[openai-agents]'`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any, cast

from sessionary.errors import (
    HeadConflict,
    InvalidMessage,
    MessageHasChildren,
    MessageNotFound,
    NotSerializable,
    SessionNotFound,
)
from sessionary.formats.openai_responses import from_openai_responses, to_openai_responses
from sessionary.integrations._common import (
    DEFAULT_URL,
    Lifecycle,
    append_async,
    close_async,
    encode_name,
    install_hint,
    open_async_manager,
)
from sessionary.manager import AsyncSessionManager
from sessionary.model import DataPart, Message
from sessionary.session import AsyncSession

try:
    from agents.items import TResponseInputItem
    from agents.memory.session import SessionABC
    from agents.memory.session_settings import (
        SessionSettings,
        coerce_session_settings,
        resolve_session_limit,
    )
except ImportError as exc:  # pragma: no cover - exercised by a test that hides the package
    raise install_hint("openai-agents", "openai-agents", exc) from exc

__all__ = ["SessionarySession", "item_to_message", "message_to_item"]

_ITEM = "openai_agents.item"  # the name of the data part holding an item stored whole


def item_to_message(item: TResponseInputItem | Mapping[str, Any]) -> Message:
    """Return the sessionary message one Responses input item is stored as.

    What the SDK's own sessions store is stored, and comes back as theirs does: as its
    JSON text reads back (a tuple as a list, a number key as a string). An item that is
    not a Responses item sessionary can read is kept whole in a data part.

    Raises:
        NotSerializable: If the item holds a value with no JSON form, or none that every
            store keeps (NaN, an infinity, an unpaired surrogate) (also a TypeError).
    """
    try:
        data: Any = json.loads(json.dumps(item, allow_nan=False))
        json.dumps(data, ensure_ascii=False).encode()
    except (TypeError, ValueError) as exc:  # ValueError: a cycle, NaN; UnicodeError too
        raise NotSerializable(f"the item cannot be stored as JSON: {exc}") from None
    converted = _converted(data)
    if converted is None:
        return Message(role="user", parts=[DataPart(data, name=_ITEM)])
    written = to_openai_responses([converted]).value
    if written != [data]:
        # Keep the converted parts (they are what search and other formats see) and the
        # item itself, which is what the SDK gets back.
        converted.parts.append(DataPart(data, name=_ITEM))
    return converted


def _converted(data: Any) -> Message | None:
    """Return the one message a Responses item converts to, or None if it does not."""
    if not isinstance(data, dict):
        return None
    try:
        converted = from_openai_responses([data])
    except InvalidMessage:
        return None  # not an item sessionary reads; the SDK stores it all the same
    return converted[0] if len(converted) == 1 else None


def message_to_item(message: Message) -> TResponseInputItem:
    """Return the Responses input item a sessionary message stands for.

    A message written by `item_to_message` gives back the item exactly; any other message
    (one written by another sessionary client) gives its first item in the Responses format.
    """
    for part in message.parts:
        if isinstance(part, DataPart) and part.name == _ITEM:
            return cast(TResponseInputItem, part.data)
    items = to_openai_responses([message]).value
    return cast(TResponseInputItem, items[0] if items else {"role": message.role, "content": ""})


class SessionarySession(SessionABC):
    """An OpenAI Agents SDK session whose items live in one sessionary session.

    The sessionary session is created on the first write. Two instances with the same id
    and store (in this process or another) see the same items.

    Args:
        session_id: The session that holds the items: any non-empty string, as in the
            SDK. One that is not a sessionary id (an e-mail address, `thread:42/1`) names
            the sessionary session `x.` + its UTF-8 in hex; `session_id` stays as given.
        store: A store URL or an `AsyncSessionManager`.
        tenant: Overrides the manager's tenant (or the URL's default).
        user: Overrides the manager's user (or the URL's default).
        session_settings: The SDK's settings; its `limit` is the default for `get_items`.

    Raises:
        InvalidId: If `session_id` is empty, or too long to store.
        InvalidURL: If `store` is neither a URL nor an `AsyncSessionManager`.
    """

    def __init__(
        self,
        session_id: str,
        store: AsyncSessionManager | str = DEFAULT_URL,
        *,
        tenant: str | None = None,
        user: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self._id = encode_name(session_id, "session_id")
        self.session_id = session_id
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self.manager, owned = open_async_manager(store, tenant, user)
        self._life = Lifecycle(type(self).__name__, owned)

    @property
    def session(self) -> AsyncSession:
        """The sessionary session holding the items."""
        return self.manager.session(self._id)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the session's items, oldest first; with `limit`, only the latest ones.

        Raises:
            Closed: If the session was closed (also a RuntimeError).
        """
        self._life.check_open()
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None and limit < 0:
            limit = None  # every item, as `SQLiteSession` gives for a negative limit
        if limit == 0:
            return []
        try:
            history = await self.session.history(limit=limit)
        except SessionNotFound:
            return []
        if limit is not None:
            # sessionary widens a window to keep tool pairs; the SDK asks for exactly `limit`.
            history = history[-limit:]
        return [message_to_item(m) for m in history]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items after the head, atomically (all of them or none).

        Raises:
            Closed: If the session was closed, even for no items (also a RuntimeError).
            NotSerializable: If an item has no JSON form (also a TypeError).
        """
        self._life.check_open()
        if not items:
            return
        messages = [item_to_message(item) for item in items]
        await append_async(self.manager, self._id, messages)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the most recent item and return it, or None if there is none.

        Raises:
            Closed: If the session was closed (also a RuntimeError).
        """
        self._life.check_open()
        session = self.session
        while True:
            try:
                head = await session.head()
                if head is None:
                    return None
                if await session.branches(head.id):
                    # Step back, only while the head is still this one.
                    await session.checkout(head.parent_id, expected_head=head.id)
                else:
                    # This message alone: refused if anything was appended below it since.
                    await session.delete_messages([head.id])
                return message_to_item(head)
            except SessionNotFound:
                return None
            except (MessageNotFound, MessageHasChildren, HeadConflict):
                continue  # another writer popped or appended first: pop the new head

    async def clear_session(self) -> None:
        """Delete every item of the session (on every branch).

        Raises:
            Closed: If the session was closed (also a RuntimeError).
        """
        self._life.check_open()
        with contextlib.suppress(SessionNotFound):
            await self.session.clear()

    async def close(self) -> None:
        """Close the store if this session opened it from a URL (a no-op after the first)."""
        await close_async(self._life, self.manager)
