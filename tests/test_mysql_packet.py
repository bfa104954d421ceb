"""MySQL's `max_allowed_packet` bounds each statement (issue 13, defect 5).

The server refuses a statement of `max_allowed_packet` bytes or more and may drop the
connection. The store reads the server's setting when it starts: a message, state or
document whose statement would not fit is refused up front as `PayloadTooLarge` and
nothing is written; a batch too large for one statement is written in several, in one
transaction. The limits here are the real server's (read, never changed); the store's
own `max_message_bytes` is raised above them so that only the packet decides.
"""

from __future__ import annotations

from collections.abc import Iterator

import pymysql
import pytest

import sessionary
from sessionary import Message
from sessionary.errors import PayloadTooLarge
from sessionary.stores.mysql import connect_options

pytestmark = pytest.mark.mysql

UNDER = 4096
"""How far below the packet the largest message that must fit ends (its id, metadata
and SQL take a few hundred bytes)."""


@pytest.fixture
def packet(mysql_url: str) -> int:
    """The server's `max_allowed_packet`."""
    conn = pymysql.connect(**connect_options(mysql_url, 5, "database"))
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT @@max_allowed_packet")
            (value,) = cursor.fetchone()
    finally:
        conn.close()
    if value > 64 * 1024 * 1024:
        pytest.skip(f"max_allowed_packet is {value} bytes: too large to fill in a quick test")
    return int(value)


@pytest.fixture
def url(mysql_url: str, packet: int) -> Iterator[str]:
    """The store, with a message limit above the packet, so that the packet decides."""
    yield f"{mysql_url}?max_message_bytes={4 * packet}"


def _blob(word: str, size: int) -> str:
    """A text of `size` characters: `word`, then one long run that no index takes."""
    return f"{word} " + "x" * (size - len(word) - 1)


def _prose(size: int) -> str:
    """A text of `size` characters of short words (each also a search token)."""
    return ("pelican " * (size // 8 + 1))[:size]


def test_a_message_just_under_the_packet_is_stored(url: str, packet: int) -> None:
    with sessionary.SessionManager(url) as manager:
        session = manager.create(id="s")
        first = session.append(Message.user("first"))
        big = session.append(Message.user(_blob("pelican", packet - UNDER)))
        stored = session.get_message(big.id)
        assert stored is not None and stored.text == big.text
        # Prose: its search tokens are about as large as its text, and the search index
        # catches up by copying them on the server.
        prose = session.append(Message.user(_prose(packet * 4 // 10)))
        small = session.append(Message.user("albatross"))
        assert [m.id for m in session.history()] == [first.id, big.id, prose.id, small.id]
        assert [hit.message_id for hit in session.search("albatross")] == [small.id]
        assert session.path_length() == 4 and session.message_count() == 4


async def test_a_message_just_under_the_packet_is_stored_async(url: str, packet: int) -> None:
    async with sessionary.AsyncSessionManager(url) as manager:
        session = await manager.create(id="s")
        first = await session.append(Message.user("first"))
        big = await session.append(Message.user(_blob("pelican", packet - UNDER)))
        stored = await session.get_message(big.id)
        assert stored is not None and stored.text == big.text
        after = await session.append(Message.user("after"))
        assert [m.id for m in await session.history()] == [first.id, big.id, after.id]


def test_a_message_just_over_the_packet_is_refused_up_front(url: str, packet: int) -> None:
    with sessionary.SessionManager(url) as manager:
        session = manager.create(id="s")
        first = session.append(Message.user("first"))
        big = Message.user(_blob("pelican", packet))
        with pytest.raises(PayloadTooLarge, match="max_allowed_packet"):
            session.append(big)
        assert session.get_message(big.id) is None
        assert session.message_count() == 1
        after = session.append(Message.user("after"))
        assert [m.id for m in session.history()] == [first.id, after.id]


async def test_a_message_just_over_the_packet_is_refused_up_front_async(
    url: str, packet: int
) -> None:
    async with sessionary.AsyncSessionManager(url) as manager:
        session = await manager.create(id="s")
        first = await session.append(Message.user("first"))
        big = Message.user(_blob("pelican", packet))
        with pytest.raises(PayloadTooLarge, match="max_allowed_packet"):
            await session.append(big)
        assert await session.get_message(big.id) is None
        assert await session.message_count() == 1
        after = await session.append(Message.user("after"))
        assert [m.id for m in await session.history()] == [first.id, after.id]


def test_prose_whose_search_tokens_overflow_the_packet_is_refused(url: str, packet: int) -> None:
    # About 0.6 packet of text: under the packet itself, but its search tokens (each
    # word again, prefixed) take its INSERT over (issue 13: 8 MB on a 16 MiB server).
    with sessionary.SessionManager(url) as manager:
        session = manager.create(id="s")
        first = session.append(Message.user("first"))
        big = Message.user(_prose(packet * 6 // 10))
        with pytest.raises(PayloadTooLarge, match="max_allowed_packet"):
            session.append_all([big])
        assert session.get_message(big.id) is None
        after = session.append(Message.user("after"))
        assert [m.id for m in session.history()] == [first.id, after.id]


def test_a_batch_over_the_packet_goes_in_several_statements(url: str, packet: int) -> None:
    with sessionary.SessionManager(url) as manager:
        session = manager.create(id="s")
        first = session.append(Message.user("first"))  # the store knows the head
        stored = session.append_all(
            [Message.user(_blob(f"heron{n}", packet * 4 // 10)) for n in range(3)]
        )
        assert [m.id for m in session.history()] == [first.id, *(m.id for m in stored)]
        after = session.append(Message.user("after"))
        assert session.path_length() == 5 and session.head() == after


async def test_a_batch_over_the_packet_goes_in_several_statements_async(
    url: str, packet: int
) -> None:
    async with sessionary.AsyncSessionManager(url) as manager:
        session = await manager.create(id="s")
        stored = await session.append_all(
            [Message.user(_blob(f"heron{n}", packet * 4 // 10)) for n in range(3)]
        )
        assert [m.id for m in await session.history()] == [m.id for m in stored]
        after = await session.append(Message.user("after"))
        assert await session.path_length() == 4 and await session.head() == after


def test_a_batch_with_one_message_over_the_packet_writes_nothing(url: str, packet: int) -> None:
    with sessionary.SessionManager(url) as manager:
        session = manager.create(id="s")
        first = session.append(Message.user("first"))
        small = [Message.user(f"heron {n}") for n in range(3)]
        big = Message.user(_blob("pelican", packet))
        with pytest.raises(PayloadTooLarge, match=big.id):
            session.append_all([*small[:2], big, small[2]])
        assert [m.id for m in session.history()] == [first.id]
        assert session.message_count() == 1
        assert all(session.get_message(m.id) is None for m in small)
        assert session.append_all(small)[-1] == session.head()


def test_state_and_documents_over_the_packet_are_refused_up_front(url: str, packet: int) -> None:
    # A quote is 2 bytes of JSON and 4 once escaped in SQL: under the packet as JSON,
    # over it as a statement. A document's text goes in with its search tokens.
    quotes = '"' * (packet // 3)
    with sessionary.SessionManager(url) as manager:
        session = manager.create(id="s")
        session.update_state({"a": 1})
        with pytest.raises(PayloadTooLarge, match="max_allowed_packet"):
            session.update_state({"b": quotes})
        state = session.get_state()
        assert state.data == {"a": 1} and state.version == 1
        assert session.update_state({"c": 2}).version == 2
        store, scope, prose = manager.store, manager.scope, _prose(packet * 6 // 10)
        with pytest.raises(PayloadTooLarge, match="max_allowed_packet"):
            store.put_document(scope, "session", "s", "notes", "k", {}, prose, "me", None)
        assert store.get_document(scope, "session", "s", "notes", "k", None) is None
        done = store.put_document(scope, "session", "s", "notes", "k", {}, "short", "me", None)
        assert done.version == 1
