"""A quick probe of single-writer append rates against the raw drivers (for iteration).

    python bench/probe_appends.py [postgres,mysql,redis] [seconds per block] [rounds]

Runs only the 1-writer append cells of `bench/servers.py`, interleaved, and prints each
library's rate and its share of the raw driver's. No report is written; use
`scripts/bench-servers` for the table.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.servers import BACKENDS
from bench.srv_common import Cell, run_block


def probe(name: str, seconds: float, rounds: int) -> None:
    backend = BACKENDS[name]()
    if (problem := backend.problem()) is not None:
        print(f"{name}: {problem}")
        return
    backend.setup()
    try:
        cells = []
        for key, label, raw in backend.libs:
            cell = Cell(name, key, label, 1, "single", raw)
            cell.handles.append(backend.writer(key, backend.new_session(key)))
            cells.append(cell)
        order = random.Random(name)
        for _ in range(rounds):
            for cell in order.sample(cells, len(cells)):
                run_block(cell, seconds)
        base = next(c.rate for c in cells if c.is_raw) or 1.0
        for cell in cells:
            rate = cell.rate or 0.0
            print(
                f"{name:8} {cell.label:55} {rate:8,.0f}/s {100 * rate / base:5.0f}%  {cell.error}"
            )
    finally:
        backend.close_all()
        backend.teardown()


def main() -> None:
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else list(BACKENDS)
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for name in names:
        probe(name, seconds, rounds)


if __name__ == "__main__":
    main()
