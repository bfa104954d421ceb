"""A child process for the cross-process test: `python _kv_worker.py KIND WHERE W COUNT`.

Opens its own driver and manager, prints `ready`, waits for a `go` line, then appends
COUNT messages to session `shared` in batches of 1 to 4 (ids `w{W}-{i}`, metadata
{"w": W, "i": i, "b": batch}) with a pause of up to 2 ms
between batches, and prints `done`.
"""

from __future__ import annotations

import random
import sys
import time

from _kv_helpers import open_driver

from sessionary import Message
from sessionary.kv import IncrementalSessionManager

FREQUENCY = 7


def batch_sizes(worker: int, count: int) -> list[int]:
    """The sizes of the batches worker `worker` appends, 1 to 4 each, `count` in all."""
    rng, sizes, done = random.Random(worker), [], 0
    while done < count:
        sizes.append(min(rng.randint(1, 4), count - done))
        done += sizes[-1]
    return sizes


def write(manager: IncrementalSessionManager, worker: int, count: int) -> None:
    """Append worker `worker`'s `count` messages to session `shared`, as described above."""
    pause = random.Random(-worker)
    i = 0
    for batch, size in enumerate(batch_sizes(worker, count)):
        messages = [
            Message.user(
                f"w{worker}-{k}", id=f"w{worker}-{k}", metadata={"w": worker, "i": k, "b": batch}
            )
            for k in range(i, i + size)
        ]
        manager.append_messages("shared", messages)
        i += size
        time.sleep(pause.random() * 0.002)  # think, as an agent does, so writers interleave


def main(kind: str, where: str, worker: int, count: int) -> None:
    driver = open_driver(kind, where)
    manager = IncrementalSessionManager(driver, snapshot_frequency=FREQUENCY)
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("expected go")
    write(manager, worker, count)
    driver.close()
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
