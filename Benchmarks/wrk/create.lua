-- POST /v1/sessions as fast as possible (for the memory-per-session figure).
function request()
  return wrk.format("POST", "/v1/sessions")
end
