"""The peers: OpenAI Agents SDK ``SQLiteSession`` and LangGraph's ``SqliteSaver``.

Both are imported lazily: they live only in the benchmark's own virtualenv (``.venv-bench``).

LangGraph is driven through the saver API, the way a compiled graph whose state is
``MessagesState`` (``messages: Annotated[list, add_messages]``) drives it: every new message
produces a checkpoint whose ``channel_values["messages"]`` holds the whole accumulated list, and
``get_tuple`` reads the latest checkpoint back. This is a lower bound on a real graph's cost: a
real ``invoke`` writes at least two checkpoints plus pending writes per turn, and
``add_messages`` rebuilds the list (an id lookup per message) on every step.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence
from typing import Any

from bench.subject import RECENT, AsyncSubject, SyncSubject, sqlite_pragmas
from bench.workload import Turn

__all__ = ["AgentsSession", "LangGraphSaver"]


class AgentsSession(AsyncSubject):
    key = "agents"
    label = "openai-agents SQLiteSession (async)"
    filename = "agents.db"

    def prepare(self, turn: Turn) -> dict[str, str]:
        return {"role": turn.role, "content": turn.text}

    async def aopen(self) -> None:
        from agents import SQLiteSession

        self.session = SQLiteSession("bench", db_path=self.path)

    def durability(self) -> dict[str, str]:
        # SQLiteSession keeps one connection per worker thread and configures each the same
        # way; asking for this thread's connection opens one configured exactly like those.
        opener = getattr(self.session, "_get_connection", None)  # private; may be renamed
        if opener is None:
            return {"journal_mode": "?", "synchronous": "?", "source": "not observable"}
        found = sqlite_pragmas(opener())
        return {**found, "source": "PRAGMA on a connection SQLiteSession opened"}

    async def afill(self, turns: Sequence[Turn]) -> None:
        await self.session.add_items([self.prepare(turn) for turn in turns])

    async def aclose(self) -> None:
        self.session.close()

    async def append(self, item: Any) -> None:
        await self.session.add_items([item])

    async def recent(self) -> int:
        return len(await self.session.get_items(limit=RECENT))

    async def full(self) -> int:
        return len(await self.session.get_items())


class LangGraphSaver(SyncSubject):
    key = "langgraph"
    label = "LangGraph SqliteSaver (sync)"
    filename = "langgraph.db"

    def open(self) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.conn = sqlite3.connect(self.path, check_same_thread=False)
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()
        self.thread = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
        self.config = self.thread
        self.messages: list[Any] = []
        self.step = -1
        self.version: str | None = None

    def durability(self) -> dict[str, str]:
        found = sqlite_pragmas(self.conn)
        return {**found, "source": "PRAGMA on the saver's connection after `setup()`"}

    def close(self) -> None:
        self.conn.close()

    def prepare(self, turn: Turn) -> Any:
        from langchain_core.messages import AIMessage, HumanMessage

        kind = HumanMessage if turn.role == "user" else AIMessage
        return kind(content=turn.text, id=str(uuid.uuid4()))

    def fill(self, turns: Sequence[Turn]) -> None:
        # Building depth writes only the latest checkpoint (see fill_done): a real thread would
        # also hold one earlier checkpoint per message, each with the list as it was then.
        self.messages.extend(self.prepare(turn) for turn in turns)

    def fill_done(self) -> None:
        self._put()

    def append(self, item: Any) -> None:
        self.messages.append(item)
        self._put()

    def _put(self) -> None:
        from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

        self.step += 1
        self.version = self.saver.get_next_version(self.version, None)
        base = empty_checkpoint()
        base["channel_versions"] = {"messages": self.version}
        base["channel_values"] = {"messages": self.messages}
        checkpoint = create_checkpoint(base, None, self.step)
        metadata: Any = {"source": "loop", "step": self.step, "parents": {}}
        self.config = self.saver.put(self.config, checkpoint, metadata, {"messages": self.version})

    def _latest_messages(self) -> list[Any]:
        found = self.saver.get_tuple(self.thread)
        if found is None:
            return []
        messages: list[Any] = found.checkpoint["channel_values"]["messages"]
        return messages

    def recent(self) -> int:
        # A checkpoint is read whole: there is no way to fetch only its last messages.
        return len(self._latest_messages()[-RECENT:])

    def full(self) -> int:
        return len(self._latest_messages())
