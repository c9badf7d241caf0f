-- Shared by the workloads: session ids from $IDS_FILE and request builders.
-- (wrk itself counts non-2xx answers; the bench script fails on any.)
local M = {}

function M.ids()
  local ids = {}
  for line in io.lines(os.getenv("IDS_FILE")) do ids[#ids + 1] = line end
  return ids
end

function M.scroll(id, offset, seq)
  return wrk.format("POST", "/v1/sessions/" .. id .. "/scroll", { ["Content-Type"] = "application/json" },
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
