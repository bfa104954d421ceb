"""Google ADK: a `BaseSessionService` over any sessionary store.

`SessionarySessionService` replaces ADK's `InMemorySessionService` or
`DatabaseSessionService`::

    service = SessionarySessionService("sqlite:///adk.db")
    runner = Runner(agent=agent, app_name="trips", session_service=service)

How ADK's concepts land in sessionary:

- `app_name` is the tenant and `user_id` the user of a sessionary scope, so one app's users
  never see each other's sessions. Names sessionary cannot use as ids (an e-mail address, a
  name with spaces) are stored hex-encoded behind an `x.` prefix; ADK sees its own names.
- Each event is one message: its content converted through the Gemini format (so the
  history is searchable and readable in other formats), every other field kept in
  `metadata["adk"]`; an event comes back equal to the one appended. An event whose content
  the Gemini converter cannot reproduce exactly is also kept whole in a data part; so is
  one whose content it cannot read (a role such as "system", which ADK stores all the
  same), read for search under its author's role. An event id names one event in a
  session: an equal event appended again is a no-op, a different one under a stored id is
  refused with `AlreadyExistsError`, as ADK's persistent services refuse it.
- State: `app:` keys are the tenant's app state, `user:` keys the user state, `temp:` keys
  live only in the in-memory session of the current invocation, and the rest is the
  session's state. A key's new value replaces the old one, as in ADK (written as a JSON
  merge patch that also removes the old value's nested keys). A `None` value is stored as
  a value, as ADK's services store it (the key stays, holding None): in sessionary state,
  where a null would delete the key, it is written as `{"$adk": "null"}` (and an object of
  yours with a `"$adk"` key is wrapped as `{"$adk": "object", "value": ...}`), which other
  sessionary clients reading the state see as such. A value JSON has no form for (a
  callable) is stored as its string form, with a warning, as ADK's persistent services
  store it; a delta holding NaN or an infinity is refused (`InvalidPatch`).
- Appends to one session are taken in turn within the process, as in ADK's
  `DatabaseSessionService`, so concurrent appends with one session object all go
  through. A session object whose stored head moved since it was read (another process
  or another session object appended) gets ADK's `StaleSessionError` on `append_event`.
- An `append_event` that is refused (a stale session object, a taken event id, a state
  delta that cannot be stored) stores nothing and leaves the session object and the
  event as they were.
- `async with SessionarySessionService(url) as service:` closes the store at the end, as
  `DatabaseSessionService` does; as ADK's own services, the service reconnects if it is
  used after `close()`. A service over your own manager never closes it.

The event and the state it changes are written by two calls, not one transaction: if the
process dies between them, the event (which records its `state_delta`) is stored and the
state change is not. Needs `pip install 'sessionary[adk]'`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from sessionary.errors import (
    AlreadyExists,
    HeadConflict,
    InvalidId,
    InvalidMessage,
    InvalidPatch,
    SessionNotFound,
    VersionConflict,
)
from sessionary.formats.gemini import from_gemini, to_gemini
from sessionary.ids import check_id, new_id
from sessionary.integrations._common import (
    DEFAULT_URL,
    Lifecycle,
    LoopLocks,
    close_async,
    decode_name,
    encode_name,
    install_hint,
    open_async_manager,
)
from sessionary.manager import AsyncSessionManager
from sessionary.model import DataPart, Message, Part, Role
from sessionary.records import ANY, Expected, SessionInfo, State, StateLevel, check_object
from sessionary.session import AsyncSession

try:
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.sessions.base_session_service import (
        BaseSessionService,
        GetSessionConfig,
        ListSessionsResponse,
    )
    from google.adk.sessions.session import Session
    from google.adk.sessions.state import State as AdkState
    from pydantic_core import to_jsonable_python
except ImportError as exc:  # pragma: no cover - exercised by a test that hides the package
    raise install_hint("google-adk", "adk", exc) from exc

try:
    from google.adk.errors._stale_session_error import StaleSessionError
except ImportError:  # pragma: no cover - older ADK releases raise a plain ValueError
    StaleSessionError = ValueError  # type: ignore[assignment,misc]

__all__ = [
    "SessionarySessionService",
    "decode_name",
    "encode_name",
    "event_to_message",
    "message_to_event",
]

NS = "adk"
_EVENT = "adk.event"  # the name of the data part holding an event stored whole
_RETRIES = 20  # state writes retried on a version conflict
_log = logging.getLogger(__name__)


# ---------------------------------------------------------------- events


def _moment(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


def event_to_message(event: Event) -> Message:
    """Return the sessionary message one ADK event is stored as.

    Content the Gemini format cannot read (a role other than user, model, function or
    tool; a function call without a name) is read under its author's role for search, or
    left without parts if even that fails, and kept as it is besides.

    Raises:
        InvalidMessage: If the event cannot be dumped as JSON (pydantic refuses one
            nested past its own limit).
    """
    try:
        data = event.model_dump(mode="json", exclude_none=True)
    except ValueError as exc:
        raise InvalidMessage(f"the event cannot be stored as JSON: {exc}") from None
    content = data.pop("content", None)
    role: Role = "user" if event.author == "user" else "assistant"
    parts: list[Part] = []
    if content is not None:
        converted = _read_content(content, role)
        if len(converted) == 1:  # its parts are what search and other formats see
            role, parts = converted[0].role, converted[0].parts
        if len(converted) != 1 or to_gemini(converted).value.contents != [content]:
            data["content"] = content  # the event is rebuilt from this copy instead
    message_id = event.id if _usable(event.id) else new_id()
    message = Message(role=role, parts=parts, id=message_id, metadata={NS: data})
    message.created_at = _moment(event.timestamp)
    if message_to_event(message) != event:
        message.parts.append(DataPart(event.model_dump(mode="json"), name=_EVENT))
    return message


def _read_content(content: dict[str, Any], role: Role) -> list[Message]:
    """Read an event's content through the Gemini format; under `role` if it refuses it.

    ADK stores any role (its `Content.role` is free text) and any part, so a refusal here
    only means fewer searchable parts: the caller keeps the content itself as well.
    """
    with contextlib.suppress(InvalidMessage):
        return from_gemini([content])
    with contextlib.suppress(InvalidMessage):
        return from_gemini([{**content, "role": "user" if role == "user" else "model"}])
    return []


def _usable(value: str) -> bool:
    try:
        check_id(value)
    except InvalidId:
        return False
    return True


def message_to_event(message: Message) -> Event:
    """Return the ADK event a sessionary message stands for.

    A message written by `event_to_message` gives back an equal event; a message written
    by another sessionary client reads as an event by `user` or `model`.
    """
    for part in message.parts:
        if isinstance(part, DataPart) and part.name == _EVENT:
            return Event.model_validate(part.data)
    fields = message.metadata.get(NS)
    data: dict[str, Any] = dict(fields) if isinstance(fields, dict) else {}
    if message.parts and "content" not in data:
        prompt = to_gemini([message]).value
        if prompt.contents:
            data["content"] = prompt.contents[0]
        elif prompt.system_instruction is not None:
            data["content"] = prompt.system_instruction
    data.setdefault("author", "user" if message.role == "user" else "model")
    data.setdefault("invocation_id", "")
    data.setdefault("id", message.id)
    data.setdefault("timestamp", message.created_at.timestamp())
    return Event.model_validate(data)


# ---------------------------------------------------------------- state


_MARK = "$adk"  # the key of a null, or of a wrapped object, in stored state
_NULL = {_MARK: "null"}


def _encode_value(value: Any) -> Any:
    """Return a JSON state value as it is stored, with its nulls kept.

    A null in an object would read as a deletion in a merge patch, so it becomes `_NULL`;
    an object of the caller's with a `_MARK` key is wrapped, so that it cannot be taken
    for one.
    """
    if value is None:
        return dict(_NULL)
    if not isinstance(value, dict):
        return value  # a list is replaced whole by a merge patch: its nulls are kept
    encoded = {key: _encode_value(item) for key, item in value.items()}
    return {_MARK: "object", "value": encoded} if _MARK in value else encoded


def _decode_value(value: Any) -> Any:
    """Return the ADK value a stored state value stands for (the inverse of `_encode_value`)."""
    if not isinstance(value, dict):
        return value
    if value.get(_MARK) == "null":
        return None
    if value.get(_MARK) == "object" and isinstance(value.get("value"), dict):
        value = value["value"]
    return {key: _decode_value(item) for key, item in value.items()}


def _decode_state(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    return {prefix + key: _decode_value(value) for key, value in data.items()}


def _split_state(state: dict[str, Any]) -> dict[StateLevel, dict[str, Any]]:
    """Split ADK state by scope, encoded for storing: prefixes stripped, `temp:` keys dropped.

    Every value is checked here, before anything is written, so that a refused state
    changes nothing. `temp:` keys are dropped first: they are never stored, so they may
    hold anything.

    Raises:
        InvalidPatch: If a value is NaN or an infinity, or nests deeper than
            `MAX_JSON_DEPTH`.
    """
    stored = {k: v for k, v in state.items() if not k.startswith(AdkState.TEMP_PREFIX)}
    levels: dict[StateLevel, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
    for key, raw in _json_safe(stored).items():
        value = _encode_value(raw)
        if key.startswith(AdkState.APP_PREFIX):
            levels["app"][key.removeprefix(AdkState.APP_PREFIX)] = value
        elif key.startswith(AdkState.USER_PREFIX):
            levels["user"][key.removeprefix(AdkState.USER_PREFIX)] = value
        else:
            levels["session"][key] = value
    for level, values in levels.items():
        check_object(values, f"the {level} state", InvalidPatch)
    return levels


def _json_safe(state: dict[str, Any]) -> dict[str, Any]:
    """Return `state` as JSON values, as ADK's persistent services store it.

    As ADK's `make_json_safe_state`: rich values (datetimes, pydantic models) are dumped
    faithfully, and only when that fails is a value JSON has no form for (a callable)
    replaced by its string form, with a warning, so that the loss is not silent.

    Raises:
        InvalidPatch: If even that fails (e.g. nested past pydantic's limit).
    """
    try:
        return dict(to_jsonable_python(state))
    except ValueError:
        pass
    try:
        safe = dict(to_jsonable_python(state, serialize_unknown=True))
    except ValueError as exc:
        raise InvalidPatch(f"the state cannot be stored as JSON: {exc}") from None
    _log.warning(
        "Some session state values are not JSON-serializable (e.g. callables): they are "
        "stored as their string form, as ADK's own session services store them."
    )
    return safe


def _replace_patch(old: Any, new: Any) -> Any:
    """Return the merge patch that makes `new` replace `old` (not merge into it)."""
    if not isinstance(new, dict):
        return new
    before = old if isinstance(old, dict) else {}
    patch: dict[str, Any] = {key: None for key in before.keys() - new.keys()}
    for key, value in new.items():
        patch[key] = _replace_patch(before.get(key), value)
    return patch


async def _replace_keys(
    read: Callable[[], Awaitable[State]],
    write: Callable[[dict[str, Any], int], Awaitable[State]],
    values: dict[str, Any],
) -> None:
    """Set `values` (key by key, replacing) with optimistic concurrency, retrying conflicts."""
    for attempt in range(_RETRIES):
        state = await read()
        patch = {key: _replace_patch(state.data.get(key), value) for key, value in values.items()}
        try:
            await write(patch, state.version)
            return
        except VersionConflict:
            if attempt == _RETRIES - 1:
                raise


# ---------------------------------------------------------------- the service


class SessionarySessionService(BaseSessionService):
    """An ADK session service whose sessions, events and state live in sessionary.

    Args:
        store: A store URL, or an `AsyncSessionManager` whose store is used (its own
            tenant and user are not: each call names its app and user).
    """

    def __init__(self, store: AsyncSessionManager | str = DEFAULT_URL) -> None:
        self._store = store
        self._root, owned = open_async_manager(store, None, None)
        self._life = Lifecycle(type(self).__name__, owned)
        self._reopening = threading.Lock()
        self._appending = LoopLocks()  # one lock per session: appends are taken in turn

    def _open_root(self) -> AsyncSessionManager:
        """The store's manager, opened again if the service was closed, as ADK's reconnect."""
        if self._life.closed:
            with self._reopening:
                if self._life.closed:
                    self._root, owned = open_async_manager(self._store, None, None)
                    self._life = Lifecycle(type(self).__name__, owned)
        return self._root

    def _manager(self, app_name: str, user_id: str) -> AsyncSessionManager:
        return self._open_root().for_user(
            encode_name(user_id, "user_id"), tenant=encode_name(app_name, "app_name")
        )

    async def close(self) -> None:
        """Close the store if this service opened it from a URL (a no-op after the first).

        A later call opens the store again, as ADK's services reconnect after `close()`.
        """
        await close_async(self._life, self._root)

    async def __aenter__(self) -> Self:
        """Enter `async with`: the service itself."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Leave `async with`: close the store if this service opened it."""
        await self.close()

    # ------------------------------------------------------------------ sessions

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create a session with its initial state (app and user keys update those scopes).

        Raises:
            AlreadyExistsError: If the session id is taken for this app and user.
        """
        manager = self._manager(app_name, user_id)
        name = session_id.strip() if session_id and session_id.strip() else new_id()
        levels = _split_state(state or {})
        info = SessionInfo(id=encode_name(name, "session_id"), source="adk")
        try:
            created = await manager.store.import_session(
                manager.scope, info, [], State(levels["session"], 1)
            )
        except AlreadyExists:
            raise AlreadyExistsError(f"Session with id {name} already exists.") from None
        await self._write_shared(manager, levels)
        updated = _updated(created, None)
        return await self._session(manager, created, [], levels["session"], updated)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """Return a session with its events (filtered by `config`) and merged state."""
        manager = self._manager(app_name, user_id)
        sid = encode_name(session_id.strip(), "session_id")
        info = await manager.get(sid)
        if info is None:
            return None
        handle = manager.session(sid)
        config = config or GetSessionConfig()
        recent = config.num_recent_events
        messages = await handle.history(limit=None if recent is None else max(recent, 1))
        if recent is not None:
            messages = messages[-recent:] if recent else []  # the window may be widened
        events = _filter(config, [message_to_event(m) for m in messages])
        updated = _updated(info, messages[-1] if messages else await handle.head())
        state = await handle.get_state()
        return await self._session(manager, info, events, state.data, updated)

    async def _session(
        self,
        manager: AsyncSessionManager,
        info: SessionInfo,
        events: list[Event],
        state: dict[str, Any],
        updated: float,
    ) -> Session:
        merged = _decode_state(state)
        for level in _SHARED:
            prefix = AdkState.APP_PREFIX if level == "app" else AdkState.USER_PREFIX
            shared = await manager.get_state(level)
            merged.update(_decode_state(shared.data, prefix))
        session = Session(
            id=decode_name(info.id),
            app_name=decode_name(manager.scope.tenant),
            user_id=decode_name(manager.scope.user),
            state=merged,
            events=events,
            last_update_time=updated,
        )
        session._storage_update_marker = info.head_id or ""
        return session

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """List sessions (without events, with merged state), least recently updated first."""
        if user_id is not None:
            managers = [self._manager(app_name, user_id)]
        else:
            tenant = encode_name(app_name, "app_name")
            root = self._open_root()
            scopes = await root.store.list_scopes()
            managers = [root.for_user(s.user, tenant=tenant) for s in scopes if s.tenant == tenant]
        sessions: list[Session] = []
        for manager in managers:
            async for info in _all_sessions(manager):
                handle = manager.session(info.id)
                state = await handle.get_state()
                updated = _updated(info, await handle.head())
                sessions.append(await self._session(manager, info, [], state.data, updated))
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete a session with its events and state (nothing happens if it is absent)."""
        manager = self._manager(app_name, user_id)
        await manager.delete(encode_name(session_id.strip(), "session_id"))

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """Return the user's state, keys without the `user:` prefix."""
        state = await self._manager(app_name, user_id).get_state("user")
        return _decode_state(state.data)

    # ------------------------------------------------------------------ events

    async def append_event(self, session: Session, event: Event) -> Event:
        """Store an event and apply its state delta; update `session` in memory.

        Appends to one session are taken in turn within the process (ADK's live runner
        appends from background tasks), so concurrent calls with one session object all
        go through, in the order they were made. A refused call (any of the errors below)
        stores nothing and leaves `session` and `event` as they were.

        Raises:
            SessionNotFoundError: If the session does not exist.
            StaleSessionError: If another writer appended to the session since it was read.
            AlreadyExistsError: If the session holds a different event with this event's
                id. An equal one is a re-delivery, and a no-op, as in all ADK's services;
                a different one ADK's persistent services refuse too (their
                InMemorySessionService keeps both): storing it would give one id to two
                events, and dropping it would lose it silently.
            InvalidPatch: If the state delta holds NaN or an infinity, or nests deeper
                than `MAX_JSON_DEPTH`.
        """
        if event.partial:
            return event
        manager = self._manager(session.app_name, session.user_id)
        sid = encode_name(session.id.strip(), "session_id")
        lock = self._appending.get((manager.scope.tenant, manager.scope.user, sid))
        async with lock:
            return await self._append(manager, manager.session(sid), session, event)

    async def _append(
        self, manager: AsyncSessionManager, handle: AsyncSession, session: Session, event: Event
    ) -> Event:
        """`append_event` for a session no other coroutine of this loop is appending to.

        Everything that can refuse the event (its state, its message, the store) runs
        before `session` and `event` are touched.
        """
        delta = event.actions.state_delta or {}
        kept = {k: v for k, v in delta.items() if not k.startswith(AdkState.TEMP_PREFIX)}
        levels = _split_state(kept)
        trimmed = event.model_copy(
            update={"actions": event.actions.model_copy(update={"state_delta": kept})}
        )
        message = event_to_message(trimmed)
        if _usable(event.id) and await _appended_before(handle, message, session.id):
            return event  # its state delta was applied then
        marker = session._storage_update_marker
        expected: Expected = ANY if marker is None else (marker or None)
        try:
            stored = await handle.append(message, expected_head=expected)
        except SessionNotFound:
            raise SessionNotFoundError(f"Session {session.id} not found.") from None
        except HeadConflict:
            raise StaleSessionError(  # worded as ADK's own services word it
                f"Session {session.id} has been modified in storage since it was loaded "
                "(another writer appended to it): get it again before appending more events."
            ) from None
        if not _same_event(stored, message):  # another process stored that id just now
            raise _id_taken(message.id, session.id)
        await self._write_state(manager, handle.id, levels)
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        session.last_update_time = event.timestamp
        session._storage_update_marker = message.id
        return self._commit_event_to_session(session, event)

    async def _write_state(
        self, manager: AsyncSessionManager, sid: str, levels: dict[StateLevel, dict[str, Any]]
    ) -> None:
        await self._write_shared(manager, levels)
        if levels["session"]:
            handle = manager.session(sid)

            async def write(patch: dict[str, Any], version: int) -> State:
                return await handle.update_state(patch, expected_version=version)

            await _replace_keys(handle.get_state, write, levels["session"])

    async def _write_shared(
        self, manager: AsyncSessionManager, levels: dict[StateLevel, dict[str, Any]]
    ) -> None:
        for level in _SHARED:
            if levels[level]:
                await _write_level(manager, level, levels[level])


_SHARED: tuple[StateLevel, ...] = ("app", "user")


async def _write_level(
    manager: AsyncSessionManager, level: StateLevel, values: dict[str, Any]
) -> None:
    async def read() -> State:
        return await manager.get_state(level)

    async def write(patch: dict[str, Any], version: int) -> State:
        return await manager.update_state(patch, expected_version=version, level=level)

    await _replace_keys(read, write, values)


def _filter(config: GetSessionConfig, events: list[Event]) -> list[Event]:
    """Keep the events from the last one before `after_timestamp` on, as ADK does."""
    after = config.after_timestamp
    if after is None:
        return events
    start = len(events)
    while start > 0 and events[start - 1].timestamp >= after:
        start -= 1
    return events[start:]


def _updated(info: SessionInfo, head: Message | None) -> float:
    """A session's last update time, as ADK counts it: its newest event's timestamp."""
    if head is not None:
        fields = head.metadata.get(NS)
        stamp = fields.get("timestamp") if isinstance(fields, dict) else None
        return float(stamp) if isinstance(stamp, int | float) else message_to_event(head).timestamp
    return info.created_at.timestamp() if info.created_at is not None else 0.0


async def _appended_before(handle: AsyncSession, message: Message, session_id: str) -> bool:
    """Whether the event `message` stands for is stored already (a re-delivery).

    Raises:
        AlreadyExistsError: If a different event is stored under its id.
        SessionNotFoundError: If the session does not exist.
    """
    try:
        stored = await handle.get_message(message.id)
    except SessionNotFound:
        raise SessionNotFoundError(f"Session {session_id} not found.") from None
    if stored is None:
        return False
    if not _same_event(stored, message):
        raise _id_taken(message.id, session_id)
    return True


def _same_event(stored: Message, message: Message) -> bool:
    """Whether two messages stand for equal events (as read back, so as JSON keeps them)."""
    return message_to_event(stored) == message_to_event(message)


def _id_taken(event_id: str, session_id: str) -> AlreadyExistsError:
    return AlreadyExistsError(
        f"Session {session_id} holds another event with id {event_id!r}: give a new event a new id."
    )


async def _all_sessions(manager: AsyncSessionManager) -> Any:
    cursor: str | None = None
    while True:
        page = await manager.list(limit=200, cursor=cursor)
        for info in page.items:
            yield info
        cursor = page.next_cursor
        if cursor is None:
            return
