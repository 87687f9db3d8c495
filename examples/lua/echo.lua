-- The seed benchmark's Lua echo: decode the payload as JSON and encode it back (keys sorted).
-- A payload that is not JSON (an empty one included) is answered with code 3
-- (INVALID_ARGUMENT) and the message "payload is not valid JSON", word for word the same as
-- the JavaScript and native echoes, whatever the parser said.
local nk = require("nakama")

local function echo(context, payload)
  local ok, decoded = pcall(nk.json_decode, payload)
  if not ok then
    error({ "payload is not valid JSON", 3 })
  end
  return nk.json_encode(decoded)
end

nk.register_rpc(echo, "echo")
