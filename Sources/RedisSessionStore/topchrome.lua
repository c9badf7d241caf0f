#!lua name=topchrome_source
-- The rules of the top chrome (TopChromeCore's ChromeRules and
-- InMemorySessionStore.apply), run inside Redis so that a change is one atomic
-- round trip. Held equal to the Swift rules by the shared vectors in
-- Tests/RedisSessionStoreTests, not by review: change both together.
--
-- A session is one hash, KEYS[1] = <prefix>{<id>}:
--   i  inset            r  1 revealed, 0 hidden
--   v  version          s  highest seq applied (absent until a report has one)
--   e  entity tag "<version>.<tag>": the state's name for clients (ETag,
--      event id). A failover or an older backup can lose a version that
--      clients saw, and the next change reuses it for another state; the
--      tag, twelve hex digits the replica draws at random for every call
--      that may make a version, keeps the two names apart. Valid only while
--      its version is v (an older library leaves it behind when it writes).
-- Changes are SPUBLISHed on <key>:changes (same hash tag, so the same shard):
-- "<version>.<tag> <inset> <r>[ <seq>]" for a new version, "gone" for a removal.
--
-- Numbers travel as text. Lua numbers are doubles, as Swift's are, and the
-- text written here is the shortest of 15 to 17 significant digits that reads
-- back as the same double: 17 always do, and glibc's strtod (Lua's tonumber)
-- and Swift's Double(String) both round correctly. Versions and seqs are
-- integers below 2^53, exact as doubles, written without exponent. Integer
-- replies are never used: Redis would truncate a double to one.

local MAX_WHOLE = 9007199254740991 -- 2^53 - 1: ChromeState.allowedVersions, ScrollReport.allowedSeqs

local function fail(message)
  error({err = 'ERR topchrome: ' .. message})
end

local function finite(text, what)
  local x = text and tonumber(text)
  if x == nil or x ~= x or x == math.huge or x == -math.huge then fail(what .. ' must be a finite number') end
  return x
end

local function whole(text, what)
  local x = text and tonumber(text)
  if x == nil or x ~= math.floor(x) or x < 0 or x > MAX_WHOLE then fail(what .. ' must be an integer in 0...2^53-1') end
  return x
end

local function exact(x)
  for digits = 15, 17 do
    local text = string.format('%.' .. digits .. 'g', x)
    if tonumber(text) == x then return text end
  end
end

local function integer(x)
  return string.format('%.0f', x)
end

-- Milliseconds of idleness after which the session expires, or 'none'.
local function lifetime(text)
  if text == 'none' then return nil end
  local ms = whole(text, 'ttl')
  if ms < 1 then fail('ttl must be at least 1 ms') end
  return ms
end

-- The moment after which a change must not run, in Redis's clock (Unix
-- milliseconds), or 'none'. The replica answers 503 at its own deadline;
-- a change still queued then (behind another's WAIT) would otherwise run
-- after the client was told and retried elsewhere, and the older value win.
local function overdue(text)
  if text == 'none' then return false end
  local deadline = whole(text, 'deadline')
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) >= deadline
end

-- The reply of a change refused because it came past its deadline: nothing changed.
local LATE = {'late'}

local function touch(key, ttl)
  if ttl then redis.call('PEXPIRE', key, integer(ttl)) end
end

-- A VersionCondition, flattened into a conjunction of clauses:
-- 'in' n e1..en | 'notin' n e1..en | 'never', each e an entity tag's text
-- compared as text. argv[at] counts the words.
local function condition(argv, at)
  local count = whole(argv[at], 'condition length')
  local last = at + count
  if last > #argv then fail('condition runs past the arguments') end
  local clauses = {}
  local word = at + 1
  while word <= last do
    local kind = argv[word]
    if kind == 'never' then
      clauses[#clauses + 1] = {never = true}
      word = word + 1
    elseif kind == 'in' or kind == 'notin' then
      local n = whole(argv[word + 1], 'condition set size')
      if word + 1 + n > last then fail('condition set runs past the condition') end
      local set = {}
      for k = 1, n do set[argv[word + 1 + k]] = true end
      clauses[#clauses + 1] = {inside = kind == 'in', set = set}
      word = word + 2 + n
    else
      fail('unknown condition word ' .. tostring(kind))
    end
  end
  return clauses, last + 1
end

local function holds(clauses, etag)
  for _, clause in ipairs(clauses) do
    if clause.never then return false end
    if (clause.set[etag] == true) ~= clause.inside then return false end
  end
  return true
end

-- The fresh tag a call brings: twelve lower-case hex digits.
local function fresh(text)
  if type(text) ~= 'string' or #text ~= 12 or not string.match(text, '^[0-9a-f]+$') then
    fail('tag must be 12 lower-case hex digits')
  end
  return text
end

-- Inputs, from argv[at] to the end:
--   'r' offsetY insetTop axis       a scroll report without seq (axis 'v' or 'h')
--   'q' offsetY insetTop axis seq   a scroll report with seq
--   'i' inset                       setInset
--   'd'                             disappear
-- All are read before anything is applied: an error part way through a
-- function would leave the writes made before it.
local function inputs(argv, at)
  local list = {}
  local word = at
  while word <= #argv do
    local op = argv[word]
    if op == 'r' or op == 'q' then
      local offset = finite(argv[word + 1], 'offsetY')
      local top = finite(argv[word + 2], 'insetTop')
      local axis = argv[word + 3]
      if axis ~= 'v' and axis ~= 'h' then fail('axis must be v or h') end
      -- Two finite halves may overflow to an infinity of their sum's sign,
      -- which compares with the threshold as the exact sum would (ChromeRules).
      local effective = offset + top
      local seq = nil
      if op == 'q' then seq = whole(argv[word + 4], 'seq'); word = word + 5 else word = word + 4 end
      list[#list + 1] = {op = 'r', effective = effective, vertical = axis == 'v', seq = seq}
    elseif op == 'i' then
      list[#list + 1] = {op = 'i', inset = finite(argv[word + 1], 'inset')}
      word = word + 2
    elseif op == 'd' then
      list[#list + 1] = {op = 'd'}
      word = word + 1
    else
      fail('unknown input ' .. tostring(op))
    end
  end
  return list
end

-- The session, or nil. Its etag is nil when the hash has none for its
-- version (written by an older library).
local function load(key)
  local f = redis.call('HMGET', key, 'i', 'r', 'v', 's', 'e')
  if not f[1] then return nil end
  local state = {inset = tonumber(f[1]), revealed = f[2] == '1', version = tonumber(f[3]), seq = f[4] and tonumber(f[4]) or nil}
  local prefix = integer(state.version) .. '.'
  if f[5] and string.sub(f[5], 1, #prefix) == prefix then state.etag = f[5] end
  return state
end

-- Gives a state without a valid etag one, made with the call's tag, and
-- stores it: a state is named once, and keeps its name.
local function named(key, state, tag)
  if state.etag then return end
  state.etag = integer(state.version) .. '.' .. tag
  redis.call('HSET', key, 'e', state.etag)
end

-- status, inset, revealed, version, seq (nil when none), tag (nil when the
-- state has none) [, outcomes, changed]
local function reply(status, state, outcomes, changed)
  local tag = state.etag and string.sub(state.etag, #integer(state.version) + 2) or false
  return {status, exact(state.inset), state.revealed and '1' or '0', integer(state.version),
    state.seq and integer(state.seq) or false, tag, outcomes, changed}
end

local function message(state)
  local text = state.etag .. ' ' .. exact(state.inset) .. ' ' .. (state.revealed and '1' or '0')
  if state.seq then text = text .. ' ' .. integer(state.seq) end
  return text
end

-- ChromeState.set: a new version only if a value really changes, and none
-- past 2^53 - 1 (the session then takes no more changes). A new version
-- is named with the call's tag.
local function set(state, inset, revealed, tag)
  if inset == state.inset and revealed == state.revealed then return false end
  if state.version >= MAX_WHOLE then return false end
  state.inset, state.revealed, state.version = inset, revealed, state.version + 1
  state.etag = integer(state.version) .. '.' .. tag
  return true
end

-- FCALL <library>_create 1 key tag deadline ttl inset: a new session,
-- revealed at version 1; nil if the key exists (the caller draws another
-- id); 'late' past the deadline.
local function create(keys, argv)
  local tag = fresh(argv[1])
  local late = overdue(argv[2])
  local ttl = lifetime(argv[3])
  local inset = finite(argv[4], 'inset')
  if late then return LATE end
  if redis.call('EXISTS', keys[1]) == 1 then return false end
  local state = {inset = inset, revealed = true, version = 1, etag = '1.' .. tag}
  redis.call('HSET', keys[1], 'i', exact(inset), 'r', '1', 'v', '1', 'e', state.etag)
  touch(keys[1], ttl)
  return reply('done', state)
end

-- FCALL <library>_get 1 key tag ttl: the session, as a use of it (its TTL
-- slides); nil if none. Runs when memory is full: a read frees nothing but
-- must not fail for it, and sliding a TTL takes no memory.
local function get(keys, argv)
  local tag = fresh(argv[1])
  local ttl = lifetime(argv[2])
  local state = load(keys[1])
  if not state then return false end
  named(keys[1], state, tag)
  touch(keys[1], ttl)
  return reply('done', state)
end

-- FCALL_RO <library>_read 1 key: the session, writing nothing (its TTL
-- stays), for when Redis takes no writes at all (a failed save, too few
-- replicas, a read-only node): reads still work. A state without a tag
-- comes back with none; the caller cannot name it.
local function read(keys)
  local state = load(keys[1])
  if not state then return false end
  return reply('done', state)
end

-- FCALL <library>_apply 1 key tag deadline ttl threshold n condition...
-- input...: the inputs in order as one unit if the condition holds; 'late',
-- changing nothing, past the deadline. nil if no session;
-- 'failed' and the state, untouched, if the condition does not hold; else
-- 'done', the state, one letter per scroll report: a(pplied),
-- h(orizontal), s(tale), and '1' if the session changed (a new version or
-- seq), '0' if not: only a change waits for replicas (WAIT).
local function apply(keys, argv)
  local key = keys[1]
  local tag = fresh(argv[1])
  local late = overdue(argv[2])
  local ttl = lifetime(argv[3])
  local threshold = finite(argv[4], 'threshold')
  local clauses, at = condition(argv, 5)
  local list = inputs(argv, at)
  if late then return LATE end
  local state = load(key)
  if not state then return false end
  named(key, state, tag)
  if not holds(clauses, state.etag) then return reply('failed', state) end
  local before = {inset = state.inset, revealed = state.revealed, version = state.version, seq = state.seq}
  local outcomes = {}
  local channel = key .. ':changes'
  for _, input in ipairs(list) do
    local changed = false
    if input.op == 'r' then
      if input.seq and state.seq and input.seq <= state.seq then
        outcomes[#outcomes + 1] = 's'
      else
        if input.seq then state.seq = input.seq end
        if input.vertical then
          changed = set(state, state.inset, input.effective <= threshold, tag)
          outcomes[#outcomes + 1] = 'a'
        else
          outcomes[#outcomes + 1] = 'h'
        end
      end
    elseif input.op == 'i' then
      changed = set(state, input.inset, state.revealed, tag)
    else
      -- Leaving a screen brings the island back.
      changed = set(state, state.inset, true, tag)
    end
    if changed then redis.call('SPUBLISH', channel, message(state)) end
  end
  local changed = '0'
  if state.version ~= before.version then
    redis.call('HSET', key, 'i', exact(state.inset), 'r', state.revealed and '1' or '0', 'v', integer(state.version),
      'e', state.etag)
    changed = '1'
  end
  if state.seq ~= before.seq then
    redis.call('HSET', key, 's', integer(state.seq))
    changed = '1'
  end
  touch(key, ttl)
  return reply('done', state, table.concat(outcomes), changed)
end

-- FCALL <library>_delete 1 key tag deadline n condition...: removes the
-- session if the condition holds. nil if none; 'failed' or 'done' and the
-- state it had; 'late' past the deadline. Runs when memory is full: a
-- removal is what frees it.
local function delete(keys, argv)
  local tag = fresh(argv[1])
  local late = overdue(argv[2])
  local clauses = condition(argv, 3)
  if late then return LATE end
  local state = load(keys[1])
  if not state then return false end
  named(keys[1], state, tag)
  if not holds(clauses, state.etag) then return reply('failed', state) end
  redis.call('DEL', keys[1])
  redis.call('SPUBLISH', keys[1] .. ':changes', 'gone')
  return reply('done', state)
end

-- FCALL <library>_watched n key... ttl: for each session watched through
-- the replica, its entity tag ('' for a state without one) after sliding
-- its expiry (a watched session is in use), or nil if it is gone. One call
-- for many sessions (of one slot, in a cluster) instead of a command each;
-- the replica reads again only those whose tag is not the one its
-- watchers were told, i.e. a change whose message it missed. Runs when
-- memory is full, as a read does.
local function watched(keys, argv)
  local ttl = lifetime(argv[1])
  local tags = {}
  for index, key in ipairs(keys) do
    local f = redis.call('HMGET', key, 'v', 'e')
    if f[1] then
      touch(key, ttl)
      local prefix = f[1] .. '.'
      tags[index] = (f[2] and string.sub(f[2], 1, #prefix) == prefix) and f[2] or ''
    else
      tags[index] = false
    end
  end
  return tags
end

-- The service loads this text under a name made of a digest of it
-- (ChromeFunctions.libraryName replaces 'topchrome_source' on the first line
-- and here), and so its functions' names change with any change to it.
-- Replicas of two builds then share a Redis during a rolling upgrade, each
-- loading and calling its own library; under one name, each replica's load
-- would replace the other's.
--
-- Without flags Redis takes every function for a write and refuses it when
-- memory is full ('OOM command not allowed'), reads and removals too. A
-- read and a removal need no memory: they run anyway ('allow-oom'). A
-- read that writes nothing ('no-writes') runs whenever Redis takes no writes.
local LIBRARY = 'topchrome_source'
redis.register_function(LIBRARY .. '_create', create)
redis.register_function{function_name = LIBRARY .. '_get', callback = get, flags = {'allow-oom'}}
redis.register_function{function_name = LIBRARY .. '_read', callback = read, flags = {'no-writes'}}
redis.register_function(LIBRARY .. '_apply', apply)
redis.register_function{function_name = LIBRARY .. '_delete', callback = delete, flags = {'allow-oom'}}
redis.register_function{function_name = LIBRARY .. '_watched', callback = watched, flags = {'allow-oom'}}
