-- Shared by the workloads: session ids from $IDS_FILE and request builders.
-- (wrk itself counts non-2xx answers; the bench script fails on any.)
local M = {}

function M.ids()
  local ids = {}
  for line in io.lines(os.getenv("IDS_FILE")) do ids[#ids + 1] = line end
  return ids
end

-- Credentials, when the bench sets them: an access token per session from
-- $TOKENS_FILE (a line per id, in $IDS_FILE's order), else $BENCH_AUTH for all.
local tokens = nil
local function authorization(id)
  if tokens == nil then
    tokens = {}
    local file, ids = os.getenv("TOKENS_FILE"), M.ids()
    if file then
      local n = 0
      for line in io.lines(file) do n = n + 1; tokens[ids[n]] = "Bearer " .. line end
    end
  end
  if tokens[id] then return tokens[id] end
  local global = os.getenv("BENCH_AUTH")
  return global and global ~= "" and ("Bearer " .. global) or nil
end

function M.scroll(id, offset, seq)
  return wrk.format("POST", "/v1/sessions/" .. id .. "/scroll",
    { ["Content-Type"] = "application/json", ["Authorization"] = authorization(id) },
    string.format('{"contentOffsetY":%s,"seq":%d}', offset, seq))
end

function M.get(id)
  return wrk.format("GET", "/v1/sessions/" .. id)
end

function M.inset(id, value)
  return wrk.format("PUT", "/v1/sessions/" .. id .. "/inset", { ["Content-Type"] = "application/json" },
    string.format('{"inset":%d}', value))
end

return M
