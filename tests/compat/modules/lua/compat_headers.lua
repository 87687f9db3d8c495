-- The REST edge's request headers as server code sees them in ctx.headers (names as Nakama's Go
-- server writes them; Host and Grpc-Timeout left out): tests/compat/headers.test.mjs.
local nk = require("nakama")

nk.register_rpc(function(context, payload)
  local names = {}
  for name, values in pairs(context.headers or {}) do
    names[#names + 1] = name
  end
  table.sort(names)
  return nk.json_encode({ names = names, build = (context.headers or {})["X-Game-Build"] })
end, "compat_headers")
