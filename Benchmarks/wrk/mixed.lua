-- 90 scroll reports, 9 reads and 1 inset change in every 100 requests.
package.path = os.getenv("BENCH_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")
local ids, n, seq

function init(args)
  ids = common.ids()
  n = 0
  seq = os.time() * 1000000
end

function request()
  n = n + 1
  local id = ids[(n % #ids) + 1]
  local slot = n % 100
  if slot < 9 then return common.get(id) end
  if slot == 9 then return common.inset(id, (n % 200 < 100) and 47 or 59) end
  return common.scroll(id, (math.floor(n / #ids) % 2 == 0) and "379.5" or "0.5", seq + n)
end
