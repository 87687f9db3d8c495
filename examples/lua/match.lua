-- The seed benchmark's authoritative match (Nakama's handler contract), in Lua.
-- 10 ticks per second, at most 10 players; a message with op code 1 is echoed to its sender,
-- op code 2 is broadcast to every player. The label says whether there is room, so listings
-- and queries (+label.open:1) find matches that are not full.
--
-- Capacity: join attempts of one match run one at a time, and the engine counts joins it has
-- accepted but whose clients have not completed them yet (context.match_pending_joins), so
-- "players + pending < max" admits exactly max players however many race to join.
-- Seats can also be reserved ahead of the join with nk.match_signal(match_id, user_id) (what
-- get_match does), so a player sent to a match finds its seat still free when it arrives.
local nk = require("nakama")

local TICK_RATE = 10
local MAX_PLAYERS = 10
-- A reserved seat is kept this many ticks (10 s) for its player to join.
local RESERVATION_TICKS = 10 * TICK_RATE

local function label(open)
  return nk.json_encode({ kind = "seed", open = open and 1 or 0 })
end

-- Seats taken: players in the match, joins under way, reservations. match_pending_joins is
-- MetaFi's; on Nakama, which has no such field, the example still runs (as 0).
local function taken(context, state)
  return state.count + (context.match_pending_joins or 0) + state.reserved_count
end

local function update_label(context, dispatcher, state)
  local open = taken(context, state) < MAX_PLAYERS
  if open ~= state.open then
    state.open = open
    dispatcher.match_label_update(label(open))
  end
end

local function match_init(context, params)
  local state = { presences = {}, count = 0, reserved = {}, reserved_count = 0, open = true }
  return state, TICK_RATE, label(true)
end

local function match_join_attempt(context, dispatcher, tick, state, presence, metadata)
  if state.reserved[presence.user_id] then
    -- The reservation becomes the pending join.
    state.reserved[presence.user_id] = nil
    state.reserved_count = state.reserved_count - 1
    return state, true
  end
  if taken(context, state) >= MAX_PLAYERS then
    return state, false, "match full"
  end
  return state, true
end

local function match_join(context, dispatcher, tick, state, presences)
  for _, p in ipairs(presences) do
    if not state.presences[p.session_id] then
      state.presences[p.session_id] = p
      state.count = state.count + 1
    end
  end
  update_label(context, dispatcher, state)
  return state
end

local function match_leave(context, dispatcher, tick, state, presences)
  for _, p in ipairs(presences) do
    if state.presences[p.session_id] then
      state.presences[p.session_id] = nil
      state.count = state.count - 1
    end
  end
  update_label(context, dispatcher, state)
  return state
end

local function match_loop(context, dispatcher, tick, state, messages)
  for _, m in ipairs(messages) do
    if m.op_code == 1 then
      dispatcher.broadcast_message(1, m.data, { m.sender }, m.sender)
    elseif m.op_code == 2 then
      dispatcher.broadcast_message(2, m.data, nil, m.sender)
    end
  end
  if state.reserved_count > 0 then
    for user_id, expires in pairs(state.reserved) do
      if tick >= expires then
        state.reserved[user_id] = nil
        state.reserved_count = state.reserved_count - 1
      end
    end
    update_label(context, dispatcher, state)
  end
  return state
end

local function match_terminate(context, dispatcher, tick, state, grace_seconds)
  return state
end

-- nk.match_signal(id, user_id): reserve a seat for that user; answers "ok" or "full".
local function match_signal(context, dispatcher, tick, state, data)
  if state.reserved[data] then
    state.reserved[data] = tick + RESERVATION_TICKS
    return state, "ok"
  end
  if taken(context, state) >= MAX_PLAYERS then
    return state, "full"
  end
  state.reserved[data] = tick + RESERVATION_TICKS
  state.reserved_count = state.reserved_count + 1
  update_label(context, dispatcher, state)
  return state, "ok"
end

return {
  match_init = match_init,
  match_join_attempt = match_join_attempt,
  match_join = match_join,
  match_leave = match_leave,
  match_loop = match_loop,
  match_terminate = match_terminate,
  match_signal = match_signal,
}
