# This file was generated from src/sessionary/kv/base.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""The key-value driver protocol, and the scoped wrapper that gives each tenant its own keys.

A driver stores string values under string keys. It needs five operations: `get`, `put`,
`delete`, `list_prefix` (every entry whose key starts with a prefix, in key order, read
at one instant) and `commit`, an atomic compare-and-set over several keys that is the only
primitive the session manager needs to stay correct across processes. Drivers:
`MemoryDriver` (one process), `SQLiteDriver` (one file, any number of
processes) and `RedisDriver` (one server); any object with these methods will do.

A driver may also offer two optional methods that let many writers share one session
without compare-and-set retries: `append_loose(plan)` decides an append on its side in
one step (see `sessionary.kv._layout.LooseAppend`; None leaves the append to the
manager), and `roll_up_commit(roll, expect, writes)` commits a roll-up that commutes with
such appends (see `RollUp`). A third, `read_newest(plan)`, reads the newest entries of a
session (its meta entry, its newest loose entries and chunks: see `NewestRead`) at one
instant, so that a history read costs what it returns and not the number of loose
entries; without it, the manager lists the meta and loose entries. A fourth,
`get_many(keys)`, reads several values at one instant; the manager uses it to read a
session whose meta entry it guesses (the one it last saw) with no script at all, and
checks the guess against the meta entry read. The Redis driver has all four (the first
three as Lua scripts, the last as `MGET`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from sessionary.kv._layout import LooseAppend, Newest, NewestRead, RollUp
from sessionary.kv.keys import check_key, tenant_prefix

__all__ = ["KVDriver", "ScopedDriver"]

_ERASE_BATCH = 500
"""Keys deleted per commit by `ScopedDriver.erase`."""


class KVDriver(Protocol):
    """What a key-value backend implements; `tests/kv` pins the exact behaviour."""

    def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        ...

    def put(self, key: str, value: str) -> None:
        """Store `value` under `key`, replacing any value there."""
        ...

    def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        ...

    def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every `(key, value)` whose key starts with `prefix`, in key order.

        The entries are read atomically: a concurrent `commit` is seen whole or not at all.
        """
        ...

    def commit(self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]) -> bool:
        """Compare and set, over several keys at once.

        If every key in `expect` holds the value given (None: the key is absent), apply
        every write (a value to store, or None to delete the key) and return True; else
        change nothing and return False. Other writers see all of the writes or none.
        """
        ...

    def close(self) -> None:
        """Release the driver's connections; it is unusable afterwards."""
        ...


class ScopedDriver:
    """A view of another driver that holds only one tenant's keys.

    Every key is stored as `tenant:<length>:<tenant>:<key>`. Because the tenant's length
    comes first, no tenant id (not even one holding `:`) yields a prefix of another
    tenant's keys, and since every key passes through the prefix, no key can reach out of
    the namespace. Many scoped views share one driver; closing a view leaves it open.
    """

    def __init__(self, driver: KVDriver, tenant: str) -> None:
        """Wrap `driver` for the tenant `tenant`.

        Args:
            driver: The shared driver underneath.
            tenant: The tenant's id: any non-empty string.

        Raises:
            InvalidInput: If the tenant id is empty or not a string.
        """
        self._driver = driver
        self.prefix = tenant_prefix(tenant)

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    def get(self, key: str) -> str | None:
        """Return the value stored under `key` in this tenant, or None."""
        return self._driver.get(self._key(key))

    def put(self, key: str, value: str) -> None:
        """Store `value` under `key` in this tenant."""
        self._driver.put(self._key(key), value)

    def delete(self, key: str) -> bool:
        """Remove `key` from this tenant; return whether it was there."""
        return self._driver.delete(self._key(key))

    def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return this tenant's entries whose key starts with `prefix`, in key order."""
        size = len(self.prefix)
        entries = self._driver.list_prefix(self.prefix + prefix)
        return [(key[size:], value) for key, value in entries]

    def commit(self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]) -> bool:
        """Compare and set over several of this tenant's keys (see `KVDriver.commit`)."""
        return self._driver.commit(
            {self._key(k): v for k, v in expect.items()},
            {self._key(k): v for k, v in writes.items()},
        )

    def erase(self) -> int:
        """Delete every key of this tenant (its sessions, their entries and id records).

        Keys written while this runs may survive it; run it again once the tenant's
        writers have stopped.

        Returns:
            How many keys were deleted.
        """
        entries = self._driver.list_prefix(self.prefix)
        for start in range(0, len(entries), _ERASE_BATCH):
            batch = entries[start : start + _ERASE_BATCH]
            self._driver.commit({}, dict.fromkeys((key for key, _ in batch), None))
        return len(entries)

    def append_loose(self, plan: LooseAppend) -> tuple[int, bool] | None:
        """Forward a driver-side append; None if the driver underneath has none."""
        inner = getattr(self._driver, "append_loose", None)
        if inner is None:
            return None
        scoped = replace(
            plan,
            meta=self._key(plan.meta),
            loose=self.prefix + plan.loose,
            ids=self.prefix + plan.ids,
            lock=self._key(plan.lock),
            chunks=None if plan.chunks is None else self.prefix + plan.chunks,
        )
        result: tuple[int, bool] | None = inner(scoped)
        return result

    def get_many(self, keys: list[str]) -> list[str | None] | None:
        """Forward a read of several values; None if the driver underneath has none."""
        inner = getattr(self._driver, "get_many", None)
        if inner is None:
            return None
        values: list[str | None] = inner([self._key(key) for key in keys])
        return values

    def read_newest(self, plan: NewestRead) -> Newest | None:
        """Forward a driver-side history read; None if the driver underneath has none."""
        inner = getattr(self._driver, "read_newest", None)
        if inner is None:
            return None
        scoped = replace(
            plan,
            meta=self._key(plan.meta),
            loose=self.prefix + plan.loose,
            chunks=self.prefix + plan.chunks,
        )
        found: Newest | None = inner(scoped)
        return found

    def roll_up_commit(
        self, roll: RollUp, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool | None:
        """Forward a merged roll-up; None if the driver underneath has none."""
        inner = getattr(self._driver, "roll_up_commit", None)
        if inner is None:
            return None
        result: bool | None = inner(
            replace(roll, meta=self._key(roll.meta), lock=self._key(roll.lock)),
            {self._key(k): v for k, v in expect.items()},
            {self._key(k): v for k, v in writes.items()},
        )
        return result

    def close(self) -> None:
        """Do nothing: the driver underneath is shared and stays open."""
