"""The incremental session manager: sessions over any key-value driver, O(1) per append.

Each append writes one loose entry per message (and its id record) and replaces the
session's meta entry; every `snapshot_frequency` appends the loose entries are rolled
into one new append-only chunk, and `max_messages` trims the oldest chunks. A read of
the newest `limit` messages reads the meta entry and the newest `limit` loose entries at
one instant, then one `get` per chunk it still needs, newest first; a driver that can
(`read_newest`: the Redis driver, in one Lua script) reads the newest chunks in the same
step, and any other lists the meta and loose entries. Once the manager has seen the
session's meta entry, a driver with `get_many` (Redis: `MGET`) reads all of that by
the keys the entry names, with no script, and the meta entry read back says whether
the guess held. A full read is one listing.
`sessionary.kv._layout` describes the keys and `sessionary.kv._chunks` the roll-up.

Cross-process safety comes from optimistic concurrency, not from locks. A writer reads
the meta entry, plans its writes, and hands them to the driver's `commit` together with
the meta entry it read (and, for an append, "absent" for each new message id). The
driver applies the writes atomically only if nothing changed: a Lua script on Redis, a
`BEGIN IMMEDIATE` transaction on SQLite, a lock in memory. A writer that loses re-reads
and retries after a short random pause. So batches never interleave (the sequence
numbers of a batch are fixed by the meta entry it replaced), no append is lost or
duplicated, and a writer that crashes leaves nothing visible: its commit happened whole
or not at all. Leases were the alternative; they need an expiry, and a writer that
stalls past it could still write after another took over, which a commit cannot.

A roll-up is a commit of its own right after the append that made it due (or on
`snapshot_now`); if it loses a race it is simply tried again, and a crash before it only
leaves more loose entries for the next append to fold in.

The manager remembers the meta entry of each session it last wrote (or read), so an
append by the session's only writer is one `commit`, with no read first: the commit
expects the remembered entry, and if another writer changed it meanwhile the commit
fails and the append reads the entry and tries again, as it would have anyway. The
memory is only ever a guess that the commit checks. Where the manager also knows every
loose entry that goes with that meta entry (it wrote them, or listed them), an append
that makes a roll-up due (with nothing to trim) rolls up in the same commit: the seed's
"append, then the due snapshot", in one step and one round trip.

Where the driver can decide an append on its side (`append_loose`: the Redis driver,
in one Lua script), an append to a live chunked session goes there instead, with no
read and no retry: the server allocates the sequence numbers, skips stored ids and
updates the meta counters atomically, so writers sharing a session never lose a race.
The writer whose append makes a roll-up due claims it (a short-lived claim; any writer
once a second round is due, should the claimant die), and commits it with
`roll_up_commit`, which appends made meanwhile do not spoil: it needs only the rolled
entries unchanged and no other roll-up in between, and adjusts the counters on the
server. Anything else (a new, expired or old-layout session) takes the path above.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sessionary.errors import AlreadyExists, InvalidInput, PayloadTooLarge
from sessionary.ids import check_id
from sessionary.kv._backoff import AsyncBackoff
from sessionary.kv._chunks import (
    TrimWalk,
    plan_append_rolled,
    plan_migration,
    plan_roll_up,
    split,
    wants_older,
)
from sessionary.kv._layout import (
    CHUNKED,
    SEQ_DIGITS,
    Encoded,
    KVSession,
    Listing,
    LooseAppend,
    Meta,
    Newest,
    NewestRead,
    RollUp,
    SessionKeys,
    check_user,
    chunk_messages,
    chunk_of,
    decode_messages,
    encode_messages,
    history_window,
    plan_append,
)
from sessionary.kv.base import AsyncKVDriver
from sessionary.model import Message
from sessionary.records import check_patch, merge_patch
from sessionary.stores._common import DEFAULT_MAX_MESSAGE_BYTES, check_limit, check_text

__all__ = ["AsyncIncrementalSessionManager"]

_KNOWN = 1024  # sessions whose meta entry a manager remembers
_LOOSE_BYTES = 32 * 1024  # loose entries a manager remembers per session, at most


@dataclass(frozen=True, slots=True)
class _Known:
    """What a manager remembers of a session: its meta entry, and maybe its loose entries.

    Never changed, only replaced (one store into the manager's dict): a thread reading it
    while another thread's commit replaces it sees one write's meta entry and loose
    entries together. (Replaced field by field, a reader could take a new meta entry with
    the old loose entries, and roll up without an entry another thread had appended.)
    """

    text: str
    meta: Meta
    loose: list[tuple[str, str]] | None  # every loose entry, oldest first; None: unknown
    size: int = 0  # the characters of the loose entries

    def wrote(self, text: str, meta: Meta, fresh: list[tuple[str, str]] | None) -> _Known:
        """What a commit made of this: its meta entry, and its new loose entries added.

        `fresh` None means the commit rolled every loose entry up.
        """
        if fresh is None:
            return _Known(text, meta, [])
        size = self.size + sum(len(entry) for _, entry in fresh)
        if self.loose is None or size > _LOOSE_BYTES:
            return _Known(text, meta, None)
        return _Known(text, meta, [*self.loose, *fresh], size)


class AsyncIncrementalSessionManager:
    """Sessions stored incrementally in a key-value driver.

    Wrap the driver in a `AsyncScopedDriver` per tenant to keep tenants apart.
    """

    def __init__(
        self,
        driver: AsyncKVDriver,
        snapshot_frequency: int = 25,
        max_messages: int | None = None,
        *,
        ttl: float | None = None,
    ) -> None:
        """Manage the sessions stored in `driver`.

        Args:
            driver: Where the entries live.
            snapshot_frequency: Roll the loose entries into the snapshot every this many
                appended messages.
            max_messages: Keep at most this many messages, oldest dropped at each roll-up
                (a tool result whose call was dropped goes too); None keeps all.
            ttl: Seconds a session lives after its last write; None keeps it forever. An
                expired session reads as absent, and its entries are removed when its id
                is next written to (or by `delete_session`).

        Raises:
            InvalidInput: If a setting is not a positive number (`snapshot_frequency`
                a positive integer, `ttl` finite).
        """
        if snapshot_frequency is None:
            raise InvalidInput("snapshot_frequency must be a positive integer, got None")
        check_limit(snapshot_frequency, "snapshot_frequency")
        check_limit(max_messages, "max_messages")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
            raise InvalidInput(f"ttl must be a number of seconds, got {ttl!r}")
        if ttl is not None and not (ttl > 0 and math.isfinite(ttl)):
            raise InvalidInput(f"ttl must be a positive, finite number, got {ttl!r}")
        self.driver = driver
        self.snapshot_frequency = snapshot_frequency
        self.max_messages = max_messages
        self.ttl = ttl
        self._known: dict[str, _Known] = {}

    def _remember(
        self,
        keys: SessionKeys,
        text: str | None,
        meta: Meta | None,
        loose: list[tuple[str, str]] | None = None,
    ) -> None:
        """Remember a session's meta entry as last written or read (or forget it).

        `loose`, if given, must be all of the session's loose entries (a new list).
        """
        if text is None or meta is None or meta.layout != CHUNKED:
            self._known.pop(keys.session_id, None)
            return
        if len(self._known) >= _KNOWN:
            self._known.clear()
        known = _Known(text, meta, None if loose is None else [])
        self._known[keys.session_id] = known if loose is None else known.wrote(text, meta, loose)

    def _appended(
        self,
        keys: SessionKeys,
        known: _Known | None,
        text: str,
        meta: Meta,
        loose: list[tuple[str, str]] | None,
        fresh: list[tuple[str, str]] | None,
    ) -> None:
        """Remember an append's commit; `loose` were the loose entries before it.

        `known` is what the commit was planned from (None: the meta entry was read).
        """
        if known is None:
            self._remember(keys, text, meta, loose)
            known = self._known.get(keys.session_id)
        if known is not None:
            self._known[keys.session_id] = known.wrote(text, meta, fresh)

    def _recalled(self, keys: SessionKeys) -> _Known | None:
        """What is remembered of a session, if its meta entry has not expired."""
        known = self._known.get(keys.session_id)
        return None if known is None or known.meta.expired() else known

    async def append_message(self, session_id: str, message: Message) -> int:
        """Append one message; see `append_messages`.

        Raises:
            InvalidId: If the session id is not a valid id.
            InvalidMessage: If the message is malformed.
        """
        return await self.append_messages(session_id, [message])

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> int:
        """Append messages atomically, creating the session if needed.

        The batch gets consecutive sequence numbers, never interleaved with another
        writer's. Messages whose id is already stored in the session are skipped. A
        roll-up that falls due during the batch runs once, after it.

        Returns:
            How many messages were new.

        Raises:
            InvalidId: If the session id is not a valid id.
            InvalidMessage: If a message is malformed; nothing is written.
            PayloadTooLarge: If a message is too large; nothing is written.
            Conflict: If other writers kept winning for a minute.
        """
        keys = SessionKeys(check_id(session_id, "session id"))
        batch = encode_messages(messages)
        if batch:
            decided = await self._append_loose(keys, batch)
            if decided is not None:
                added, elected = decided
                if elected:
                    await self._roll_up(keys, force=False)
                return added
        added, meta = await self._commit_append(keys, batch)
        if meta is not None and meta.since_snapshot >= self.snapshot_frequency:
            await self._roll_up(keys, force=False)
        return added

    async def _append_loose(
        self, keys: SessionKeys, batch: list[Encoded]
    ) -> tuple[int, bool] | None:
        """Let the driver decide the append on its side, if it can (see `LooseAppend`).

        Returns how many messages were new and whether this writer is to roll up, or
        None: the driver has no such append, or leaves this one to the manager (a new,
        expired or old-layout session).
        """
        append = getattr(self.driver, "append_loose", None)
        if append is None:
            return None
        self._known.pop(keys.session_id, None)  # the guess would be stale from now on
        now = time.time()
        plan = LooseAppend(
            meta=keys.meta,
            loose=keys.loose,
            ids=keys.ids,
            lock=keys.lock,
            digits=SEQ_DIGITS,
            frequency=self.snapshot_frequency,
            chunks=keys.chunks if self.max_messages is None else None,
            updated_at=now,
            expires_at=None if self.ttl is None else now + self.ttl,
            message_ids=[item.id for item in batch],
            texts=[item.text for item in batch],
        )
        decided: tuple[int, bool] | None = await append(plan)
        return decided

    async def _commit_append(
        self, keys: SessionKeys, batch: list[Encoded]
    ) -> tuple[int, Meta | None]:
        """Commit the batch's unstored messages; return how many, and the new meta entry."""
        backoff = AsyncBackoff(f"append to session {keys.session_id!r}")
        known = self._recalled(keys)
        while batch:
            current: str | None
            meta: Meta | None
            moves: dict[str, str | None] = {}
            if known is not None:  # the guess: nobody else wrote since this manager did
                current, meta, loose = known.text, known.meta, known.loose
            else:
                current, meta, moves = await self._read_meta(keys)
                loose = [] if meta is None else None  # a new session has none
            new, writes, fresh = self._plan_append(keys, meta or Meta.new(None), batch, loose)
            writes.update(moves)
            expect: dict[str, str | None] = {keys.meta: current}
            expect.update((keys.message_id(item.id), None) for item in batch)
            if await self.driver.commit(expect, writes):
                self._appended(keys, known, cast(str, writes[keys.meta]), new, loose, fresh)
                return len(batch), new
            self._remember(keys, None, None)
            unstored = await self._unstored(keys, batch)
            if len(unstored) == len(batch) and known is None:
                await backoff.wait()
            batch, known = unstored, None
        return 0, None

    def _plan_append(
        self,
        keys: SessionKeys,
        meta: Meta,
        batch: list[Encoded],
        loose: list[tuple[str, str]] | None,
    ) -> tuple[Meta, dict[str, str | None], list[tuple[str, str]] | None]:
        """The new meta entry, the writes, and the new loose entries (None: rolled up)."""
        size = len(batch)
        due = meta.since_snapshot + size >= self.snapshot_frequency
        fits = self.max_messages is None or meta.count + size <= self.max_messages
        if due and fits and loose is not None:
            frequency = self.snapshot_frequency
            new, writes = plan_append_rolled(keys, meta, loose, batch, frequency, self.ttl)
            return new, writes, None
        return plan_append(keys, meta, batch, self.ttl)

    async def _unstored(self, keys: SessionKeys, batch: list[Encoded]) -> list[Encoded]:
        """The messages of `batch` whose id the session does not hold yet."""
        unstored = []
        for item in batch:
            if await self.driver.get(keys.message_id(item.id)) is None:
                unstored.append(item)
        return unstored

    async def _read_meta(
        self, keys: SessionKeys
    ) -> tuple[str | None, Meta | None, dict[str, str | None]]:
        """Read the meta entry, as text and in the chunked layout.

        Returns the text read (what a commit must expect), the meta entry (None if there
        is no session: an expired session's entries are removed), and the writes that
        move an old-layout session to chunks, to go into the caller's commit.
        """
        current = await self.driver.get(keys.meta)
        meta = Meta.decode(current)
        if meta is None and current is not None:
            await self._remove(keys)
            return None, None, {}
        if meta is None:
            return current, None, {}
        meta, moves = await self._migrated(keys, meta)
        return current, meta, moves

    async def _migrated(self, keys: SessionKeys, meta: Meta) -> tuple[Meta, dict[str, str | None]]:
        """`meta` in the chunked layout, and the writes that move an old snapshot."""
        if meta.layout == CHUNKED:
            return meta, {}
        return plan_migration(keys, meta, await self.driver.get(keys.snapshot))

    async def get_or_create(self, session_id: str, user_id: str | None = None) -> KVSession:
        """Return the session with every message, creating it (meta only) if needed.

        Raises:
            InvalidId: If an id is not valid.
            AlreadyExists: If the session exists and belongs to another user.
        """
        keys = SessionKeys(check_id(session_id, "session id"))
        user_id = check_user(user_id)
        while True:
            listing = Listing.parse(keys, await self.driver.list_prefix(keys.prefix))
            meta = Meta.decode(listing.meta_text)
            if meta is not None:
                break
            if listing.meta_text is not None:  # expired
                await self._remove(keys)
            meta = Meta.new(user_id).touched(self.ttl)
            if await self.driver.commit({keys.meta: None}, {keys.meta: meta.encode()}):
                return meta.record(session_id, [])
        if user_id is not None and meta.user_id not in (None, user_id):
            raise AlreadyExists(f"session {session_id!r} belongs to another user")
        return meta.record(session_id, decode_messages(listing.raw_messages(meta)))

    async def get_history(self, session_id: str, limit: int | None = None) -> list[Message]:
        """Return the newest `limit` messages (all by default), oldest first.

        The window widens backwards so that no tool result is shown without its call;
        a result whose call a `max_messages` trim dropped is left out. An unknown or
        expired session has no messages.

        Raises:
            InvalidId: If the session id is not a valid id.
            InvalidInput: If `limit` is not a positive integer.
        """
        keys = SessionKeys(check_id(session_id, "session id"))
        check_limit(limit)
        backoff = AsyncBackoff(f"read session {session_id!r}")
        while True:
            found = await (self._whole(keys) if limit is None else self._newest(keys, limit))
            if found is not None:
                return history_window(found, limit)
            await backoff.wait()

    async def _whole(self, keys: SessionKeys) -> list[Message]:
        """Every message of the session, read by one listing."""
        listing = Listing.parse(keys, await self.driver.list_prefix(keys.prefix))
        meta = Meta.decode(listing.meta_text)
        return [] if meta is None else decode_messages(listing.raw_messages(meta))

    async def _newest(self, keys: SessionKeys, limit: int) -> list[Message] | None:
        """The newest messages, enough for a window of `limit`; None if a trim raced us.

        The meta entry and the newest loose entries (with the newest chunks, when every
        loose entry is among them) come from one read at one instant; if the window needs
        older loose entries, the read is made again, wider. Then chunks, newest first,
        until the window cannot change. Chunks never change once written, so the only
        race is a trim deleting one: its absence makes the caller read again.
        """
        count = limit
        while True:
            found = await self._read_newest(keys, count, limit)
            meta = self._read_meta_of(keys, found.meta_text)
            if meta is None:
                return []
            if meta.layout != CHUNKED:
                return await self._whole(keys)
            if not found.more:
                return await self._older(keys, meta, found, limit)
            messages = decode_messages(chunk_messages(found.loose))
            if not wants_older(messages, limit):
                return messages
            count *= 4

    async def _read_newest(self, keys: SessionKeys, count: int, limit: int) -> Newest:
        """The meta entry and the newest `count` loose entries, by the driver if it can."""
        chunk_count = -(-limit // self.snapshot_frequency)
        guessed = await self._read_guessed(keys, count, chunk_count)
        if guessed is not None:
            return guessed
        read = getattr(self.driver, "read_newest", None)
        if read is not None:
            plan = NewestRead(
                meta=keys.meta,
                loose=keys.loose,
                chunks=keys.chunks,
                digits=SEQ_DIGITS,
                count=count,
                chunk_count=chunk_count,
            )
            found: Newest | None = await read(plan)
            if found is not None:
                return found
        return Listing.parse(keys, await self.driver.list_prefix(keys.head)).newest(count)

    async def _read_guessed(self, keys: SessionKeys, count: int, chunk_count: int) -> Newest | None:
        """The newest entries, read by the keys the remembered meta entry names.

        One `get_many`, no script: the meta entry, the newest `count` loose entries (the
        sequence numbers from `next_seq - since_snapshot` on are the loose ones) and the
        newest chunks. Only a meta entry that still holds what was remembered makes the
        rest a read of that state; one more key, the entry before the first loose one,
        must be absent (rolled up). None if the driver has no `get_many`, nothing is
        remembered, or the guess was wrong.
        """
        get_many = getattr(self.driver, "get_many", None)
        known = self._known.get(keys.session_id)
        if get_many is None or known is None:
            return None
        text, meta = known.text, known.meta
        loose = min(count, meta.since_snapshot)
        start = meta.next_seq - loose
        more = meta.since_snapshot > count
        guard = [keys.message(start - 1)] if not more and start > 0 else []
        loose_prefix = keys.loose
        wanted = [keys.meta, *guard]
        wanted += [f"{loose_prefix}{seq:0{SEQ_DIGITS}d}" for seq in range(start, meta.next_seq)]
        if not more:
            stop = max(meta.first_chunk, meta.next_chunk - chunk_count) - 1
            wanted += [keys.chunk(number) for number in range(meta.next_chunk - 1, stop, -1)]
        values: list[str | None] | None = await get_many(wanted)
        if values is None or values[0] != text or (guard and values[1] is not None):
            return None
        read = values[1 + len(guard) :]
        if None in read:
            return None
        texts = cast(list[str], read)
        return Newest(text, "[" + ",".join(texts[:loose]) + "]", more, texts[loose:])

    def _read_meta_of(self, keys: SessionKeys, text: str | None) -> Meta | None:
        """Decode a meta entry a read found (None: absent or expired); remember it.

        A driver with `get_many` then reads the session by it next time (`_read_guessed`).
        """
        known = self._known.get(keys.session_id)
        if known is not None and known.text == text:
            return None if known.meta.expired() else known.meta
        meta = Meta.decode(text)
        if meta is not None and getattr(self.driver, "get_many", None) is not None:
            self._remember(keys, text, meta)
        return meta

    async def _older(
        self, keys: SessionKeys, meta: Meta, found: Newest, limit: int
    ) -> list[Message] | None:
        """Every loose entry (`found`), then chunks newest first, as a window needs them.

        Messages are decoded only once the window needs them. `found.chunks` were read
        with `meta`; older chunks are read now.
        """
        messages: list[Message] = []
        pending = chunk_messages(found.loose)  # read, not decoded yet; oldest first
        number = meta.next_chunk - 1
        while wants_older(messages, limit):
            if not pending:
                if number < meta.first_chunk:
                    break
                offset = meta.next_chunk - 1 - number
                stored = found.chunks[offset] if offset < len(found.chunks) else None
                text = stored or await self.driver.get(keys.chunk(number))
                if text is None:
                    return None
                pending = chunk_messages(text, meta.skip if number == meta.first_chunk else 0)
                number -= 1
                continue
            wanted = limit - len(messages)
            take = wanted if wanted > 0 else len(pending)
            messages[:0] = decode_messages(pending[-take:])
            del pending[-take:]
        return messages

    async def update_state(self, session_id: str, patch: dict[str, Any]) -> dict[str, Any]:
        """Merge `patch` into the session's state (JSON merge patch) and return the result.

        Creates the session if needed.

        Raises:
            InvalidId: If the session id is not a valid id.
            InvalidPatch: If the patch is not a JSON object.
            PayloadTooLarge: If the merged state would be over the size limit of a
                message (every append rewrites the entry holding it); nothing changes.
        """
        keys = SessionKeys(check_id(session_id, "session id"))
        patch = check_patch(patch)
        backoff = AsyncBackoff(f"update the state of session {session_id!r}")
        while True:
            current, meta, writes = await self._read_meta(keys)
            meta = meta or Meta.new(None)
            new = meta.touched(self.ttl, state=merge_patch(meta.state, patch))
            writes[keys.meta] = _checked_state(new.encode(), session_id)
            if await self.driver.commit({keys.meta: current}, writes):
                self._remember(keys, writes[keys.meta], new)
                return new.state
            await backoff.wait()

    async def get_state(self, session_id: str) -> dict[str, Any]:
        """Return the session's state; `{}` if the session does not exist.

        Raises:
            InvalidId: If the session id is not a valid id.
        """
        keys = SessionKeys(check_id(session_id, "session id"))
        meta = Meta.decode(await self.driver.get(keys.meta))
        return {} if meta is None else meta.state

    async def snapshot_now(self, session_id: str) -> None:
        """Roll the loose entries into the snapshot now (e.g. before shutting down).

        Raises:
            InvalidId: If the session id is not a valid id.
        """
        await self._roll_up(SessionKeys(check_id(session_id, "session id")), force=True)

    async def _roll_up(self, keys: SessionKeys, force: bool) -> None:
        backoff = AsyncBackoff(f"roll up session {keys.session_id!r}")
        while True:
            listing = Listing.parse(keys, await self.driver.list_prefix(keys.head))
            meta = Meta.decode(listing.meta_text)
            if meta is None or not listing.loose:
                return
            if not force and meta.since_snapshot < self.snapshot_frequency:
                return
            meta, moves = await self._migrated(keys, meta)
            runs = split(listing.loose, self.snapshot_frequency)
            walk = await self._trim_walk(keys, meta, runs, moves)
            if walk is not None:
                writes = {**moves, **plan_roll_up(keys, meta, runs, walk)}
                merged = None
                if not moves and Meta.leads_counters(listing.meta_text):
                    merged = await self._roll_up_merged(keys, meta, listing, walk, writes)
                if merged is not None:
                    if merged:
                        return
                elif await self.driver.commit({keys.meta: listing.meta_text}, writes):
                    text = writes[keys.meta]
                    self._remember(keys, text, Meta.decode(text), [])
                    return
            await backoff.wait()

    async def _roll_up_merged(
        self,
        keys: SessionKeys,
        meta: Meta,
        listing: Listing,
        walk: TrimWalk,
        writes: dict[str, str | None],
    ) -> bool | None:
        """Commit a roll-up that appends made meanwhile do not spoil, if the driver can.

        Returns whether it was committed, or None if the driver has no such commit. The
        loose entries rolled must still hold what was listed, and no other roll-up may
        have run; the meta entry's counters are adjusted on the driver's side.
        """
        commit = getattr(self.driver, "roll_up_commit", None)
        if commit is None:
            return None
        self._known.pop(keys.session_id, None)
        roll = RollUp(
            meta=keys.meta,
            lock=keys.lock,
            before=(meta.first_chunk, meta.next_chunk, meta.skip),
            after=(walk.first, walk.end, walk.skip),
            rolled=len(listing.loose),
            cut=walk.cut,
        )
        rest = {key: value for key, value in writes.items() if key != keys.meta}
        done: bool | None = await commit(roll, dict(listing.loose), rest)
        return done

    async def _trim_walk(
        self,
        keys: SessionKeys,
        meta: Meta,
        runs: list[list[tuple[str, str]]],
        moves: dict[str, str | None],
    ) -> TrimWalk | None:
        """Find where `max_messages` cuts, reading the oldest chunks it reaches.

        `moves` holds chunks this roll-up is about to write (an old snapshot moving).
        Returns None if a chunk is gone (another writer trimmed first): try again.
        """
        new_chunks = [chunk_messages(chunk_of(run)) for run in runs]
        walk = TrimWalk(meta, new_chunks, self.max_messages)
        while (number := walk.wanted) is not None:
            text = moves.get(keys.chunk(number)) or await self.driver.get(keys.chunk(number))
            if text is None:
                return None
            walk.feed(number, chunk_messages(text))
        return walk

    async def delete_session(self, session_id: str) -> bool:
        """Remove every entry of the session: meta, snapshot, loose entries, id records.

        Returns:
            Whether the session existed (and had not expired).

        Raises:
            InvalidId: If the session id is not a valid id.
        """
        keys = SessionKeys(check_id(session_id, "session id"))
        existed = Meta.decode(await self.driver.get(keys.meta)) is not None
        await self._remove(keys)
        return existed

    async def erase_user(self, user_id: str) -> int:
        """Delete every session `user_id` owns (see `get_or_create`), expired ones too.

        Sessions created without a user are left. This lists every session's entries
        once, so it costs the size of the driver's (or the tenant's) data; to delete a
        whole tenant, `AsyncScopedDriver.erase` is cheaper.

        Returns:
            How many sessions were deleted.

        Raises:
            InvalidId: If the user id is not a valid id.
        """
        user_id = check_id(user_id, "user id")
        owned = [
            SessionKeys(key.split(":")[1])
            for key, value in await self.driver.list_prefix("sessions:")
            if key.endswith(":meta") and key.count(":") == 2 and _owner(value) == user_id
        ]
        for keys in owned:
            await self._remove(keys)
        return len(owned)

    async def _remove(self, keys: SessionKeys) -> None:
        """Delete every entry of a session, retrying while writers change it."""
        self._remember(keys, None, None)
        backoff = AsyncBackoff(f"delete session {keys.session_id!r}")
        while True:
            # The session's entries first, then its ids: a write between the two
            # listings changes the meta entry, so the commit below fails and retries.
            listed = await self.driver.list_prefix(keys.prefix)
            current = next((v for k, v in listed if k == keys.meta), None)
            listed += await self.driver.list_prefix(keys.ids)
            if not listed:
                return
            writes = dict.fromkeys((key for key, _ in listed), None)
            if await self.driver.commit({keys.meta: current}, writes):
                return
            await backoff.wait()


def _checked_state(meta_text: str, session_id: str) -> str:
    """`meta_text`, if its size keeps to the limit of a message.

    Raises:
        PayloadTooLarge: If it does not.
    """
    if check_text(meta_text, f"the state of session {session_id!r}") > DEFAULT_MAX_MESSAGE_BYTES:
        raise PayloadTooLarge(
            f"the state of session {session_id!r} would be over the limit of "
            f"{DEFAULT_MAX_MESSAGE_BYTES} bytes"
        )
    return meta_text


def _owner(meta_text: str) -> str | None:
    """The user a session's meta entry names (None if none, or if it is unreadable)."""
    try:
        owner = json.loads(meta_text).get("user_id")
    except (ValueError, AttributeError):
        return None
    return owner if isinstance(owner, str) else None
