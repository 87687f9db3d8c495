-- Compatibility-suite fixture (not an example): before/after hooks and a sample of nk
-- utilities, pinned against a real Nakama by hooks.test.mjs. Hooks act only on inputs marked
-- "hook-…", so the rest of the suite is unaffected. scripts/compat.sh and scripts/nakama.sh
-- load it beside the examples.
local nk = require("nakama")

-- UpdateAccount: a before hook may rewrite the input, reject the call with a code, or drop it
-- (return nil); an after hook sees the input and records what it saw.
local function before_update_account(context, payload)
  local name = payload.display_name
  if name == "hook-reject" then
    error({ "rejected by compat hook", 9 })
  elseif name == "hook-drop" then
    return nil
  elseif name == "hook-rewrite" then
    payload.display_name = "hook-rewritten"
  end
  return payload
end
nk.register_req_before(before_update_account, "UpdateAccount")

local function after_update_account(context, outgoing, incoming)
  local name = incoming.display_name
  if type(name) == "string" and string.sub(name, 1, 5) == "hook-" then
    nk.storage_write({
      {
        collection = "compat_hooks",
        key = "after_update_account",
        user_id = context.user_id,
        value = { display_name = name, user_id = context.user_id },
        permission_read = 1,
        permission_write = 0,
      },
    })
  end
end
nk.register_req_after(after_update_account, "UpdateAccount")

-- ChannelJoin over the socket: reject or drop rooms marked "hook-…".
local function before_channel_join(context, envelope)
  local target = envelope.channel_join.target
  if target == "hook-reject-room" then
    error({ "room refused by compat hook", 3 })
  elseif target == "hook-drop-room" then
    return nil
  elseif target == "ctxprobe-room" then
    -- What a realtime hook's context holds, for ctx.test.mjs: its keys, sorted.
    local keys = {}
    for key in pairs(context) do
      keys[#keys + 1] = key
    end
    table.sort(keys)
    error({ nk.json_encode({ keys = keys, headers = context.headers, query_params = context.query_params, lang = context.lang }), 3 })
  end
  return envelope
end
nk.register_rt_before(before_channel_join, "ChannelJoin")

-- A sample of nk utilities whose answers the test computes on its own.
local function nk_sample(context, payload)
  local _, decode_error = pcall(nk.base64_decode, "!!!")
  local _, uuid_error = pcall(nk.uuid_string_to_bytes, "not-a-uuid")
  local _, json_error = pcall(nk.json_decode, "{")
  local result = {
    base64 = nk.base64_encode("héllo wörld"),
    base64url = nk.base64url_encode("héllo wörld?>"),
    base16 = nk.base16_encode("MetaFi"),
    md5 = nk.md5_hash("abc"),
    sha256 = nk.sha256_hash("abc"),
    -- Nakama's order: (input, key).
    hmac = nk.base16_encode(nk.hmac_sha256_hash("The quick brown fox", "key")),
    cron_next = nk.cron_next("0 12 * * 1", 1700000000),
    uuid_roundtrip = nk.uuid_bytes_to_string(nk.uuid_string_to_bytes("2c7ec03e-8cb4-4b8a-a7a8-4b8d0e5d2b3f")),
    json = nk.json_encode({ a = 1, list = { 1, 2, 3 } }),
    errors = {
      base64_decode = tostring(decode_error),
      uuid_string_to_bytes = tostring(uuid_error),
      json_decode = tostring(json_error),
    },
  }
  return nk.json_encode(result)
end
nk.register_rpc(nk_sample, "compat_nk_sample")
