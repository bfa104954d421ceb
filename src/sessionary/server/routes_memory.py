"""State, context blocks, compaction overlays and usage of the caller's sessions.

State answers carry their version as an `ETag`; a merge patch sent with
``If-Match: "<version>"`` is applied only if the state still has that version, else it
answers 412 and changes nothing (without `If-Match` the patch always applies).

Blocks are those configured on the server plus those found in the store (see
`sessionary.server._blocks`); reads and writes go through the library's session methods,
so token limits and readonly blocks hold as they do for the agent.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Response

from sessionary.blocks import ContextBlock
from sessionary.compaction.overlays import Overlay
from sessionary.errors import BlockNotFound, InvalidInput
from sessionary.manager import AsyncSessionManager
from sessionary.records import State, StateLevel
from sessionary.server._blocks import discover_blocks
from sessionary.server._context import Manager
from sessionary.server.schemas import (
    BlockOut,
    BlockVersionOut,
    BlockWrite,
    CompactRequest,
    OverlayOut,
    StateOut,
    UsageIn,
    UsageOut,
)
from sessionary.session import AsyncSession

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["memory"])
MAX_VERSION = 2**63 - 1
"""The largest block version asked for: every store keeps versions in 64-bit integers."""
Patch = Annotated[dict[str, Any], Body(description="A JSON merge patch; null deletes a key.")]


# ------------------------------------------------------------------ state


def _version_of(if_match: str | None) -> int | None:
    if if_match is None or if_match.strip() == "*":
        return None
    tag = if_match.strip().removeprefix("W/").strip('"')
    if not tag.isascii() or not tag.isdigit() or int(tag) > MAX_VERSION:
        raise InvalidInput(f'If-Match must be a state version such as "3", not {if_match!r}')
    return int(tag)


def _state(level: StateLevel, state: State, response: Response) -> dict[str, Any]:
    response.headers["ETag"] = f'"{state.version}"'
    return {"level": level, "data": state.data, "version": state.version}


@router.get("/sessions/{session_id}/state", response_model=StateOut)
async def get_session_state(session_id: str, mgr: Manager, response: Response) -> dict[str, Any]:
    """Return the session's state; its version is also the `ETag`."""
    return _state("session", await mgr.session(session_id).get_state(), response)


@router.patch("/sessions/{session_id}/state", response_model=StateOut)
async def patch_session_state(
    session_id: str,
    patch: Patch,
    mgr: Manager,
    response: Response,
    if_match: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """Merge-patch the session's state; with `If-Match`, only from that version (else 412)."""
    handle = mgr.session(session_id)
    state = await handle.update_state(patch, expected_version=_version_of(if_match))
    return _state("session", state, response)


def _shared_level(level: str) -> StateLevel:
    if level not in ("user", "app"):
        raise InvalidInput(f"a shared state level is 'user' or 'app', not {level!r}")
    return "user" if level == "user" else "app"


@router.get("/state/{level}", response_model=StateOut)
async def get_shared_state(level: str, mgr: Manager, response: Response) -> dict[str, Any]:
    """Return the caller's user state, or its tenant's app state."""
    which = _shared_level(level)
    return _state(which, await mgr.get_state(which), response)


@router.patch("/state/{level}", response_model=StateOut)
async def patch_shared_state(
    level: str,
    patch: Patch,
    mgr: Manager,
    response: Response,
    if_match: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """Merge-patch the user or app state; with `If-Match`, only from that version (else 412)."""
    which = _shared_level(level)
    state = await mgr.update_state(patch, expected_version=_version_of(if_match), level=which)
    return _state(which, state, response)


# ------------------------------------------------------------------ blocks


async def _session_with_blocks(mgr: AsyncSessionManager, session_id: str) -> AsyncSession:
    await mgr.session(session_id).info()  # 404 before anything else
    config = await discover_blocks(mgr, session_id)
    return AsyncSession(mgr.store, mgr.scope, session_id, config, compaction=mgr.compaction)


def _levels(handle: AsyncSession) -> dict[str, str]:
    return {
        spec.label: spec.level if spec.source is None else "provider"
        for spec in handle.config.blocks
    }


def _block(block: ContextBlock, level: str) -> dict[str, Any]:
    return {**dataclasses.asdict(block), "keys": list(block.keys), "level": level}


@router.get("/sessions/{session_id}/blocks", response_model=list[BlockOut])
async def list_blocks(session_id: str, mgr: Manager) -> list[dict[str, Any]]:
    """Return the session's context blocks as read now, in prompt order."""
    handle = await _session_with_blocks(mgr, session_id)
    levels = _levels(handle)
    return [_block(b, levels.get(b.label, "session")) for b in await handle.get_context_blocks()]


@router.get("/sessions/{session_id}/blocks/{label}", response_model=BlockOut)
async def get_block(
    session_id: str,
    label: str,
    mgr: Manager,
    version: Annotated[int | None, Query(ge=1, le=MAX_VERSION)] = None,
) -> dict[str, Any]:
    """Return one block as it is now, or a writable block as of a stored `version`."""
    handle = await _session_with_blocks(mgr, session_id)
    block = await handle.get_context_block(label, version=version)
    return _block(block, _levels(handle).get(label, "session"))


@router.get("/sessions/{session_id}/blocks/{label}/versions", response_model=list[BlockVersionOut])
async def block_versions(session_id: str, label: str, mgr: Manager) -> list[dict[str, Any]]:
    """Return every stored version of a writable block, oldest first, with its author."""
    handle = await _session_with_blocks(mgr, session_id)
    versions = await handle.context_block_versions(label)
    return [{**dataclasses.asdict(v), "updated_at": v.updated_at.isoformat()} for v in versions]


@router.put("/sessions/{session_id}/blocks/{label}", response_model=BlockOut)
async def write_block(
    session_id: str, label: str, body: BlockWrite, mgr: Manager
) -> dict[str, Any]:
    """Replace a writable block or append a line to it; a new label makes a stored block."""
    handle = await _session_with_blocks(mgr, session_id)
    if label not in _levels(handle):
        await handle.add_context(label, kind="writable", level=body.level)
    if body.action == "append":
        block = await handle.append_context_block(label, body.content, author=body.author)
    else:
        block = await handle.replace_context_block(label, body.content, author=body.author)
    return _block(block, _levels(handle).get(label, body.level))


@router.get("/sessions/{session_id}/blocks/{label}/search")
async def search_block(
    session_id: str,
    label: str,
    mgr: Manager,
    q: Annotated[str, Query(min_length=1, max_length=4000)],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> list[dict[str, Any]]:
    """Full-text search the entries of one keyed block."""
    handle = await _session_with_blocks(mgr, session_id)
    if label not in _levels(handle):
        raise BlockNotFound(f"no block {label!r} on this session")
    hits = await handle.search_context(label, q, limit=limit)
    return [dataclasses.asdict(hit) for hit in hits]


# ------------------------------------------------------------------ compaction and usage


def _overlay(overlay: Overlay) -> dict[str, Any]:
    data = dataclasses.asdict(overlay)
    return {**data, "covered": overlay.covered, "created_at": overlay.created_at.isoformat()}


@router.get("/sessions/{session_id}/overlays", response_model=list[OverlayOut])
async def overlays(session_id: str, mgr: Manager) -> list[dict[str, Any]]:
    """Return the session's compaction overlays on every branch, oldest first."""
    return [_overlay(o) for o in await mgr.session(session_id).overlays()]


@router.post("/sessions/{session_id}/compact", response_model=OverlayOut | None)
async def compact(session_id: str, body: CompactRequest, mgr: Manager) -> dict[str, Any] | None:
    """Compact a branch with the server's policy; null when nothing needs compacting."""
    handle = mgr.session(session_id)
    await handle.info()
    made = await handle.compact(
        body.leaf, protect_head=body.protect_head, tail_tokens=body.tail_tokens
    )
    return None if made is None else _overlay(made)


def _usage(info: Any) -> dict[str, Any]:
    return {
        "input_tokens": info.input_tokens,
        "output_tokens": info.output_tokens,
        "cost": info.cost,
        "message_count": info.message_count,
    }


@router.get("/sessions/{session_id}/usage", response_model=UsageOut)
async def get_usage(session_id: str, mgr: Manager) -> dict[str, Any]:
    """Return a session's token and cost counters."""
    return _usage(await mgr.session(session_id).info())


@router.post("/sessions/{session_id}/usage", response_model=UsageOut)
async def add_usage(session_id: str, body: UsageIn, mgr: Manager) -> dict[str, Any]:
    """Add to a session's token and cost counters, atomically."""
    info = await mgr.add_usage(session_id, body.input_tokens, body.output_tokens, body.cost)
    return _usage(info)
