"""sessionary: durable, branching, searchable sessions and working memory for LLM agents.

Quick start::

    from sessionary import Message, SessionManager

    with SessionManager("sqlite:///chat.db") as manager:
        chat = manager.create(name="support")
        chat.append(Message.user("Where is my order?"))
        print(chat.history())

`SessionManager` and `Session` are synchronous; `AsyncSessionManager` and `AsyncSession`
have the same methods, awaited.
"""

from sessionary._sync.compaction.recovery import call_with_recovery
from sessionary._sync.manager import SessionManager
from sessionary._sync.session import Session
from sessionary._sync.stores.base import Store
from sessionary._sync.stores.registry import open_store
from sessionary.compaction.overlays import Overlay
from sessionary.compaction.policy import CompactionPolicy, Eviction, MemoryFlush
from sessionary.compaction.summary import StructuredSummarizer, SummaryRequest
from sessionary.errors import (
    AlreadyExists,
    BackendNotInstalled,
    Conflict,
    HeadConflict,
    InvalidDocument,
    InvalidId,
    InvalidInput,
    InvalidMessage,
    InvalidPatch,
    InvalidQuery,
    InvalidURL,
    MessageNotFound,
    NotFound,
    PayloadTooLarge,
    SchemaError,
    SessionaryError,
    SessionNotFound,
    StoreError,
    StoreUnavailable,
    SummarizerError,
    Unsupported,
    VersionConflict,
)
from sessionary.ids import new_id
from sessionary.manager import AsyncSessionManager
from sessionary.model import (
    DataPart,
    FilePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionary.records import (
    ANY,
    HEAD,
    Document,
    DocumentHit,
    Page,
    Scope,
    SearchHit,
    SessionInfo,
    State,
)
from sessionary.session import AsyncSession
from sessionary.stores.base import AsyncStore
from sessionary.stores.registry import open_async_store
from sessionary.tokens import HeuristicCounter, TokenCounter

__version__ = "0.1.0"

__all__ = [
    "ANY",
    "HEAD",
    "AlreadyExists",
    "AsyncSession",
    "AsyncSessionManager",
    "AsyncStore",
    "BackendNotInstalled",
    "Conflict",
    "DataPart",
    "Document",
    "DocumentHit",
    "FilePart",
    "HeadConflict",
    "InvalidDocument",
    "InvalidId",
    "InvalidInput",
    "InvalidMessage",
    "InvalidPatch",
    "InvalidQuery",
    "InvalidURL",
    "Message",
    "MessageNotFound",
    "NotFound",
    "Page",
    "Part",
    "PayloadTooLarge",
    "ReasoningPart",
    "SchemaError",
    "Scope",
    "SearchHit",
    "Session",
    "SessionInfo",
    "SessionManager",
    "SessionNotFound",
    "SessionaryError",
    "State",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "Unsupported",
    "VersionConflict",
    "CompactionPolicy",
    "Eviction",
    "HeuristicCounter",
    "MemoryFlush",
    "Overlay",
    "StructuredSummarizer",
    "SummarizerError",
    "SummaryRequest",
    "TokenCounter",
    "call_with_recovery",
    "__version__",
    "new_id",
    "open_async_store",
    "open_store",
]
