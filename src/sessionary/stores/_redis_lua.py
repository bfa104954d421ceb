"""The Lua scripts of the Redis store: every write to a session is one of these (pure text).

Redis runs a script atomically, so each script below is a whole transaction: no other
client sees half of it or writes in the middle of it. The scripts receive every key of
the session they touch (see `_redis_layout.SessionKeys.all`) and compute nothing but
hash fields, so they name no key Redis was not told about.

Session keys, in the order every session script receives them::

    1 meta    hash: head (seq, -1 none), headid, count, next, rolled, first, base,
              bdepth, lin (the run, below), row (the registry row, JSON), updated
              (microseconds); appends since the last roll-up are next - rolled (a
              `since` field written by older versions is no longer read)
    2 ids     hash: message id -> seq
    3 loose   hash: zero-padded seq -> entry, for every seq >= rolled
    4 snap    hash: chunk start seq -> its entries, each after a newline ("" where
              deleted); chunks written by older versions are JSON arrays
    5 chunks  sorted set: chunk start seq, scored by itself (which chunk holds a seq)
    6 kids    hash: zero-padded seq -> "seq,seq,..." of its children, oldest first,
              except a child whose seq is its parent's plus one (see below)
    7 order   sorted set (lex): "depth:seq", the order `page_messages` returns, of every
              message outside the run
    8         the scope's registry (sorted set: session id scored by updated time)
    9         the set of every scope that owns something
    10 state  string: the session's state document
    11-13     the session's documents (index, heads, versions)

An entry is one line of text: `parent_seq depth role parent_id id created_us body`,
so a script can follow parents by reading the header without decoding the body. No
entry holds a raw newline (a body is JSON, which escapes control characters), so a
chunk joins its entries with newlines: building one is a concatenation, not an escape
of every character as a JSON array was.
Seqs below `first` were trimmed by `max_messages` and read as absent.

Appending at the head of a linear session, the common case, writes neither index: the
child whose seq is its parent's plus one is found by reading that entry (so `kids`
lists only the others), and the *run*, the seqs `[base, lin)` (`lin` empty: up to
`next`) of which each is the child of the one before, is paged by arithmetic (depth
`bdepth + seq - base`) and merged with `order`. A session has at most one run; the first
append that does not continue it ends it for good. Sessions written before runs have
no `base` and every message in `order` (their `kids` may list a parent's plus one too);
they are read as they are, and their next append starts a run.

Numbers the scripts write go through `string.format('%d')`: Lua's own number-to-string
conversion keeps only 14 digits, too few for microsecond times.
"""

from __future__ import annotations

__all__ = ["EXPIRY", "LIB", "SCRIPTS"]

EXPIRY = r"""
-- Whether a session whose meta holds `row` and `updated` has outlived its TTL by `now`
-- (microseconds; see sessionary.retention). Most rows have no TTL: one string search.
local function expired(row, updated, now)
  if not row or not string.find(row, '"ttl_us":%d') then return false end
  local r = cjson.decode(row)
  if type(r.ttl_us) ~= 'number' then return false end  -- "ttl_us" only in the metadata
  local from = tonumber(r.created_us)
  if r.ttl_sliding == true then from = tonumber(updated) end
  return from ~= nil and from + r.ttl_us <= tonumber(now)
end
"""
"""The expiry check of a session's row (`sessionary.retention`), in the scripts' terms."""

LIB = r"""
local META, IDS, LOOSE, SNAP, CHUNKS, KIDS, ORDER = KEYS[1], KEYS[2], KEYS[3], KEYS[4],
  KEYS[5], KEYS[6], KEYS[7]
local REGISTRY, SCOPES = KEYS[8], KEYS[9]
local M = {}
local chunk_cache, dirty = {}, {}

local function s(n) return string.format('%d', n) end
local function pad(n) return string.format('%012d', n) end
local function order_member(depth, seq) return string.format('%08d:%012d', depth, seq) end

local function load_meta()
  local v = redis.call('HMGET', META, 'head', 'headid', 'count', 'next', 'rolled', 'first',
    'base', 'bdepth', 'lin')
  if not v[1] then return false end
  M.head, M.headid, M.count, M.next = tonumber(v[1]), v[2], tonumber(v[3]), tonumber(v[4])
  M.rolled, M.first = tonumber(v[5]), tonumber(v[6])
  M.since = M.next - M.rolled
  M.base, M.bdepth, M.lin = tonumber(v[7] or ''), tonumber(v[8] or ''), tonumber(v[9] or '')
  return true
end

local function opt(n) return n and s(n) or '' end

local function save_meta(now)
  redis.call('HSET', META, 'head', s(M.head), 'headid', M.headid, 'count', s(M.count),
    'next', s(M.next), 'rolled', s(M.rolled), 'first', s(M.first),
    'base', opt(M.base), 'bdepth', opt(M.bdepth), 'lin', opt(M.lin), 'updated', now)
end

local function header(e)
  local p, d, role, pid, id, cus, pos = string.match(e,
    '^(%-?%d+) (%d+) (%S+) (%S+) (%S+) (%-?%d+) ()')
  return tonumber(p), tonumber(d), role, pid, id, pos
end

-- The positions of a chunk's newlines: entry i runs from cuts[i] + 1 to cuts[i + 1] - 1
-- (the last one to the end). A plain search (memchr) finds them far faster than a pattern
-- matched character by character.
local function cuts_of(raw)
  local cuts, pos = {}, string.find(raw, '\n', 1, true)
  while pos do
    cuts[#cuts + 1] = pos
    pos = string.find(raw, '\n', pos + 1, true)
  end
  return cuts
end

local function cut_entry(raw, cuts, i)
  if not cuts[i] then return nil end
  return string.sub(raw, cuts[i] + 1, (cuts[i + 1] or #raw + 1) - 1)
end

local function decode_chunk(raw)
  if string.sub(raw, 1, 1) == '[' then return cjson.decode(raw) end
  local cuts, c = cuts_of(raw), {}
  for i = 1, #cuts do c[i] = cut_entry(raw, cuts, i) end
  return c
end

local function encode_chunk(c) return '\n' .. table.concat(c, '\n') end

-- The chunk last read, {start, entries, start as text}: chunks never overlap (each holds
-- the seqs from its start on, the next one starts past them), so a seq in its span needs
-- no ZREVRANGEBYSCORE, and a path read walks chunk by chunk.
local span = {-1, 0, ''}
local seen = {}  -- the starts of the chunks read, in order (a path read returns them)

local function chunk_start(seq)
  if seq >= span[1] and seq < span[1] + span[2] then return span[3] end
  return redis.call('ZREVRANGEBYSCORE', CHUNKS, seq, '-inf', 'LIMIT', 0, 1)[1]
end

local function read_chunk(start, entries)
  span = {tonumber(start), entries, start}
  seen[#seen + 1] = start
end

local function chunk_of(seq)
  local start = chunk_start(seq)
  if not start then return nil, nil end
  local c = chunk_cache[start]
  if not c then
    local raw = redis.call('HGET', SNAP, start)
    if not raw then return nil, nil end
    c = decode_chunk(raw)
    chunk_cache[start] = c
    read_chunk(start, #c)
  end
  return start, c
end

-- Chunks read but not decoded: start -> {text, cuts}. A read takes the entries it needs
-- out of the text (making every entry of a chunk a string costs more than the rest of a
-- short read); a chunk decoded in this script (to be written) is read from there.
local texts = {}

-- Entry `i` of the chunk at `start`, or nil.
local function chunk_entry(start, i)
  local c = chunk_cache[start]
  if c then return c[i] end
  local t = texts[start]
  if not t then
    local raw = redis.call('HGET', SNAP, start)
    if not raw then return nil end
    if string.sub(raw, 1, 1) == '[' then
      chunk_cache[start] = cjson.decode(raw)
      read_chunk(start, #chunk_cache[start])
      return chunk_cache[start][i]
    end
    t = {raw, cuts_of(raw)}
    texts[start] = t
    read_chunk(start, #t[2])
  end
  return cut_entry(t[1], t[2], i)
end

local function entry_at(seq)
  if seq < 0 or seq < M.first then return false end
  if seq >= M.rolled then return redis.call('HGET', LOOSE, pad(seq)) end
  local start = chunk_start(seq)
  if not start then return false end
  local e = chunk_entry(start, seq - tonumber(start) + 1)
  if e == nil or e == '' then return false end
  return e
end

local function put_entry(seq, e)
  if seq >= M.rolled then
    if e then redis.call('HSET', LOOSE, pad(seq), e) else redis.call('HDEL', LOOSE, pad(seq)) end
    return
  end
  local start, c = chunk_of(seq)
  c[seq - tonumber(start) + 1] = e or ''
  dirty[start] = true
end

local function flush_chunks()
  for start, _ in pairs(dirty) do
    redis.call('HSET', SNAP, start, encode_chunk(chunk_cache[start]))
  end
end

local function seq_of(id)
  local found = redis.call('HGET', IDS, id)
  if not found then return nil end
  return tonumber(found)
end

local function add_kid(parent, seq)
  if parent < 0 then return end
  local field = pad(parent)
  local kids = redis.call('HGET', KIDS, field)
  redis.call('HSET', KIDS, field, kids and (kids .. ',' .. s(seq)) or s(seq))
end

local function remove_kid(parent, seq)
  local field = pad(parent)
  local kids = redis.call('HGET', KIDS, field)
  if not kids then return end
  local kept = {}
  for k in string.gmatch(kids, '%d+') do
    if tonumber(k) ~= seq then kept[#kept + 1] = k end
  end
  if #kept == 0 then redis.call('HDEL', KIDS, field)
  else redis.call('HSET', KIDS, field, table.concat(kept, ',')) end
end

local function expire(ttl)
  if ttl == '0' then return end
  for i = 1, #KEYS do
    if i ~= 8 and i ~= 9 then redis.call('PEXPIRE', KEYS[i], ttl) end
  end
end

local function touch(now, ttl, sid)
  redis.call('ZADD', REGISTRY, now, sid)
  expire(ttl)
end

-- The children of `q`, oldest first: `q + 1` if that entry answers `q` (never listed in
-- KIDS by new writes; old ones may list it), then the ones KIDS lists.
local function children(q)
  local out = {}
  local nxt = entry_at(q + 1)
  if nxt and header(nxt) == q then out[1] = q + 1 end
  local kids = redis.call('HGET', KIDS, pad(q))
  if kids then
    for k in string.gmatch(kids, '%d+') do
      local kid = tonumber(k)
      if kid ~= q + 1 then out[#out + 1] = kid end
    end
  end
  return out
end

-- Record a new message in the indexes, unless it needs none: a child at its parent's seq
-- plus one is found without KIDS, and a message that continues the run without ORDER.
-- The first message after a clear (or on a session from before runs) starts the run.
local function place(seq, parent, depth)
  if parent >= 0 and seq ~= parent + 1 then add_kid(parent, seq) end
  if not M.base then
    M.base, M.bdepth, M.lin = seq, depth, nil
  elseif not (M.lin == nil and parent == seq - 1 and parent >= M.base) then
    if M.lin == nil then M.lin = seq end
    redis.call('ZADD', ORDER, 0, order_member(depth, seq))
  end
end

local function write_chunk(start, c, any)
  if any then
    redis.call('HSET', SNAP, s(start), encode_chunk(c))
    redis.call('ZADD', CHUNKS, start, s(start))
  end
end

-- Fold the loose entries into new chunks of at most `size` entries (0: one chunk), so
-- that a read near the head never decodes a large batch whole; earlier chunks are never
-- rewritten.
local function roll_up(size)
  if M.next <= M.rolled then return end
  local start, c, any = M.rolled, {}, false
  local q = M.rolled
  while q < M.next do
    local fields = {}
    for f = q, math.min(q + 999, M.next - 1) do fields[#fields + 1] = pad(f) end
    for _, e in ipairs(redis.call('HMGET', LOOSE, unpack(fields))) do
      if size > 0 and #c == size then
        write_chunk(start, c, any)
        start, c, any = q, {}, false
      end
      c[#c + 1] = e or ''
      if e then any = true end
      q = q + 1
    end
  end
  write_chunk(start, c, any)
  -- LOOSE holds no seq at or past `next`, so every entry it had is in a chunk now.
  redis.call('DEL', LOOSE)
  M.rolled, M.since = M.next, 0
end

local function forget(q, e)
  local _, d, _, _, id = header(e)
  redis.call('HDEL', IDS, id)
  redis.call('ZREM', ORDER, order_member(d, q))
  redis.call('HDEL', KIDS, pad(q))
  if q >= M.rolled then redis.call('HDEL', LOOSE, pad(q)) end
  M.count = M.count - 1
end

-- Drop the oldest messages past max_messages (and tool results whose call went), never
-- the head or anything after it; chunks wholly below the cut are deleted.
local function trim(maxm)
  if maxm <= 0 or M.count <= maxm then return end
  local drop, q = M.count - maxm, M.first
  local stop = M.head >= 0 and M.head or M.next
  while q < stop do
    local e = entry_at(q)
    if e then
      if drop <= 0 then
        local _, _, role = header(e)
        if role ~= 'tool' then break end
      end
      forget(q, e)
      drop = drop - 1
    end
    q = q + 1
  end
  M.first = q
  local starts = redis.call('ZRANGEBYSCORE', CHUNKS, '-inf', '(' .. s(M.first))
  for i, start in ipairs(starts) do
    local finish = starts[i + 1] and tonumber(starts[i + 1]) or nil
    if not finish then
      local later = redis.call('ZRANGEBYSCORE', CHUNKS, '(' .. start, '+inf', 'LIMIT', 0, 1)
      finish = later[1] and tonumber(later[1]) or M.rolled
    end
    if finish <= M.first then
      redis.call('HDEL', SNAP, start)
      redis.call('ZREM', CHUNKS, start)
    end
  end
end

-- The seq of message `id` ('' the head: -1 if none), or nil if it is not in the session.
local function leaf_seq(id)
  if id == '' then return M.head end
  return seq_of(id)
end

-- `out` with the entries from `seq` up to the root appended, at most `limit` (0: all).
local function walk_up(seq, limit, out)
  local n = 0
  while seq >= 0 and seq >= M.first and (limit == 0 or n < limit) do
    local e = entry_at(seq)
    out[#out + 1] = e
    seq = tonumber(string.match(e, '^%-?%d+'))
    n = n + 1
  end
  return out
end
"""

_LIVE_LIB = (
    LIB
    + EXPIRY
    + r"""
-- Load the meta of a session that is there and live at `now`; false: it is missing (a
-- read finds nothing, a write refuses, and nothing renews an expired session's keys).
local function live(now)
  if not load_meta() then return false end
  local life = redis.call('HMGET', META, 'row', 'updated')
  return not expired(life[1], life[2], now)
end
"""
)

_CREATE = r"""
-- ARGV: now, ttl, session id, row, updated, scope member
if redis.call('EXISTS', META) == 1 then return 0 end
redis.call('HSET', META, 'row', ARGV[4], 'head', '-1', 'headid', '', 'count', '0',
  'next', '0', 'rolled', '0', 'first', '0', 'updated', ARGV[5])
redis.call('SADD', SCOPES, ARGV[6])
touch(ARGV[5], ARGV[2], ARGV[3])
return 1
"""

_UPDATE_ROW = r"""
-- ARGV: now, ttl, session id, the row read, the new row
local current = redis.call('HGET', META, 'row')
if not current then return -1 end
if current ~= ARGV[4] then return 0 end
if expired(current, redis.call('HGET', META, 'updated'), ARGV[1]) then return -1 end
redis.call('HSET', META, 'row', ARGV[5], 'updated', ARGV[1])
touch(ARGV[1], ARGV[2], ARGV[3])
return 1
"""

_DELETE_SESSION = r"""
-- ARGV: session id
local existed = redis.call('EXISTS', META)
for i = 1, #KEYS do
  if i ~= 8 and i ~= 9 then redis.call('DEL', KEYS[i]) end
end
redis.call('ZREM', REGISTRY, ARGV[1])
return existed
"""

_ROLL_UP = r"""
-- ARGV: now, ttl, session id, max messages, chunk size (0: one chunk)
if not load_meta() then return 0 end
roll_up(tonumber(ARGV[5]))
trim(tonumber(ARGV[4]))
save_meta(redis.call('HGET', META, 'updated'))
expire(ARGV[2])
return 1
"""

_READ_PATH = r"""
-- ARGV: now, leaf ('' head, else an id), limit (0 none), what ('path' or 'length').
-- Returns 'ok', first, then the entries from the leaf up (or the length).
if not live(ARGV[1]) then return {'nosession'} end
local seq = leaf_seq(ARGV[2])
if not seq then return {'nomessage'} end
if ARGV[4] == 'length' then
  if seq < 0 then return {'ok', '0'} end
  if M.first == 0 then
    local _, d = header(entry_at(seq))
    return {'ok', s(d + 1)}
  end
  local n = 0
  while seq >= M.first do
    n = n + 1
    seq = header(entry_at(seq))
  end
  return {'ok', s(n)}
end
return walk_up(seq, tonumber(ARGV[3]), {'ok', s(M.first)})
"""

_READ_PATH_DOCUMENT = r"""
-- ARGV: now, leaf ('' head, else an id), limit (0 none), a session document's member
-- ("namespace\nkey"). Returns 'ok', first, the document's latest version and its JSON
-- ('' and '' if none; see the documents' scripts below), the layout the read saw
-- ("leaf rolled start start ...": the leaf's seq, `rolled` and the starts of the chunks
-- read, which `_redis_recent` predicts the next read from), then the path's entries
-- from the leaf up: `_READ_PATH` and `_READ_DOCUMENTS`' 'one' in one script.
if not live(ARGV[1]) then return {'nosession'} end
local seq = leaf_seq(ARGV[2])
if not seq then return {'nomessage'} end
local version, value = '', ''
local list = redis.call('HGET', KEYS[12], ARGV[4])
if list then
  version = string.match(list, '(%d+)$')
  value = redis.call('HGET', KEYS[13], ARGV[4] .. '\n' .. version)
  if not value then version, value = '', '' end
end
local out = walk_up(seq, tonumber(ARGV[3]), {'ok', s(M.first), version, value, ''})
table.insert(seen, 1, s(M.rolled))
table.insert(seen, 1, s(seq))
out[5] = table.concat(seen, ' ')
return out
"""

_READ = r"""
-- ARGV: now, what ('message' or 'children'), message id.
if not live(ARGV[1]) then return {'nosession'} end
local seq = seq_of(ARGV[3])
if not seq then return {'nomessage'} end
if ARGV[2] == 'message' then return {'ok', s(M.first), entry_at(seq)} end
local out = {'ok', s(M.first)}
for _, kid in ipairs(children(seq)) do out[#out + 1] = entry_at(kid) end
return out
"""

_PAGE = r"""
-- ARGV: now, the last order member seen ('' for the start), how many. Merges ORDER with
-- the run, whose members are `bdepth + q - base:q` for q in [base, lin or next).
if not live(ARGV[1]) then return {'nosession'} end
local after = ARGV[2]
local limit = tonumber(ARGV[3])
local low = after == '' and '-' or '(' .. after
local members = redis.call('ZRANGEBYLEX', ORDER, low, '+', 'LIMIT', 0, limit)
local q, stop, shift = 0, 0, 0
if M.base then
  shift, stop = M.bdepth - M.base, M.lin or M.next
  q = math.max(M.base, M.first)
  if after ~= '' then
    local d, seen = tonumber(string.sub(after, 1, 8)), tonumber(string.sub(after, 10))
    local from = d - shift
    if from <= seen then from = from + 1 end
    q = math.max(q, from)
  end
end
local out, i, taken = {'ok', s(M.first)}, 1, 0
while taken < limit do
  local e = false
  while q < stop do
    e = entry_at(q)
    if e then break end
    q = q + 1
  end
  local run_member = e and order_member(q + shift, q)
  local member = members[i]
  if not member and not run_member then break end
  if member and (not run_member or member < run_member) then
    out[#out + 1] = member
    out[#out + 1] = entry_at(tonumber(string.sub(member, 10)))
    i = i + 1
  else
    out[#out + 1] = run_member
    out[#out + 1] = e
    q = q + 1
  end
  taken = taken + 1
end
return out
"""

_SET_HEAD = r"""
-- ARGV: now, ttl, session id, message id ('' for none), and the head expected: '*' (or
-- absent) any, 'N' none, 'I' .. id
if not live(ARGV[1]) then return 'nosession' end
local expected = ARGV[5] or '*'
if expected ~= '*' and expected ~= (M.headid == '' and 'N' or 'I' .. M.headid) then
  return 'head ' .. M.headid
end
if ARGV[4] == '' then
  M.head, M.headid = -1, ''
else
  local seq = seq_of(ARGV[4])
  if not seq then return 'nomessage' end
  M.head, M.headid = seq, ARGV[4]
end
save_meta(redis.call('HGET', META, 'updated'))
expire(ARGV[2])
return 'ok'
"""

_UPDATE_MESSAGE = r"""
-- ARGV: now, ttl, session id, message id, role, body
if not live(ARGV[1]) then return {'nosession'} end
local seq = seq_of(ARGV[4])
if not seq then return {'nomessage'} end
local e = entry_at(seq)
local _, _, role, _, _, pos = header(e)
if role ~= ARGV[5] then return {'role', role} end
local updated = string.sub(e, 1, pos - 1) .. ARGV[6]
put_entry(seq, updated)
flush_chunks()
redis.call('HSET', META, 'updated', ARGV[1])
touch(ARGV[1], ARGV[2], ARGV[3])
return {'ok', s(M.first), updated}
"""

_DELETE_MESSAGE = r"""
-- ARGV: now, ttl, session id, message id. Returns 'ok' and the deleted ids.
if not live(ARGV[1]) then return {'nosession'} end
local root = seq_of(ARGV[4])
if not root then return {'nomessage'} end
local parent, _, _, pid = header(entry_at(root))
local out, stack, head_gone, cut = {'ok'}, {root}, false, nil
local run_end = M.base and (M.lin or M.next)
while #stack > 0 do
  local q = table.remove(stack)
  local _, d, _, _, id = header(entry_at(q))
  out[#out + 1] = id
  for _, kid in ipairs(children(q)) do stack[#stack + 1] = kid end
  redis.call('HDEL', KIDS, pad(q))
  put_entry(q, false)
  redis.call('HDEL', IDS, id)
  redis.call('ZREM', ORDER, order_member(d, q))
  if q == M.head then head_gone = true end
  if run_end and q >= M.base and q < run_end and (not cut or q < cut) then cut = q end
end
-- The run is a chain: everything in it after a deleted member went too, so it ends there.
if cut then M.lin = cut end
local kept_parent = parent >= 0 and parent >= M.first
if kept_parent then remove_kid(parent, root) end
if head_gone then
  if kept_parent then M.head, M.headid = parent, pid else M.head, M.headid = -1, '' end
end
M.count = M.count - (#out - 1)
flush_chunks()
save_meta(ARGV[1])
touch(ARGV[1], ARGV[2], ARGV[3])
return out
"""

_DELETE_MESSAGES = r"""
-- ARGV: now, ttl, session id, then distinct message ids. Deletes exactly those, or
-- nothing: returns 'ok' and the ids, 'nomessage' and an id, or 'children', a parent
-- among them and a child of it that is not.
if not live(ARGV[1]) then return {'nosession'} end
local seqs, doomed = {}, {}
for i = 4, #ARGV do
  local q = seq_of(ARGV[i])
  if not q then return {'nomessage', ARGV[i]} end
  local p, d, _, pid = header(entry_at(q))
  seqs[#seqs + 1] = q
  doomed[q] = {p, d, pid, ARGV[i]}
end
for _, q in ipairs(seqs) do
  for _, kid in ipairs(children(q)) do
    if not doomed[kid] then
      local _, _, _, _, kid_id = header(entry_at(kid))
      return {'children', doomed[q][4], kid_id}
    end
  end
end
if #seqs == 0 then return {'ok'} end
local run_end = M.base and (M.lin or M.next)
local cut = nil
for _, q in ipairs(seqs) do
  local p, d, id = doomed[q][1], doomed[q][2], doomed[q][4]
  redis.call('HDEL', KIDS, pad(q))
  put_entry(q, false)
  redis.call('HDEL', IDS, id)
  redis.call('ZREM', ORDER, order_member(d, q))
  if run_end and q >= M.base and q < run_end and (not cut or q < cut) then cut = q end
  if p >= 0 and p >= M.first and not doomed[p] then remove_kid(p, q) end
end
-- Every child of a deleted run member is deleted too, so the run ends at the first one.
if cut then M.lin = cut end
if doomed[M.head] then
  local q, qid = M.head, ''
  while doomed[q] do q, qid = doomed[q][1], doomed[q][3] end
  if q >= 0 and q >= M.first then M.head, M.headid = q, qid else M.head, M.headid = -1, '' end
end
M.count = M.count - #seqs
flush_chunks()
save_meta(ARGV[1])
touch(ARGV[1], ARGV[2], ARGV[3])
local out = {'ok'}
for i = 4, #ARGV do out[#out + 1] = ARGV[i] end
return out
"""

_CLEAR = r"""
-- ARGV: now, ttl, session id. Returns how many messages were deleted.
if not live(ARGV[1]) then return -1 end
local count = M.count
for i = 2, 7 do redis.call('DEL', KEYS[i]) end
M.head, M.headid, M.count, M.since = -1, '', 0, 0
M.rolled, M.first = M.next, M.next
M.base, M.bdepth, M.lin = nil, nil, nil
save_meta(ARGV[1])
touch(ARGV[1], ARGV[2], ARGV[3])
return count
"""

_IMPORT = r"""
-- ARGV: 1 now, 2 ttl, 3 session id, 4 row, 5 updated, 6 scope member, 7 head seq,
-- 8 head id, 9 count, 10 rolled, 11 run base ('' none), 12 its depth, 13 state ('' none),
-- 14 chunks, 15 loose, 16 kids, then chunks (start, text), loose (field, entry), kids
-- (field, list), then (id, seq, order member ('' in the run)) per message.
if redis.call('EXISTS', META) == 1 then return 0 end
local a = 17
for _ = 1, tonumber(ARGV[14]) do
  redis.call('HSET', SNAP, ARGV[a], ARGV[a + 1])
  redis.call('ZADD', CHUNKS, ARGV[a], ARGV[a])
  a = a + 2
end
for _ = 1, tonumber(ARGV[15]) do
  redis.call('HSET', LOOSE, ARGV[a], ARGV[a + 1])
  a = a + 2
end
for _ = 1, tonumber(ARGV[16]) do
  redis.call('HSET', KIDS, ARGV[a], ARGV[a + 1])
  a = a + 2
end
while a <= #ARGV do
  redis.call('HSET', IDS, ARGV[a], ARGV[a + 1])
  if ARGV[a + 2] ~= '' then redis.call('ZADD', ORDER, 0, ARGV[a + 2]) end
  a = a + 3
end
local count = ARGV[9]
redis.call('HSET', META, 'row', ARGV[4], 'head', ARGV[7], 'headid', ARGV[8], 'count', count,
  'next', count, 'rolled', ARGV[10],
  'first', '0', 'base', ARGV[11], 'bdepth', ARGV[12], 'lin', '', 'updated', ARGV[5])
if ARGV[13] ~= '' then redis.call('SET', KEYS[10], ARGV[13]) end
redis.call('SADD', SCOPES, ARGV[6])
touch(ARGV[5], ARGV[2], ARGV[3])
return 1
"""

_SWAP = r"""
-- A compare-and-set of one string key. KEYS: the key, the session's meta (or the key
-- again), the scopes set, then the keys to expire. ARGV: value read ('' absent), new
-- value, whether the meta must exist ('1'/'0'), scope member ('' none), ttl.
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[4] ~= '' then redis.call('SADD', KEYS[3], ARGV[4]) end
if ARGV[5] ~= '0' then
  for i = 4, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[5]) end
end
return 1
"""


# Documents. KEYS: 1 index (sorted set, lex: "namespace\nkey"), 2 heads (hash: member ->
# "1,2,3", the stored version numbers), 3 versions (hash: "member\nN" -> the version's
# JSON without its number), 4 the owning session's meta (or the index again), 5 the
# scopes set, then the keys a TTL expires.
_DOC_LIB = r"""
local INDEX, HEADS, VERSIONS = KEYS[1], KEYS[2], KEYS[3]
local function guard_missing(flag) return flag == '1' and redis.call('EXISTS', KEYS[4]) == 0 end
local function latest(list)
  if not list then return 0 end
  return tonumber(string.match(list, '(%d+)$'))
end
local function owned(member, ttl)
  redis.call('ZADD', INDEX, 0, member)
  if ttl ~= '0' then for i = 6, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end end
end
"""

_PUT_DOCUMENT = r"""
-- ARGV: member, expected ('' any), guard, scope member ('' none), ttl, version JSON.
if guard_missing(ARGV[3]) then return {-1, 0} end
local list = redis.call('HGET', HEADS, ARGV[1])
local current = latest(list)
if ARGV[2] ~= '' and tonumber(ARGV[2]) ~= current then return {0, current} end
local version = string.format('%d', current + 1)
redis.call('HSET', HEADS, ARGV[1], list and (list .. ',' .. version) or version)
redis.call('HSET', VERSIONS, ARGV[1] .. '\n' .. version, ARGV[6])
if ARGV[4] ~= '' then redis.call('SADD', KEYS[5], ARGV[4]) end
owned(ARGV[1], ARGV[5])
return {1, current + 1}
"""

_RESTORE_DOCUMENT = r"""
-- ARGV: member, the version list read ('' none), guard, scope member, ttl, then
-- (version, JSON) per version to add.
if guard_missing(ARGV[3]) then return -1 end
local list = redis.call('HGET', HEADS, ARGV[1]) or ''
if list ~= ARGV[2] then return 0 end
local numbers = {}
for v in string.gmatch(list, '%d+') do numbers[#numbers + 1] = tonumber(v) end
for a = 6, #ARGV, 2 do
  numbers[#numbers + 1] = tonumber(ARGV[a])
  redis.call('HSET', VERSIONS, ARGV[1] .. '\n' .. ARGV[a], ARGV[a + 1])
end
table.sort(numbers)
for i, v in ipairs(numbers) do numbers[i] = string.format('%d', v) end
redis.call('HSET', HEADS, ARGV[1], table.concat(numbers, ','))
if ARGV[4] ~= '' then redis.call('SADD', KEYS[5], ARGV[4]) end
owned(ARGV[1], ARGV[5])
return 1
"""

_DELETE_DOCUMENT = r"""
-- ARGV: member, guard.
if guard_missing(ARGV[2]) then return -1 end
local list = redis.call('HGET', HEADS, ARGV[1])
if not list then return 0 end
for v in string.gmatch(list, '%d+') do redis.call('HDEL', VERSIONS, ARGV[1] .. '\n' .. v) end
redis.call('HDEL', HEADS, ARGV[1])
redis.call('ZREM', INDEX, ARGV[1])
return 1
"""

_READ_DOCUMENTS = r"""
-- ARGV: guard, then either 'one' member version ('' latest) | 'all' member |
-- 'list' low high limit. Returns 'ok' then (member, version, JSON) triples.
if guard_missing(ARGV[1]) then return {'nosession'} end
local out = {'ok'}
local function add(member, version)
  local value = redis.call('HGET', VERSIONS, member .. '\n' .. version)
  if value then
    out[#out + 1] = member
    out[#out + 1] = version
    out[#out + 1] = value
  end
end
if ARGV[2] == 'one' then
  local list = redis.call('HGET', HEADS, ARGV[3])
  if list then
    add(ARGV[3], ARGV[4] ~= '' and ARGV[4] or string.format('%d', latest(list)))
  end
elseif ARGV[2] == 'all' then
  local list = redis.call('HGET', HEADS, ARGV[3])
  if list then for v in string.gmatch(list, '%d+') do add(ARGV[3], v) end end
else
  local members = redis.call('ZRANGEBYLEX', INDEX, ARGV[3], ARGV[4], 'LIMIT', 0,
    tonumber(ARGV[5]))
  for _, member in ipairs(members) do
    add(member, string.format('%d', latest(redis.call('HGET', HEADS, member))))
  end
end
return out
"""

SCRIPTS: dict[str, str] = {
    "create": LIB + _CREATE,
    "update_row": _LIVE_LIB + _UPDATE_ROW,
    "delete_session": LIB + _DELETE_SESSION,
    "roll_up": LIB + _ROLL_UP,
    "read_path": _LIVE_LIB + _READ_PATH,
    "read_path_document": _LIVE_LIB + _READ_PATH_DOCUMENT,
    "read": _LIVE_LIB + _READ,
    "page": _LIVE_LIB + _PAGE,
    "set_head": _LIVE_LIB + _SET_HEAD,
    "update_message": _LIVE_LIB + _UPDATE_MESSAGE,
    "delete_message": _LIVE_LIB + _DELETE_MESSAGE,
    "delete_messages": _LIVE_LIB + _DELETE_MESSAGES,
    "clear": _LIVE_LIB + _CLEAR,
    "import": LIB + _IMPORT,
    "swap": _SWAP,
    "put_document": _DOC_LIB + _PUT_DOCUMENT,
    "restore_document": _DOC_LIB + _RESTORE_DOCUMENT,
    "delete_document": _DOC_LIB + _DELETE_DOCUMENT,
    "read_documents": _DOC_LIB + _READ_DOCUMENTS,
}
"""Every script by name; the session scripts share the helpers in `LIB`."""
