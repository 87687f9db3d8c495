-- get_match: the id of a seed match with a seat for the caller, creating a match when there is
-- none (the seed's logic: a match with fewer than 10 players, else a new one).
-- On MetaFi, nk.match_find_seat does that in one step and reserves the caller's seat in the
-- engine (docs/MATCHES.md, "Seats"): listings count the seat, the handler sees it as a pending
-- join, the caller's join uses it. Elsewhere (Nakama) the seat is reserved with match_signal,
-- which the handler counts itself. Either way the caller's join cannot lose a race with other
-- players. Answer: {"match_id": "<uuid>.<node>"}.
-- get_match_plain: the seed's logic with no reservation at all (list, else create), to compare.
-- create_match: a new seed match on the node that runs the call, nothing reserved (for tools
-- that place players themselves: `metafi-bench match --cross-node`).
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
  if nk.match_find_seat then
    return nk.json_encode({ match_id = nk.match_find_seat(MATCH_MODULE, user_id, 10) })
  end
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

local function get_match_plain(context, payload)
  local matches = nk.match_list(1, true, nil, 0, 9, "+handler_name:" .. MATCH_MODULE)
  if #matches > 0 then
    return nk.json_encode({ match_id = matches[1].match_id })
  end
  return nk.json_encode({ match_id = nk.match_create(MATCH_MODULE, {}) })
end

local function create_match(context, payload)
  return nk.json_encode({ match_id = nk.match_create(MATCH_MODULE, {}) })
end

nk.register_rpc(get_match, "get_match")
nk.register_rpc(get_match_plain, "get_match_plain")
nk.register_rpc(create_match, "create_match")
