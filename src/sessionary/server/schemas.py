"""The request and response bodies of the HTTP API, as pydantic models (for OpenAPI).

Messages travel in the library's own JSON shape (`Message.to_dict` / `parse_message`):
the models below type them as plain objects and the library validates them, so the API
accepts exactly what the library does and unknown message fields survive a round trip.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AppendRequest",
    "BlockOut",
    "BlockVersionOut",
    "BlockWrite",
    "BranchesOut",
    "CheckoutRequest",
    "CompactRequest",
    "CreateSession",
    "ErrorOut",
    "ForkRequest",
    "HistoryOut",
    "MessagesOut",
    "OverlayOut",
    "SearchHitOut",
    "SearchOut",
    "SessionOut",
    "SessionPage",
    "StateOut",
    "UpdateSession",
    "UsageIn",
    "UsageOut",
    "UsersOut",
]

JSONObject = dict[str, Any]
_ID = Field(default=None, max_length=128)


class _Strict(BaseModel):
    # Unknown fields and mistyped values are refused (422): "5" is not an int, true not a
    # count; a JSON integer still fills a float field (strict mode takes it).
    model_config = ConfigDict(extra="forbid", strict=True)


class ErrorDetail(BaseModel):
    """What went wrong: the error's type name, a sentence, and the HTTP status."""

    type: str
    message: str
    status: int


class ErrorOut(BaseModel):
    """The body of every error answer."""

    error: ErrorDetail


class CreateSession(_Strict):
    """A new session; every field is optional."""

    id: str | None = _ID
    name: str | None = None
    model: str | None = None
    source: str | None = None
    metadata: JSONObject | None = None


class UpdateSession(_Strict):
    """A change to a session's row: a new name, new metadata, or ending it."""

    name: str | None = None
    metadata: JSONObject | None = None
    end_reason: str | None = Field(default=None, min_length=1)


class SessionOut(BaseModel):
    """A session's registry row (times in ISO 8601), and a preview when asked for."""

    id: str
    name: str | None = None
    parent_session_id: str | None = None
    model: str | None = None
    source: str | None = None
    metadata: JSONObject = {}
    created_at: str | None = None
    updated_at: str | None = None
    ended_at: str | None = None
    end_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    head_id: str | None = None
    message_count: int = 0
    version: int = 1
    preview: str | None = None


class SessionPage(BaseModel):
    """One page of sessions, most recently active first."""

    sessions: list[SessionOut]
    next_cursor: str | None = None


class UsersOut(BaseModel):
    """The users of the caller's tenant that own data."""

    users: list[str]


class ForkRequest(_Strict):
    """Where to fork (default: the head) and the new session's name and id."""

    at_message_id: str | None = _ID
    name: str | None = None
    id: str | None = _ID


class AppendRequest(_Strict):
    """Messages to append as a chain, atomically.

    `parent` omitted appends after the head; null starts a new root; an id answers that
    message (a new branch if it has children). `expected_head`, when given, is the id
    the head must still have (null: empty session), or nothing is written (409).
    """

    messages: list[JSONObject] = Field(min_length=1, max_length=1000)
    parent: str | None = None
    expected_head: str | None = None


class MessagesOut(BaseModel):
    """Messages in the library's JSON shape."""

    messages: list[JSONObject]


class HistoryOut(MessagesOut):
    """A branch's history, oldest first, and the session's head."""

    head_id: str | None = None


class BranchesOut(MessagesOut):
    """A page of every message of a session (the whole tree), parents first."""

    next_cursor: str | None = None


class CheckoutRequest(_Strict):
    """The message to make the head (null: empty the head)."""

    message_id: str | None = Field(max_length=128)


class SearchHitOut(BaseModel):
    """One matching message.

    `snippet` is the author's text as written (nothing in it marks a match); `spans`
    are the matched words as ``[start, end)`` offsets into it; `rank` is the share of
    the message's words the query matched, in (0, 1], higher is better. Fields the
    library's `SearchHit` gains later are passed through as they are.
    """

    model_config = ConfigDict(extra="allow")

    session_id: str
    message_id: str
    role: str
    snippet: str
    spans: list[tuple[int, int]]
    rank: float
    created_at: str


class SearchOut(BaseModel):
    """Search results, best first."""

    query: str
    hits: list[SearchHitOut]


class StateOut(BaseModel):
    """A state document and its version (also sent as the `ETag`)."""

    level: Literal["session", "user", "app"]
    data: JSONObject
    version: int


class BlockOut(BaseModel):
    """A context block as read now."""

    label: str
    kind: str
    level: str
    content: str
    tokens: int
    description: str | None = None
    limit: int | None = None
    version: int | None = None
    keys: list[str] = []


class BlockVersionOut(BaseModel):
    """One stored version of a writable block."""

    version: int
    author: str
    updated_at: str
    content: str


class BlockWrite(_Strict):
    """A write to a writable block: replace it, or append a line."""

    content: str
    action: Literal["replace", "append"] = "replace"
    author: str = Field(default="user", min_length=1, max_length=128)
    level: Literal["session", "user", "app"] = "session"


class OverlayOut(BaseModel):
    """One compaction overlay: the range of a branch it replaces, and its summary."""

    id: str
    first_id: str
    last_id: str
    first_depth: int
    last_depth: int
    covered: int
    summary: str
    role: str
    tokens_before: int
    tokens_after: int
    created_at: str
    supersedes: str | None = None


class CompactRequest(_Strict):
    """Compact the branch ending at `leaf` (default: the head)."""

    leaf: str | None = _ID
    protect_head: int | None = Field(default=None, ge=0)
    tail_tokens: int | None = Field(default=None, ge=0)


class UsageIn(_Strict):
    """Tokens and cost to add to a session's counters."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost: float = Field(default=0.0, ge=0)


class UsageOut(BaseModel):
    """A session's usage counters."""

    input_tokens: int
    output_tokens: int
    cost: float
    message_count: int
