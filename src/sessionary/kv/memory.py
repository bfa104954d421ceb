"""The in-memory driver: a dict and a sorted key list, for tests and single processes.

`MemoryDriver` is thread-safe: one lock makes every call, `commit` included, atomic.
`AsyncMemoryDriver` runs the same code inline (no call blocks, so none needs a thread).
The data lives and dies with the driver object.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping

from sessionary.kv.keys import check_key, check_prefix, check_value, prefix_end

__all__ = ["AsyncMemoryDriver", "MemoryDriver"]


def _check_writes(
    expect: Mapping[str, str | None], writes: Mapping[str, str | None]
) -> dict[str, str | None]:
    for key, value in expect.items():
        check_key(key)
        if value is not None:
            check_value(value)
    return {check_key(k): None if v is None else check_value(v) for k, v in writes.items()}


class MemoryDriver:
    """A process-local, thread-safe key-value driver."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, str] = {}
        self._keys: list[str] = []  # sorted, for prefix listing in key order

    def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        check_key(key)
        with self._lock:
            return self._values.get(key)

    def put(self, key: str, value: str) -> None:
        """Store `value` under `key`."""
        self.commit({}, {key: value})

    def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        check_key(key)
        with self._lock:
            return self._remove(key)

    def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every entry whose key starts with `prefix`, in key order."""
        end = prefix_end(check_prefix(prefix))
        with self._lock:
            lo = bisect.bisect_left(self._keys, prefix)
            hi = len(self._keys) if end is None else bisect.bisect_left(self._keys, end)
            return [(key, self._values[key]) for key in self._keys[lo:hi]]

    def commit(self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]) -> bool:
        """Apply `writes` if every key in `expect` holds its value; see `KVDriver.commit`."""
        checked = _check_writes(expect, writes)
        with self._lock:
            if any(self._values.get(k) != v for k, v in expect.items()):
                return False
            for key, value in checked.items():
                if value is None:
                    self._remove(key)
                else:
                    self._store(key, value)
            return True

    def close(self) -> None:
        """Do nothing: the data stays readable until the driver is dropped."""

    def _store(self, key: str, value: str) -> None:
        if key not in self._values:
            bisect.insort(self._keys, key)
        self._values[key] = value

    def _remove(self, key: str) -> bool:
        if self._values.pop(key, None) is None:
            return False
        del self._keys[bisect.bisect_left(self._keys, key)]
        return True


class AsyncMemoryDriver:
    """The async face of `MemoryDriver`; every call runs inline and never blocks."""

    def __init__(self) -> None:
        self.sync = MemoryDriver()

    async def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        return self.sync.get(key)

    async def put(self, key: str, value: str) -> None:
        """Store `value` under `key`."""
        self.sync.put(key, value)

    async def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        return self.sync.delete(key)

    async def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every entry whose key starts with `prefix`, in key order."""
        return self.sync.list_prefix(prefix)

    async def commit(
        self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool:
        """Apply `writes` if every key in `expect` holds its value; see `AsyncKVDriver.commit`."""
        return self.sync.commit(expect, writes)

    async def close(self) -> None:
        """Do nothing: the data stays readable until the driver is dropped."""
