-- The seed benchmark's Lua echo: decode the payload as JSON and encode it back.
-- A payload that is not JSON is answered with code 3 (INVALID_ARGUMENT).
local nk = require("nakama")

local function echo(context, payload)
  local ok, decoded = pcall(nk.json_decode, payload)
  if not ok then
    error({ "payload is not valid JSON: " .. tostring(decoded), 3 })
  end
  return nk.json_encode(decoded)
end

nk.register_rpc(echo, "echo")
