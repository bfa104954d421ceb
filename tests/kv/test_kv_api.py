"""The public names of `sessionary.kv`, and async/sync twins with the same methods."""

from __future__ import annotations

import inspect

import sessionary.kv as kv

TWINS = ["IncrementalSessionManager", "KVDriver", "MemoryDriver", "RedisDriver", "SQLiteDriver"]


def test_public_names() -> None:
    assert sorted(kv.__all__) == sorted(
        [*TWINS, *(f"Async{n}" for n in TWINS), "ScopedDriver", "AsyncScopedDriver", "KVSession"]
    )
    for name in kv.__all__:
        assert getattr(kv, name).__module__.startswith("sessionary.")


def _methods(cls: type) -> set[str]:
    return {n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}


def test_twins_share_method_names() -> None:
    for name in [*TWINS, "ScopedDriver"]:
        sync, asynchronous = getattr(kv, name), getattr(kv, f"Async{name}")
        assert _methods(sync) == _methods(asynchronous), name
        for method in _methods(asynchronous):
            assert inspect.iscoroutinefunction(getattr(asynchronous, method)), (name, method)
