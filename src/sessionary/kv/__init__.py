"""Sessions over key-value stores: drivers, tenant scoping, and the incremental manager.

Quick start::

    from sessionary import Message
    from sessionary.kv import IncrementalSessionManager, ScopedDriver, SQLiteDriver

    raw = SQLiteDriver("sessions.db")
    sessions = IncrementalSessionManager(ScopedDriver(raw, "acme"), snapshot_frequency=25)
    sessions.append_message("chat-1", Message.user("Hi"))
    print(sessions.get_history("chat-1", 20))

Every `Async*` class has a synchronous twin with the same methods, minus the prefix.
"""

from sessionary._sync.kv.base import KVDriver, ScopedDriver
from sessionary._sync.kv.incremental import IncrementalSessionManager
from sessionary.kv._layout import KVSession
from sessionary.kv.base import AsyncKVDriver, AsyncScopedDriver
from sessionary.kv.incremental import AsyncIncrementalSessionManager
from sessionary.kv.memory import AsyncMemoryDriver, MemoryDriver
from sessionary.kv.redis import AsyncRedisDriver, RedisDriver
from sessionary.kv.sqlite import AsyncSQLiteDriver, SQLiteDriver

__all__ = [
    "AsyncIncrementalSessionManager",
    "AsyncKVDriver",
    "AsyncMemoryDriver",
    "AsyncRedisDriver",
    "AsyncSQLiteDriver",
    "AsyncScopedDriver",
    "IncrementalSessionManager",
    "KVDriver",
    "KVSession",
    "MemoryDriver",
    "RedisDriver",
    "SQLiteDriver",
    "ScopedDriver",
]
