# This file was generated from src/sessionary/stores/_sql_state.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""State on the SQL servers: the state methods of `SQLStore`, written once.

The sync twin is generated from this module (see `tools/async_to_sync.py`).

A state document is one row of `states`, keyed by level, tenant, user and owner. A write
seeds a version-0 row if none exists, then locks it (`SELECT ... FOR UPDATE`), so writers on
any connection, process or machine queue on it and no version is lost or given twice.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from sessionary.errors import InvalidInput
from sessionary.records import Scope, State, StateLevel, check_patch
from sessionary.stores import _sql_common as shared
from sessionary.stores._common import (
    check_expected_version,
    check_restore,
    empty_state,
    encode_json,
    next_state,
    state_owner,
)
from sessionary.stores._sql_common import Dialect

if TYPE_CHECKING:
    from sessionary._sync.stores._sql_driver import Transaction

__all__ = ["SQLState"]

_KeyTuple = tuple[str, str, str, str]


class SQLState:
    """The state methods of `SQLStore`, which provides the transactions."""

    max_message_bytes: int
    _dialect: Dialect

    def _begin(self) -> AbstractContextManager[Transaction]:
        """One transaction (the store's own); the store overrides it."""
        raise NotImplementedError

    def _session_pk(self, tx: Transaction, scope: Scope, session_id: str) -> int:
        """The session's key; the store overrides it (and raises if there is none)."""
        raise NotImplementedError

    def _state_key(
        self, tx: Transaction, scope: Scope, level: StateLevel, session_id: str | None
    ) -> _KeyTuple:
        owner = state_owner(level, session_id)
        if level == "session":
            self._session_pk(tx, scope, owner)
        return (level, scope.tenant, scope.user if level != "app" else "", owner)

    def _lock_state(self, tx: Transaction, key: _KeyTuple) -> State:
        """Lock a state's row, made at version 0 if missing; return what it holds."""
        seed = self._dialect.insert_ignore("states", shared.STATE_COLUMNS)
        tx.execute(seed, (*key, "{}", 0))
        row = tx.fetchone(
            f"SELECT data, version FROM states WHERE {shared.STATE_KEY} FOR UPDATE", key
        )
        assert row is not None
        return State(json.loads(row[0]), int(row[1]))

    def _write_state(self, tx: Transaction, key: _KeyTuple, text: str, version: int) -> None:
        tx.execute(
            f"UPDATE states SET data = %s, version = %s WHERE {shared.STATE_KEY}",
            (text, version, *key),
        )

    def get_state(self, scope: Scope, level: StateLevel, session_id: str | None) -> State:
        with self._begin() as tx:
            key = self._state_key(tx, scope, level, session_id)
            row = tx.fetchone(f"SELECT data, version FROM states WHERE {shared.STATE_KEY}", key)
        return empty_state() if row is None else State(json.loads(row[0]), int(row[1]))

    def update_state(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        patch: dict[str, Any],
        expected_version: int | None,
    ) -> State:
        patch = check_patch(patch)
        expected_version = check_expected_version(expected_version, InvalidInput)
        with self._begin() as tx:
            key = self._state_key(tx, scope, level, session_id)
            current = self._lock_state(tx, key)
            state, text = next_state(
                current, patch, expected_version, f"{level} state", self.max_message_bytes
            )
            self._write_state(tx, key, text, state.version)
        return state

    def restore_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, state: State
    ) -> State:
        with self._begin() as tx:
            key = self._state_key(tx, scope, level, session_id)
            if not check_restore(level, self._lock_state(tx, key), state):
                return state
            text = encode_json(state.data, f"{level} state", self.max_message_bytes)
            self._write_state(tx, key, text, state.version)
        return State(json.loads(text), state.version)
