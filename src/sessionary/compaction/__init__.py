"""Context compaction: token-budgeted planning, summarizers, overlays and harness helpers.

The planner and the offline summarizer are pure; the LLM summarizers need
`sessionary[openai]` or `sessionary[anthropic]` and import their SDK only when built.
"""

from sessionary._sync.compaction.llm import AnthropicSummarizer, OpenAISummarizer
from sessionary.compaction.llm import AsyncAnthropicSummarizer, AsyncOpenAISummarizer
from sessionary.compaction.planner import (
    COMPACTION_PREFIX,
    SUMMARY_KEY,
    CompactionPlan,
    check_not_synthetic,
    drop_synthetic,
    is_synthetic,
    pending_calls,
    plan_compaction,
    safe_cuts,
    summary_budget,
)
from sessionary.compaction.summary import (
    SECTIONS,
    AsyncSummarizer,
    StructuredSummarizer,
    Summarizer,
    SummaryRequest,
    build_prompt,
    extract_references,
    render_transcript,
    structured_summary,
)

__all__ = [
    "COMPACTION_PREFIX",
    "SECTIONS",
    "SUMMARY_KEY",
    "AnthropicSummarizer",
    "AsyncAnthropicSummarizer",
    "AsyncOpenAISummarizer",
    "AsyncSummarizer",
    "CompactionPlan",
    "OpenAISummarizer",
    "StructuredSummarizer",
    "Summarizer",
    "SummaryRequest",
    "build_prompt",
    "check_not_synthetic",
    "drop_synthetic",
    "extract_references",
    "is_synthetic",
    "pending_calls",
    "plan_compaction",
    "render_transcript",
    "safe_cuts",
    "structured_summary",
    "summary_budget",
]
