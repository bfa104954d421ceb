"""Automatic compaction cannot thrash: feasibility, progress, the guard and its re-arm rule."""

from __future__ import annotations

from typing import Any

import pytest

import sessionary
from sessionary import CompactionPolicy, Message, ToolCallPart
from sessionary.compaction import SummaryRequest, structured_summary
from sessionary.compaction.guard import Guard, Measure, growth, over_budget
from sessionary.errors import CompactionStalled, InvalidInput


class Counting:
    """The offline summarizer, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        return structured_summary(request)


def open_manager(url: str, **settings: Any) -> sessionary.SessionManager:
    return sessionary.SessionManager(url, compaction=CompactionPolicy(**settings))


def turn(i: int) -> Message:
    if i % 2 == 0:
        return Message.user(f"turn {i}: please update lib/unit_{i}.py and check it carefully")
    return Message.assistant(f"Updated lib/unit_{i}.py and ran the tests; all green.")


# ------------------------------------------------------------------ pure


def test_settings_that_can_never_fit_are_refused() -> None:
    with pytest.raises(InvalidInput, match="reserve_tokens \\+ tail_tokens"):
        CompactionPolicy(trigger_tokens=1000, tail_tokens=700, reserve_tokens=300)
    with pytest.raises(InvalidInput, match="trigger_messages"):
        CompactionPolicy(trigger_messages=6, protect_head=3)  # head 3 + summary + tail 2
    with pytest.raises(InvalidInput, match="tail_messages"):
        CompactionPolicy(tail_messages=1, min_tail=2)
    for bad in (0, 1.5, -0.1, "half"):
        with pytest.raises(InvalidInput, match="rearm_growth"):
            CompactionPolicy(rearm_growth=bad)  # type: ignore[arg-type]
    CompactionPolicy(trigger_tokens=1000, tail_tokens=600, reserve_tokens=300)  # fits


def test_the_tail_defaults_to_half_of_what_the_trigger_leaves() -> None:
    assert CompactionPolicy().tail_budget(500) == 20_000  # no trigger: the old default
    assert CompactionPolicy(trigger_tokens=4000).tail_budget(1000) == 1500
    assert CompactionPolicy(trigger_tokens=4000).tail_budget(9000) == 0
    assert CompactionPolicy(trigger_tokens=4000, tail_tokens=900).tail_budget(1000) == 900
    assert CompactionPolicy().tail_count() is None
    assert CompactionPolicy(trigger_messages=30, protect_head=1).tail_count() == 14
    assert CompactionPolicy(trigger_messages=30, tail_messages=10).tail_count() == 10


def test_budget_and_growth() -> None:
    both = CompactionPolicy(trigger_tokens=1000, trigger_messages=40, rearm_growth=0.1)
    assert not over_budget(both, Measure(1000, 39))
    assert over_budget(both, Measure(1001, 0)) and over_budget(both, Measure(0, 40))
    assert growth(both) == Measure(100, 4)
    assert growth(CompactionPolicy(trigger_messages=7)) == Measure(0, 2)
    assert not over_budget(CompactionPolicy(), Measure(10**9, 10**9))


def test_a_guard_holds_until_the_context_grows_shrinks_or_changes_branch() -> None:
    policy = CompactionPolicy(trigger_tokens=1000)  # re-arms after 250 more tokens
    guard = Guard("m9", Measure(1200, 20), "no progress")
    ids = ["m0", "m9", "m10"]
    assert guard.holds(policy, Measure(1200, 21), ids)
    assert guard.holds(policy, Measure(1449, 30), ids)
    assert not guard.holds(policy, Measure(1450, 21), ids)  # grew enough: try again
    assert guard.speaks_for(policy, Measure(1450, 21), ids)  # ...as the same episode
    assert not guard.holds(policy, Measure(1199, 21), ids)  # shrank: lifted
    assert not guard.speaks_for(policy, Measure(1199, 21), ids)
    assert not guard.holds(policy, Measure(1300, 21), ["m0", "b1"])  # another branch
    messages = CompactionPolicy(trigger_messages=20)  # re-arms after 5 more messages
    assert guard.holds(messages, Measure(5000, 24), ids)
    assert not guard.holds(messages, Measure(0, 25), ids)


def test_a_guard_round_trips_and_a_malformed_one_is_ignored() -> None:
    guard = Guard("m1", Measure(5, 6), "why", warned=True)
    assert Guard.from_body(guard.to_body()) == guard
    assert Guard.from_body({"head": "m1"}) is None
    assert Guard.from_body({"tokens": "x", "messages": 1}) is None


# ------------------------------------------------------------------ against a store


def test_settings_that_cannot_fit_call_the_summarizer_a_bounded_few_times(
    store_url: str,
) -> None:
    counting, warnings = Counting(), []
    settings = dict(trigger_tokens=1000, tail_tokens=600, reserve_tokens=300)
    with open_manager(store_url, summarizer=counting, on_error=warnings.append, **settings) as m:
        session_id = m.create().id
        estimates = []
        for i in range(200):
            chat = m.session(session_id)  # a fresh handle each time: the guard is stored
            chat.append(turn(i))
            estimates.append(chat.estimate_tokens())
        overlays = m.session(session_id).overlays()
    # Before the guard: a summarizer call and an overlay at nearly every append (164).
    assert 1 <= counting.calls <= 20 and len(overlays) == counting.calls
    assert len(warnings) == 1 and isinstance(warnings[0], CompactionStalled)
    assert "still over budget" in str(warnings[0])
    # Still bounded: a compaction leaves about 1,200 tokens (the summary overshoots), and
    # the context grows at most a re-arm step (250) past that before the next one.
    assert max(estimates) <= 1000 + 2 * 250
    assert max(estimates[100:]) - min(estimates[100:]) <= 250 + 30


def test_a_long_session_with_sound_settings_stays_under_budget(store_url: str) -> None:
    counting, errors = Counting(), []
    with open_manager(
        store_url, trigger_tokens=1000, summarizer=counting, on_error=errors.append
    ) as manager:
        chat = manager.create()
        for i in range(200):
            chat.append(turn(i))
            assert chat.estimate_tokens() <= 1000
        assert errors == [] and 1 <= counting.calls <= 20


def test_an_impossible_compaction_is_never_attempted_and_retried_after_growth(
    store_url: str,
) -> None:
    counting, warnings = Counting(), []
    with open_manager(
        store_url,
        trigger_tokens=1000,
        protect_head=1,
        min_tail=2,
        summarizer=counting,
        on_error=warnings.append,
    ) as manager:
        chat = manager.create()
        for i in range(10):
            chat.append(turn(i))
        call = ToolCallPart(id="c1", name="shell", arguments={"cmd": "cat big.log"})
        chat.append(Message.assistant(tool_calls=[call]))
        chat.append(Message.tool("c1", "log line " * 600, name="shell"))  # ~1,600 tokens
        assert counting.calls == 0  # the big pair is the kept tail: nothing can help
        assert len(warnings) == 1 and "even with an empty summary" in str(warnings[0])
        held = before = chat.estimate_tokens()
        i = 10
        while counting.calls == 0:  # held off while the context grows...
            before = chat.estimate_tokens()
            chat.append(turn(i))
            i += 1
        # ...by the re-arm step: then the big result has left the tail and is compacted.
        assert before < held + 250 <= before + 30
        assert counting.calls == 1 and chat.estimate_tokens() <= 1000
        assert len(warnings) == 1


def test_a_failing_summarizer_is_retried_only_after_growth(store_url: str) -> None:
    class Down:
        calls = 0

        def summarize(self, request: SummaryRequest) -> str:
            Down.calls += 1
            raise RuntimeError("model down")

    errors: list[BaseException] = []
    with open_manager(
        store_url, trigger_tokens=400, summarizer=Down(), on_error=errors.append
    ) as manager:
        chat = manager.create()
        for i in range(60):
            chat.append(turn(i))
        assert chat.path_length() == 60 and chat.overlays() == []
        # About 1,000 tokens of growth past the trigger, one retry per 100 tokens.
        assert 1 <= Down.calls <= 12 and len(errors) == Down.calls


def test_the_message_trigger_keeps_the_context_short(store_url: str) -> None:
    counting, errors = Counting(), []
    with open_manager(
        store_url,
        trigger_messages=12,
        tail_messages=4,
        protect_head=1,
        summarizer=counting,
        on_error=errors.append,
    ) as manager:
        chat = manager.create()
        for i in range(60):
            chat.append(turn(i))
            assert len(chat.context_history()) < 12
        shown = chat.context_history()
        assert len(shown) == 6 and shown[1].id.startswith("compaction_")  # head, summary, 4
        assert errors == [] and counting.calls == 9
