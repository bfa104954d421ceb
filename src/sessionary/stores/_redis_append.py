"""The Redis store's append script: a lean path for the common append, the general one else.

Most appends add one message after the head of a session whose head is its newest
message: a turn of a linear conversation. The script tries that case first with the
fewest server calls (one `HMGET` of the meta hash, one `HSETNX` for the id, two hash
writes and the registry's `ZADD`), and defines the shared helpers (`_redis_lua.LIB`)
only when it needs them: defining them costs Redis more than the whole lean path.
Anything else (a batch, an explicit parent, a re-sent id, a roll-up or trim falling
due, a session written before runs, one whose run ended) runs the general path, which
handles every case, so the lean path is only ever a shortcut to the same result.

Every key and argument costs the client and the server on every call, so the common
call carries four keys (meta, ids, loose, registry) and two arguments. Given only those
four, the script stores the message if the lean path can, and else changes nothing and
replies `?` (`?!` if the session's run has ended, which lasts), and the store sends the
call again with the full key list: the seven message keys and the registry, then the
scopes set and the other session keys with a TTL (so that every key expires together).
The store's settings (roll-up frequency, `max_messages`, TTL) are constants at the top
of the script, and each reply says how many appends the session has had since its last
roll-up, so the store sends the full list when a roll-up falls due.

Arguments: `"<now> <session id> <parent> <expected head> <role>..."` (parent `H` head,
`N` none or `I` + id; expected `*` any, `N` none or `I` + id; one role per message),
then `"<id> <created_us> <body>"` per message, which is how an entry ends (ids and
roles hold no spaces). Replies: `+<since> <parent id>`
(`!` instead of `+` once the run has ended) when the lean path stored the message;
`?` or `?!` as above; else a table: `{'ok', '+<since>' or '!<since>', reply per
message}` (`+<parent id>` stored now, or the stored entry of an id already there),
`{'nosession'}`, `{'noparent'}`, `{'head', <head id>}` or `{'stored', <id>, <new id>}`
(a stored message after a new one: nothing is written).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sessionary.errors import MessageNotFound
from sessionary.kv._redis_wire import packed
from sessionary.records import Expected, Head, Parent, Scope
from sessionary.stores._common import Prepared
from sessionary.stores._redis_layout import ScopeKeys
from sessionary.stores._redis_lua import EXPIRY, LIB

__all__ = ["AppendRoute", "Appends", "append_args", "expected_arg"]

_ROUTES = 1024  # sessions whose keys and last reply a store remembers

_GENERAL = r"""
if not load_meta() then return {'nosession'} end
local now, sid, parent_arg, expected, role_list = string.match(ARGV[1],
  '^(%S+) (%S+) (%S+) (%S+) (.*)$')
local life = redis.call('HMGET', META, 'row', 'updated')
if expired(life[1], life[2], now) then return {'nosession'} end
local n = #ARGV - 1
local roles, ids, olds, retry, fresh = {}, {}, {}, true, nil
for role in string.gmatch(role_list, '%S+') do roles[#roles + 1] = role end
-- Stored ids may only come before every new one (see `check_stored_prefix`).
for i = 1, n do
  ids[i] = string.match(ARGV[1 + i], '^%S+')
  olds[i] = seq_of(ids[i]) or false
  if not olds[i] then
    retry, fresh = false, ids[i]
  elseif fresh then
    return {'stored', ids[i], fresh}
  end
end
if expected ~= '*' and not retry then
  local want = expected == 'N' and '' or string.sub(expected, 2)
  if want ~= M.headid then return {'head', M.headid} end
end
local parent, pdepth, pid = -1, -1, '-'
if parent_arg == 'H' then
  parent = M.head
elseif parent_arg ~= 'N' then
  parent = seq_of(string.sub(parent_arg, 2))
  if not parent then return {'noparent'} end
end
if parent >= 0 then
  local _, d, _, _, id = header(entry_at(parent))
  pdepth, pid = d, id
end
local replies, inserted = {}, false
for i = 1, n do
  local id, old = ids[i], olds[i]
  if old then
    local e = entry_at(old)
    local _, d = header(e)
    parent, pdepth, pid = old, d, id
    replies[i] = e
  else
    local seq, depth = M.next, pdepth + 1
    M.next = seq + 1
    redis.call('HSET', LOOSE, pad(seq), s(parent) .. ' ' .. s(depth) .. ' ' .. roles[i] ..
      ' ' .. pid .. ' ' .. ARGV[1 + i])
    redis.call('HSET', IDS, id, s(seq))
    place(seq, parent, depth)
    M.count, M.since = M.count + 1, M.since + 1
    replies[i] = '+' .. pid
    parent, pdepth, pid, inserted = seq, depth, id, true
  end
end
if inserted then
  M.head, M.headid = parent, pid
  if FREQUENCY > 0 and M.since >= FREQUENCY then
    roll_up(FREQUENCY)
    trim(MAX_MESSAGES)
  elseif FREQUENCY == 0 then
    trim(MAX_MESSAGES)
  end
  save_meta(now)
  touch(now, TTL, sid)
end
local out = {'ok', ((M.base and M.lin) and '!' or '+') .. s(M.since)}
for i = 1, n do out[i + 2] = replies[i] end
return out
"""

_LEAN = r"""
-- Only a lean call (four keys) cannot fall back on the general path.
local lean = #KEYS == 4
local now, sid, parent, expected, role = string.match(ARGV[1],
  '^(%S+) (%S+) (%S+) (%S+) (%S+)$')
if #ARGV ~= 2 or parent ~= 'H' then
  if lean then return '?' end
  return general()
end
local v = redis.call('HMGET', KEYS[1], 'head', 'headid', 'next', 'rolled', 'count', 'base',
  'bdepth', 'lin', 'row', 'updated')
if expired(v[9], v[10], now) then return {'nosession'} end
local head, nxt = tonumber(v[1]), tonumber(v[3])
local since = head and nxt - tonumber(v[4]) + 1
local rolls = FREQUENCY > 0 and since and since >= FREQUENCY
-- The head must be the newest message, the session must have a run, and no trim may fall
-- due. A roll-up needs the chunk keys, and is done here only if it makes one chunk.
if not head or head ~= nxt - 1 or not v[6] or v[6] == '' or
    (FREQUENCY == 0 and MAX_MESSAGES > 0) or
    (rolls and (lean or since > FREQUENCY or MAX_MESSAGES > 0)) then
  if lean then return '?' end
  return general()
end
-- The new message (seq nxt) answers nxt - 1, so KIDS never lists it. If the run still
-- grows, the message continues it and its depth follows from the seq; else ORDER gets it.
local grows = not v[8] or v[8] == ''
local depth
if grows then
  depth = tonumber(v[7]) + nxt - tonumber(v[6])
elseif lean then
  return '?!'
elseif head < tonumber(v[4]) then
  return general()
else
  local e = redis.call('HGET', KEYS[3], string.format('%012d', head))
  depth = tonumber(string.match(e, '^%-?%d+ (%d+)')) + 1
end
local id = string.match(ARGV[2], '^%S+')
if redis.call('HSETNX', KEYS[2], id, v[3]) == 0 then  -- a re-sent id
  if lean then return '?' end
  return general()
end
if expected ~= '*' and expected ~= 'I' .. v[2] then
  redis.call('HDEL', KEYS[2], id)
  return {'head', v[2]}
end
local seq = string.format('%012d', nxt)
if not grows then redis.call('ZADD', KEYS[7], 0, string.format('%08d:', depth) .. seq) end
local entry = v[1] .. ' ' .. string.format('%d', depth) .. ' ' .. role .. ' ' .. v[2] ..
  ' ' .. ARGV[2]
local count, after = string.format('%d', tonumber(v[5]) + 1), string.format('%d', nxt + 1)
if rolls then
  -- The loose entries and this one become one chunk (see LIB's roll_up), in one HMGET.
  local fields = {}
  for q = tonumber(v[4]), nxt - 1 do fields[#fields + 1] = string.format('%012d', q) end
  local c = #fields > 0 and redis.call('HMGET', KEYS[3], unpack(fields)) or {}
  for i = 1, #c do c[i] = c[i] or '' end
  c[#c + 1] = entry
  redis.call('HSET', KEYS[4], v[4], '\n' .. table.concat(c, '\n'))
  redis.call('ZADD', KEYS[5], v[4], v[4])
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[1], 'head', v[3], 'headid', id, 'next', after, 'count', count,
    'rolled', after, 'updated', now)
  since = 0
else
  redis.call('HSET', KEYS[3], seq, entry)
  redis.call('HSET', KEYS[1], 'head', v[3], 'headid', id, 'next', after, 'count', count,
    'updated', now)
end
redis.call('ZADD', lean and KEYS[4] or KEYS[8], now, sid)
if TTL ~= '0' then
  for i = 1, #KEYS do
    if i ~= 8 and i ~= 9 then redis.call('PEXPIRE', KEYS[i], TTL) end
  end
end
return (grows and '+' or '!') .. since .. ' ' .. v[2]
"""


@dataclass(slots=True)
class AppendRoute:
    """What a store knows of a session it appends to: its two key lists, its last reply.

    Each key list comes with its RESP form, packed once (see `kv._redis_wire`).
    """

    lean: list[str]
    full: list[str]
    frequency: int
    since: int = 0  # appends since the last roll-up, as the last reply said
    ended: bool = False  # the session's run has ended: the lean path no longer applies
    packed_lean: bytes = b""
    packed_full: bytes = b""

    def __post_init__(self) -> None:
        self.packed_lean, self.packed_full = packed(self.lean), packed(self.full)

    def keys(self, count: int, after_head: bool) -> tuple[list[str], bytes]:
        """The keys to send with an append of `count` messages (after the head or not)."""
        if count > 1 or not after_head or self.ended:
            return self.full, self.packed_full
        if self.frequency and self.since + 1 >= self.frequency:
            return self.full, self.packed_full  # a roll-up falls due: it needs chunk keys
        return self.lean, self.packed_lean

    def stored(self, reply: str) -> str:
        """Learn from a lean path's reply; return the parent id of the message it stored."""
        self.ended = reply[0] == "!"
        since, _, parent = reply[1:].partition(" ")
        self.since = int(since)
        return parent

    def learn(self, state: str) -> None:
        """Learn from the general path's `+<since>` or `!<since>`."""
        self.ended = state[0] == "!"
        self.since = int(state[1:])


class Appends:
    """The append script of a store with given settings, and the routes of its sessions.

    Args:
        namespace: The store's namespace.
        frequency: Roll up every this many appended messages (0: never).
        max_messages: Trim to this many messages at each roll-up (0: keep all).
        ttl: Milliseconds a session lives after a write, as digits ('0': forever).
    """

    def __init__(self, namespace: str, frequency: int, max_messages: int, ttl: str) -> None:
        assert ttl.isdigit()
        self.namespace = namespace
        values = f"{int(frequency)}, {int(max_messages)}, '{ttl}'"
        settings = f"local FREQUENCY, MAX_MESSAGES, TTL = {values}"
        general = f"local function general()\n{LIB}\n{_GENERAL}\nend\n"
        self.script = f"{settings}\n{EXPIRY}{general}{_LEAN}"
        self.frequency = frequency
        # With a TTL every key must expire together; trimming at every append needs all.
        self._always_full = ttl != "0" or (frequency == 0 and max_messages > 0)
        self._routes: dict[tuple[str, str, str], AppendRoute] = {}

    def route(self, scope: Scope, session_id: str) -> AppendRoute:
        """The route of a session, remembered (at most `_ROUTES` of them)."""
        known = (scope.tenant, scope.user, session_id)
        route = self._routes.get(known)
        if route is None:
            if len(self._routes) >= _ROUTES:
                self._routes.clear()
            keys = ScopeKeys(self.namespace, scope).session(session_id)
            full = keys.all if self._always_full else keys.append
            lean = full if self._always_full else keys.lean
            route = self._routes[known] = AppendRoute(lean, full, self.frequency)
        return route


def append_args(
    session_id: str, now: int, parent: Parent, expected: Expected, prepared: Sequence[Prepared]
) -> list[str]:
    """The append script's arguments (see the module's docstring)."""
    roles = " ".join([item.message.role for item in prepared])
    args = [f"{now} {session_id} {_parent_arg(parent)} {expected_arg(expected)} {roles}"]
    args += [f"{item.message.id} {item.created_us} {item.body}" for item in prepared]
    return args


def _parent_arg(parent: Parent) -> str:
    if parent is Head.HEAD:
        return "H"
    if parent is None:
        return "N"
    if not isinstance(parent, str) or not parent:
        raise MessageNotFound(f"parent message {parent!r} is not in this session")
    return "I" + parent


def expected_arg(expected: Expected) -> str:
    """An expected head as the scripts take it: `*` any, `N` none, `I` + id."""
    if expected is Head.ANY:
        return "*"
    return "N" if expected is None else "I" + str(expected)
