"""The Redis driver: values in plain keys, a sorted-set index for ordered prefix listing.

Under a namespace `ns` (default `sessionary`), the value of key `k` lives at `ns:v:k` and
every key is a member of the sorted set `ns:index` (all scores 0), so a prefix listing is
one `ZRANGEBYLEX`, in key order. Every operation that touches more than one Redis key
runs as one Lua script or `MULTI` transaction, which Redis executes atomically: `commit`
checks the expected values and applies the writes in a single script, so compare-and-set
holds for every client of the server and no client ever sees half a commit. The scripts
name keys they compute, so the driver needs one Redis node (not a cluster).

`RedisDriver` uses `redis.Redis`; `AsyncRedisDriver` uses `redis.asyncio.Redis` on a loop
of its own (see `sessionary.stores._home_loop`), so one driver serves any event loop in
any thread. Install them with `pip install sessionary[redis]`. A commit is sent straight
down a pooled connection (see `sessionary.kv._redis_wire`), and the ordinary way if that
fails. Connecting waits at most `connect_timeout` seconds and each reply at most
`timeout`; running out of either raises `StoreUnavailable`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sessionary._optional import require
from sessionary.errors import InvalidInput, StoreError, StoreUnavailable
from sessionary.kv._layout import LooseAppend, Newest, NewestRead, RollUp
from sessionary.kv._redis_wire import (
    AsyncLane,
    Lane,
    command,
    evalsha_command,
    make_client,
    packed,
    unreachable,
)
from sessionary.kv.keys import MAX_KEY_LENGTH, check_key, check_prefix, check_value, prefix_end
from sessionary.stores._home_loop import AsyncHomeLoop
from sessionary.stores.urls import CONNECT_TIMEOUT, REQUEST_TIMEOUT, seconds_problem

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["DEFAULT_URL", "AsyncRedisDriver", "RedisDriver"]

DEFAULT_URL = "redis://localhost:6379/0"

# The writes of a script, in as few calls as Lua can pass arguments to, a thousand at a
# time: MSET `sets` (key, value, ...), ZADD `members` (0, member, ...) to the index
# (KEYS[1]), DEL `dels` and ZREM their members `gone`.
_WRITE = """
local function write(sets, members, dels, gone)
  for i = 1, #sets, 1000 do redis.call('MSET', unpack(sets, i, math.min(i + 999, #sets))) end
  for i = 1, #members, 1000 do
    redis.call('ZADD', KEYS[1], unpack(members, i, math.min(i + 999, #members)))
  end
  for i = 1, #dels, 1000 do
    local last = math.min(i + 999, #dels)
    redis.call('DEL', unpack(dels, i, last))
    redis.call('ZREM', KEYS[1], unpack(gone, i, last))
  end
end
"""

# KEYS: the index, then each key the commit names once. ARGV: two letters per key (what
# it must hold: '-' anything, '0' nothing, '1' the next value; what to do: '-' nothing,
# 'd' delete, 's' store the next value), the length of the value keys' prefix (a key
# minus it is its index member), then the expected values, then the values to store,
# each in key order. Every check comes first; then the writes (see `_WRITE`: ZADD for
# the keys that may be new).
_APPLY = (
    _WRITE
    + """
local function apply(ops, cut, a)
  local n = #KEYS
  for i = 2, n do
    local expect = string.byte(ops, 2 * i - 3)
    if expect == 48 then  -- '0'
      if redis.call('EXISTS', KEYS[i]) == 1 then return 0 end
    elseif expect == 49 then  -- '1'
      if redis.call('GET', KEYS[i]) ~= ARGV[a] then return 0 end
      a = a + 1
    end
  end
  local sets, members, dels, gone = {}, {}, {}, {}
  for i = 2, n do
    local expect, write = string.byte(ops, 2 * i - 3, 2 * i - 2)
    if write == 115 then  -- 's'
      sets[#sets + 1] = KEYS[i]
      sets[#sets + 1] = ARGV[a]
      a = a + 1
      if expect ~= 49 then
        members[#members + 1] = 0
        members[#members + 1] = string.sub(KEYS[i], cut)
      end
    elseif write == 100 then  -- 'd'
      dels[#dels + 1] = KEYS[i]
      gone[#gone + 1] = string.sub(KEYS[i], cut)
    end
  end
  write(sets, members, dels, gone)
  return 1
end
"""
)
_COMMIT = _APPLY + "return apply(ARGV[1], tonumber(ARGV[2]) + 1, 3)\n"

# The leading counters of a meta entry in the chunked layout, as `Meta.encode` writes
# them: version, next_seq, since_snapshot, count, the chunk fields, and the rest.
_HEAD = """
local HEAD = '^{"layout":2,"version":(%d+),"next_seq":(%d+),"since_snapshot":(%d+),'
  .. '"count":(%d+),("first_chunk":%d+,"next_chunk":%d+,"skip":%d+),(.*)$'
local function head(version, seq, since, count, chunks)
  return string.format('{"layout":2,"version":%d,"next_seq":%d,"since_snapshot":%d,"count":%d,',
    version, seq, since, count) .. chunks .. ','
end
"""

# A roll-up made by the append script (see `LooseAppend`): every loose entry (member
# prefix `member`, values under `vp`) goes into new chunks of at most `frequency`
# (keys `chunks` .. number), numbered from `number`. Returns the number after the last.
_FOLD = (
    _WRITE
    + """
local function fold(vp, member, chunks, pad, frequency, number)
  local found = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. member, '(' .. member .. '\\255')
  local members, values, keys = {}, {}, {}
  for _, name in ipairs(found) do
    local value = redis.call('GET', vp .. name)
    if value then
      members[#members + 1] = name
      keys[#keys + 1] = vp .. name
      values[#values + 1] = value
    end
  end
  local sets, made = {}, {}
  for i = 1, #values, frequency do
    local chunk = chunks .. string.format(pad, number)
    local last = math.min(i + frequency - 1, #values)
    sets[#sets + 1] = vp .. chunk
    sets[#sets + 1] = '[' .. table.concat(values, ',', i, last) .. ']'
    made[#made + 1] = 0
    made[#made + 1] = chunk
    number = number + 1
  end
  write(sets, made, keys, members)
  return number
end
"""
)

# An append decided on the server (see `RedisDriver.append_loose`). KEYS: the index.
# ARGV: the value keys' prefix, the meta key, the loose entries' prefix, the id records'
# prefix, the roll-up lock, the digits of a sequence number, the roll-up frequency, the
# time now, the expiry time (or 'null'), the chunks' prefix (or '' to leave a due
# roll-up to a client), the number of messages, their ids, their texts.
# Returns -1 to leave the append to the client (no session, an expired one, an old
# layout), else {messages added, whether this writer is to roll up}.
_APPEND = (
    _HEAD
    + _FOLD
    + """
local vp = ARGV[1]
local meta = redis.call('GET', vp .. ARGV[2])
if not meta then return -1 end
local version, seq, since, count, chunks, rest = string.match(meta, HEAD)
if not version then return -1 end
local expires, tail = string.match(rest, '^"updated_at":[^,]+,"expires_at":([^,]+),(.*)$')
if not expires then return -1 end
if expires ~= 'null' and tonumber(expires) <= tonumber(ARGV[8]) then return -1 end
local n, cut, pad = tonumber(ARGV[11]), #vp + 1, '%0' .. ARGV[6] .. 'd'
local added, sets, members = 0, {}, {}
seq = tonumber(seq)
for i = 1, n do
  local id = vp .. ARGV[4] .. ARGV[11 + i]
  if redis.call('EXISTS', id) == 0 then
    local number = string.format('%d', seq + added)
    local loose = vp .. ARGV[3] .. string.format(pad, seq + added)
    sets[#sets + 1] = loose
    sets[#sets + 1] = ARGV[11 + n + i]
    sets[#sets + 1] = id
    sets[#sets + 1] = number
    members[#members + 1] = 0
    members[#members + 1] = string.sub(loose, cut)
    members[#members + 1] = 0
    members[#members + 1] = string.sub(id, cut)
    added = added + 1
  end
end
if added == 0 then return {0, 0} end
for i = 1, #sets, 1000 do redis.call('MSET', unpack(sets, i, math.min(i + 999, #sets))) end
for i = 1, #members, 1000 do
  redis.call('ZADD', KEYS[1], unpack(members, i, math.min(i + 999, #members)))
end
since = tonumber(since) + added
local frequency = tonumber(ARGV[7])
local folds = since >= frequency and ARGV[10] ~= ''
if folds then
  local first, last, skip = string.match(chunks, '^"first_chunk":(%d+),"next_chunk":(%d+),(.*)$')
  last = fold(vp, ARGV[3], ARGV[10], pad, frequency, tonumber(last))
  since, chunks = 0, '"first_chunk":' .. first .. ',"next_chunk":' .. last .. ',' .. skip
end
redis.call('SET', vp .. ARGV[2], head(tonumber(version) + 1, seq + added, since,
  tonumber(count) + added, chunks) .. '"updated_at":' .. ARGV[8] .. ',"expires_at":' .. ARGV[9]
  .. ',' .. tail)
if folds then return {added, 0} end
local elected = 0
-- One writer claims the roll-up; if it died holding the claim (kept 10 s at most), any
-- writer that finds a second round of loose entries rolls up too.
if since >= 2 * frequency then
  elected = 1
elseif since >= frequency and redis.call('SET', vp .. ARGV[5], '1', 'NX', 'PX', 10000) then
  elected = 1
end
return {added, elected}
"""
)

# A roll-up merged into whatever appends happened meanwhile (see
# `RedisDriver.roll_up_commit`). KEYS and ARGV as for a commit, except that ARGV[3..8]
# are: the meta key, the roll-up lock, the chunk fields the roll-up read and those it
# sets (as the meta entry spells them), how many loose entries it rolls and how many
# messages it trims. The chunk fields must be unchanged (no other roll-up ran).
_ROLL = (
    _APPLY
    + _HEAD
    + """
local meta = redis.call('GET', ARGV[3])
if not meta then return 0 end
local version, seq, since, count, chunks, rest = string.match(meta, HEAD)
if not version or chunks ~= ARGV[5] then return 0 end
if apply(ARGV[1], tonumber(ARGV[2]) + 1, 9) == 0 then return 0 end
redis.call('SET', ARGV[3], head(tonumber(version) + 1, tonumber(seq),
  tonumber(since) - tonumber(ARGV[7]), tonumber(count) - tonumber(ARGV[8]), ARGV[6]) .. rest)
redis.call('DEL', ARGV[4])
return 1
"""
)

# A history read (see `RedisDriver.read_newest`). KEYS: the index. ARGV: the value keys'
# prefix, the meta key, the loose entries' range (its upper bound, then its lower), how
# many loose entries, the chunks' prefix, the digits of a chunk number, how many chunks.
# Returns {} if there is no meta entry, else {the meta entry, whether older loose entries
# exist, the loose entries' values (oldest first), the chunks' values (newest first)}.
# Chunks are read only when every loose entry was. (Joining the values here would cost
# the server more than the client: Lua's string building is slow.)
_NEWEST = (
    _HEAD
    + """
local vp = ARGV[1]
local meta = redis.call('GET', vp .. ARGV[2])
if not meta then return {} end
local n = tonumber(ARGV[5])
local members = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[3], ARGV[4], 'LIMIT', 0, n + 1)
local more = #members > n and 1 or 0
local values = {}
for i = math.min(#members, n), 1, -1 do
  local value = redis.call('GET', vp .. members[i])
  if value then values[#values + 1] = value end
end
local out = {meta, more, values}
if more == 1 then return out end
local _, _, _, _, chunks = string.match(meta, HEAD)
if not chunks then return out end
local first, last = string.match(chunks, '^"first_chunk":(%d+),"next_chunk":(%d+),')
local pad, last = '%0' .. ARGV[7] .. 'd', tonumber(last)
for number = last - 1, math.max(tonumber(first), last - tonumber(ARGV[8])), -1 do
  local text = redis.call('GET', vp .. ARGV[6] .. string.format(pad, number))
  if not text then break end
  out[#out + 1] = text
end
return out
"""
)

# KEYS: index. ARGV: the range's lower and upper bounds, the value keys' prefix.
_LIST = """
local members = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2])
local out = {}
for _, member in ipairs(members) do
  local value = redis.call('GET', ARGV[3] .. member)
  if value then
    out[#out + 1] = member
    out[#out + 1] = value
  end
end
return out
"""


def _import_redis() -> Any:
    return require("redis", "redis.asyncio", extra="redis", what="the Redis driver")


@contextmanager
def _mapped_errors() -> Iterator[None]:
    """Map redis-py's exceptions onto the error tree; the only place that does."""
    import redis.exceptions as rex

    try:
        yield
    except rex.RedisError as exc:
        if unreachable(exc):
            raise StoreUnavailable(f"Redis is unreachable: {exc}") from exc
        raise StoreError(f"Redis failed: {exc}") from exc


def _detour(module: Any) -> tuple[type[Exception], ...]:
    """What sends a direct commit the ordinary way: a lost script, a failed connection.

    Not a timeout: a server that stopped answering would only be asked again.
    """
    errors = module.exceptions
    return (errors.NoScriptError, errors.ConnectionError)


def _client(url: str, asynchronous: bool, connect_timeout: float, timeout: float) -> Any:
    """A client of sessionary's own for `url`, its waits checked and bounded."""
    for name, value in (("connect_timeout", connect_timeout), ("timeout", timeout)):
        problem = seconds_problem(value)
        if problem is not None:
            raise InvalidInput(f"{name} {problem}")
    return make_client(
        _import_redis(),
        url,
        asynchronous=asynchronous,
        connect_timeout=connect_timeout,
        timeout=timeout,
    )


def _string(value: object) -> str:
    """`value` if it is a string (its Unicode is checked when it is packed).

    Raises:
        InvalidInput: If it is not a string.
    """
    return value if isinstance(value, str) else check_value(value)


def _chunk_fields(chunks: tuple[int, int, int]) -> str:
    """The chunk fields of a meta entry as `Meta.encode` spells them."""
    first, end, skip = chunks
    return f'"first_chunk":{first},"next_chunk":{end},"skip":{skip}'


def _appended(reply: Any) -> tuple[int, bool] | None:
    """The append script's reply: None (the client's turn), or (added, elected)."""
    if not isinstance(reply, list):
        return None
    return int(reply[0]), bool(reply[1])


def _newest(reply: Any) -> Newest:
    """The history read script's reply (see `_NEWEST`)."""
    if not reply:
        return Newest(None, "[]", False, [])
    loose = "[" + ",".join(_text(value) for value in reply[2]) + "]"
    chunks = [_text(value) for value in reply[3:]]
    return Newest(_text(reply[0]), loose, bool(reply[1]), chunks)


def _values(reply: Any) -> list[str | None]:
    return [None if value is None else _text(value) for value in reply]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class _Layout:
    """Where the driver keeps values and the index, and how calls become script arguments."""

    def __init__(self, namespace: str) -> None:
        check_key(namespace, "Redis namespace")
        self.index = f"{namespace}:index"
        self.values = f"{namespace}:v:"

    def key(self, key: str) -> str:
        return self.values + check_key(key)

    def list_args(self, prefix: str) -> list[str]:
        end = prefix_end(check_prefix(prefix))
        low = "[" + prefix if prefix else "-"
        return [low, "+" if end is None else "(" + end, self.values]

    def commit_args(
        self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> tuple[list[str], list[str]]:
        """The commit script's keys and arguments (each key named once).

        Only types and lengths are checked here: a lone surrogate fails the encoding
        when the command is packed (see `RedisDriver.commit`), which saves encoding every
        key and value twice.
        """
        keys, ops, checks, stores = [self.index], [], [], []
        values = self.values
        for key in {**expect, **writes}:
            if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
                check_key(key)  # raises
            keys.append(values + key)
            check, write = "-", "-"
            if key in expect:
                value = expect[key]
                check = "0" if value is None else "1"
                if value is not None:
                    checks.append(_string(value))
            if key in writes:
                value = writes[key]
                write = "d" if value is None else "s"
                if value is not None:
                    stores.append(_string(value))
            ops.append(check + write)
        return keys, ["".join(ops), str(len(values)), *checks, *stores]

    def commit_command(
        self, sha: str, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> tuple[list[bytes], list[str], list[str]]:
        """The packed `EVALSHA` of a commit, and its keys and arguments.

        Raises:
            InvalidInput: If a key or value is not a string of valid Unicode.
        """
        keys, args = self.commit_args(expect, writes)
        try:
            return evalsha_command(sha, packed(keys), len(keys), args), keys, args
        except UnicodeEncodeError:
            for text in [*keys, *args]:
                check_value(text)  # names the lone surrogate
            raise

    def mget_command(self, keys: list[str]) -> tuple[list[str], list[bytes]]:
        """The Redis keys of `keys`, and their packed `MGET`.

        Raises:
            InvalidInput: If a key is not a valid key.
        """
        values = self.values
        for key in keys:
            if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
                check_key(key)  # raises
        names = [values + key for key in keys]
        try:
            return names, command(["MGET", *names])
        except UnicodeEncodeError:
            for key in keys:
                check_key(key)  # names the lone surrogate
            raise

    def append_args(self, plan: LooseAppend) -> list[str]:
        """The append script's arguments (its one key is the index).

        Raises:
            InvalidInput: If a key the append names is not a valid key.
        """
        widest = plan.loose + "0" * plan.digits
        for key in (plan.meta, plan.lock, widest, *(plan.ids + i for i in plan.message_ids)):
            check_key(key)
        if plan.chunks is not None:
            check_key(plan.chunks + "0" * plan.digits)
        expires = "null" if plan.expires_at is None else repr(plan.expires_at)
        return [
            self.values,
            plan.meta,
            plan.loose,
            plan.ids,
            plan.lock,
            str(plan.digits),
            str(plan.frequency),
            repr(plan.updated_at),
            expires,
            plan.chunks or "",
            str(len(plan.message_ids)),
            *plan.message_ids,
            *(_string(text) for text in plan.texts),
        ]

    def newest_args(self, plan: NewestRead) -> list[str]:
        """The history read script's arguments (its one key is the index).

        Raises:
            InvalidInput: If a key the read names is not a valid key.
        """
        check_key(plan.meta)
        check_key(plan.chunks + "0" * plan.digits)
        low, high, _ = self.list_args(plan.loose)
        return [
            self.values,
            plan.meta,
            high,
            low,
            str(plan.count),
            plan.chunks,
            str(plan.digits),
            str(plan.chunk_count),
        ]

    def roll_args(
        self,
        roll: RollUp,
        expect: Mapping[str, str | None],
        writes: Mapping[str, str | None],
    ) -> tuple[list[str], list[str]]:
        """The roll-up script's keys and arguments: a commit's, with the roll-up's inside."""
        keys, args = self.commit_args(expect, writes)
        merged = [
            self.values + check_key(roll.meta),
            self.values + check_key(roll.lock),
            _chunk_fields(roll.before),
            _chunk_fields(roll.after),
            str(roll.rolled),
            str(roll.cut),
        ]
        return keys, [*args[:2], *merged, *args[2:]]

    @staticmethod
    def pairs(flat: list[Any]) -> list[tuple[str, str]]:
        return [(_text(flat[i]), _text(flat[i + 1])) for i in range(0, len(flat), 2)]


class RedisDriver:
    """A key-value driver over one Redis server, shared by any number of processes."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        client: redis.Redis | None = None,
        namespace: str = "sessionary",
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        """Connect to Redis at `url`, or use `client`.

        Args:
            url: A `redis://` URL; ignored when `client` is given.
            client: A client to use; the caller keeps ownership and closes it (and
                sets its timeouts).
            namespace: The prefix of every Redis key the driver uses.
            connect_timeout: Seconds to wait for a connection.
            timeout: Seconds to wait for each reply.

        Raises:
            InvalidInput: If the namespace or a timeout is unusable.
            BackendNotInstalled: If redis-py is not installed.
        """
        module = _import_redis()
        self._layout = _Layout(namespace)
        self._owned = client is None
        self._client: redis.Redis = client or _client(url, False, connect_timeout, timeout)
        self._commit = self._client.register_script(_COMMIT)
        self._list = self._client.register_script(_LIST)
        self._append = self._client.register_script(_APPEND)
        self._roll = self._client.register_script(_ROLL)
        self._read = self._client.register_script(_NEWEST)
        self._detour = _detour(module)
        # One node, with a pool (not a cluster client): commits may go straight down.
        self._lane = Lane(self._client) if isinstance(self._client, module.Redis) else None

    def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        with _mapped_errors():
            value = self._client.get(self._layout.key(key))
        return None if value is None else _text(value)

    def put(self, key: str, value: str) -> None:
        """Store `value` under `key`."""
        self.commit({}, {key: value})

    def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        with _mapped_errors(), self._client.pipeline(transaction=True) as pipe:
            pipe.delete(self._layout.key(key))
            pipe.zrem(self._layout.index, key)
            removed, _ = pipe.execute()
        return bool(removed)

    def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every entry whose key starts with `prefix`, in key order."""
        args = self._layout.list_args(prefix)
        return self._layout.pairs(self._script(self._list, [self._layout.index], args))

    def get_many(self, keys: list[str]) -> list[str | None]:
        """Return the values stored under `keys` (None: absent), read at one instant."""
        names, packed_command = self._layout.mget_command(keys)
        with _mapped_errors():
            if self._lane is not None:
                try:
                    return _values(self._lane.send(packed_command))
                except self._detour:  # a lost connection: the ordinary way
                    pass
            return _values(self._client.mget(names))

    def _script(self, script: Any, keys: list[str], args: list[str]) -> Any:
        """Run a registered script, straight down a kept connection if there is one."""
        with _mapped_errors():
            if self._lane is not None:
                try:
                    command = evalsha_command(script.sha, packed(keys), len(keys), args)
                    return self._lane.send(command)
                except self._detour:  # a lost script or connection: the ordinary way
                    pass
            return script(keys=keys, args=args)

    def commit(self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]) -> bool:
        """Apply `writes` if every key in `expect` holds its value; see `KVDriver.commit`."""
        command, keys, args = self._layout.commit_command(self._commit.sha, expect, writes)
        with _mapped_errors():
            if self._lane is not None:
                try:
                    return bool(self._lane.send(command))
                except self._detour:  # a lost script or connection: the ordinary way
                    pass
            return bool(self._commit(keys=keys, args=args))

    def append_loose(self, plan: LooseAppend) -> tuple[int, bool] | None:
        """Append loose entries in one script; see `AsyncKVDriver.append_loose`."""
        return _appended(
            self._script(self._append, [self._layout.index], self._layout.append_args(plan))
        )

    def roll_up_commit(
        self, roll: RollUp, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool | None:
        """Commit a roll-up over concurrent appends; see `AsyncKVDriver.roll_up_commit`."""
        keys, args = self._layout.roll_args(roll, expect, writes)
        return bool(self._script(self._roll, keys, args))

    def read_newest(self, plan: NewestRead) -> Newest | None:
        """Read the newest entries of a session in one script; see `AsyncKVDriver.read_newest`."""
        args = self._layout.newest_args(plan)
        return _newest(self._script(self._read, [self._layout.index], args))

    def close(self) -> None:
        """Give back the connections the driver kept; close the client if it made it."""
        with _mapped_errors():
            if self._lane is not None:
                self._lane.close()
            if self._owned:
                self._client.close()


class _AsyncClientDriver:
    """The async driver over one `redis.asyncio.Redis` client, bound to one event loop."""

    def __init__(
        self,
        url: str,
        client: redis.asyncio.Redis | None,
        namespace: str,
        connect_timeout: float,
        timeout: float,
    ) -> None:
        module = _import_redis()
        self._layout = _Layout(namespace)
        self._owned = client is None
        self._client: redis.asyncio.Redis = client or _client(url, True, connect_timeout, timeout)
        self._commit = self._client.register_script(_COMMIT)
        self._list = self._client.register_script(_LIST)
        self._append = self._client.register_script(_APPEND)
        self._roll = self._client.register_script(_ROLL)
        self._read = self._client.register_script(_NEWEST)
        self._detour = _detour(module)
        self._lane = (
            AsyncLane(self._client) if isinstance(self._client, module.asyncio.Redis) else None
        )

    async def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        with _mapped_errors():
            value = await self._client.get(self._layout.key(key))
        return None if value is None else _text(value)

    async def put(self, key: str, value: str) -> None:
        """Store `value` under `key`."""
        await self.commit({}, {key: value})

    async def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        with _mapped_errors():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(self._layout.key(key))
                pipe.zrem(self._layout.index, key)
                removed, _ = await pipe.execute()
        return bool(removed)

    async def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every entry whose key starts with `prefix`, in key order."""
        args = self._layout.list_args(prefix)
        return self._layout.pairs(await self._script(self._list, [self._layout.index], args))

    async def get_many(self, keys: list[str]) -> list[str | None]:
        """Return the values stored under `keys` (None: absent), read at one instant."""
        names, packed_command = self._layout.mget_command(keys)
        with _mapped_errors():
            if self._lane is not None:
                try:
                    return _values(await self._lane.send(packed_command))
                except self._detour:  # a lost connection: the ordinary way
                    pass
            return _values(await self._client.mget(names))

    async def _script(self, script: Any, keys: list[str], args: list[str]) -> Any:
        """Run a registered script, straight down a kept connection if there is one."""
        with _mapped_errors():
            if self._lane is not None:
                try:
                    command = evalsha_command(script.sha, packed(keys), len(keys), args)
                    return await self._lane.send(command)
                except self._detour:  # a lost script or connection: the ordinary way
                    pass
            return await script(keys=keys, args=args)

    async def commit(
        self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool:
        """Apply `writes` if every key in `expect` holds its value; see `AsyncKVDriver.commit`."""
        command, keys, args = self._layout.commit_command(self._commit.sha, expect, writes)
        with _mapped_errors():
            if self._lane is not None:
                try:
                    return bool(await self._lane.send(command))
                except self._detour:  # a lost script or connection: the ordinary way
                    pass
            return bool(await self._commit(keys=keys, args=args))

    async def append_loose(self, plan: LooseAppend) -> tuple[int, bool] | None:
        """Append loose entries in one script; see `AsyncKVDriver.append_loose`."""
        args = self._layout.append_args(plan)
        return _appended(await self._script(self._append, [self._layout.index], args))

    async def roll_up_commit(
        self, roll: RollUp, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool | None:
        """Commit a roll-up over concurrent appends; see `AsyncKVDriver.roll_up_commit`."""
        keys, args = self._layout.roll_args(roll, expect, writes)
        return bool(await self._script(self._roll, keys, args))

    async def read_newest(self, plan: NewestRead) -> Newest | None:
        """Read the newest entries of a session in one script; see `AsyncKVDriver.read_newest`."""
        args = self._layout.newest_args(plan)
        return _newest(await self._script(self._read, [self._layout.index], args))

    async def close(self) -> None:
        """Give back the connections the driver kept; close the client if it made it."""
        with _mapped_errors():
            if self._lane is not None:
                await self._lane.close()
            if self._owned:
                await self._client.aclose()


class AsyncRedisDriver:
    """The async face of `RedisDriver`, over `redis.asyncio.Redis`.

    The client lives on a loop of its own (see `sessionary.stores._home_loop`): any event
    loop in any thread may call the driver, and a call whose caller is cancelled still
    runs to its end, so a commit is whole or absent. A `client` passed in stays on the
    caller's loop (its owner decides where it runs).
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        client: redis.asyncio.Redis | None = None,
        namespace: str = "sessionary",
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        """Connect to Redis at `url`, or use `client`; see `RedisDriver`.

        Raises:
            InvalidInput: If the namespace or a timeout is unusable.
            BackendNotInstalled: If redis-py is not installed.
        """
        self._home = AsyncHomeLoop(
            lambda: _AsyncClientDriver(url, client, namespace, connect_timeout, timeout),
            own_loop=client is None,
        )
        self._home.close_with(self)

    async def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        value: str | None = await self._home.run("get", key)
        return value

    async def put(self, key: str, value: str) -> None:
        """Store `value` under `key`."""
        await self._home.run("put", key, value)

    async def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        return bool(await self._home.run("delete", key))

    async def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every entry whose key starts with `prefix`, in key order."""
        entries: list[tuple[str, str]] = await self._home.run("list_prefix", prefix)
        return entries

    async def get_many(self, keys: list[str]) -> list[str | None]:
        """Return the values stored under `keys` (None: absent), read at one instant."""
        values: list[str | None] = await self._home.run("get_many", keys)
        return values

    async def commit(
        self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool:
        """Apply `writes` if every key in `expect` holds its value; see `AsyncKVDriver.commit`."""
        return bool(await self._home.run("commit", expect, writes))

    async def append_loose(self, plan: LooseAppend) -> tuple[int, bool] | None:
        """Append loose entries in one script; see `AsyncKVDriver.append_loose`."""
        result: tuple[int, bool] | None = await self._home.run("append_loose", plan)
        return result

    async def roll_up_commit(
        self, roll: RollUp, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool | None:
        """Commit a roll-up over concurrent appends; see `AsyncKVDriver.roll_up_commit`."""
        return bool(await self._home.run("roll_up_commit", roll, expect, writes))

    async def read_newest(self, plan: NewestRead) -> Newest | None:
        """Read the newest entries of a session in one script; see `AsyncKVDriver.read_newest`."""
        found: Newest | None = await self._home.run("read_newest", plan)
        return found

    async def close(self) -> None:
        """Close the client (if the driver made it) and stop its loop; idempotent."""
        await self._home.close()
