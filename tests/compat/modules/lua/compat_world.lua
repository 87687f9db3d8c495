-- Compatibility-suite fixture (not an example): a served world created by server code
-- (nk.world_create, a MetaFi function; docs/WORLD.md). tests/compat/world.test.mjs drives it.
-- Nakama has no worlds: the RPC is only called by MetaFi-only tests.
local nk = require("nakama")

-- Creates an arena world for at most 4 players; answers {"match_id": id}.
local function create(context, payload)
  local id = nk.world_create("arena", { max_players = 4 })
  return nk.json_encode({ match_id = id })
end

nk.register_rpc(create, "compat_world_create")
