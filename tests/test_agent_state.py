"""Agent state: JSON round trips, optimistic saves on every backend, and saving on exit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sessionary
from sessionary import AgentState, InvalidInput, VersionConflict


def _full_state() -> AgentState:
    return AgentState(
        history_leaf="m-42",
        summary="The user wants a CSV exporter; tests pass.",
        plan={"active": True, "file": "plans/export.md"},
        tasks=[{"id": "t1", "text": "write exporter", "done": False}],
        permissions={"allow": ["read_file"], "deny": ["rm"]},
        tool_groups=["files", "shell"],
        sections={"scratch": {"n": 1, "words": ["ä", "🙂"]}},
    )


def test_json_round_trip_keeps_every_field() -> None:
    state = _full_state()
    again = AgentState.from_json(state.to_json())
    assert again == state
    assert json.loads(state.to_json())["format"] == 1


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"plan": []}',
        '{"tool_groups": [1]}',
        '{"history_leaf": 5}',
        '{"surprise": 1}',
        '{"format": 99}',
    ],
)
def test_malformed_state_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput):
        AgentState.from_json(text)


def test_a_section_json_cannot_hold_is_refused() -> None:
    with pytest.raises(InvalidInput):
        AgentState(sections={"x": object()}).to_json()


def test_a_plan_nested_too_deep_is_refused(manager: sessionary.SessionManager) -> None:
    plan: dict[str, object] = {}
    for _ in range(5000):  # a RecursionError from json.dumps before
        plan = {"step": plan}
    keeper = manager.create().agent_state()
    state = keeper.load()
    state.plan = plan
    with pytest.raises(InvalidInput, match="deeper than 100"):
        keeper.save(state)
    assert keeper.load().plan == {}


def test_save_and_resume_in_a_new_manager(manager: sessionary.SessionManager) -> None:
    session = manager.create(id="s1")
    keeper = session.agent_state()
    fresh = keeper.load()
    assert fresh == AgentState() and fresh.version == 0
    saved = keeper.save(_full_state())
    assert saved.version == 1
    resumed = manager.session("s1").agent_state().load()
    assert resumed == saved
    assert resumed.version == 1


def test_stale_saver_gets_a_conflict_and_changes_nothing(
    manager: sessionary.SessionManager,
) -> None:
    manager.create(id="s1")
    one = manager.session("s1").agent_state()
    two = manager.session("s1").agent_state()
    mine, theirs = one.load(), two.load()
    mine.summary = "mine"
    one.save(mine)
    theirs.summary = "theirs"
    with pytest.raises(VersionConflict):
        two.save(theirs)
    assert manager.session("s1").agent_state().load().summary == "mine"


def test_unchanged_state_is_not_written_again(manager: sessionary.SessionManager) -> None:
    keeper = manager.create(id="s1").agent_state()
    state = keeper.save(_full_state())
    keeper.save(state)
    state.tasks.append({"id": "t2"})
    keeper.save(state)
    assert [s.version for s in keeper.history()] == [1, 2]
    assert keeper.history()[0].tasks == _full_state().tasks


def test_agents_in_one_session_are_separate(manager: sessionary.SessionManager) -> None:
    session = manager.create(id="s1")
    session.agent_state("planner").save(AgentState(summary="plan"))
    assert session.agent_state("coder").load() == AgentState()
    with pytest.raises(InvalidInput):
        session.agent_state("bad/name")


def test_state_is_scoped(manager: sessionary.SessionManager) -> None:
    manager.create(id="s1").agent_state().save(AgentState(summary="alice"))
    other = manager.for_user("bob")
    other.create(id="s1")
    assert other.session("s1").agent_state().load() == AgentState()


async def test_async_keeper(amanager: sessionary.AsyncSessionManager) -> None:
    session = await amanager.create(id="s1")
    keeper = session.agent_state()
    state = await keeper.load()
    state.plan = {"step": 1}
    await keeper.save(state)
    again = await amanager.session("s1").agent_state().load()
    assert again.plan == {"step": 1} and again.version == 1


_SYNC_AGENT = """
import sys, time
import sessionary
from sessionary.shutdown import save_on_exit
manager = sessionary.SessionManager(sys.argv[1])
session = manager.get_or_create("s1")
keeper = session.agent_state()
state = keeper.load()
save_on_exit(keeper, lambda: state)
state.tasks.append({"id": "done-before-sigterm"})
print("ready", flush=True)
if sys.argv[2] == "wait":
    time.sleep(60)
"""

_ASYNC_AGENT = """
import asyncio, sys
import sessionary
from sessionary.shutdown import save_on_sigterm
async def main():
    manager = sessionary.AsyncSessionManager(sys.argv[1])
    session = await manager.get_or_create("s1")
    keeper = session.agent_state()
    state = await keeper.load()
    save_on_sigterm(keeper, lambda: state)
    state.tasks.append({"id": "done-before-sigterm"})
    print("ready", flush=True)
    await asyncio.sleep(60)
asyncio.run(main())
"""


def _run_agent(script: str, url: str, mode: str) -> int:
    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), url, mode],
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        if mode == "wait":
            process.send_signal(signal.SIGTERM)
        return process.wait(timeout=60)


@pytest.mark.parametrize(("script", "mode"), [(_SYNC_AGENT, "wait"), (_SYNC_AGENT, "exit"),
                                              (_ASYNC_AGENT, "wait")])  # fmt: skip
def test_state_is_saved_on_sigterm_and_at_exit(script: str, mode: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agents.db'}"
    status = _run_agent(script, url, mode)
    assert status == (-signal.SIGTERM if mode == "wait" else 0)
    with sessionary.SessionManager(url) as manager:
        state = manager.session("s1").agent_state().load()
    assert state.tasks == [{"id": "done-before-sigterm"}]
    assert state.version == 1


_LOCKED_AGENT = """
import os, signal, sys, time
import psycopg
import sessionary
from sessionary.shutdown import save_on_exit
url, raw, schema = sys.argv[1:4]
manager = sessionary.SessionManager(url)
keeper = manager.get_or_create("s1").agent_state()
state = keeper.load()
save_on_exit(keeper, lambda: state)
state.tasks.append({"id": "done-before-sigterm"})
# SIGTERM comes while the main thread is in a transaction holding a lock the save needs
# (as when it lands in the middle of a save or an append).
with psycopg.connect(raw) as conn, conn.transaction():
    conn.execute(f'LOCK TABLE "{schema}".documents IN ACCESS EXCLUSIVE MODE')
    print("ready", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)
"""


@pytest.mark.postgres
def test_sigterm_in_the_middle_of_a_transaction_still_saves_and_ends(postgres_url: str) -> None:
    """The handler saved in place, and waited forever for the lock it interrupted."""
    sessionary.SessionManager(postgres_url).close()  # the schema exists
    server, _, schema = postgres_url.rpartition("schema=")
    raw = server[:-1]  # without the '?' or '&' before the schema option
    args = [sys.executable, "-c", textwrap.dedent(_LOCKED_AGENT), postgres_url, raw]
    with subprocess.Popen([*args, schema], stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        try:
            status = process.wait(timeout=60)
        finally:
            process.kill()
    assert status == -signal.SIGTERM
    with sessionary.SessionManager(postgres_url) as manager:
        state = manager.session("s1").agent_state().load()
    assert state.tasks == [{"id": "done-before-sigterm"}]


@pytest.mark.parametrize(
    "state",
    [
        AgentState(history_leaf=5),  # type: ignore[arg-type]
        AgentState(tool_groups=[1]),  # type: ignore[list-item]
        AgentState(plan=[1]),  # type: ignore[arg-type]
        AgentState(tasks={"a": 1}),  # type: ignore[arg-type]
        AgentState(tasks=(1, 2)),  # type: ignore[arg-type]
        AgentState(sections=None),  # type: ignore[arg-type]
    ],
)
def test_a_state_no_process_could_load_is_not_saved(
    manager: sessionary.SessionManager, state: AgentState
) -> None:
    """Saving it used to succeed, and every later load (and resume) raised InvalidInput."""
    keeper = manager.create(id="s1").agent_state()
    keeper.load()
    with pytest.raises(InvalidInput, match="agent state field"):
        keeper.save(state)
    assert manager.session("s1").agent_state().load() == AgentState()
    assert keeper.history() == []


@pytest.mark.parametrize("state", [None, {"summary": "x"}, "{}"])
def test_saving_something_other_than_a_state_is_a_typed_error(
    manager: sessionary.SessionManager, state: object
) -> None:
    keeper = manager.create(id="s1").agent_state()
    with pytest.raises(InvalidInput, match="expected an AgentState"):
        keeper.save(state)  # type: ignore[arg-type]
    assert keeper.history() == []


async def test_a_cancelled_save_the_store_took_is_the_keepers_own(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    """The next save went over it; it used to raise VersionConflict over its own write."""
    session = await amanager.create(id="s1")
    keeper = session.agent_state()
    state = await keeper.load()
    for n in range(40):  # cancelled after 0, 1, 2, ... turns of the event loop
        state.summary = f"v{n}"
        task = asyncio.ensure_future(keeper.save(state))
        for _ in range(n):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        state.tasks = [n]
        await keeper.save(state)
        again = await amanager.session("s1").agent_state().load()
        assert again.same_content(state) and again.version == state.version, n


async def test_a_save_over_cancelled_ones_another_writer_saved_over_conflicts(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    session = await amanager.create(id="s1")
    mine = session.agent_state()
    state = await mine.load()
    for n in range(40):
        state.summary = f"v{n}"
        task = asyncio.ensure_future(mine.save(state))
        for _ in range(n):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    while True:  # a save of mine the store takes late makes theirs try again
        theirs = session.agent_state()
        their_state = await theirs.load()
        their_state.summary = "theirs"
        with contextlib.suppress(VersionConflict):
            await theirs.save(their_state)
            break
    state.tasks = ["mine"]
    with pytest.raises(VersionConflict):
        await mine.save(state)
    assert (await session.agent_state().load()).summary == "theirs"
