-- Compatibility-suite fixture (not an example): leaderboards for tests/compat/leaderboard.test.mjs.
-- At load time it creates "compat_leaderboard" (descending, best, ranks on) and the
-- authoritative "compat_leaderboard_auth"; compat_leaderboard_create makes a fresh board per
-- test run (payload {"id": …, "operator": …}) so reruns against one server start empty.
local nk = require("nakama")

nk.leaderboard_create("compat_leaderboard", false, "desc", "best", "", { fixture = true }, true)
nk.leaderboard_create("compat_leaderboard_auth", true, "desc", "best", "", {}, true)

local function create(context, payload)
  local input = nk.json_decode(payload)
  nk.leaderboard_create(input.id, input.authoritative == true, input.sort or "desc",
    input.operator or "best", "", {}, true)
  return nk.json_encode({ id = input.id })
end

nk.register_rpc(create, "compat_leaderboard_create")
