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
from sessionary._sync.keeper import AgentStateKeeper
from sessionary._sync.manager import SessionManager
from sessionary._sync.providers import SessionHistory, StoredBlock, StoredSearch, StoredSkills
from sessionary._sync.session import Session
from sessionary._sync.stores.base import Store
from sessionary._sync.stores.encrypted import EncryptedStore
from sessionary._sync.stores.registry import open_store
from sessionary._sync.turn import Turn
from sessionary.agent_state import AgentState
from sessionary.audit_entry import AuditEntry
from sessionary.blocks import (
    BlockSpec,
    BlockVersion,
    ContextBlock,
    ContextProvider,
    Entry,
    EntryHit,
    SearchProvider,
    SessionConfig,
    SkillProvider,
    WritableContextProvider,
)
from sessionary.compaction.overlays import Overlay
from sessionary.compaction.policy import CompactionPolicy, Eviction, MemoryFlush
from sessionary.compaction.summary import StructuredSummarizer, SummaryRequest
from sessionary.crypto import Encryption, Keyring, Rotation
from sessionary.errors import (
    AlreadyExists,
    BackendNotInstalled,
    BlockLimitExceeded,
    BlockNotFound,
    Closed,
    CompactionStalled,
    Conflict,
    DecryptionFailed,
    HeadConflict,
    InvalidDocument,
    InvalidId,
    InvalidInput,
    InvalidMessage,
    InvalidPatch,
    InvalidQuery,
    InvalidURL,
    LossyConversion,
    MessageHasChildren,
    MessageNotFound,
    NotFound,
    NotSerializable,
    PayloadTooLarge,
    ReadOnlyBlock,
    SchemaError,
    SessionaryError,
    SessionNotFound,
    StoreError,
    StoreUnavailable,
    SummarizerError,
    UnknownKey,
    Unsupported,
    VersionConflict,
)
from sessionary.ids import new_id
from sessionary.keeper import AsyncAgentStateKeeper
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
from sessionary.providers import (
    AsyncSessionHistory,
    AsyncStoredBlock,
    AsyncStoredSearch,
    AsyncStoredSkills,
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
from sessionary.skills import FolderSkills
from sessionary.stores.base import AsyncStore
from sessionary.stores.encrypted import AsyncEncryptedStore
from sessionary.stores.registry import open_async_store
from sessionary.tokens import HeuristicCounter, TokenCounter
from sessionary.toolspec import ToolResult, ToolSpec, export_tools
from sessionary.turn import AsyncTurn
from sessionary.working import WorkingContext, build_working_context

__version__ = "0.1.0"

__all__ = [
    "AuditEntry",
    "AsyncEncryptedStore",
    "DecryptionFailed",
    "EncryptedStore",
    "Encryption",
    "Keyring",
    "Rotation",
    "UnknownKey",
    "ANY",
    "HEAD",
    "AgentState",
    "AgentStateKeeper",
    "AlreadyExists",
    "AsyncAgentStateKeeper",
    "AsyncSession",
    "AsyncSessionHistory",
    "AsyncSessionManager",
    "AsyncStore",
    "AsyncStoredBlock",
    "AsyncStoredSearch",
    "AsyncStoredSkills",
    "AsyncTurn",
    "BackendNotInstalled",
    "BlockLimitExceeded",
    "BlockNotFound",
    "BlockSpec",
    "BlockVersion",
    "Closed",
    "CompactionStalled",
    "Conflict",
    "ContextBlock",
    "ContextProvider",
    "DataPart",
    "Document",
    "DocumentHit",
    "Entry",
    "EntryHit",
    "FilePart",
    "FolderSkills",
    "HeadConflict",
    "InvalidDocument",
    "InvalidId",
    "InvalidInput",
    "InvalidMessage",
    "InvalidPatch",
    "InvalidQuery",
    "InvalidURL",
    "LossyConversion",
    "Message",
    "MessageHasChildren",
    "MessageNotFound",
    "NotFound",
    "NotSerializable",
    "Page",
    "Part",
    "PayloadTooLarge",
    "ReadOnlyBlock",
    "ReasoningPart",
    "SchemaError",
    "Scope",
    "SearchHit",
    "SearchProvider",
    "Session",
    "SessionConfig",
    "SessionHistory",
    "SessionInfo",
    "SessionManager",
    "SessionNotFound",
    "SessionaryError",
    "SkillProvider",
    "State",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "StoredBlock",
    "StoredSearch",
    "StoredSkills",
    "TextPart",
    "ToolCallPart",
    "ToolResult",
    "ToolResultPart",
    "ToolSpec",
    "Unsupported",
    "VersionConflict",
    "WorkingContext",
    "WritableContextProvider",
    "CompactionPolicy",
    "Eviction",
    "HeuristicCounter",
    "MemoryFlush",
    "Overlay",
    "StructuredSummarizer",
    "SummarizerError",
    "SummaryRequest",
    "TokenCounter",
    "Turn",
    "call_with_recovery",
    "__version__",
    "build_working_context",
    "export_tools",
    "new_id",
    "open_async_store",
    "open_store",
]
