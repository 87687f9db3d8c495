-- Compatibility-suite fixture (not an example): how a script's caught error reaches a client.
-- compat_pcall_error catches nk.json_decode's error with pcall and raises it with code 3, so the
-- client's message shows what the caught error value holds (Nakama: "<module>:<line>: <reason>",
-- one line). scripts/compat.sh and scripts/nakama.sh load it beside the examples.
local nk = require("nakama")

local function pcall_error(context, payload)
  local ok, err = pcall(nk.json_decode, payload)
  if ok then
    return "{}"
  end
  error({ "caught: " .. tostring(err), 3 })
end

nk.register_rpc(pcall_error, "compat_pcall_error")
