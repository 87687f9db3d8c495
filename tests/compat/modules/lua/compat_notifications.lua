-- Compatibility-suite fixture (not an example): server code sending notifications, for
-- notification.test.mjs. scripts/compat.sh and scripts/nakama.sh load it beside the examples.
local nk = require("nakama")

-- Payload: {user_id, subject, content, code, persistent, sender_id?}; one notification.
local function notify(context, payload)
  local p = nk.json_decode(payload)
  nk.notification_send(p.user_id, p.subject, p.content, p.code, p.sender_id, p.persistent)
  return "{}"
end
nk.register_rpc(notify, "compat_notify")

-- Payload: {user_id}; the user's notifications as server code lists them (limit 100).
local function list(context, payload)
  local p = nk.json_decode(payload)
  local notifications, cursor = nk.notifications_list(p.user_id, 100)
  return nk.json_encode({ notifications = notifications, cursor = cursor or "" })
end
nk.register_rpc(list, "compat_notifications_list")
