"""Generate tests/compaction/data/coding_session.jsonl: a long, realistic agent transcript.

A coding agent works through tickets in a small shop codebase: the user asks, the agent
reads files, greps, runs tests (some fail with tracebacks), edits, decides, and reports.
Each message lists the file paths and identifiers it mentions in its metadata under
``refs``, so the quality test knows what a summary must keep. Deterministic (fixed seed):

    .venv/bin/python tests/compaction/make_transcript.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "data" / "coding_session.jsonl"
MODULES = ["orders", "billing", "inventory", "shipping", "accounts", "catalog", "discounts"]
VERBS = ["parse", "validate", "compute", "load", "render", "apply", "sync", "refresh"]
NOUNS = ["config", "invoice", "stock_level", "rate_table", "session_token", "price", "coupon"]
CLASSES = ["OrderService", "InvoiceBuilder", "StockLedger", "RateCache", "TokenStore"]
CONSTANTS = ["MAX_RETRIES", "DEFAULT_TIMEOUT", "BATCH_SIZE", "TAX_RATE_EU", "CACHE_TTL"]


class Transcript:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.rows: list[dict[str, Any]] = []
        self.calls = 0

    def add(
        self, role: str, parts: list[dict[str, Any]], files: list[str], idents: list[str]
    ) -> None:
        number = len(self.rows)
        self.rows.append(
            {
                "id": f"t{number:05d}",
                "role": role,
                "parts": parts,
                "metadata": {
                    "refs": {"files": sorted(set(files)), "identifiers": sorted(set(idents))}
                },
                "created_at": f"2026-01-01T00:{number // 60 % 60:02d}:{number % 60:02d}+00:00",
            }
        )

    def call(
        self,
        name: str,
        arguments: dict[str, Any],
        output: str,
        files: list[str],
        idents: list[str],
        error: bool = False,
    ) -> None:
        self.calls += 1
        call_id = f"call_{self.calls:04d}"
        self.add(
            "assistant",
            [{"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}],
            files,
            idents,
        )
        result = {
            "type": "tool_result",
            "call_id": call_id,
            "output": output,
            "name": name,
            "is_error": error,
        }
        self.add("tool", [result], files, idents)

    def ticket(self, number: int) -> None:
        rng = self.rng
        module = rng.choice(MODULES)
        source = f"src/shop/{module}/{rng.choice(['core', 'api', 'models', 'tasks'])}_{number}.py"
        test = f"tests/{module}/test_{module}_{number}.py"
        func = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{number}"
        cls = f"{rng.choice(CLASSES)}{number}"
        const = f"{rng.choice(CONSTANTS)}_{number}"
        ticket = f"SHOP-{100 + number}"
        self.add(
            "user",
            [
                {
                    "type": "text",
                    "text": f"Ticket {ticket}: {func} in {source} returns the wrong total when "
                    f"{const} is set. Can you fix it and add a test?",
                }
            ],
            [source],
            [ticket, func, const],
        )
        self.call(
            "read_file",
            {"path": source},
            f"class {cls}:\n    def {func}(self, items):\n"
            f"        return sum(i.price for i in items) * {const}\n"
            + "    # filler line\n"
            * rng.randint(5, 30),
            [source],
            [cls, func, const],
        )
        self.call(
            "grep",
            {"pattern": func, "path": "src/shop"},
            f"{source}:2:    def {func}(self, items):",
            [source],
            [func],
        )
        failing = rng.random() < 0.6
        if failing:
            trace = (
                f'Traceback (most recent call last):\n  File "{test}", line 12\n'
                f"AssertionError: {func} returned 118.0, expected 100.0"
            )
            self.call(
                "run_command", {"command": f"pytest {test} -q"}, trace, [test], [func], error=True
            )
        self.add(
            "assistant",
            [
                {
                    "type": "text",
                    "text": f"We decided to apply {const} once per order in {cls}.{func} "
                    f"instead of per item. I will edit {source} and add {test}.",
                }
            ],
            [source, test],
            [const, cls, func],
        )
        self.call(
            "edit_file",
            {"path": source, "old": f"* {const}", "new": f"+ {const} * 0"},
            "ok",
            [source],
            [const],
        )
        self.call(
            "write_file",
            {"path": test, "content": f"def test_{func}():\n    assert {cls}().{func}([]) == 0\n"},
            "ok",
            [test],
            [func, cls],
        )
        self.call("run_command", {"command": f"pytest {test} -q"}, "1 passed", [test], [])
        self.add(
            "assistant",
            [{"type": "text", "text": f"{ticket} is fixed: {func} now passes; see {test}."}],
            [test],
            [ticket, func],
        )


def main() -> None:
    transcript = Transcript(seed=20260101)
    transcript.add(
        "user",
        [
            {
                "type": "text",
                "text": "You are helping on the shop repository. Keep changes small and tested.",
            }
        ],
        [],
        [],
    )
    for number in range(1, 41):
        transcript.ticket(number)
    OUT.parent.mkdir(exist_ok=True)
    with OUT.open("w") as out:
        for row in transcript.rows:
            out.write(json.dumps(row, sort_keys=True) + "\n")
    print(f"wrote {len(transcript.rows)} messages to {OUT}")


if __name__ == "__main__":
    main()
