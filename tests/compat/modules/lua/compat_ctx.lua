-- Compatibility-suite fixture (not an example): what Lua server code sees of its `context` in
-- an RPC (over REST and over the socket) and in a before and an after hook of
-- AuthenticateEmail, pinned against a real Nakama by ctx.test.mjs (the realtime hook's view is
-- compat_hooks.lua's ChannelJoin hook). The hooks act only on inputs marked "ctxprobe", so the
-- rest of the suite is unaffected.
local nk = require("nakama")

-- The keys of `context` (sorted: a table has no order), the values that do not change between
-- calls, and the types of the others; whether the trace id is a random UUID and the port a
-- decimal number, as text; the caller's identity (for the test to compare with its session
-- token).
local stable = { execution_mode = true, headers = true, query_params = true, env = true, vars = true, lang = true }
local hex = "[0-9a-f]"
local uuid4 = "^" .. string.rep(hex, 8) .. "%-" .. string.rep(hex, 4) .. "%-4" .. string.rep(hex, 3)
  .. "%-[89ab]" .. string.rep(hex, 3) .. "%-" .. string.rep(hex, 12) .. "$"
local function seen(context)
  local keys, values = {}, {}
  for key, value in pairs(context) do
    keys[#keys + 1] = key
    if stable[key] then
      values[key] = value
    else
      values[key] = type(value)
    end
  end
  table.sort(keys)
  return {
    keys = keys,
    values = values,
    trace_id_is_uuid = type(context.trace_id) == "string" and string.find(context.trace_id, uuid4) ~= nil,
    client_port_is_decimal = type(context.client_port) == "string" and string.find(context.client_port, "^[1-9][0-9]*$") ~= nil,
    identity = { user_id = context.user_id, username = context.username, user_session_exp = context.user_session_exp },
  }
end

nk.register_rpc(function(context, payload)
  return nk.json_encode(seen(context))
end, "compat_ctx_lua")

nk.register_req_before(function(context, payload)
  if string.sub(payload.account.email, 1, 15) == "ctxprobe-before" then
    error({ nk.json_encode(seen(context)), 3 })
  end
  return payload
end, "AuthenticateEmail")

-- An after hook cannot change the answer: it leaves what it saw in the local cache, under the
-- email, for compat_ctx_lua_after to hand out.
nk.register_req_after(function(context, outgoing, incoming)
  if string.sub(incoming.account.email, 1, 14) == "ctxprobe-after" then
    nk.localcache_put("compat_ctx:" .. incoming.account.email, nk.json_encode(seen(context)))
  end
end, "AuthenticateEmail")

nk.register_rpc(function(context, payload)
  return nk.localcache_get("compat_ctx:" .. nk.json_decode(payload).email) or ""
end, "compat_ctx_lua_after")

return {}
