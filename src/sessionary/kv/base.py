"""The key-value driver protocol, and the scoped wrapper that gives each tenant its own keys.

A driver stores string values under string keys. It needs five operations: `get`, `put`,
`delete`, `list_prefix` (every entry whose key starts with a prefix, in key order, read
at one instant) and `commit`, an atomic compare-and-set over several keys that is the only
primitive the session manager needs to stay correct across processes. Drivers:
`AsyncMemoryDriver` (one process), `AsyncSQLiteDriver` (one file, any number of
processes) and `AsyncRedisDriver` (one server); any object with these methods will do.

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

__all__ = ["AsyncKVDriver", "AsyncScopedDriver"]

_ERASE_BATCH = 500
"""Keys deleted per commit by `AsyncScopedDriver.erase`."""


class AsyncKVDriver(Protocol):
    """What a key-value backend implements; `tests/kv` pins the exact behaviour."""

    async def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        ...

    async def put(self, key: str, value: str) -> None:
        """Store `value` under `key`, replacing any value there."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        ...

    async def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every `(key, value)` whose key starts with `prefix`, in key order.

        The entries are read atomically: a concurrent `commit` is seen whole or not at all.
        """
        ...

    async def commit(
        self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool:
        """Compare and set, over several keys at once.

        If every key in `expect` holds the value given (None: the key is absent), apply
        every write (a value to store, or None to delete the key) and return True; else
        change nothing and return False. Other writers see all of the writes or none.
        """
        ...

    async def close(self) -> None:
        """Release the driver's connections; it is unusable afterwards."""
        ...


class AsyncScopedDriver:
    """A view of another driver that holds only one tenant's keys.

    Every key is stored as `tenant:<length>:<tenant>:<key>`. Because the tenant's length
    comes first, no tenant id (not even one holding `:`) yields a prefix of another
    tenant's keys, and since every key passes through the prefix, no key can reach out of
    the namespace. Many scoped views share one driver; closing a view leaves it open.
    """

    def __init__(self, driver: AsyncKVDriver, tenant: str) -> None:
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

    async def get(self, key: str) -> str | None:
        """Return the value stored under `key` in this tenant, or None."""
        return await self._driver.get(self._key(key))

    async def put(self, key: str, value: str) -> None:
        """Store `value` under `key` in this tenant."""
        await self._driver.put(self._key(key), value)

    async def delete(self, key: str) -> bool:
        """Remove `key` from this tenant; return whether it was there."""
        return await self._driver.delete(self._key(key))

    async def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return this tenant's entries whose key starts with `prefix`, in key order."""
        size = len(self.prefix)
        entries = await self._driver.list_prefix(self.prefix + prefix)
        return [(key[size:], value) for key, value in entries]

    async def commit(
        self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool:
        """Compare and set over several of this tenant's keys (see `AsyncKVDriver.commit`)."""
        return await self._driver.commit(
            {self._key(k): v for k, v in expect.items()},
            {self._key(k): v for k, v in writes.items()},
        )

    async def erase(self) -> int:
        """Delete every key of this tenant (its sessions, their entries and id records).

        Keys written while this runs may survive it; run it again once the tenant's
        writers have stopped.

        Returns:
            How many keys were deleted.
        """
        entries = await self._driver.list_prefix(self.prefix)
        for start in range(0, len(entries), _ERASE_BATCH):
            batch = entries[start : start + _ERASE_BATCH]
            await self._driver.commit({}, dict.fromkeys((key for key, _ in batch), None))
        return len(entries)

    async def append_loose(self, plan: LooseAppend) -> tuple[int, bool] | None:
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
        result: tuple[int, bool] | None = await inner(scoped)
        return result

    async def get_many(self, keys: list[str]) -> list[str | None] | None:
        """Forward a read of several values; None if the driver underneath has none."""
        inner = getattr(self._driver, "get_many", None)
        if inner is None:
            return None
        values: list[str | None] = await inner([self._key(key) for key in keys])
        return values

    async def read_newest(self, plan: NewestRead) -> Newest | None:
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
        found: Newest | None = await inner(scoped)
        return found

    async def roll_up_commit(
        self, roll: RollUp, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool | None:
        """Forward a merged roll-up; None if the driver underneath has none."""
        inner = getattr(self._driver, "roll_up_commit", None)
        if inner is None:
            return None
        result: bool | None = await inner(
            replace(roll, meta=self._key(roll.meta), lock=self._key(roll.lock)),
            {self._key(k): v for k, v in expect.items()},
            {self._key(k): v for k, v in writes.items()},
        )
        return result

    async def close(self) -> None:
        """Do nothing: the driver underneath is shared and stays open."""
