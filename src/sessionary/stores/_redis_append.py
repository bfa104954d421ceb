"""The Redis store's append script: a lean path for the common append, the general one else.

Most appends add one message after the head of a session whose head is its newest
message: a turn of a linear conversation. The script tries that case first with the
fewest server calls (one `HMGET` of the meta hash, one `HEXISTS` for the id, three
writes and the registry's `ZADD`), and defines the shared helpers (`_redis_lua.LIB`) only
when it needs them: defining them costs Redis more than the whole lean path. Anything
else (a batch, an explicit parent, a re-sent id, a roll-up or trim falling due, a
session written before runs, one whose run ended and whose head is in a chunk) runs the
general path, which handles every case, so the lean path is only ever a shortcut to the
same result.

The store's settings (roll-up frequency, `max_messages`, TTL) are constants at the top
of the script rather than arguments: every argument costs the client and the server on
every call, and a store's settings never change. Keys (see `_redis_layout.SessionKeys`):
the seven message keys and the registry, then the scopes set and the other session keys
only with a TTL (so that a write expires all of the session's keys together). Arguments:
now, session id, parent (`H` head, `N` none, `I` + id), expected head (`*` any, `N`
none, `I` + id), then per message its role and `"<id> <created_us> <body>"`.

Replies: a string `+<parent id>` when the lean path stored the message; else a table,
`{'ok', reply per message}` (`+<parent id>` stored now, or the stored entry of an id
already there), `{'nosession'}`, `{'noparent'}` or `{'head', <head id>}`.
"""

from __future__ import annotations

from sessionary.stores._redis_lua import LIB

__all__ = ["append_script"]

_GENERAL = r"""
if not load_meta() then return {'nosession'} end
local n = (#ARGV - 4) / 2
local ids, retry = {}, true
for i = 1, n do
  ids[i] = string.match(ARGV[4 + 2 * i], '^%S+')
  if retry and redis.call('HEXISTS', IDS, ids[i]) == 0 then retry = false end
end
local expected = ARGV[4]
if expected ~= '*' and not retry then
  local want = expected == 'N' and '' or string.sub(expected, 2)
  if want ~= M.headid then return {'head', M.headid} end
end
local parent, pdepth, pid = -1, -1, '-'
if ARGV[3] == 'H' then
  parent = M.head
elseif ARGV[3] ~= 'N' then
  parent = seq_of(string.sub(ARGV[3], 2))
  if not parent then return {'noparent'} end
end
if parent >= 0 then
  local _, d, _, _, id = header(entry_at(parent))
  pdepth, pid = d, id
end
local out, inserted = {'ok'}, false
for i = 1, n do
  local id = ids[i]
  local old = seq_of(id)
  if old then
    local e = entry_at(old)
    local _, d = header(e)
    parent, pdepth, pid = old, d, id
    out[#out + 1] = e
  else
    local seq, depth = M.next, pdepth + 1
    M.next = seq + 1
    redis.call('HSET', LOOSE, pad(seq), s(parent) .. ' ' .. s(depth) .. ' ' ..
      ARGV[3 + 2 * i] .. ' ' .. pid .. ' ' .. ARGV[4 + 2 * i])
    redis.call('HSET', IDS, id, s(seq))
    place(seq, parent, depth)
    M.count, M.since = M.count + 1, M.since + 1
    out[#out + 1] = '+' .. pid
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
  save_meta(ARGV[1])
  touch(ARGV[1], TTL, ARGV[2])
end
return out
"""

_LEAN = r"""
if #ARGV ~= 6 or ARGV[3] ~= 'H' then return general() end
local META, IDS, LOOSE = KEYS[1], KEYS[2], KEYS[3]
local v = redis.call('HMGET', META, 'head', 'headid', 'next', 'since', 'rolled', 'count',
  'base', 'bdepth', 'lin')
local head, nxt = tonumber(v[1]), tonumber(v[3])
-- The head must be the newest message, and the session must have a run.
if not head or head ~= nxt - 1 or not v[7] or v[7] == '' then return general() end
local since = tonumber(v[4]) + 1
if (FREQUENCY > 0 and since >= FREQUENCY) or (FREQUENCY == 0 and MAX_MESSAGES > 0) then
  return general()
end
local id = string.match(ARGV[6], '^%S+')
if redis.call('HEXISTS', IDS, id) == 1 then return general() end
local expected = ARGV[4]
if expected ~= '*' and expected ~= 'I' .. v[2] then return {'head', v[2]} end
-- The new message (seq nxt) answers nxt - 1, so KIDS never lists it. If the run still
-- grows, the message continues it and its depth follows from the seq; else ORDER gets it.
local depth
if not v[9] or v[9] == '' then
  depth = tonumber(v[8]) + nxt - tonumber(v[7])
else
  if head < tonumber(v[5]) then return general() end
  local e = redis.call('HGET', LOOSE, string.format('%012d', head))
  depth = tonumber(string.match(e, '^%-?%d+ (%d+)')) + 1
  redis.call('ZADD', KEYS[7], 0, string.format('%08d:%012d', depth, nxt))
end
redis.call('HSET', LOOSE, string.format('%012d', nxt),
  v[1] .. ' ' .. string.format('%d', depth) .. ' ' .. ARGV[5] .. ' ' .. v[2] .. ' ' .. ARGV[6])
redis.call('HSET', IDS, id, v[3])
redis.call('HSET', META, 'head', v[3], 'headid', id,
  'count', string.format('%d', tonumber(v[6]) + 1), 'next', string.format('%d', nxt + 1),
  'since', string.format('%d', since), 'updated', ARGV[1])
redis.call('ZADD', KEYS[8], ARGV[1], ARGV[2])
if TTL ~= '0' then
  for i = 1, #KEYS do
    if i ~= 8 and i ~= 9 then redis.call('PEXPIRE', KEYS[i], TTL) end
  end
end
return '+' .. v[2]
"""


def append_script(frequency: int, max_messages: int, ttl: str) -> str:
    """The append script for a store with these settings.

    Args:
        frequency: Roll up every this many appended messages (0: never).
        max_messages: Trim to this many messages at each roll-up (0: keep all).
        ttl: Milliseconds a session lives after a write, as digits ('0': forever).
    """
    assert ttl.isdigit()
    values = f"{int(frequency)}, {int(max_messages)}, '{ttl}'"
    settings = f"local FREQUENCY, MAX_MESSAGES, TTL = {values}"
    general = f"local function general()\n{LIB}\n{_GENERAL}\nend\n"
    return f"{settings}\n{general}{_LEAN}"
