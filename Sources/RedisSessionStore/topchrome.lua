#!lua name=topchrome_source
-- The rules of the top chrome (TopChromeCore's ChromeRules and
-- InMemorySessionStore.apply), run inside Redis so that a change is one atomic
-- round trip. Held equal to the Swift rules by the shared vectors in
-- Tests/RedisSessionStoreTests, not by review: change both together.
--
-- The library is this file and topchrome-rules.lua, one after the other
-- (the build embeds them so; `cat` them for `redis-cli FUNCTION LOAD`):
-- this one reads arguments and keeps sessions in Redis, that one holds the
-- behaviours and the functions Redis calls.
--
-- A session is one hash, KEYS[1] = <prefix>{<id>}:
--   i  inset            r  1 revealed, 0 hidden
--   v  version          s  highest seq applied (absent until a report has one)
--   b  behaviour (absent: revealAtTop)      n  '1' when it snaps (absent: not)
--   c  chosen collapsible height (absent: the whole inset)
--   o  tracked height offset (absent: 0)    l  last offset (absent: none)
--   e  entity tag "<version>.<tag>": the state's name for clients (ETag,
--      event id). A failover or an older backup can lose a version that
--      clients saw, and the next change reuses it for another state; the
--      tag, twelve hex digits the replica draws at random for every call
--      that may make a version, keeps the two names apart. Valid only while
--      its version is v (an older library leaves it behind when it writes).
-- Changes are SPUBLISHed on <key>:changes (same hash tag, so the same shard):
-- "<version>.<tag> <inset> <r>[ <seq>]" for a new version, "gone" for a removal;
-- a session with another behaviour than revealAtTop's defaults adds its seq
-- ('-' for none) and its five behaviour words (see `words`).
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

-- Redis runs a function's commands one at a time and keeps the writes made
-- before one it refuses (an ACL user without it): the change would be half
-- made. So a change is one HSET of the key, and before it, each command
-- that follows it (its expiry, its message) is checked with the same key
-- or channel; a refusal then comes first and changes nothing.
local function permitted(command, ...)
  if not redis.acl_check_cmd(command, ...) then
    error({err = 'NOPERM topchrome: this Redis user may not run ' .. command .. ' on the session; nothing was changed'})
  end
end

-- Checks, before a change's first write, the expiry that follows it.
local function mayTouch(key, ttl)
  if ttl then permitted('PEXPIRE', key, '1') end
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

-- A finite number, or nil for 'none'.
local function optional(text, what)
  if text == 'none' then return nil end
  return finite(text, what)
end

local BEHAVIORS = {revealAtTop = true, pinned = true, enterAlways = true, exitUntilCollapsed = true}

-- A double rounded to a float, as Swift's Float(x) rounds it (to nearest, ties to even).
local function f32(x)
  return (struct.unpack('f', struct.pack('f', x)))
end

-- setBehavior's words from argv[at]: behaviour, height ('none' or a number), snap.
local function settings(argv, at)
  local behavior = argv[at]
  if not BEHAVIORS[behavior] then fail('unknown behaviour ' .. tostring(behavior)) end
  local height = optional(argv[at + 1], 'collapsibleHeight')
  if height then height = f32(height) end
  local snap = argv[at + 2]
  if snap ~= '1' and snap ~= '0' then fail('snap must be 1 or 0') end
  return {op = 'b', behavior = behavior, height = height, snap = snap == '1'}
end

-- Inputs, from argv[at] to the end:
--   'r' offsetY insetTop axis       a scroll report without seq (axis 'v' or 'h')
--   'q' offsetY insetTop axis seq   a scroll report with seq
--   'p' offsetY insetTop axis seq ended contentHeight viewportHeight
--                                   a scroll report in full: seq and heights
--                                   'none' when absent, ended '1' or '0'
--   'i' inset                       setInset
--   'd'                             disappear
--   'b' behaviour height snap       setBehavior (height 'none': the inset)
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
    elseif op == 'p' then
      local offset = finite(argv[word + 1], 'offsetY')
      local top = finite(argv[word + 2], 'insetTop')
      local axis = argv[word + 3]
      if axis ~= 'v' and axis ~= 'h' then fail('axis must be v or h') end
      local seq = nil
      if argv[word + 4] ~= 'none' then seq = whole(argv[word + 4], 'seq') end
      local ended = argv[word + 5]
      if ended ~= '1' and ended ~= '0' then fail('ended must be 1 or 0') end
      local content, viewport = optional(argv[word + 6], 'contentHeight'), optional(argv[word + 7], 'viewportHeight')
      list[#list + 1] = {op = 'r', effective = offset + top, vertical = axis == 'v', seq = seq, ended = ended == '1',
        content = content, viewport = viewport}
      word = word + 8
    elseif op == 'b' then
      list[#list + 1] = settings(argv, word + 1)
      word = word + 4
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
  local f = redis.call('HMGET', key, 'i', 'r', 'v', 's', 'e', 'b', 'n', 'c', 'o', 'l')
  if not f[1] then return nil end
  local state = {inset = tonumber(f[1]), revealed = f[2] == '1', version = tonumber(f[3]), seq = f[4] and tonumber(f[4]) or nil,
    behavior = f[6] or 'revealAtTop', snap = f[7] == '1', chosen = f[8] and tonumber(f[8]) or nil,
    tracked = f[9] and tonumber(f[9]) or 0, last = f[10] and tonumber(f[10]) or nil}
  local prefix = integer(state.version) .. '.'
  if f[5] and string.sub(f[5], 1, #prefix) == prefix then state.etag = f[5] end
  return state
end

-- Gives a state without a valid etag one, made with the call's tag: a
-- state is named once, and keeps its name. True when the name is new, and
-- must be stored (with the change's one HSET, or `store`).
local function named(state, tag)
  if state.etag then return false end
  state.etag = integer(state.version) .. '.' .. tag
  return true
end

local function store(key, state)
  redis.call('HSET', key, 'e', state.etag)
end

-- Equal, and of one sign when zero: states are compared to the bit.
local function same(a, b)
  if a == nil or b == nil then return a == b end
  return a == b and (a ~= 0 or 1 / a == 1 / b)
end

-- The behaviour's words, as ChromeFunctions.behaviorWords writes them:
-- behaviour, snap, chosen height, tracked height offset, last offset ('-'
-- for none); nil for revealAtTop's defaults.
local function words(state)
  if state.behavior == 'revealAtTop' and not state.snap and not state.chosen and same(state.tracked, 0)
    and not state.last then return nil end
  return state.behavior .. ' ' .. (state.snap and '1' or '0') .. ' ' .. (state.chosen and exact(state.chosen) or '-')
    .. ' ' .. exact(state.tracked) .. ' ' .. (state.last and exact(state.last) or '-')
end

-- status, inset, revealed, version, seq (nil when none), tag (nil when the
-- state has none) [, outcomes, changed] [, behaviour words]
local function reply(status, state, outcomes, changed)
  local tag = state.etag and string.sub(state.etag, #integer(state.version) + 2) or false
  local result = {status, exact(state.inset), state.revealed and '1' or '0', integer(state.version),
    state.seq and integer(state.seq) or false, tag, outcomes or false, changed or false}
  local behavior = words(state)
  if behavior then
    result[9] = behavior
  elseif not outcomes then
    result[7], result[8] = nil, nil
  end
  return result
end

local function message(state)
  local text = state.etag .. ' ' .. exact(state.inset) .. ' ' .. (state.revealed and '1' or '0')
  local behavior = words(state)
  if state.seq then text = text .. ' ' .. integer(state.seq) elseif behavior then text = text .. ' -' end
  if behavior then text = text .. ' ' .. behavior end
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
