-- The second part of the topchrome library, after topchrome.lua (whose
-- locals it uses): the behaviours, and the functions Redis calls.

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
  local hidden = -state.tracked / h
  if not (hidden < 1) then return 100 end
  if not (hidden > 0) then return 0 end
  return math.floor(hidden * 100 + 0.5)
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

-- The fields that changed since `before` (a whole state; `etag` nil when
-- the hash has none), as HSET takes them. A field back at its default is
-- written as the default's text (`load` reads it so), not deleted: the
-- change stays one write command.
local function changes(state, before)
  local fields = {}
  local function put(name, text) fields[#fields + 1] = name; fields[#fields + 1] = text end
  if state.version ~= before.version then
    fields = {'i', exact(state.inset), 'r', state.revealed and '1' or '0', 'v', integer(state.version), 'e', state.etag}
  elseif state.etag ~= before.etag then
    put('e', state.etag)
  end
  if state.seq ~= before.seq then put('s', integer(state.seq)) end
  if state.behavior ~= before.behavior then put('b', state.behavior) end
  if state.snap ~= before.snap then put('n', state.snap and '1' or '0') end
  if not same(state.chosen, before.chosen) then put('c', state.chosen and exact(state.chosen) or '-') end
  if not same(state.tracked, before.tracked) then put('o', exact(state.tracked)) end
  if not same(state.last, before.last) then put('l', state.last and exact(state.last) or '-') end
  return fields
end

-- What `changes` compares a new session with: nothing stored.
local NOTHING = {version = 0, behavior = 'revealAtTop', snap = false, tracked = 0}

-- FCALL <library>_create 1 key tag deadline ttl inset ['b' behaviour height
-- snap]: a new session, revealed at version 1; nil if the key exists (the
-- caller draws another id); 'late' past the deadline.
local function create(keys, argv)
  local tag = fresh(argv[1])
  local late = overdue(argv[2])
  local ttl = lifetime(argv[3])
  local inset = finite(argv[4], 'inset')
  -- Without behaviour words, revealAtTop's defaults (callers written before behaviours).
  local chosen = {behavior = 'revealAtTop', snap = false}
  if #argv > 4 then
    if argv[5] ~= 'b' or #argv ~= 8 then fail('create takes its behaviour as b behaviour height snap') end
    chosen = settings(argv, 6)
  end
  if late then return LATE end
  if redis.call('EXISTS', keys[1]) == 1 then return false end
  local state = {inset = inset, revealed = true, version = 1, etag = '1.' .. tag, behavior = chosen.behavior, snap = chosen.snap,
    chosen = chosen.height and atMost(chosen.height, within(f32(inset))) or nil, tracked = 0}
  mayTouch(keys[1], ttl)
  redis.call('HSET', keys[1], unpack(changes(state, NOTHING)))
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
  if named(state, tag) then
    mayTouch(keys[1], ttl)
    store(keys[1], state)
  end
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
  local before = copy(state)
  if named(state, tag) and not holds(clauses, state.etag) then store(key, state) end
  if not holds(clauses, state.etag) then return reply('failed', state) end
  local outcomes = {}
  local messages = {}
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
    if changed then messages[#messages + 1] = message(state) end
  end
  -- The one write, after every check: its messages and expiry follow it.
  local fields = changes(state, before)
  local channel = key .. ':changes'
  if #fields > 0 then
    mayTouch(key, ttl)
    if #messages > 0 then permitted('SPUBLISH', channel, messages[1]) end
    redis.call('HSET', key, unpack(fields))
  end
  for _, text in ipairs(messages) do redis.call('SPUBLISH', channel, text) end
  touch(key, ttl)
  -- A name newly given is no change of the session: it waits for no replica.
  local changed = (#fields > 0 and not (#fields == 2 and fields[1] == 'e')) and '1' or '0'
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
  -- A name given to a state removed at once need not be stored.
  local new = named(state, tag)
  if not holds(clauses, state.etag) then
    if new then store(keys[1], state) end
    return reply('failed', state)
  end
  permitted('SPUBLISH', keys[1] .. ':changes', 'gone')
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
  -- Each key's expiry is one write, and all are checked before the first.
  if ttl then
    for _, key in ipairs(keys) do permitted('PEXPIRE', key, '1') end
  end
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

-- FCALL <library>_permitted 1 key: the commands of the library that the
-- caller may not run on the key and its channel, none when it may run
-- them all. While Redis refuses the service's calls, the replica asks this
-- to learn when a change could succeed again (its /readyz).
local function permittedNow(keys)
  local key = keys[1]
  local missing = {}
  for _, command in ipairs({{'DEL', key}, {'EXISTS', key}, {'HMGET', key, 'v'}, {'HSET', key, 'e', '-'},
    {'PEXPIRE', key, '1'}, {'SPUBLISH', key .. ':changes', 'gone'}, {'TIME'}}) do
    if not redis.acl_check_cmd(unpack(command)) then missing[#missing + 1] = command[1] end
  end
  return missing
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
redis.register_function{function_name = LIBRARY .. '_permitted', callback = permittedNow, flags = {'no-writes', 'allow-oom'}}
