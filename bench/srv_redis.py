"""The server benchmark's Redis backend: the redis:// store, the KV manager, raw RPUSH."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from bench.srv_common import (
    BACKGROUND,
    NO_ROLLUPS,
    OWN,
    RECENT,
    REDIS_URL,
    Backend,
    SessionaryWriter,
    Writer,
    body,
    is_loopback,
    message,
    task_name,
)
from bench.workload import conversation, read_texts


class _KVWriter(Writer):
    def __init__(self, manager: Any, session_id: str) -> None:
        super().__init__()
        self.manager = manager
        self.session_id = session_id

    def append(self) -> None:
        self.manager.append_message(self.session_id, message(self.next_turn()))

    def close(self) -> None:
        self.manager.driver.close()


class _RpushWriter(Writer):
    def __init__(self, client: Any, key: str) -> None:
        super().__init__()
        self.client = client
        self.key = key

    def append(self) -> None:
        self.client.rpush(self.key, body(self.next_turn()))

    def close(self) -> None:
        self.client.close()


class Redis(Backend):
    name = "redis"
    title = "Redis"
    libs = (
        ("store25", "sessionary redis:// store (snapshot_frequency=25)", False),
        ("storeoff", "sessionary redis:// store (roll-ups off)", False),
        ("kv25", "IncrementalSessionManager (snapshot_frequency=25)", False),
        ("kvoff", "IncrementalSessionManager (roll-ups off)", False),
        ("raw", "raw redis-py RPUSH", True),
    )
    frequency: ClassVar[dict[str, int]] = {
        "store25": 25,
        "storeoff": 0,  # the store's "never roll up"
        "kv25": 25,
        "kvoff": NO_ROLLUPS,
    }

    def problem(self) -> str | None:
        try:
            import redis
        except ImportError as exc:
            return f"redis-py is not installed: {exc}"
        try:
            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()
        except redis.RedisError as exc:
            return f"Redis at {REDIS_URL} is unreachable: {exc}"
        return None

    def setup(self) -> None:
        import redis

        from sessionary import SessionManager

        self.client = redis.Redis.from_url(REDIS_URL)
        self.closers.append(self.client.close)
        self.admins = {lib: SessionManager(self._url(lib)) for lib in ("store25", "storeoff")}
        self.closers.extend(admin.close for admin in self.admins.values())

    def _url(self, lib: str) -> str:
        """The `redis://` store URL of a library, in a namespace of its own."""
        joiner = "&" if "?" in REDIS_URL else "?"
        options = f"namespace={self.tag}_{lib}&snapshot_frequency={self.frequency[lib]}"
        return f"{REDIS_URL}{joiner}{options}"

    def _manager(self, lib: str) -> Any:
        from sessionary.kv import IncrementalSessionManager, RedisDriver

        driver = RedisDriver(REDIS_URL, namespace=f"{self.tag}_{lib}")
        return IncrementalSessionManager(driver, snapshot_frequency=self.frequency[lib])

    def new_session(self, lib: str) -> Any:
        from sessionary import new_id

        if lib in self.admins:
            return self.admins[lib].create(name="bench").id
        return new_id() if lib != "raw" else f"{self.tag}_raw:{uuid.uuid4().hex}"

    def writer(self, lib: str, session: Any) -> Writer:
        import redis

        made: Writer
        if lib == "raw":
            made = _RpushWriter(redis.Redis.from_url(REDIS_URL), session)
        elif lib in self.admins:
            made = SessionaryWriter(self._url(lib), session)
        else:
            made = _KVWriter(self._manager(lib), session)
        self.closers.append(made.close)
        return made

    def reader(self, lib: str, depth: int) -> Callable[[], int]:
        session = self.new_session(lib)
        if lib == "raw":
            for start in range(0, depth, 1000):
                turns = conversation(start, min(1000, depth - start))
                self.client.rpush(session, *[body(turn) for turn in turns])
            client = self.client
            return lambda: len([json.loads(v) for v in client.lrange(session, -RECENT, -1)])
        if lib in self.admins:
            handle = self.admins[lib].session(session)
            for start in range(0, depth, 1000):
                turns = conversation(start, min(1000, depth - start))
                handle.append_all([message(turn) for turn in turns])
            return lambda: read_texts(handle.history(limit=RECENT))
        manager = self._manager(lib)
        self.closers.append(manager.driver.close)
        for start in range(0, depth, 1000):
            turns = conversation(start, min(1000, depth - start))
            manager.append_messages(session, [message(turn) for turn in turns])
        return lambda: read_texts(manager.get_history(session, RECENT))

    def locate_server(self) -> None:
        from urllib.parse import urlsplit

        if not is_loopback(urlsplit(REDIS_URL).hostname):
            self.cpu_problem = f"the server at {REDIS_URL} is not on this machine"
            return
        self.pid = int(self.client.info("server")["process_id"])
        if task_name(self.pid) != "redis-server":
            self.cpu_problem = f"its process {self.pid} is not a `redis-server` in this /proc"
            return
        self.cpu_problem = None

    def server_tasks(self) -> dict[int, str]:
        """The main thread, which serves every client, and the background threads."""
        tasks = map(int, os.listdir(f"/proc/{self.pid}/task"))
        return {tid: OWN if tid == self.pid else BACKGROUND for tid in tasks}

    def settings(self) -> dict[str, str]:
        info = self.client.info()
        found = {"version": str(info.get("redis_version", "?"))}
        for name in ("appendonly", "appendfsync", "save"):
            found[name] = str(self.client.config_get(name).get(name, "?"))
        return found

    def teardown(self) -> None:
        keys = list(self.client.scan_iter(match=f"{self.tag}*", count=1000))
        for start in range(0, len(keys), 1000):
            self.client.delete(*keys[start : start + 1000])
