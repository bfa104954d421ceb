"""The public surface: the names sessionary exports, and async/sync twins that match."""

from __future__ import annotations

import inspect

import pytest

import sessionary
from sessionary._sync.compaction.runtime import Compactor
from sessionary.compaction import (
    AnthropicExtractor,
    AnthropicSummarizer,
    AsyncAnthropicExtractor,
    AsyncAnthropicSummarizer,
    AsyncOpenAIExtractor,
    AsyncOpenAISummarizer,
    OpenAIExtractor,
    OpenAISummarizer,
)
from sessionary.compaction.runtime import AsyncCompactor

EXPECTED = {
    "ANY", "HEAD", "AgentState", "AgentStateKeeper", "AsyncAgentStateKeeper",
    "AlreadyExists", "AsyncSession", "AsyncSessionManager", "AsyncStore",
    "BackendNotInstalled", "Closed", "CompactionStalled", "Conflict", "DataPart", "FilePart",
    "HeadConflict", "InvalidId",
    "InvalidInput", "InvalidMessage", "InvalidPatch", "InvalidQuery", "InvalidURL",
    "LossyConversion", "Message", "MessageHasChildren",
    "MessageNotFound", "NotFound", "NotSerializable", "Page", "Part", "PayloadTooLarge",
    "ReasoningPart",
    "SchemaError", "Scope", "SearchHit", "Session", "SessionInfo", "SessionManager",
    "SessionNotFound", "SessionaryError", "State", "Store", "StoreError",
    "StoreUnavailable",
    "TextPart", "ToolCallPart", "ToolResultPart", "Unsupported", "VersionConflict",
    "__version__", "new_id", "open_async_store", "open_store",
    "Document", "DocumentHit", "InvalidDocument",
    # context blocks, the system prompt and memory tools
    "AsyncSessionHistory", "AsyncStoredBlock", "AsyncStoredSearch", "AsyncStoredSkills",
    "BlockLimitExceeded", "BlockNotFound", "BlockSpec", "BlockVersion", "ContextBlock",
    "ContextProvider", "Entry", "EntryHit", "FolderSkills", "ReadOnlyBlock", "SearchProvider",
    "SessionConfig", "SessionHistory", "SkillProvider", "StoredBlock", "StoredSearch",
    "StoredSkills", "ToolResult", "ToolSpec", "WritableContextProvider", "export_tools",
    "CompactionPolicy", "Eviction", "HeuristicCounter", "MemoryFlush", "Overlay",
    "StructuredSummarizer", "SummarizerError", "SummaryRequest", "TokenCounter",
    "call_with_recovery", "AsyncTurn", "Turn", "WorkingContext", "build_working_context",
    # encryption at rest
    "AsyncEncryptedStore", "DecryptionFailed", "EncryptedStore", "Encryption", "Keyring",
    "Rotation", "UnknownKey",
    # the audit trail
    "AuditEntry",
}  # fmt: skip


def test_public_names_are_pinned() -> None:
    assert set(sessionary.__all__) == EXPECTED
    for name in sessionary.__all__:
        assert hasattr(sessionary, name), name


def _public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("async_cls", "sync_cls"),
    [
        (sessionary.AsyncSession, sessionary.Session),
        (sessionary.AsyncSessionManager, sessionary.SessionManager),
        (sessionary.AsyncAgentStateKeeper, sessionary.AgentStateKeeper),
        (sessionary.AsyncTurn, sessionary.Turn),
        (AsyncCompactor, Compactor),
        (AsyncOpenAISummarizer, OpenAISummarizer),
        (AsyncAnthropicSummarizer, AnthropicSummarizer),
        (AsyncOpenAIExtractor, OpenAIExtractor),
        (AsyncAnthropicExtractor, AnthropicExtractor),
    ],
)
def test_async_and_sync_twins_have_the_same_methods(async_cls: type, sync_cls: type) -> None:
    async_methods = _public_methods(async_cls)
    sync_methods = _public_methods(sync_cls)
    assert async_methods.keys() == sync_methods.keys()
    for name, signature in async_methods.items():
        assert list(signature.parameters) == list(sync_methods[name].parameters), name


def test_every_error_is_a_sessionary_error() -> None:
    errors = [getattr(sessionary, n) for n in sessionary.__all__ if n[0].isupper()]
    for error in errors:
        if isinstance(error, type) and issubclass(error, Exception):
            assert issubclass(error, sessionary.SessionaryError), error
    assert issubclass(sessionary.InvalidInput, ValueError)
    assert issubclass(sessionary.NotFound, LookupError)
