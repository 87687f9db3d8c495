-- Compatibility-suite fixture (not an example): tournaments for tests/compat/tournament.test.mjs.
-- At load time it creates "compat_tournament" (category 5, a day long, not authoritative);
-- compat_tournament_create makes a fresh tournament per test run (payload {"id": …,
-- "max_size": …, "max_num_score": …, "join_required": …, "start_in": seconds}) so reruns
-- against one server start empty.
local nk = require("nakama")

nk.tournament_create("compat_tournament", false, "desc", "best", 86400, nil, { fixture = true },
  "Compat cup", "A tournament the module made", 5, 0, 0, 0, 0, false, true)

local function create(context, payload)
  local input = nk.json_decode(payload)
  local start = 0
  if input.start_in then
    start = math.floor(nk.time() / 1000) + input.start_in
  end
  nk.tournament_create(input.id, false, "desc", "best", input.duration or 3600, nil, {},
    input.title or "", "", input.category or 0, start, 0, input.max_size or 0,
    input.max_num_score or 0, input.join_required == true, true)
  return nk.json_encode({ id = input.id })
end

nk.register_rpc(create, "compat_tournament_create")
