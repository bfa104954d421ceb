"""Unloading reclaims a loaded document's context at read time; the record stays."""

from __future__ import annotations

import pytest
from _open_scope import OpenScope

import sessionary
from sessionary import Message, SessionConfig, ToolCallPart
from sessionary.stores.base import DOCUMENT_SEARCH, SEARCH


def _load(chat: sessionary.Session, call_id: str, key: str) -> None:
    call = ToolCallPart(id=call_id, name="load_context", arguments={"label": "docs", "key": key})
    chat.append(Message.assistant(tool_calls=[call]))
    result = chat.call_tool(call.name, call.arguments)
    chat.append(Message(role="tool", parts=[result.to_part(call.id, call.name)]))


@pytest.mark.requires(SEARCH, DOCUMENT_SEARCH)
def test_unloaded_and_superseded_loads_are_reclaimed(reopen: OpenScope) -> None:
    chat = reopen(SessionConfig().with_block("docs", kind="skill")).create()
    chat.put_context_entry("docs", "Long release guide.", title="Release")
    chat.put_context_entry("docs", "Access rules.", title="Access")
    _load(chat, "c1", "release")
    _load(chat, "c2", "access")
    _load(chat, "c3", "access")
    chat.call_tool("unload_context", {"label": "docs", "key": "release"})
    outputs = [m.tool_results[0].output for m in chat.context_history() if m.tool_results]
    assert outputs == [
        "[unloaded: docs/release; call load_context to load it again]",
        "[docs/access was loaded again below]",
        "Access rules.",
    ]
    stored = [m.tool_results[0].output for m in chat.history() if m.tool_results]
    assert stored == ["Long release guide.", "Access rules.", "Access rules."]
    assert chat.search("guide")  # the original stays searchable
