"""Google ADK: `SessionarySessionService` held to ADK's `BaseSessionService` contract.

The cases restate the adk-python repository's tests/unittests/sessions/test_session_service.py
(the shared contract its backends are held to), with `SessionarySessionService` (over every
sessionary backend) in place of ADK's services: same scenarios and assertions. Covered:
create/get/list/delete, list for one user and for all, app/user/session/temp state and
its sharing, temp state visible to the next event of an invocation, get_session filters
(num_recent_events incl. 0, after_timestamp, both), bytes in content and grounding
metadata, a complete event, last_update_time, partial events, an existing id, the
stale-session error (ValueError "modified in storage") for one stale writer and for two
racing copies, a markerless current session, get_user_state (empty, latest write, per
user, per app), padded session ids, `async with`, None values stored as ADK stores them.
Cases about one ADK backend's internals (SQLite URL parsing, SQLAlchemy rollbacks) have
no counterpart. Where the installed ADK (2.13) behaves differently from that file, the
case follows the installed ADK's own services: temp state stays visible in the in-memory
session for the rest of the invocation, and appending to a stale session object raises
`StaleSessionError` (as `DatabaseSessionService` does) instead of writing over another
writer's turn.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import math
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from _loop_threads import in_threads
from google.adk.agents import LlmAgent
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions._session_util import make_json_safe_state
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types

import sessionary
from sessionary.integrations.adk import (
    SessionarySessionService,
    decode_name,
    encode_name,
    event_to_message,
    message_to_event,
)


@pytest.fixture
async def session_service(
    amanager: sessionary.AsyncSessionManager,
) -> AsyncIterator[SessionarySessionService]:
    yield SessionarySessionService(amanager)


def text(value: str, role: str = "user") -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=value)])


# ---------------------------------------------------------------- ported cases


async def test_get_empty_session(session_service: SessionarySessionService) -> None:
    assert not await session_service.get_session(
        app_name="my_app", user_id="test_user", session_id="123"
    )


async def test_create_get_session(session_service: SessionarySessionService) -> None:
    state = {"key": "value"}
    session = await session_service.create_session(
        app_name="my_app", user_id="test_user", state=state
    )
    assert session.app_name == "my_app"
    assert session.user_id == "test_user"
    assert session.id
    assert session.state == state
    assert session.last_update_time <= datetime.now(UTC).timestamp()
    got = await session_service.get_session(
        app_name="my_app", user_id="test_user", session_id=session.id
    )
    assert got == session
    assert got is not None and got.last_update_time <= datetime.now(UTC).timestamp()
    await session_service.delete_session(
        app_name="my_app", user_id="test_user", session_id=session.id
    )
    assert (
        await session_service.get_session(
            app_name="my_app", user_id="test_user", session_id=session.id
        )
        is None
    )


async def test_create_and_list_sessions(session_service: SessionarySessionService) -> None:
    session_ids = ["session" + str(i) for i in range(5)]
    for session_id in session_ids:
        await session_service.create_session(
            app_name="my_app",
            user_id="test_user",
            session_id=session_id,
            state={"key": "value" + session_id},
        )
    sessions = (
        await session_service.list_sessions(app_name="my_app", user_id="test_user")
    ).sessions
    assert len(sessions) == len(session_ids)
    assert [s.id for s in sessions] == session_ids  # least recently updated first
    for session in sessions:
        assert session.state == {"key": "value" + session.id}
        assert session.events == []


async def test_list_sessions_all_users(session_service: SessionarySessionService) -> None:
    for user, sid in (("user1", "session1a"), ("user1", "session1b"), ("user2", "session2a")):
        await session_service.create_session(
            app_name="my_app", user_id=user, session_id=sid, state={"key": "value" + sid[-2:]}
        )
    sessions_1 = (await session_service.list_sessions(app_name="my_app", user_id="user1")).sessions
    assert {s.id: s.state for s in sessions_1} == {
        "session1a": {"key": "value1a"},
        "session1b": {"key": "value1b"},
    }
    sessions_2 = (await session_service.list_sessions(app_name="my_app", user_id="user2")).sessions
    assert [(s.id, s.state) for s in sessions_2] == [("session2a", {"key": "value2a"})]
    everyone = (await session_service.list_sessions(app_name="my_app", user_id=None)).sessions
    assert {s.id: (s.user_id, s.state) for s in everyone} == {
        "session1a": ("user1", {"key": "value1a"}),
        "session1b": ("user1", {"key": "value1b"}),
        "session2a": ("user2", {"key": "value2a"}),
    }
    assert (await session_service.list_sessions(app_name="other_app")).sessions == []


async def test_session_state(session_service: SessionarySessionService) -> None:
    session_11 = await session_service.create_session(
        app_name="my_app", user_id="user1", state={"key11": "value11"}, session_id="session11"
    )
    await session_service.create_session(
        app_name="my_app", user_id="user1", state={"key12": "value12"}, session_id="session12"
    )
    await session_service.create_session(app_name="my_app", user_id="user2", session_id="session2")
    assert session_11.state.get("key11") == "value11"
    event = Event(
        invocation_id="invocation",
        author="user",
        content=text("text"),
        actions=EventActions(
            state_delta={
                "app:key": "value",
                "user:key1": "value1",
                "temp:key": "temp",
                "key11": "value11_new",
            }
        ),
    )
    await session_service.append_event(session=session_11, event=event)
    assert session_11.state.get("app:key") == "value"
    assert session_11.state.get("key11") == "value11_new"
    assert session_11.state.get("user:key1") == "value1"
    # The installed ADK keeps temp keys in the in-memory session for the rest of the
    # invocation (its own InMemorySessionService does too); they are never stored.
    assert session_11.state.get("temp:key") == "temp"

    session_12 = await session_service.get_session(
        app_name="my_app", user_id="user1", session_id="session12"
    )
    assert session_12 is not None
    assert session_12.state.get("key12") == "value12"
    assert not session_12.state.get("temp:key")

    session_2 = await session_service.get_session(
        app_name="my_app", user_id="user2", session_id="session2"
    )
    assert session_2 is not None
    assert session_2.state.get("app:key") == "value"
    assert not session_2.state.get("user:key1")

    again = await session_service.get_session(
        app_name="my_app", user_id="user1", session_id="session11"
    )
    assert again is not None
    assert again.state.get("key11") == "value11_new"
    assert again.state.get("user:key1") == "value1"
    assert not again.state.get("temp:key")


async def test_create_new_session_will_merge_states(
    session_service: SessionarySessionService,
) -> None:
    session_1 = await session_service.create_session(
        app_name="my_app", user_id="user", state={"key1": "value1"}, session_id="session1"
    )
    event = Event(
        invocation_id="invocation",
        author="user",
        content=text("text"),
        actions=EventActions(
            state_delta={"app:key": "value", "user:key1": "value1", "temp:key": "temp"}
        ),
    )
    await session_service.append_event(session=session_1, event=event)
    assert session_1.state.get("app:key") == "value"
    assert session_1.state.get("key1") == "value1"
    assert session_1.state.get("user:key1") == "value1"
    assert session_1.state.get("temp:key") == "temp"  # this invocation only, as in ADK
    session_2 = await session_service.create_session(
        app_name="my_app", user_id="user", state={}, session_id="session2"
    )
    assert session_2.state.get("app:key") == "value"
    assert session_2.state.get("user:key1") == "value1"
    assert not session_2.state.get("key1")
    assert not session_2.state.get("temp:key")


async def test_app_state_is_shared_by_all_users_of_app(
    session_service: SessionarySessionService,
) -> None:
    session1 = await session_service.create_session(
        app_name="my_app", user_id="u1", session_id="s1", state={"app:k1": "v1"}
    )
    event = Event(
        invocation_id="inv1", author="user", actions=EventActions(state_delta={"app:k2": "v2"})
    )
    await session_service.append_event(session=session1, event=event)
    session2 = await session_service.create_session(
        app_name="my_app", user_id="u2", session_id="s2"
    )
    assert session2.state == {"app:k1": "v1", "app:k2": "v2"}
    got = await session_service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert got is not None
    assert got.state.get("app:k1") == "v1"
    assert got.state.get("app:k2") == "v2"


async def test_user_state_is_shared_only_by_user_sessions(
    session_service: SessionarySessionService,
) -> None:
    session1 = await session_service.create_session(
        app_name="my_app", user_id="u1", session_id="s1", state={"user:k1": "v1"}
    )
    event = Event(
        invocation_id="inv1", author="user", actions=EventActions(state_delta={"user:k2": "v2"})
    )
    await session_service.append_event(session=session1, event=event)
    session1b = await session_service.create_session(
        app_name="my_app", user_id="u1", session_id="s1b"
    )
    assert session1b.state == {"user:k1": "v1", "user:k2": "v2"}
    session2 = await session_service.create_session(
        app_name="my_app", user_id="u2", session_id="s2"
    )
    assert session2.state == {}
    assert await session_service.get_user_state(app_name="my_app", user_id="u1") == {
        "k1": "v1",
        "k2": "v2",
    }


async def test_session_state_is_not_shared(session_service: SessionarySessionService) -> None:
    session1 = await session_service.create_session(
        app_name="my_app", user_id="u1", session_id="s1", state={"sk1": "v1"}
    )
    event = Event(
        invocation_id="inv1", author="user", actions=EventActions(state_delta={"sk2": "v2"})
    )
    await session_service.append_event(session=session1, event=event)
    got = await session_service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert got is not None
    assert got.state.get("sk1") == "v1"
    assert got.state.get("sk2") == "v2"
    session1b = await session_service.create_session(
        app_name="my_app", user_id="u1", session_id="s1b"
    )
    assert session1b.state == {}


async def test_temp_state_is_not_persisted_in_state_or_events(
    session_service: SessionarySessionService,
) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u1", session_id="s1")
    event = Event(
        invocation_id="inv1",
        author="user",
        actions=EventActions(state_delta={"temp:k1": "v1", "sk": "v2"}),
    )
    await session_service.append_event(session=session, event=event)
    got = await session_service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert got is not None
    assert got.state.get("sk") == "v2"
    assert "temp:k1" not in got.state
    assert "temp:k1" not in got.events[0].actions.state_delta
    assert got.events[0].actions.state_delta.get("sk") == "v2"


async def test_get_session_respects_user_id(session_service: SessionarySessionService) -> None:
    session1 = await session_service.create_session(
        app_name="my_app", user_id="u1", session_id="s1"
    )
    await session_service.append_event(session1, Event(invocation_id="inv1", author="user"))
    await session_service.create_session(app_name="my_app", user_id="u2", session_id="s1")
    got = await session_service.get_session(app_name="my_app", user_id="u2", session_id="s1")
    assert got is not None
    assert got.user_id == "u2"
    assert len(got.events) == 0


async def test_create_session_with_existing_id_raises_error(
    session_service: SessionarySessionService,
) -> None:
    await session_service.create_session(
        app_name="my_app", user_id="test_user", session_id="existing_session"
    )
    with pytest.raises(AlreadyExistsError):
        await session_service.create_session(
            app_name="my_app", user_id="test_user", session_id="existing_session"
        )


async def test_append_event_bytes(session_service: SessionarySessionService) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    content = types.Content(
        role="user",
        parts=[types.Part.from_bytes(data=b"test_image_data", mime_type="image/png")],
    )
    grounding = types.GroundingMetadata(
        search_entry_point=types.SearchEntryPoint(sdk_blob=b"test_sdk_blob")
    )
    event = Event(
        invocation_id="invocation", author="user", content=content, grounding_metadata=grounding
    )
    await session_service.append_event(session=session, event=event)
    assert session.events[0].content == content
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None
    assert len(got.events) == 1
    assert got.events[0].content == content
    assert got.events[0].grounding_metadata == grounding


async def test_append_event_complete(session_service: SessionarySessionService) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    event = Event(
        invocation_id="invocation",
        author="user",
        content=text("test_text"),
        turn_complete=True,
        partial=False,
        actions=EventActions(artifact_delta={"file": 0}, transfer_to_agent="agent", escalate=True),
        long_running_tool_ids={"tool1"},
        error_code="error_code",
        error_message="error_message",
        interrupted=True,
        grounding_metadata=types.GroundingMetadata(web_search_queries=["query1"]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2
        ),
        citation_metadata=types.CitationMetadata(),
        custom_metadata={"custom_key": "custom_value"},
        input_transcription=types.Transcription(text="input transcription", finished=True),
        output_transcription=types.Transcription(text="output transcription", finished=True),
    )
    await session_service.append_event(session=session, event=event)
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got == session


async def test_session_last_update_time_updates_on_event(
    session_service: SessionarySessionService,
) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    original = session.last_update_time
    stamp = original + 10
    await session_service.append_event(
        session=session, event=Event(invocation_id="invocation", author="user", timestamp=stamp)
    )
    assert session.last_update_time == pytest.approx(stamp, abs=1e-6)
    refreshed = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert refreshed is not None
    assert refreshed.last_update_time == pytest.approx(stamp, abs=1e-6)
    assert refreshed.last_update_time > original


async def test_append_event_to_stale_session(session_service: SessionarySessionService) -> None:
    now = datetime.now(UTC).timestamp()
    original = await session_service.create_session(app_name="my_app", user_id="user")
    event1 = Event(
        invocation_id="inv1",
        author="user",
        timestamp=now + 1,
        actions=EventActions(state_delta={"sk1": "v1"}),
    )
    await session_service.append_event(original, event1)
    updated = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=original.id
    )
    assert updated is not None
    event2 = Event(
        invocation_id="inv2",
        author="user",
        timestamp=now + 2,
        actions=EventActions(state_delta={"sk2": "v2"}),
    )
    await session_service.append_event(updated, event2)
    assert original.last_update_time < updated.last_update_time
    assert len(original.events) == 1
    assert "sk2" not in original.state
    event3 = Event(
        invocation_id="inv3",
        author="user",
        timestamp=now + 3,
        actions=EventActions(state_delta={"sk3": "v3"}),
    )
    with pytest.raises(StaleSessionError):
        await session_service.append_event(original, event3)
    final = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=original.id
    )
    assert final is not None
    assert [e.invocation_id for e in final.events] == ["inv1", "inv2"]
    assert final.state == {"sk1": "v1", "sk2": "v2"}  # the stale write changed nothing
    await session_service.append_event(final, event3)  # re-read, then it goes through
    assert final.state.get("sk3") == "v3"


async def test_get_session_with_config(session_service: SessionarySessionService) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    for i in range(1, 6):
        await session_service.append_event(session, Event(author="user", timestamp=i))

    async def events(**config: Any) -> list[Event]:
        got = await session_service.get_session(
            app_name="my_app",
            user_id="user",
            session_id=session.id,
            config=GetSessionConfig(**config) if config else None,
        )
        assert got is not None
        return got.events

    assert len(await events()) == 5
    recent = await events(num_recent_events=3)
    assert len(recent) == 3
    assert recent[0].timestamp == 3
    after = await events(after_timestamp=4.0)
    assert len(after) == 2
    assert after[0].timestamp == 4.0
    assert not await events(after_timestamp=50)
    assert len(await events(after_timestamp=4.0, num_recent_events=3)) == 2
    assert await events(num_recent_events=0) == []


async def test_partial_events_are_not_persisted(session_service: SessionarySessionService) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    await session_service.append_event(session, Event(author="user", partial=True))
    assert len(session.events) == 0
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None and len(got.events) == 0


# ---------------------------------------------------------------- sessionary's own guarantees


async def test_appending_an_event_twice_stores_it_once(
    session_service: SessionarySessionService,
) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    event = Event(invocation_id="inv", author="user", actions=EventActions(state_delta={"n": 1}))
    await session_service.append_event(session, event)
    await session_service.append_event(session, event)
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None and len(got.events) == 1


async def test_append_to_a_deleted_session_fails(
    session_service: SessionarySessionService,
) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    await session_service.delete_session(app_name="my_app", user_id="user", session_id=session.id)
    with pytest.raises(SessionNotFoundError):
        await session_service.append_event(session, Event(author="user"))


async def test_a_new_value_replaces_the_old_one(
    session_service: SessionarySessionService,
) -> None:
    session = await session_service.create_session(
        app_name="my_app",
        user_id="user",
        state={"cfg": {"a": 1, "b": {"c": 2}}, "user:prefs": {"x": 1}},
    )
    delta = {"cfg": {"b": {"d": 3}}, "user:prefs": {"y": 2}}
    await session_service.append_event(
        session, Event(author="user", actions=EventActions(state_delta=delta))
    )
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None
    assert got.state == {"cfg": {"b": {"d": 3}}, "user:prefs": {"y": 2}}


NULLS: list[dict[str, Any]] = [
    {"gone": None, "app:a": None, "user:u": None, "kept": 1},
    {"cfg": {"x": None, "y": [None, {"z": None}]}, "gone": {"back": True}, "app:a": {"n": None}},
    {"cfg": None, "odd": {"$adk": "null"}, "odder": {"$adk": "object", "value": {"v": None}}},
    {"user:u": {"$adk": 1, "w": None}, "odd": None},
]


async def test_none_values_are_stored_as_adks_own_services_store_them(
    session_service: SessionarySessionService,
) -> None:
    # The same calls on ADK's InMemorySessionService give the same states: a None value is
    # a value (the key stays), not a deletion.
    adk = InMemorySessionService()  # type: ignore[no-untyped-call]
    ours = await session_service.create_session(
        app_name="my_app", user_id="u", session_id="s", state={"gone": 1, "cfg": {"x": 1}}
    )
    theirs = await adk.create_session(
        app_name="my_app", user_id="u", session_id="s", state={"gone": 1, "cfg": {"x": 1}}
    )
    for delta in NULLS:
        for service, session in ((session_service, ours), (adk, theirs)):
            event = Event(author="user", actions=EventActions(state_delta=dict(delta)))
            await service.append_event(session, event)
        assert ours.state == theirs.state
        got = await session_service.get_session(app_name="my_app", user_id="u", session_id="s")
        expected = await adk.get_session(app_name="my_app", user_id="u", session_id="s")
        assert got is not None and expected is not None
        assert got.state == expected.state
    assert await session_service.get_user_state(
        app_name="my_app", user_id="u"
    ) == await adk.get_user_state(app_name="my_app", user_id="u")
    created = await session_service.create_session(
        app_name="my_app", user_id="u", state={"n": None, "user:m": {"k": None}}
    )
    again = await session_service.get_session(app_name="my_app", user_id="u", session_id=created.id)
    assert again is not None and again.state["n"] is None and again.state["user:m"] == {"k": None}


async def test_names_sessionary_cannot_use_as_ids_are_kept(
    session_service: SessionarySessionService, amanager: sessionary.AsyncSessionManager
) -> None:
    session = await session_service.create_session(
        app_name="my app", user_id="ann@example.com", session_id="chat: 1"
    )
    assert (session.app_name, session.user_id, session.id) == (
        "my app",
        "ann@example.com",
        "chat: 1",
    )
    got = await session_service.get_session(
        app_name="my app", user_id="ann@example.com", session_id="chat: 1"
    )
    assert got == session
    listed = (await session_service.list_sessions(app_name="my app")).sessions
    assert [(s.user_id, s.id) for s in listed] == [("ann@example.com", "chat: 1")]
    for name in ("plain", "x.looks-encoded", "ünïcode", "a/b"):
        assert decode_name(encode_name(name, "name")) == name
    with pytest.raises(sessionary.InvalidId):
        encode_name("x" * 100 + "!", "user_id")


async def test_events_are_stored_as_searchable_messages(
    session_service: SessionarySessionService, amanager: sessionary.AsyncSessionManager
) -> None:
    session = await session_service.create_session(
        app_name="my_app", user_id="user", session_id="trip"
    )
    call = types.Part(
        function_call=types.FunctionCall(id="call-1", name="weather", args={"city": "Oslo"})
    )
    answer = types.Part(
        function_response=types.FunctionResponse(
            id="call-1", name="weather", response={"output": "snowing"}
        )
    )
    events = [
        Event(invocation_id="i", author="user", content=text("Weather in Oslo?")),
        Event(invocation_id="i", author="agent", content=types.Content(role="model", parts=[call])),
        Event(
            invocation_id="i", author="agent", content=types.Content(role="user", parts=[answer])
        ),
        Event(invocation_id="i", author="agent", content=text("It is snowing.", role="model")),
    ]
    for event in events:
        await session_service.append_event(session, event)
    stored = await amanager.for_user("user", tenant="my_app").session("trip").history()
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1].tool_calls[0].id == stored[2].tool_results[0].call_id == "call-1"
    assert [message_to_event(m) for m in stored] == events
    assert all(event_to_message(e).id == e.id for e in events)
    scoped = amanager.for_user("user", tenant="my_app")
    try:
        hits = await scoped.search("snowing")
    except sessionary.Unsupported:
        return
    assert {h.message_id for h in hits} == {stored[2].id, stored[3].id}


async def test_append_event_concurrent_stale_sessions_reject_stale_writer(
    session_service: SessionarySessionService,
) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    for i in range(3):
        latest = await session_service.get_session(
            app_name="my_app", user_id="user", session_id=session.id
        )
        assert latest is not None
        copies = [latest.model_copy(deep=True) for _ in range(2)]
        results = await asyncio.gather(
            *(
                session_service.append_event(
                    copy,
                    Event(
                        invocation_id=f"inv{i}-{k}",
                        author="user",
                        actions=EventActions(state_delta={f"sk{i}-{k}": f"v{i}-{k}"}),
                    ),
                )
                for k, copy in enumerate(copies)
            ),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, Exception)]
        assert len(errors) == 1
        assert isinstance(errors[0], ValueError) and "modified in storage" in str(errors[0])
    final = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert final is not None and len(final.events) == 3
    for i in range(3):
        values = {final.state.get(f"sk{i}-0"), final.state.get(f"sk{i}-1")}
        assert None in values and values & {f"v{i}-0", f"v{i}-1"}


async def test_append_event_allows_markerless_current_session(
    session_service: SessionarySessionService,
) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    await session_service.append_event(session, Event(invocation_id="inv1", author="user"))
    session._storage_update_marker = None
    session.last_update_time -= 0.0001
    await session_service.append_event(session, Event(invocation_id="inv2", author="user"))
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None and [e.invocation_id for e in got.events] == ["inv1", "inv2"]


async def test_temp_state_visible_across_sequential_events(
    session_service: SessionarySessionService,
) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u1")
    event = Event(
        invocation_id="inv1",
        author="agent1",
        actions=EventActions(state_delta={"temp:output": "result_from_a1"}),
    )
    await session_service.append_event(session=session, event=event)
    assert session.state.get("temp:output") == "result_from_a1"
    assert "temp:output" not in event.actions.state_delta


async def test_get_user_state(session_service: SessionarySessionService) -> None:
    assert await session_service.get_user_state(app_name="my_app", user_id="u1") == {}
    session = await session_service.create_session(app_name="my_app", user_id="u1")
    for delta in (
        {"user:profile": {"name": "Alice"}, "session_key": 1, "user:counter": 1},
        {"user:counter": 2},
    ):
        await session_service.append_event(
            session, Event(author="system", actions=EventActions(state_delta=delta))
        )
    assert await session_service.get_user_state(app_name="my_app", user_id="u1") == {
        "profile": {"name": "Alice"},
        "counter": 2,
    }
    assert not await session_service.get_user_state(app_name="my_app", user_id="u2")
    assert not await session_service.get_user_state(app_name="other_app", user_id="u1")


async def test_padded_session_id_reads_and_deletes(
    session_service: SessionarySessionService,
) -> None:
    created = await session_service.create_session(
        app_name="my_app", user_id="user", session_id="  padded  "
    )
    assert created.id == "padded"
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=" padded "
    )
    assert got is not None and got.id == "padded"
    with pytest.raises(AlreadyExistsError):
        await session_service.create_session(
            app_name="my_app", user_id="user", session_id="padded "
        )
    await session_service.delete_session(app_name="my_app", user_id="user", session_id="padded ")
    assert (
        await session_service.get_session(app_name="my_app", user_id="user", session_id="padded")
        is None
    )


async def test_a_value_json_cannot_hold_is_stored_as_adk_stores_it(
    session_service: SessionarySessionService, caplog: pytest.LogCaptureFixture
) -> None:
    # As ADK's SqliteSessionService: the value is stored as its string form, with a warning.
    session = await session_service.create_session(app_name="my_app", user_id="u")
    delta = {"ok": 1, "bad": print, "user:bad": {"f": print}}
    with caplog.at_level(logging.WARNING):
        await session_service.append_event(
            session, Event(author="a", actions=EventActions(state_delta=delta))
        )
    assert any("JSON" in r.getMessage() for r in caplog.records if r.name.startswith("sessionary"))
    assert session.state["bad"] is print  # in memory, as ADK's services leave it
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got is not None and len(got.events) == 1
    safe = make_json_safe_state(delta)
    assert got.state == safe
    assert got.events[0].actions.state_delta == safe
    await session_service.append_event(session, Event(author="a"))  # not left stale


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {"deep": [1, math.nan]}])
async def test_a_refused_state_delta_changes_nothing(
    session_service: SessionarySessionService, bad: Any
) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u", state={"ok": 0})
    await session_service.append_event(session, Event(author="a"))
    before = session.model_copy(deep=True)
    delta = {"ok": 1, "app:a": 1, "user:u": 1, "temp:t": 1, "bad": bad}
    event = Event(author="a", actions=EventActions(state_delta=dict(delta)))
    with pytest.raises(sessionary.InvalidPatch):
        await session_service.append_event(session, event)
    assert session == before
    assert session._storage_update_marker == before._storage_update_marker
    assert event.actions.state_delta.keys() == delta.keys()  # the caller's event is as given
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got is not None and got == before
    assert await session_service.get_user_state(app_name="my_app", user_id="u") == {}
    nxt = Event(author="a", actions=EventActions(state_delta={"ok": 2}))
    await session_service.append_event(session, nxt)  # the session object is still current
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got is not None and got.state == {"ok": 2} and len(got.events) == 2


async def test_concurrent_appends_on_one_session_object_are_taken_in_turn(
    session_service: SessionarySessionService,
) -> None:
    # As ADK's DatabaseSessionService (ADK's live runner appends from background tasks).
    session = await session_service.create_session(app_name="my_app", user_id="u")
    events = [
        Event(invocation_id=f"inv{i}", author="a", actions=EventActions(state_delta={f"k{i}": i}))
        for i in range(5)
    ]
    await asyncio.gather(*(session_service.append_event(session, e) for e in events))
    assert session.events == events
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got is not None
    assert got.events == events
    assert got.state == {f"k{i}": i for i in range(5)}
    stale = got.model_copy(deep=True)  # a copy that misses the next append is still stale
    await session_service.append_event(got, Event(author="a"))
    with pytest.raises(StaleSessionError):
        await session_service.append_event(stale, Event(author="a"))


ODD_CONTENTS = [
    types.Content(role="system", parts=[types.Part(text="x")]),
    types.Content(role="assistant", parts=[types.Part(text="x")]),
    types.Content(role="", parts=[types.Part(text="x")]),
    types.Content(role="USER", parts=[types.Part(text="x")]),
    types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(args={}))]),
]


@pytest.mark.parametrize("content", ODD_CONTENTS, ids=lambda c: repr(c.role))
async def test_content_the_gemini_format_refuses_is_kept_whole(
    session_service: SessionarySessionService,
    amanager: sessionary.AsyncSessionManager,
    content: types.Content,
) -> None:
    # ADK's own services store such an event and give it back equal.
    session = await session_service.create_session(app_name="my_app", user_id="u", session_id="s")
    event = Event(author="agent", content=content)
    await session_service.append_event(session, event)
    assert session.events == [event]
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id="s")
    assert got is not None and got.events == [event]
    stored = await amanager.for_user("u", tenant="my_app").session("s").history()
    assert stored[0].role == "assistant"  # the author's role: the agent's
    assert message_to_event(event_to_message(event)) == event


async def test_a_different_event_under_a_stored_id_is_refused(
    session_service: SessionarySessionService,
) -> None:
    # As ADK's persistent services (an IntegrityError there), never silently dropped.
    session = await session_service.create_session(app_name="my_app", user_id="u")
    first = Event(id="fixed", author="a", actions=EventActions(state_delta={"step": 1}))
    await session_service.append_event(session, first)
    before = session.model_copy(deep=True)
    other = Event(id="fixed", author="a", actions=EventActions(state_delta={"step": 2}))
    with pytest.raises(AlreadyExistsError, match="fixed"):
        await session_service.append_event(session, other)
    assert session == before
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got is not None and got.events == [first] and got.state == {"step": 1}
    # An equal re-delivery, even a copy on another session object, stays a no-op.
    await session_service.append_event(got, first.model_copy(deep=True))
    await session_service.append_event(session, first.model_copy(deep=True))
    assert got.events == session.events == [first]
    # Another session may hold an event with that id, as in ADK's services.
    elsewhere = await session_service.create_session(app_name="my_app", user_id="u")
    await session_service.append_event(elsewhere, other)
    again = await session_service.get_session(
        app_name="my_app", user_id="u", session_id=elsewhere.id
    )
    assert again is not None and again.events == [other]


# ---------------------------------------------------------------- closing, loops, threads


async def test_async_with_closes_and_a_later_call_reconnects(store_url: str) -> None:
    async with SessionarySessionService(store_url) as service:
        session = await service.create_session(app_name="my_app", user_id="u", session_id="s")
        await service.append_event(session, Event(invocation_id="i", author="user"))
    await asyncio.wait_for(service.close(), 60)  # again: a no-op; the bound is on a hang
    if store_url == "memory://":
        return  # a memory store reopened is a new, empty one
    got = await service.get_session(app_name="my_app", user_id="u", session_id="s")
    assert got is not None and len(got.events) == 1
    await service.close()


async def test_closing_over_the_callers_manager_leaves_it_open(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    async with SessionarySessionService(amanager) as service:
        await service.create_session(app_name="my_app", user_id="u", session_id="s")
    assert await service.get_session(app_name="my_app", user_id="u", session_id="s")
    assert await amanager.store.list_scopes()


# ---------------------------------------------------------------- a real run, resumed


class CannedLlm(BaseLlm):
    """Calls the weather tool for a new question, then answers from its result."""

    model: str = "canned"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts[-1]
        if last.function_response is not None:
            reply = f"The weather: {last.function_response.response['result']}"
            yield LlmResponse(content=text(reply, role="model"))
        elif "again" in (last.text or ""):
            yield LlmResponse(content=text(f"{len(llm_request.contents)} contents", role="model"))
        else:
            call = types.FunctionCall(id="call-1", name="weather", args={"city": "Paris"})
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )


def weather(city: str) -> str:
    """Return the weather in a city."""
    return f"sunny in {city}"


async def final_text(runner: Runner, session_id: str, question: str) -> str:
    reply = ""
    async for event in runner.run_async(
        user_id="ann", session_id=session_id, new_message=text(question)
    ):
        if event.content and event.content.parts and event.content.parts[0].text:
            reply = event.content.parts[0].text
    return reply


async def test_a_run_persists_and_resumes(shared_store_url: str) -> None:
    llm = CannedLlm()
    agent = LlmAgent(name="forecaster", model=llm, tools=[weather])
    first = SessionarySessionService(shared_store_url)
    await first.create_session(app_name="trips", user_id="ann", session_id="s1")
    runner = Runner(agent=agent, app_name="trips", session_service=first)
    assert await final_text(runner, "s1", "Weather in Paris?") == "The weather: sunny in Paris"
    await first.close()

    second = SessionarySessionService(shared_store_url)  # a new process's view
    try:
        resumed = await second.get_session(app_name="trips", user_id="ann", session_id="s1")
        assert resumed is not None
        assert [e.author for e in resumed.events] == [
            "user",
            "forecaster",
            "forecaster",
            "forecaster",
        ]
        runner = Runner(agent=agent, app_name="trips", session_service=second)
        assert await final_text(runner, "s1", "again?") == "5 contents"
    finally:
        await second.close()


def test_a_missing_adk_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.adk.sessions.base_session_service", None)
    monkeypatch.delitem(sys.modules, "sessionary.integrations.adk")
    with pytest.raises(ImportError, match=r"sessionary\[adk\]"):
        importlib.import_module("sessionary.integrations.adk")


def test_concurrent_appends_are_taken_in_turn_in_each_loop(store_url: str) -> None:
    # An asyncio lock serves one loop: each loop appending to a session needs its own.
    service = SessionarySessionService(store_url)

    async def burst(tag: str) -> list[Any]:
        session = await service.get_session(app_name="my_app", user_id="u", session_id="s")
        assert session is not None
        events = [Event(invocation_id=f"{tag}-{k}", author="a") for k in range(3)]
        appends = (service.append_event(session, event) for event in events)
        return await asyncio.gather(*appends, return_exceptions=True)

    async def stored() -> list[str]:
        got = await service.get_session(app_name="my_app", user_id="u", session_id="s")
        assert got is not None
        return [e.invocation_id for e in got.events]

    try:
        asyncio.run(service.create_session(app_name="my_app", user_id="u", session_id="s"))
        for tag in ("a", "b"):  # one loop, then another, on the same session
            assert not [r for r in asyncio.run(burst(tag)) if isinstance(r, BaseException)]
        assert asyncio.run(stored()) == [f"{tag}-{k}" for tag in "ab" for k in range(3)]
        # Loops in threads at once: each loop's appends are taken in turn, and a copy that
        # another loop's append made stale is refused, never anything worse.
        per_loop = in_threads(lambda i: asyncio.run(burst(f"t{i}")))
        results = [r for rs in per_loop for r in rs]
        assert all(isinstance(r, Event | StaleSessionError) for r in results), results
        done = [r.invocation_id for r in results if isinstance(r, Event)]
        later = asyncio.run(stored())[6:]
        assert done and sorted(later) == sorted(done)
        for i in range(len(per_loop)):  # each loop's in the order it made them
            assert [x for x in later if x.startswith(f"t{i}-")] == [
                x for x in done if x.startswith(f"t{i}-")
            ]
    finally:
        asyncio.run(service.close())


# Last in the file: a store that cannot serve several loops hangs here until the bound.
def test_one_service_from_threads_each_with_its_own_loop(store_url: str) -> None:
    service = SessionarySessionService(store_url)

    async def converse(i: int) -> None:
        session = await service.create_session(app_name="my_app", user_id=f"u{i}")
        for turn in range(2):
            event = Event(
                invocation_id=f"inv{turn}",
                author="user",
                content=text(f"hello {turn} from {i}"),
                actions=EventActions(state_delta={"turn": turn}),
            )
            await service.append_event(session, event)

    try:
        assert in_threads(lambda i: asyncio.run(converse(i))) == [None] * 5
        listed = asyncio.run(service.list_sessions(app_name="my_app")).sessions
        assert sorted(s.user_id for s in listed) == [f"u{i}" for i in range(5)]
        assert all(s.state == {"turn": 1} for s in listed)
    finally:
        asyncio.run(service.close())
