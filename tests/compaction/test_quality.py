"""Summary quality on a long realistic transcript, and a long agent loop on a fixed budget.

The transcript (tests/compaction/data/coding_session.jsonl) is made by make_transcript.py;
each message lists the file paths and identifiers it mentions.
"""

from __future__ import annotations

import json
from pathlib import Path

import sessionary
from sessionary import Message
from sessionary.compaction import SECTIONS
from sessionary.compaction.policy import CompactionPolicy

DATA = Path(__file__).parent / "data" / "coding_session.jsonl"
BUDGET = 8000


def load() -> list[Message]:
    return [Message.from_dict(json.loads(line)) for line in DATA.read_text().splitlines()]


def test_summary_keeps_every_path_and_identifier_and_fits_the_budget() -> None:
    messages = load()
    assert len(messages) > 500
    policy = CompactionPolicy(protect_head=1, tail_tokens=3000, min_tail=4)
    with sessionary.SessionManager("memory://", compaction=policy) as manager:
        chat = manager.create()
        chat.append_all(messages)
        before = chat.estimate_tokens()
        overlay = chat.compact()
        assert overlay is not None and overlay.covered > 400
        raw = chat.history(raw=True)
        compacted = raw[overlay.first_depth - 1 : overlay.last_depth]
        assert compacted[0].id == overlay.first_id and compacted[-1].id == overlay.last_id
        wanted = {
            ref
            for message in compacted
            for kind in ("files", "identifiers")
            for ref in message.metadata["refs"][kind]
        }
        assert len(wanted) > 200
        missing = sorted(ref for ref in wanted if ref not in overlay.summary)
        assert missing == []
        for section in SECTIONS:
            assert f"## {section}" in overlay.summary
        after = chat.estimate_tokens()
        assert after <= BUDGET < before
        assert overlay.tokens_after <= BUDGET


def test_thousands_of_turns_on_a_fixed_budget_stay_searchable() -> None:
    trigger = 3000
    errors: list[BaseException] = []
    policy = CompactionPolicy(
        protect_head=1, tail_tokens=1000, min_tail=2, trigger_tokens=trigger, on_error=errors.append
    )
    with sessionary.SessionManager("memory://", compaction=policy) as manager:
        chat = manager.create()
        peak = 0
        for turn in range(1000):
            chat.append(Message.user(f"turn {turn}: please update lib/unit_{turn}.py"))
            chat.append(Message.assistant(f"Updated lib/unit_{turn}.py and ran the tests."))
            peak = max(peak, chat.estimate_tokens())
        assert errors == []
        assert peak <= trigger
        assert chat.path_length() == 2000
        assert [h.message_id for h in chat.search("unit_7")][:1]
        summary = chat.history()[1]
        assert summary.id.startswith("compaction_") and "lib/unit_999.py" not in summary.text
