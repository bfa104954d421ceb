# This file was generated from src/sessionary/session.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""A session: one conversation's message tree, head, state and search.

`Session` is the source; `sessionary.Session` is its generated synchronous twin
with the same method names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sessionary._sync._context_api import ContextMixin
from sessionary._sync.compaction.runtime import Compactor
from sessionary._sync.keeper import AgentStateKeeper
from sessionary._sync.stores.base import Store
from sessionary._sync.tools import Reader
from sessionary.blocks import SessionConfig
from sessionary.compaction.overlays import Overlay
from sessionary.compaction.planner import check_not_synthetic
from sessionary.compaction.policy import CompactionPolicy
from sessionary.compaction.view import read_range
from sessionary.errors import InvalidInput, InvalidMessage, MessageNotFound, SessionNotFound
from sessionary.ids import check_id
from sessionary.model import ROLES, Message, parse_message
from sessionary.query import parse_query
from sessionary.records import (
    ANY,
    HEAD,
    Expected,
    Parent,
    Scope,
    SearchHit,
    SessionInfo,
    State,
    StateLevel,
    check_patch,
)
from sessionary.stores._common import check_expected_version, check_limit
from sessionary.toolspec import ToolSpec
from sessionary.window import orphan_results, pair_safe_start

if TYPE_CHECKING:
    from sessionary._sync.turn import Turn, TurnPolicy

__all__ = [
    "Session",
    "check_expected_head",
    "check_parent",
    "check_role",
    "coerce_message",
]


def check_parent(parent: object) -> Parent:
    """Return `parent` if it is `HEAD`, None or a well-formed message id.

    Raises:
        InvalidId: If `parent` is a malformed id.
    """
    if parent is HEAD or parent is None:
        return parent
    return check_id(parent, "parent message id")


def check_expected_head(expected: object) -> Expected:
    """Return `expected` if it is `ANY`, None or a well-formed message id.

    Raises:
        InvalidId: If `expected` is a malformed id.
    """
    if expected is ANY or expected is None:
        return expected
    return check_id(expected, "expected head id")


def check_role(role: str | None) -> str | None:
    """Return `role` if it is None or one of the message roles.

    Raises:
        InvalidInput: If `role` is not a role.
    """
    if role is not None and role not in ROLES:
        raise InvalidInput(f"role must be one of {sorted(ROLES)}, not {role!r}")
    return role


def _optional_id(value: str | None, what: str) -> str | None:
    return None if value is None else check_id(value, what)


def coerce_message(message: Message | Mapping[str, Any]) -> Message:
    """Return `message` as a Message, parsing a mapping.

    Raises:
        InvalidMessage: If `message` is neither a Message nor a valid message mapping, or
            is a compaction summary echoed back (those are never stored as messages).
    """
    if isinstance(message, Message):
        return check_not_synthetic(message)
    if isinstance(message, Mapping):
        return check_not_synthetic(parse_message(message))
    raise InvalidMessage(f"expected a Message or a mapping, not {type(message).__name__}")


class Session(ContextMixin):
    """A handle on one stored session; it holds no messages itself.

    Every method reads or writes the store, so several handles (in this process or
    others) on the same session always agree. `config` sets its context blocks, prompt
    caching and memory tools (see `sessionary.blocks.SessionConfig`); `compaction` sets
    how it compacts (see `CompactionPolicy`). Overlays already stored apply to every
    handle.
    """

    def __init__(
        self,
        store: Store,
        scope: Scope,
        session_id: str,
        config: SessionConfig | None = None,
        *,
        compaction: CompactionPolicy | None = None,
    ) -> None:
        self._store = store
        self._scope = scope
        self._id = check_id(session_id, "session id")
        self._config = config if config is not None else SessionConfig()
        self._context_state = None
        self._compactor = Compactor(
            store,
            scope,
            self._id,
            compaction or CompactionPolicy(),
            self._prompt_parts,
            self._context,
        )

    @property
    def id(self) -> str:
        """The session's id."""
        return self._id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._id!r}>"

    def info(self) -> SessionInfo:
        """Return the session's registry row.

        Raises:
            SessionNotFound: If the session was deleted.
        """
        found = self._store.get_session(self._scope, self._id)
        if found is None:
            raise SessionNotFound(f"no session {self._id!r} in this scope")
        return found

    # ------------------------------------------------------------------ writes

    def append(
        self,
        message: Message | Mapping[str, Any],
        *,
        parent: Parent = HEAD,
        expected_head: Expected = ANY,
    ) -> Message:
        """Append one message and make it the head; return it as stored.

        Appending an id that is already stored changes nothing and returns the stored
        message.

        Args:
            message: A Message, or a mapping in its JSON shape.
            parent: `HEAD` (default) for after the head, `None` for a new root, or the id
                of the message to answer (a new branch if it already has children).
            expected_head: If given, the id the head must still have (None: empty), or
                `HeadConflict` is raised and nothing is written.

        Raises:
            InvalidMessage: If the message is malformed, or a JSON value in it (metadata,
                tool arguments or output, data, unknown fields) is not JSON, has a key
                that is not a string or nests deeper than `MAX_JSON_DEPTH` (100).
            PayloadTooLarge: If the message is over the store's `max_message_bytes`.
            MessageNotFound: If `parent` is not in this session.
            HeadConflict: If `expected_head` no longer holds.
        """
        stored = self._store.append(
            self._scope,
            self._id,
            [coerce_message(message)],
            check_parent(parent),
            check_expected_head(expected_head),
        )
        self._compactor.after_append()
        return stored[0]

    def append_all(
        self,
        messages: Iterable[Message | Mapping[str, Any]],
        *,
        parent: Parent = HEAD,
        expected_head: Expected = ANY,
    ) -> list[Message]:
        """Append messages as a chain, atomically: all of them or none.

        The first answers `parent`; each next one answers the one before. Messages
        already stored may only come first (a re-sent conversation, a retried batch):
        they stay as they are, and the new ones continue from the last of them. Other
        arguments and errors are those of `append`; `messages` is read whole before
        anything is written, so an error it raises (a generator's own) propagates and
        writes nothing.

        Raises:
            InvalidMessage: If `messages` is not an iterable of messages (None, a number,
                one message), or one of them is malformed; also if a stored message
                follows a new one (it cannot answer it); nothing is stored.
        """
        if isinstance(messages, Message | Mapping | str | bytes):
            raise InvalidMessage("append_all takes an iterable of messages; use append for one")
        try:
            each = iter(messages)
        except TypeError:
            raise InvalidMessage(
                f"append_all takes an iterable of messages, not {type(messages).__name__}"
            ) from None
        batch = [coerce_message(m) for m in each]
        if not batch:
            return []
        stored = self._store.append(
            self._scope, self._id, batch, check_parent(parent), check_expected_head(expected_head)
        )
        self._compactor.after_append()
        return stored

    def upsert(self, message: Message | Mapping[str, Any], *, parent: Parent = HEAD) -> Message:
        """Append a message, or if its id is stored already, replace its parts and metadata.

        A new message is appended to `parent` (as `append` does); a stored one keeps its
        role and place (as `update` does), so re-sending a message while it streams in
        leaves one message with the latest content. Returns the message as stored.

        Raises:
            InvalidMessage: If the message is malformed.
            InvalidInput: If a stored message with that id has another role.
            MessageNotFound: If the message is new and `parent` is not in this session.
        """
        wanted = coerce_message(message)
        stored = self.append(wanted, parent=parent)
        if (stored.role, stored.parts, stored.metadata) == (
            wanted.role,
            wanted.parts,
            wanted.metadata,
        ):
            return stored
        return self.update(wanted)

    def update(self, message: Message | Mapping[str, Any]) -> Message:
        """Replace a stored message's parts and metadata (its role and place stay).

        Raises:
            MessageNotFound: If no message with that id is in this session.
            InvalidMessage: If the message is malformed.
        """
        return self._store.update_message(self._scope, self._id, coerce_message(message))

    def delete(self, message_id: str) -> list[str]:
        """Delete a message and every message below it; return the deleted ids.

        Deleting a whole subtree means no message is ever left with a missing parent.
        If the head was among them, the head moves to the deleted message's parent.

        Raises:
            MessageNotFound: If no message with that id is in this session.
        """
        deleted = self._store.delete_message(
            self._scope, self._id, check_id(message_id, "message id")
        )
        self._compactor.forget(deleted)
        return deleted

    def delete_messages(self, message_ids: Iterable[str]) -> list[str]:
        """Delete exactly these messages, all or none; return their ids (each once).

        No message is ever left without its parent: a message with a child that is not
        deleted with it is refused (`delete` removes a whole subtree instead). So a leaf
        can always be deleted, and a message in the middle of a conversation only with
        everything below it. If the head is deleted it moves to its nearest ancestor that
        stays. An overlay whose range ends in a deleted message is dropped.

        Deleting a tool result alone leaves its call unanswered, as it was before the
        result arrived; its call cannot be deleted without it (the result is its child).

        Raises:
            InvalidInput: If `message_ids` is a single string rather than a collection.
            InvalidId: If an id is malformed.
            MessageNotFound: If an id is not in this session.
            MessageHasChildren: If a message has a child that is not among the ids.
        """
        if isinstance(message_ids, str | bytes):
            raise InvalidInput("delete_messages takes a collection of ids; use delete for one")
        ids = list(dict.fromkeys(check_id(m, "message id") for m in message_ids))
        deleted = self._store.delete_messages(self._scope, self._id, ids)
        self._compactor.forget(deleted)
        return deleted

    def clear(self) -> int:
        """Delete every message of the session and what hangs on them; return how many.

        Besides the messages: the compaction overlays (summaries of deleted messages)
        are deleted, every loaded skill entry is unloaded, and a frozen system prompt is
        rendered again from the blocks, so the next conversation starts fresh. State,
        blocks, skill entries and the registry row stay.
        """
        self._compactor.clear()
        count = self._store.clear_messages(self._scope, self._id)
        context = self._context()
        context.clear_loaded()
        context.refresh_if_frozen()
        return count

    def checkout(self, message_id: str | None, *, expected_head: Expected = ANY) -> None:
        """Move the head to `message_id`, for every process using this session.

        Args:
            message_id: The new head; None for none (the next append starts a new root).
            expected_head: If given, the id the head must still have (None: empty), or
                `HeadConflict` is raised and the head stays: a compare-and-set, so that
                a writer stepping back never hides what another appended meanwhile.

        Raises:
            MessageNotFound: If no message with that id is in this session.
            HeadConflict: If `expected_head` no longer holds.
        """
        target = _optional_id(message_id, "message id")
        expected = check_expected_head(expected_head)
        if expected is ANY:  # (a store of an earlier release takes no expected head)
            self._store.set_head(self._scope, self._id, target)
        else:
            self._store.set_head(self._scope, self._id, target, expected)

    # ------------------------------------------------------------------ reads

    def get_message(self, message_id: str) -> Message | None:
        """Return one message, or None."""
        return self._store.get_message(self._scope, self._id, check_id(message_id, "message id"))

    def head(self) -> Message | None:
        """Return the head message, or None for an empty session."""
        path = self._store.get_path(self._scope, self._id, None, 1)
        return path[-1] if path else None

    def history(
        self, leaf: str | None = None, limit: int | None = None, *, raw: bool = False
    ) -> list[Message]:
        """Return the path from the root to `leaf` (default: the head), oldest first.

        With `limit`, return the most recent `limit` messages without reading the rest,
        widened backwards where needed so that no tool result is shown without its call.
        A compacted range shows as its summary message; `raw=True` shows the originals.

        Raises:
            MessageNotFound: If `leaf` is not in this session.
        """
        check_limit(limit)
        leaf = _optional_id(leaf, "leaf message id")
        if raw:
            shown, window = None, self._store.get_path(self._scope, self._id, leaf, limit)
        else:
            shown, window = self._compactor.recent(leaf, limit)
        if shown is not None:
            return shown if limit is None else shown[pair_safe_start(shown, len(shown) - limit) :]
        if limit is None:
            return window
        while orphan_results(window) and window[0].parent_id is not None:
            earlier = self._store.get_path(
                self._scope, self._id, window[0].parent_id, max(limit, 16)
            )
            combined = earlier + window
            start = pair_safe_start(combined, len(earlier))
            window = combined[start:]
            if start > 0:
                break
        return window

    # ------------------------------------------------------------------ compaction

    def compact(
        self,
        leaf: str | None = None,
        *,
        protect_head: int | None = None,
        tail_tokens: int | None = None,
    ) -> Overlay | None:
        """Summarize the older part of the branch ending at `leaf` (default: the head).

        Stores an overlay and returns it, or None when nothing needs compacting. The
        originals stay stored, searchable and readable with `history(raw=True)`.
        `protect_head` and `tail_tokens` override the policy's for this call.

        Raises:
            Unsupported: If the store has no documents.
            SummarizerError: If the summarizer fails; nothing is stored.
        """
        leaf = _optional_id(leaf, "leaf message id")
        return self._compactor.compact(leaf, protect_head=protect_head, tail_tokens=tail_tokens)

    def add_compaction(self, summary: str, first_id: str, last_id: str) -> Overlay:
        """Show your own `summary` in place of the messages `first_id` .. `last_id`.

        The range is the path to `last_id`, from `first_id` on; it must not separate a
        tool call from its result, nor hide a call still waiting for one. Like an
        overlay `compact` makes, it applies to every branch through `last_id`, the
        originals stay stored, and it is returned. On a branch only one overlay applies,
        the one ending deepest (the newest, among equal ends), so to extend an earlier
        summary, start the new range at or before that one's first message.

        Raises:
            Unsupported: If the store has no documents.
            InvalidInput: If the summary is blank, `first_id` is not on the path to
                `last_id`, or the range would separate a tool call from its result.
            MessageNotFound: If `last_id` is not in this session.
        """
        first_id = check_id(first_id, "first message id")
        last_id = check_id(last_id, "last message id")
        return self._compactor.add(summary, first_id, last_id)

    def overlays(self) -> list[Overlay]:
        """Return the session's compaction overlays on every branch, oldest first."""
        return self._compactor.overlays()

    def _context_view(self, leaf: str | None) -> list[Message]:
        """The history with overlays applied, results evicted and arguments clipped."""
        return self._compactor.context(_optional_id(leaf, "leaf message id"))

    def estimate_tokens(self, leaf: str | None = None) -> int:
        """Return the estimated tokens of a request built from this session.

        The policy's counter weighs `context_history`, the system prompt (the frozen one,
        else the one the blocks render now; nothing is frozen or stored by estimating),
        the blocks and the session's tool schemas; `reserve_tokens` is added for what
        the session does not manage (your own tools and instructions).
        """
        return self._compactor.estimate(_optional_id(leaf, "leaf message id"))

    def read_tool_result(
        self, message_id: str, call_id: str | None = None, start: int = 0, end: int | None = None
    ) -> str:
        """Return characters `start`..`end` of a stored tool result's whole output.

        Raises:
            MessageNotFound: If no message with that id is in this session.
            InvalidInput: If it holds no such result, or the range is malformed.
        """
        message = self.get_message(message_id)
        if message is None:
            raise MessageNotFound(f"no message {message_id!r} in this session")
        return read_range(message, call_id, start, end)

    def _tool_reader(self) -> Reader | None:
        return self.read_tool_result if self._compactor.policy.eviction is not None else None

    def branches(self, message_id: str) -> list[Message]:
        """Return the children of a message, oldest first.

        Raises:
            MessageNotFound: If no message with that id is in this session.
        """
        return self._store.get_children(self._scope, self._id, check_id(message_id, "message id"))

    def path_length(self, leaf: str | None = None) -> int:
        """Return how many messages lie on the path from the root to `leaf` (or the head)."""
        return self._store.get_path_length(
            self._scope, self._id, _optional_id(leaf, "leaf message id")
        )

    def message_count(self) -> int:
        """Return how many messages the session holds, on every branch."""
        return (self.info()).message_count

    def search(self, query: str, *, limit: int = 20, role: str | None = None) -> list[SearchHit]:
        """Search this session's messages; see `sessionary.query` for the query language.

        Raises:
            InvalidQuery: If the query has nothing to match.
            Unsupported: If the store has no full-text search.
        """
        parsed = parse_query(query)
        check_limit(limit)
        return self._store.search(self._scope, parsed, limit, self._id, check_role(role))

    # ------------------------------------------------------------------ state

    def get_state(self, level: StateLevel = "session") -> State:
        """Return the session's state, or its user's or app's with `level`."""
        return self._store.get_state(self._scope, level, self._id)

    def update_state(
        self,
        patch: Mapping[str, Any],
        *,
        expected_version: int | None = None,
        level: StateLevel = "session",
    ) -> State:
        """Apply a JSON merge patch (a `None` value deletes the key); return the new state.

        Args:
            patch: The changes, as a JSON object.
            expected_version: If given, the version the state must still have (0: it
                was never written).
            level: "session" (default), "user" or "app".

        Raises:
            InvalidPatch: If `patch` is not a JSON object of JSON values with string keys,
                nested at most `MAX_JSON_DEPTH` (100) deep.
            InvalidInput: If the patched state holds a lone surrogate, or
                `expected_version` is not None or a whole number of at least 0.
            PayloadTooLarge: If the patched state is over the store's size limit.
            VersionConflict: If `expected_version` no longer holds.
        """
        patch = check_patch(patch)
        expected = check_expected_version(expected_version, InvalidInput)
        return self._store.update_state(self._scope, level, self._id, patch, expected)

    # ------------------------------------------------------------------ working context

    def turn(
        self,
        *,
        policy: TurnPolicy = "fail",
        limit: int | None = None,
        tools: Sequence[ToolSpec] = (),
        persist_on_error: bool = False,
        agent: str | None = None,
    ) -> Turn:
        """Open the working context of one model call: ``async with session.turn() as ctx``.

        Only the messages added with ``ctx.add`` are persisted, atomically, when the
        block ends; see `sessionary._sync.turn` for what happens when the head moved meanwhile.

        Args:
            policy: "fail" (raise `HeadConflict`), "branch" (store the turn as a branch
                from where it began) or "rebase" (store it after the new head).
            limit: Show the model at most this many recent messages (pair-safe).
            tools: The caller's own tools, offered beside the session's memory tools.
            persist_on_error: Persist what was added even if the block raises.
            agent: Load this agent's state into ``ctx.state`` and save it at the end.

        Raises:
            InvalidInput: If `policy` or `tools` is malformed.
        """
        from sessionary._sync.turn import Turn  # turn.py builds on this module

        return Turn(
            self,
            policy=policy,
            limit=limit,
            tools=tools,
            persist_on_error=persist_on_error,
            agent=agent,
        )

    # ------------------------------------------------------------------ agent state

    def agent_state(self, name: str = "agent") -> AgentStateKeeper:
        """Return the keeper of an agent's runtime state in this session.

        Args:
            name: Which agent, when several share the session.

        Raises:
            InvalidId: If `name` is malformed.
        """
        return AgentStateKeeper(self._store, self._scope, self._id, name)
