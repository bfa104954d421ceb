"""Which context blocks a session has, seen from outside the agent that configured them.

The server (HTTP or MCP) runs no agent code, so it cannot know the blocks an agent sets
in its own `SessionConfig`. It shows the blocks configured on the server plus every
block stored in the session's store, found from its documents (``block/<label>`` is a
writable block, ``block.<label>/<key>`` an entry of a keyed block) at session, user and
app level, session level first when a label is stored at several.
"""

from __future__ import annotations

import dataclasses

from sessionary.blocks import BlockSpec, SessionConfig
from sessionary.manager import AsyncSessionManager
from sessionary.providers import BLOCK_NAMESPACE
from sessionary.records import StateLevel

__all__ = ["discover_blocks"]

_PAGE = 200
_SCAN_PAGES = 50
_PAST_BLOCKS = BLOCK_NAMESPACE + "/"  # sorts after "block" and every "block.<label>"


async def _labels_at(
    mgr: AsyncSessionManager, level: StateLevel, session_id: str | None
) -> dict[str, str]:
    """The stored blocks of one owner: label → kind, from one ordered document scan."""
    found: dict[str, str] = {}
    cursor: str | None = None
    for _ in range(_SCAN_PAGES):
        page = await mgr.store.list_documents(mgr.scope, level, session_id, None, _PAGE, cursor)
        for doc in page.items:
            if doc.namespace == BLOCK_NAMESPACE:
                found.setdefault(doc.key, "writable")
            elif doc.namespace.startswith(BLOCK_NAMESPACE + "."):
                found.setdefault(doc.namespace[len(BLOCK_NAMESPACE) + 1 :], "skill")
        cursor = page.next_cursor
        last = page.items[-1].namespace if page.items else _PAST_BLOCKS
        if cursor is None or last >= _PAST_BLOCKS:
            break
    return found


async def discover_blocks(mgr: AsyncSessionManager, session_id: str) -> SessionConfig:
    """Return the manager's config plus every block stored for the session.

    Keyed blocks found in the store are shown as skill blocks (their entries listed by
    key): the store does not record whether an agent searches them instead.
    """
    config = mgr.config
    known = {spec.label for spec in config.blocks} | {config.searchable_history}
    extra: list[BlockSpec] = []
    for level, owner in (("session", session_id), ("user", None), ("app", None)):
        labels = await _labels_at(mgr, level, owner)  # type: ignore[arg-type]
        for label, kind in labels.items():
            if label not in known:
                known.add(label)
                extra.append(BlockSpec(label, kind=kind, level=level))  # type: ignore[arg-type]
    return dataclasses.replace(config, blocks=(*config.blocks, *extra))
