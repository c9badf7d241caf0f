-- GET the state of each session in turn.
package.path = os.getenv("BENCH_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")
local requests, n = {}, 0

function init(args)
  for i, id in ipairs(common.ids()) do requests[i] = common.get(id) end
end

function request()
  n = n + 1
  return requests[(n % #requests) + 1]
end
