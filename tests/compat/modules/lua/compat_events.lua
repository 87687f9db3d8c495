-- Fixture of tests/compat/party.test.mjs: `compat_emit_event` sends an event from server code
-- (nk.event) naming the caller, so the test can see it reach the event processors.
local nk = require("nakama")

local function emit_event(context, payload)
  nk.event("compat_server_event", { user_id = context.user_id, source = "lua" })
  return "{}"
end

nk.register_rpc(emit_event, "compat_emit_event")
