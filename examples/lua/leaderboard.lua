-- A leaderboard for `metafi-bench leaderboard` (and an example of the leaderboard functions):
-- "bench" ranks by the best score, descending, with ranks kept in memory. The RPC
-- leaderboard_seed writes {"count": N} records (at most 10,000 per call) for new owners with
-- random scores, so a benchmark can fill the board to a million records before it measures.
local nk = require("nakama")

nk.leaderboard_create("bench", false, "desc", "best", "", {}, true)

local function seed(context, payload)
  local input = nk.json_decode(payload)
  local id = input.id or "bench"
  local count = math.min(tonumber(input.count) or 0, 10000)
  for _ = 1, count do
    nk.leaderboard_record_write(id, nk.uuid_v4(), nil, math.random(0, 1000000000), math.random(0, 1000))
  end
  return nk.json_encode({ written = count })
end

nk.register_rpc(seed, "leaderboard_seed")
