"""Invariant 6: a history window never shows a tool result without the call it answers.

`history(limit=k)` returns the last k messages, widened backwards only as far as needed:
it starts exactly at the assistant message holding the earliest call whose result the
plain window would show without it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sessionary
from sessionary import Message, Part, ToolCallPart, ToolResultPart

# ---------------------------------------------------------------- the expected window


def _orphans(window: Sequence[Message]) -> set[str]:
    """Call ids of results in `window` with no call earlier in `window`."""
    called: set[str] = set()
    missing: set[str] = set()
    for message in window:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                called.add(part.id)
            elif isinstance(part, ToolResultPart) and part.call_id not in called:
                missing.add(part.call_id)
    return missing


def _minimal_start(full: Sequence[Message], k: int) -> int:
    """The smallest widening of the last-k window that shows no result without its call."""
    start = max(0, len(full) - k)
    while missing := _orphans(full[start:]):
        holders = [i for i in range(start) if any(c.id in missing for c in full[i].tool_calls)]
        assert holders, f"the generated history lacks calls {missing}"
        start = min(holders)
    return start


def _check_every_window(session: sessionary.Session, full: list[Message]) -> None:
    ids = [m.id for m in full]
    assert [m.id for m in session.history()] == ids
    for k in range(1, len(full) + 2):
        window = session.history(limit=k)
        got = [m.id for m in window]
        start = _minimal_start(full, k)
        assert not _orphans(window), (k, got)
        assert len(window) >= min(k, len(full)), (k, got)
        # Exactly the minimal widening: a suffix of the path, starting where it must.
        assert got == ids[start:], (k, got, ids[start:])
        if start < max(0, len(full) - k):
            first = window[0]
            assert first.role == "assistant" and first.tool_calls, (k, got)


# ---------------------------------------------------------------- realistic histories


def _tool_round(
    tag: str, n_calls: int, order: Sequence[int], cuts: Sequence[int], text: str = ""
) -> list[Message]:
    """An assistant making `n_calls` parallel calls, then their results.

    Results come in `order`, grouped into tool messages at the indexes in `cuts`
    (no cuts: one tool message carries every result; every index: one each).
    """
    calls = [
        ToolCallPart(id=f"{tag}-c{j}", name="lookup", arguments={"q": f"{tag} {j}"})
        for j in range(n_calls)
    ]
    out = [Message.assistant(text, tool_calls=calls)]
    bounds = [0, *sorted(set(cuts)), n_calls]
    for lo, hi in itertools.pairwise(bounds):
        if lo == hi:
            continue
        parts: list[Part] = [
            ToolResultPart(call_id=f"{tag}-c{j}", output=f"result {tag} {j}", name="lookup")
            for j in order[lo:hi]
        ]
        out.append(Message(role="tool", parts=parts))
    return out


@st.composite
def tool_rounds(draw: st.DrawFn, tag: str) -> list[Message]:
    n_calls = draw(st.integers(1, 3))
    order = draw(st.permutations(range(n_calls)))
    grouping = draw(st.sampled_from(["each", "one", "some"]))
    if grouping == "each":
        cuts = list(range(1, n_calls))
    elif grouping == "one":
        cuts = []
    else:
        cuts = draw(st.lists(st.integers(1, max(1, n_calls - 1)), max_size=2))
    text = draw(st.sampled_from(["", "Let me check."]))
    return _tool_round(tag, n_calls, order, cuts, text)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message.system("You are helpful."))
    for turn in range(draw(st.integers(1, 10))):
        messages.append(Message.user(f"question {turn}"))
        for r in range(draw(st.integers(0, 3))):
            messages.extend(draw(tool_rounds(f"t{turn}r{r}")))
        if draw(st.integers(0, 4)):
            messages.append(Message.assistant(f"answer {turn}"))
    if draw(st.booleans()):  # a call still waiting for its result
        pending = ToolCallPart(id="pending-c0", name="lookup", arguments={})
        messages.append(Message.assistant(tool_calls=[pending]))
    return messages


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(full=histories())
def test_every_window_keeps_calls_with_results(
    manager: sessionary.SessionManager, full: list[Message]
) -> None:
    session = manager.create()
    session.append_all(full)
    _check_every_window(session, full)


def test_long_conversation_built_one_append_at_a_time(manager: sessionary.SessionManager) -> None:
    full: list[Message] = [Message.system("You are helpful.")]
    for turn in range(12):
        full.append(Message.user(f"question {turn}"))
        n = turn % 3 + 1
        if turn % 4 == 0:
            full.append(Message.assistant(f"answer {turn}"))
            continue
        order = list(range(n))[:: 1 if turn % 2 else -1]
        cuts = list(range(1, n)) if turn % 3 else []
        full.extend(_tool_round(f"t{turn}", n, order, cuts, "checking"))
        full.extend(_tool_round(f"t{turn}b", 1, [0], []))
        full.append(Message.assistant(f"answer {turn}"))
    session = manager.create()
    for message in full:
        session.append(message)
    _check_every_window(session, full)


def test_window_reaches_far_back_for_many_parallel_calls(
    manager: sessionary.SessionManager,
) -> None:
    """A call 40 messages back is still found: the widening reads as far as it must."""
    full = [
        Message.user("start"),
        Message.assistant("earlier"),
        *_tool_round("wide", 40, range(40), range(1, 40)),
        *_tool_round("narrow", 2, [1, 0], []),
    ]
    session = manager.create()
    session.append_all(full)
    _check_every_window(session, full)
    window = session.history(limit=1)
    assert window[0].id == full[-2].id  # the assistant calling "narrow"
    window = session.history(limit=3)
    assert window[0].id == full[2].id  # the assistant calling "wide", 42 messages back
    assert len(window) == 1 + 40 + 2


def test_window_starts_at_the_earliest_missing_call() -> None:
    """The expectation itself, spelled out on a small case (guards `_minimal_start`)."""
    round_ = _tool_round("x", 3, [2, 0, 1], [1, 2])
    full = [Message.user("q"), *round_, Message.assistant("done")]
    assert [_minimal_start(full, k) for k in range(1, 7)] == [5, 1, 1, 1, 1, 0]
