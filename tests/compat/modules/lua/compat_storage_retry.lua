-- Compatibility-suite fixture (not an example): storage_write_retry as games use it, a counter
-- owned by the caller that many requests increment at once. scripts/compat.sh and
-- scripts/nakama.sh load it beside the examples; tests/compat/storage_retry.test.mjs drives it.
local nk = require("nakama")

-- Increments the caller's "compat_counters/hits" through the retry loop: count + 1, written
-- with the version read ("*" when there is none yet). Answers {"acks": n}.
local function increment(context, payload)
  local keys = { { collection = "compat_counters", key = "hits", user_id = context.user_id } }
  local acks = nk.storage_write_retry(keys, function(objects)
    local count, version = 0, "*"
    if objects[1] then
      count, version = objects[1].value.count, objects[1].version
    end
    return { {
      collection = "compat_counters", key = "hits", user_id = context.user_id,
      value = { count = count + 1 }, version = version, permission_read = 1, permission_write = 0,
    } }
  end, 10)
  return nk.json_encode({ acks = #acks })
end

-- max_retries outside 0..10: Nakama's argument error reaches the client.
local function bad_retries(context, payload)
  nk.storage_write_retry({ { collection = "compat_counters", key = "hits" } }, function(objects)
    return {}
  end, 11)
  return "{}"
end

nk.register_rpc(increment, "compat_storage_retry_increment")
nk.register_rpc(bad_retries, "compat_storage_retry_bad")
