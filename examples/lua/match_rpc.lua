-- get_match: the id of a seed match with a seat for the caller, creating a match when there is
-- none. The seat is reserved with match_signal, so the caller's join cannot lose a race with
-- other players. Listing reflects joins, leaves and label changes at once, so concurrent callers
-- share matches instead of each creating their own. Answer: {"match_id": "<uuid>.<node>"}.
local nk = require("nakama")

-- The match module's name: "match" next to this file, wherever the modules directory puts
-- both (from a sub-directory "lua", Lua module names are "lua.match_rpc" and "lua.match").
local MATCH_MODULE = ((...) or ""):gsub("[^.]*$", "") .. "match"
local QUERY = "+handler_name:" .. MATCH_MODULE .. " +label.open:1"

-- How many rounds of "look for a seat, else create a match" before giving up. A round fails only
-- when every candidate (the new match too) filled up or had too many reservations in flight.
local ATTEMPTS = 3

local function reserve(match_id, user_id)
  local ok, answer = pcall(nk.match_signal, match_id, user_id)
  return ok and answer == "ok"
end

local function get_match(context, payload)
  local user_id = context.user_id or nk.uuid_v4()
  for _ = 1, ATTEMPTS do
    -- Size counts accepted joins too, so max_size 9 means "a seat is free".
    local matches = nk.match_list(5, true, nil, 0, 9, QUERY)
    for _, m in ipairs(matches) do
      if reserve(m.match_id, user_id) then
        return nk.json_encode({ match_id = m.match_id })
      end
    end
    -- Others see a new match in listings at once and may fill it before our reservation lands.
    local match_id = nk.match_create(MATCH_MODULE, {})
    if reserve(match_id, user_id) then
      return nk.json_encode({ match_id = match_id })
    end
  end
  error("no match had a free seat after " .. ATTEMPTS .. " attempts: try again")
end

nk.register_rpc(get_match, "get_match")
