"""The compaction planner on hand-made and generated histories (pure, no store)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionary.compaction import (
    COMPACTION_PREFIX,
    SUMMARY_KEY,
    check_not_synthetic,
    drop_synthetic,
    pending_calls,
    plan_compaction,
    safe_cuts,
    summary_budget,
)
from sessionary.errors import InvalidInput, InvalidMessage
from sessionary.model import Message, ToolCallPart
from sessionary.tokens import HeuristicCounter


class OnePerMessage(HeuristicCounter):
    """Every message costs 10 tokens: budgets become message counts."""

    def count_message(self, message: Message) -> int:
        return 10


def call(call_id: str, name: str = "run") -> Message:
    return Message.assistant(tool_calls=[ToolCallPart(id=call_id, name=name)], id=f"a-{call_id}")


def result(call_id: str) -> Message:
    return Message.tool(call_id, "ok", id=f"r-{call_id}")


def chat(count: int) -> list[Message]:
    return [
        Message.user(f"u{i}", id=f"m{i}") if i % 2 == 0 else Message.assistant(f"a{i}", id=f"m{i}")
        for i in range(count)
    ]


def crosses(path: list[Message], cut: int) -> bool:
    before = {c.id for m in path[:cut] for c in m.tool_calls}
    return any(r.call_id in before for m in path[cut:] for r in m.tool_results)


def test_short_history_is_left_alone() -> None:
    assert plan_compaction(chat(4), protect_head=2, min_tail=2, counter=OnePerMessage()) is None


def test_head_and_tail_are_kept() -> None:
    path = chat(20)
    plan = plan_compaction(
        path, protect_head=3, tail_tokens=50, min_tail=2, counter=OnePerMessage()
    )
    assert plan is not None
    assert (plan.start, plan.end) == (3, 15)  # 5 tail messages of 10 tokens fit 50
    assert plan.first_id == "m3" and plan.last_id == "m14"
    assert plan.tokens_before == 200 and plan.tokens_kept == 80
    assert plan.previous == ()


def test_min_tail_wins_over_budget() -> None:
    plan = plan_compaction(
        chat(20), protect_head=0, tail_tokens=0, min_tail=4, counter=OnePerMessage()
    )
    assert plan is not None and plan.end == 16


def test_tail_never_starts_with_an_orphan_result() -> None:
    path = [*chat(6), call("c1"), result("c1"), Message.assistant("done", id="z")]
    plan = plan_compaction(
        path, protect_head=1, tail_tokens=20, min_tail=1, counter=OnePerMessage()
    )
    assert plan is not None
    # A cut between the call (index 6) and its result (7) is not allowed: keep 1 or 3.
    assert plan.end in (6, 8)
    assert not crosses(path, plan.end)


def test_head_boundary_moves_past_results() -> None:
    path = [Message.user("hi", id="u"), call("c1"), result("c1"), *chat(10)]
    plan = plan_compaction(
        path, protect_head=2, tail_tokens=20, min_tail=1, counter=OnePerMessage()
    )
    assert plan is not None and plan.start == 3


def test_pending_call_is_never_compacted() -> None:
    path = [*chat(10), call("c9")]
    assert pending_calls(path) == {"c9": 10}
    plan = plan_compaction(path, protect_head=1, tail_tokens=0, min_tail=1, counter=OnePerMessage())
    assert plan is not None and plan.end <= 10
    assert all(m.id != "a-c9" for m in plan.messages)


def test_pending_call_with_user_interjection_stays_pending() -> None:
    path = [*chat(10), call("c9"), Message.user("still waiting?", id="late")]
    assert pending_calls(path) == {"c9": 10}
    plan = plan_compaction(path, protect_head=1, tail_tokens=0, min_tail=1, counter=OnePerMessage())
    assert plan is not None and plan.end <= 10


def test_abandoned_call_does_not_block_compaction() -> None:
    path = [*chat(4), call("lost"), Message.assistant("moving on", id="x"), *chat(10)[4:]]
    assert pending_calls(path) == {}
    plan = plan_compaction(
        path, protect_head=1, tail_tokens=20, min_tail=2, counter=OnePerMessage()
    )
    assert plan is not None and any(m.id == "a-lost" for m in plan.messages)


def test_previous_summary_is_updated_not_summarized() -> None:
    summary = Message.user(
        "old summary",
        id=f"{COMPACTION_PREFIX}x",
        metadata={SUMMARY_KEY: {"first_id": "m1", "last_id": "m9", "summary": "old summary"}},
    )
    path = [Message.user("u0", id="m0"), summary, *chat(20)[10:]]
    plan = plan_compaction(
        path, protect_head=3, tail_tokens=20, min_tail=2, counter=OnePerMessage()
    )
    assert plan is not None
    assert plan.start == 1  # the summary is never protected as head
    assert plan.previous == (summary,)
    assert all(not m.id.startswith(COMPACTION_PREFIX) for m in plan.messages)
    assert plan.first_id == "m1"  # widened to the old overlay's first message


def test_settings_are_checked() -> None:
    with pytest.raises(InvalidInput):
        plan_compaction(chat(5), min_tail=0)
    with pytest.raises(InvalidInput):
        plan_compaction(chat(5), tail_tokens=-1)
    with pytest.raises(InvalidInput):
        summary_budget(100, ratio=0)


def test_summary_budget_scales_and_clamps() -> None:
    assert summary_budget(0) == 200
    assert summary_budget(10_000) == 2000
    assert summary_budget(1_000_000) == 4000


def test_echoed_summaries_are_refused() -> None:
    with pytest.raises(InvalidMessage, match="reserved"):
        check_not_synthetic(Message.user("x", id="compaction_abc"))
    with pytest.raises(InvalidMessage, match=SUMMARY_KEY):
        check_not_synthetic(Message.user("x", metadata={SUMMARY_KEY: {}}))
    keep = Message.user("fine")
    assert check_not_synthetic(keep) is keep
    assert drop_synthetic([Message.user("x", id="compaction_1"), keep]) == [keep]


# ------------------------------------------------------------------ generated histories


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    path: list[Message] = []
    open_calls: list[str] = []
    for index in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "result"]))
        if kind == "calls":
            ids = [f"c{index}-{k}" for k in range(draw(st.integers(1, 3)))]
            path.append(Message.assistant(tool_calls=[ToolCallPart(id=i, name="t") for i in ids]))
            open_calls.extend(ids)
        elif kind == "result" and open_calls:
            taken = open_calls.pop(draw(st.integers(0, len(open_calls) - 1)))
            path.append(Message.tool(taken, "x" * draw(st.integers(0, 400))))
        elif kind == "assistant":
            path.append(Message.assistant("a " * draw(st.integers(1, 100))))
        else:
            path.append(Message.user("u " * draw(st.integers(1, 100))))
    return path


@settings(max_examples=200, deadline=None)
@given(
    histories(),
    st.integers(0, 5),
    st.integers(0, 600),
    st.integers(1, 5),
)
def test_plans_never_split_pairs_and_respect_the_budget(
    path: list[Message], head: int, budget: int, min_tail: int
) -> None:
    counter = HeuristicCounter()
    plan = plan_compaction(
        path, protect_head=head, tail_tokens=budget, min_tail=min_tail, counter=counter
    )
    if plan is None:
        return
    assert head <= plan.start < plan.end <= len(path) - min_tail
    assert not crosses(path, plan.start) and not crosses(path, plan.end)
    pending = pending_calls(path)
    compacted = {c.id for m in path[plan.start : plan.end] for c in m.tool_calls}
    assert not compacted & set(pending)
    tail = path[plan.end :]
    tail_tokens = sum(counter.count_message(m) for m in tail)
    cuts = safe_cuts(path)
    if tail_tokens > budget:
        # Over budget only when no shorter safe tail keeps min_tail messages.
        shorter = [c for c in range(plan.end + 1, len(path) - min_tail + 1) if cuts[c]]
        assert shorter == []
    else:
        # Within budget, and no longer safe tail would also fit.
        longer = [
            c
            for c in range(plan.start + 1, plan.end)
            if cuts[c] and sum(counter.count_message(m) for m in path[c:]) <= budget
        ]
        assert longer == []
