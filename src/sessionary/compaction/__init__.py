"""Context compaction: token-budgeted planning, summarizers, overlays and harness helpers.

The planner, the offline summarizer and the offline memory extractor are pure; the LLM
summarizers and extractors need `sessionary[openai]` or `sessionary[anthropic]` and import
their SDK only when built.
"""

from sessionary._sync.compaction.llm import (
    AnthropicExtractor,
    AnthropicSummarizer,
    OpenAIExtractor,
    OpenAISummarizer,
)
from sessionary.compaction.flush import (
    AsyncMemoryExtractor,
    FlushRequest,
    HeuristicExtractor,
    MemoryExtractor,
    add_facts,
    memory_facts,
)
from sessionary.compaction.guard import Guard, Measure
from sessionary.compaction.llm import (
    AsyncAnthropicExtractor,
    AsyncAnthropicSummarizer,
    AsyncOpenAIExtractor,
    AsyncOpenAISummarizer,
)
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
    "AnthropicExtractor",
    "AnthropicSummarizer",
    "AsyncAnthropicExtractor",
    "AsyncAnthropicSummarizer",
    "AsyncMemoryExtractor",
    "AsyncOpenAIExtractor",
    "AsyncOpenAISummarizer",
    "AsyncSummarizer",
    "CompactionPlan",
    "FlushRequest",
    "Guard",
    "HeuristicExtractor",
    "Measure",
    "MemoryExtractor",
    "OpenAIExtractor",
    "OpenAISummarizer",
    "StructuredSummarizer",
    "Summarizer",
    "SummaryRequest",
    "add_facts",
    "build_prompt",
    "check_not_synthetic",
    "drop_synthetic",
    "extract_references",
    "is_synthetic",
    "memory_facts",
    "pending_calls",
    "plan_compaction",
    "render_transcript",
    "safe_cuts",
    "structured_summary",
    "summary_budget",
]
