"""Sessions, their message trees, and search: the HTTP face of the manager and session.

Every handler takes the caller's scoped manager (see `_context`) and calls one or two
library methods; validation, scope and errors are the library's, mapped to HTTP by
`_errors`. Ids in paths are checked by the library (`InvalidId` → 400), so a path can
never name anything outside the caller's scope.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from sessionary.errors import MessageNotFound
from sessionary.model import Message
from sessionary.records import (
    ANY,
    HEAD,
    SearchHit,
    SessionInfo,
    SessionUpdate,
    check_object,
    info_to_dict,
)
from sessionary.server._context import Manager, state_of
from sessionary.server.keys import KEYS_TENANT
from sessionary.server.schemas import (
    AppendRequest,
    BranchesOut,
    CheckoutRequest,
    CreateSession,
    ForkRequest,
    HistoryOut,
    MessagesOut,
    SearchOut,
    SessionOut,
    SessionPage,
    UpdateSession,
    UsersOut,
)

__all__ = ["router", "session_out"]

router = APIRouter(prefix="/v1", tags=["sessions"])
_PREVIEW_CHARS = 160
Limit = Annotated[int, Query(ge=1, le=1000)]


def session_out(info: SessionInfo, preview: str | None = None) -> dict[str, Any]:
    """Return a session row as the API shows it."""
    return {**info_to_dict(info), "preview": preview}


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    return [message.to_dict() for message in messages]


def _preview(message: Message | None) -> str | None:
    if message is None:
        return None
    text = " ".join(message.text.split())
    if not text and message.tool_calls:
        text = "→ " + ", ".join(call.name for call in message.tool_calls)
    return f"[{message.role}] {text[:_PREVIEW_CHARS]}"


@router.get("/users", response_model=UsersOut)
async def list_users(mgr: Manager) -> dict[str, Any]:
    """List the users of the caller's tenant that own sessions, state or documents."""
    scopes = await mgr.store.list_scopes()
    tenant = mgr.scope.tenant
    users = sorted({s.user for s in scopes if s.tenant == tenant and tenant != KEYS_TENANT})
    return {"users": users}


@router.get("/sessions", response_model=SessionPage)
async def list_sessions(
    mgr: Manager,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: str | None = None,
    name: str | None = None,
    model: str | None = None,
    source: str | None = None,
    parent_session_id: str | None = None,
    ended: bool | None = None,
    preview: bool = False,
) -> dict[str, Any]:
    """List sessions, most recently active first; pass `next_cursor` back for more."""
    page = await mgr.list(
        limit=limit,
        cursor=cursor,
        name=name,
        model=model,
        source=source,
        parent_session_id=parent_session_id,
        ended=ended,
    )
    rows = []
    for info in page.items:
        head = await mgr.session(info.id).head() if preview and info.head_id else None
        rows.append(session_out(info, _preview(head)))
    return {"sessions": rows, "next_cursor": page.next_cursor}


@router.post("/sessions", status_code=201, response_model=SessionOut)
async def create_session(body: CreateSession, mgr: Manager) -> dict[str, Any]:
    """Create a session (409 if the id is taken)."""
    handle = await mgr.create(**body.model_dump())
    return session_out(await handle.info())


@router.get("/sessions/{session_id}", response_model=SessionOut)
async def get_session(session_id: str, mgr: Manager) -> dict[str, Any]:
    """Return a session's row (404 if it is not in the caller's scope)."""
    return session_out(await mgr.session(session_id).info())


@router.patch("/sessions/{session_id}", response_model=SessionOut)
async def update_session(session_id: str, body: UpdateSession, mgr: Manager) -> dict[str, Any]:
    """Rename a session, replace its metadata, or end it with a reason; all or nothing.

    Every field is checked before anything is written, and the change is one store
    update, so a refused request (metadata that is not JSON, say) leaves the name as it was.
    """
    info = await mgr.session(session_id).info()
    update = SessionUpdate(
        name=body.name,
        metadata=None if body.metadata is None else check_object(body.metadata, "session metadata"),
        end_reason=body.end_reason,
    )
    if update == SessionUpdate():
        return session_out(info)
    return session_out(await mgr.store.update_session(mgr.scope, info.id, update))


@router.delete("/sessions/{session_id}", status_code=204)
async def delete_session(session_id: str, mgr: Manager) -> Response:
    """Delete a session with its messages, state and documents."""
    await mgr.session(session_id).info()  # 404 rather than a silent no-op
    await mgr.delete(session_id)
    return Response(status_code=204)


@router.post("/sessions/{session_id}/fork", status_code=201, response_model=SessionOut)
async def fork_session(session_id: str, body: ForkRequest, mgr: Manager) -> dict[str, Any]:
    """Copy the path up to a message (default: the head) into a new session."""
    fork = await mgr.fork(session_id, body.at_message_id, name=body.name, id=body.id)
    return session_out(await fork.info())


@router.post("/sessions/{session_id}/messages", status_code=201, response_model=MessagesOut)
async def append_messages(session_id: str, body: AppendRequest, mgr: Manager) -> dict[str, Any]:
    """Append messages as a chain, atomically; the last becomes the head."""
    given = body.model_fields_set
    stored = await mgr.session(session_id).append_all(
        body.messages,
        parent=body.parent if "parent" in given else HEAD,
        expected_head=body.expected_head if "expected_head" in given else ANY,
    )
    return {"messages": _messages(stored)}


@router.get("/sessions/{session_id}/messages", response_model=HistoryOut)
async def history(
    session_id: str,
    mgr: Manager,
    limit: Limit | None = None,
    leaf: str | None = None,
    raw: bool = False,
) -> dict[str, Any]:
    """Return the path from the root to `leaf` (default: the head), oldest first.

    With `limit`, the last `limit` messages (widened so no tool result lacks its call);
    compacted ranges show as their summaries unless `raw` is set.
    """
    handle = mgr.session(session_id)
    info = await handle.info()
    shown = await handle.history(leaf, limit, raw=raw)
    return {"messages": _messages(shown), "head_id": info.head_id}


@router.get("/sessions/{session_id}/tree", response_model=BranchesOut)
async def tree(
    session_id: str,
    mgr: Manager,
    limit: Annotated[int, Query(ge=1, le=2000)] = 500,
    cursor: str | None = None,
) -> dict[str, Any]:
    """Return a page of every message of the session, on every branch, parents first."""
    await mgr.session(session_id).info()
    found, next_cursor = await mgr.store.page_messages(mgr.scope, session_id, cursor, limit)
    return {"messages": _messages(found), "next_cursor": next_cursor}


@router.get("/sessions/{session_id}/messages/{message_id}", response_model=dict[str, Any])
async def get_message(session_id: str, message_id: str, mgr: Manager) -> dict[str, Any]:
    """Return one message."""
    found = await mgr.session(session_id).get_message(message_id)
    if found is None:
        raise MessageNotFound(f"no message {message_id!r} in this session")
    return found.to_dict()


@router.get("/sessions/{session_id}/messages/{message_id}/children", response_model=MessagesOut)
async def branches(session_id: str, message_id: str, mgr: Manager) -> dict[str, Any]:
    """Return a message's children (its branches), oldest first."""
    return {"messages": _messages(await mgr.session(session_id).branches(message_id))}


@router.put("/sessions/{session_id}/head", response_model=SessionOut)
async def checkout(session_id: str, body: CheckoutRequest, mgr: Manager) -> dict[str, Any]:
    """Move the head to another message (check out a branch)."""
    handle = mgr.session(session_id)
    await handle.checkout(body.message_id)
    return session_out(await handle.info())


@router.get("/search", response_model=SearchOut)
async def search(
    mgr: Manager,
    q: Annotated[str, Query(min_length=1, max_length=4000)],
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    session_id: str | None = None,
    role: str | None = None,
) -> dict[str, Any]:
    """Search messages across the caller's sessions (or one), best match first."""
    hits = await mgr.search(q, limit=limit, session_id=session_id, role=role)
    return {"query": q, "hits": [_hit(hit) for hit in hits]}


def _hit(hit: SearchHit) -> dict[str, Any]:
    # Every field of the hit (spans as lists), so fields SearchHit gains later show up as
    # keys of the same object without a change here; SearchHitOut lets extra keys through.
    return {**dataclasses.asdict(hit), "created_at": hit.created_at.isoformat()}


@router.get("/info", include_in_schema=False)
async def server_info(request: Request, mgr: Manager) -> dict[str, Any]:
    """Tell the viewer who it is and what the store can do."""
    state = state_of(request)
    return {
        "tenant": mgr.scope.tenant,
        "user": mgr.scope.user,
        "auth": state.keyring is not None,
        "capabilities": sorted(mgr.store.capabilities),
    }
