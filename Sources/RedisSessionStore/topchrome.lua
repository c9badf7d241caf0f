#!lua name=topchrome_source
-- The rules of the top chrome (TopChromeCore's ChromeRules and
-- InMemorySessionStore.apply), run inside Redis so that a change is one atomic
-- round trip. Held equal to the Swift rules by the shared vectors in
-- Tests/RedisSessionStoreTests, not by review: change both together.
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

-- Gives a state without a valid etag one, made with the call's tag, and
-- stores it: a state is named once, and keeps its name.
local function named(key, state, tag)
  if state.etag then return end
  state.etag = integer(state.version) .. '.' .. tag
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

-- The behaviours (ChromeRules, ChromeState): written as the Swift is, step
-- for step, so that every double rounds alike. `atMost` and `atLeast`
-- keep the first of two equal values, as Swift's do.
local MAX_DOUBLE = 1.7976931348623157e308
local MAX_HEIGHT = 10000 -- RevealSettings.allowedCollapsibleHeights

local function atMost(x, bound)
  if x > bound then return bound end
  return x
end

local function atLeast(x, bound)
  if x < bound then return bound end
  return x
end

local function copy(state)
  local other = {}
  for name, value in pairs(state) do other[name] = value end
  return other
end

-- ChromeState.heightWithin
local function within(h)
  if h > 0 then return atMost(h, MAX_HEIGHT) end
  return 0
end

-- ChromeState.collapsibleHeight
local function height(state)
  return within(state.chosen or f32(state.inset))
end

-- ChromeState.heightOffset
local function offsetOf(state)
  if state.behavior == 'revealAtTop' then
    if state.revealed then return 0 end
    return -height(state)
  elseif state.behavior == 'pinned' then
    return 0
  end
  return state.tracked
end

-- ChromeState.collapsedPercent
local function percent(state)
  if state.behavior == 'revealAtTop' then return state.revealed and 0 or 100 end
  if state.behavior == 'pinned' then return 0 end
  local h = height(state)
  if not (h > 0) then return 0 end
  return math.floor(-state.tracked / h * 100 + 0.5)
end

local function fractionDriven(state)
  return state.behavior == 'enterAlways' or state.behavior == 'exitUntilCollapsed'
end

-- ChromeState.settleRevealed
local function settle(state)
  if not fractionDriven(state) then return end
  local p = percent(state)
  if p == 0 then state.revealed = true elseif p == 100 then state.revealed = false end
end

-- ChromeState.looksLike
local function looksLike(a, b)
  return a.inset == b.inset and a.revealed == b.revealed and a.behavior == b.behavior and a.snap == b.snap
    and height(a) == height(b) and percent(a) == percent(b)
end

-- ChromeState.commit: whether the state got a new version.
local function commit(state, before, tag)
  if looksLike(state, before) then return false end
  if before.version >= MAX_WHOLE then
    local seq = state.seq
    for name in pairs(state) do state[name] = nil end
    for name, value in pairs(before) do state[name] = value end
    state.seq = seq
    return false
  end
  state.version = before.version + 1
  state.etag = integer(state.version) .. '.' .. tag
  return true
end

-- ScrollReport.scrollableOffset
local function scrollable(input)
  if input.content and input.viewport then
    return atMost(atLeast(input.effective, 0), atLeast(input.content - input.viewport, 0))
  end
  return input.effective
end

-- ChromeRules.follow
local function follow(state, input, threshold)
  local offset = atMost(atLeast(scrollable(input), -MAX_DOUBLE), MAX_DOUBLE)
  local h = height(state)
  local ho
  if offset <= threshold then
    ho = 0
  elseif state.behavior == 'exitUntilCollapsed' then
    ho = -atMost(offset, h)
  elseif state.last then
    ho = atMost(atLeast(state.tracked - (offset - state.last), -h), 0)
  else
    ho = state.tracked
  end
  if state.behavior == 'enterAlways' then state.last = offset end
  if state.snap and input.ended then
    if -ho * 2 > h then ho = -h else ho = 0 end
  end
  state.tracked = f32(ho)
  settle(state)
end

-- ChromeRules.step for inputs other than scroll reports under revealAtTop.
local function setInset(state, inset)
  if inset ~= state.inset then state.inset = inset end
  if state.chosen then state.chosen = atMost(state.chosen, within(f32(inset))) end
  state.tracked = atLeast(state.tracked, -height(state))
  settle(state)
end

local function disappear(state)
  state.last = nil
  state.tracked = 0
  state.revealed = true
end

local function setBehavior(state, input)
  local standing = offsetOf(state)
  state.behavior = input.behavior
  state.snap = input.snap
  state.chosen = input.height and atMost(input.height, within(f32(state.inset))) or nil
  state.last = nil
  if input.behavior == 'revealAtTop' then
    state.tracked = 0
  elseif input.behavior == 'pinned' then
    state.tracked = 0
    state.revealed = true
  else
    state.tracked = atLeast(standing, -height(state))
    settle(state)
  end
end

-- Writes what changed since `before` (a whole state), beside i/r/v/e.
local function save(key, state, before)
  local fields, gone = {}, {}
  local function put(name, value, old, default)
    if same(value, old) then return end
    if value == nil or same(value, default) then gone[#gone + 1] = name else fields[#fields + 1] = name; fields[#fields + 1] = value end
  end
  if state.version ~= before.version then
    fields = {'i', exact(state.inset), 'r', state.revealed and '1' or '0', 'v', integer(state.version), 'e', state.etag}
  end
  if state.seq ~= before.seq then fields[#fields + 1] = 's'; fields[#fields + 1] = integer(state.seq) end
  if state.behavior ~= before.behavior then
    if state.behavior == 'revealAtTop' then gone[#gone + 1] = 'b' else fields[#fields + 1] = 'b'; fields[#fields + 1] = state.behavior end
  end
  if state.snap ~= before.snap then
    if state.snap then fields[#fields + 1] = 'n'; fields[#fields + 1] = '1' else gone[#gone + 1] = 'n' end
  end
  if not same(state.chosen, before.chosen) then
    if state.chosen then fields[#fields + 1] = 'c'; fields[#fields + 1] = exact(state.chosen) else gone[#gone + 1] = 'c' end
  end
  if not same(state.tracked, before.tracked) then
    if same(state.tracked, 0) then gone[#gone + 1] = 'o' else fields[#fields + 1] = 'o'; fields[#fields + 1] = exact(state.tracked) end
  end
  if not same(state.last, before.last) then
    if state.last then fields[#fields + 1] = 'l'; fields[#fields + 1] = exact(state.last) else gone[#gone + 1] = 'l' end
  end
  if #fields > 0 then redis.call('HSET', key, unpack(fields)) end
  if #gone > 0 then redis.call('HDEL', key, unpack(gone)) end
  return #fields > 0 or #gone > 0
end

-- FCALL <library>_create 1 key tag deadline ttl inset 'b' behaviour height
-- snap: a new session, revealed at version 1; nil if the key exists (the
-- caller draws another id); 'late' past the deadline.
local function create(keys, argv)
  local tag = fresh(argv[1])
  local late = overdue(argv[2])
  local ttl = lifetime(argv[3])
  local inset = finite(argv[4], 'inset')
  if argv[5] ~= 'b' or #argv ~= 8 then fail('create takes its behaviour as b behaviour height snap') end
  local chosen = settings(argv, 6)
  if late then return LATE end
  if redis.call('EXISTS', keys[1]) == 1 then return false end
  local state = {inset = inset, revealed = true, version = 1, etag = '1.' .. tag, behavior = chosen.behavior, snap = chosen.snap,
    chosen = chosen.height and atMost(chosen.height, within(f32(inset))) or nil, tracked = 0}
  redis.call('HSET', keys[1], 'i', exact(inset), 'r', '1', 'v', '1', 'e', state.etag)
  save(keys[1], state, {inset = inset, revealed = true, version = 1, behavior = 'revealAtTop', snap = false, tracked = 0})
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
  local before = copy(state)
  local outcomes = {}
  local channel = key .. ':changes'
  for _, input in ipairs(list) do
    local changed = false
    if input.op == 'r' then
      if input.seq and state.seq and input.seq <= state.seq then
        outcomes[#outcomes + 1] = 's'
      else
        if input.seq then state.seq = input.seq end
        if not input.vertical then
          outcomes[#outcomes + 1] = 'h'
        elseif state.behavior == 'revealAtTop' then
          changed = set(state, state.inset, scrollable(input) <= threshold, tag)
          outcomes[#outcomes + 1] = 'a'
        else
          if state.behavior ~= 'pinned' then
            local previous = copy(state)
            follow(state, input, threshold)
            changed = commit(state, previous, tag)
          end
          outcomes[#outcomes + 1] = 'a'
        end
      end
    else
      local previous = copy(state)
      if input.op == 'i' then
        setInset(state, input.inset)
      elseif input.op == 'd' then
        -- Leaving a screen brings the island back.
        disappear(state)
      else
        setBehavior(state, input)
      end
      changed = commit(state, previous, tag)
    end
    if changed then redis.call('SPUBLISH', channel, message(state)) end
  end
  local changed = save(key, state, before) and '1' or '0'
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
