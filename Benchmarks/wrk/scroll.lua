-- POST scroll reports; each session's reports alternate between far down and
-- the top, so isRevealed (and the version) flips on every request.
package.path = os.getenv("BENCH_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")
local ids, n, seq

function init(args)
  ids = common.ids()
  n = 0
  seq = os.time() * 1000000  -- fresh seqs on every run, so none is stale
end

function request()
  n = n + 1
  local id = ids[(n % #ids) + 1]
  local far = (math.floor(n / #ids) % 2 == 0)
  return common.scroll(id, far and "379.5" or "0.5", seq + n)
end
