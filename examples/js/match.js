// The seed benchmark's authoritative match (Nakama's handler contract), in JavaScript.
// 10 ticks per second, at most 10 players; a message with op code 1 is echoed to its sender,
// op code 2 is broadcast to every player. The label says whether there is room.
// get_match_js returns {"match_id": ...} of a seed match with a seat reserved for the caller
// (MetaFi: nk.matchFindSeat, the engine's reservation; elsewhere nk.matchSignal(id, userId)),
// creating a match when none has room. get_match_js_plain reserves nothing (to compare).
// create_match_js returns {"match_id": ...} of a new seed match, nothing reserved (the JS twin of
// create_match in ../lua/match_rpc.lua, for `metafi-bench match --cross-node 0 --create-rpc
// create_match_js`, which places players itself).
//
// Capacity: join attempts of one match run one at a time and ctx.matchPendingJoins counts joins
// accepted but not completed yet, so "players + pending + reserved < max" admits exactly max.
// Modules share one global scope (as a Nakama bundle does): names here are prefixed.

var SEED_JS_TICK_RATE = 10;
var SEED_JS_MAX_PLAYERS = 10;
var SEED_JS_RESERVATION_TICKS = 10 * SEED_JS_TICK_RATE;

function seedJsLabel(open) {
  return JSON.stringify({ kind: 'seed', open: open ? 1 : 0 });
}

// matchPendingJoins is MetaFi's; on Nakama, which has no such field, the example still runs (as 0).
function seedJsTaken(ctx, state) {
  return state.count + (ctx.matchPendingJoins || 0) + state.reservedCount;
}

function seedJsUpdateLabel(ctx, dispatcher, state) {
  var open = seedJsTaken(ctx, state) < SEED_JS_MAX_PLAYERS;
  if (open !== state.open) {
    state.open = open;
    dispatcher.matchLabelUpdate(seedJsLabel(open));
  }
}

function seedJsInit(ctx, logger, nk, params) {
  var state = { presences: {}, count: 0, reserved: {}, reservedCount: 0, open: true };
  return { state: state, tickRate: SEED_JS_TICK_RATE, label: seedJsLabel(true) };
}

function seedJsJoinAttempt(ctx, logger, nk, dispatcher, tick, state, presence, metadata) {
  if (state.reserved[presence.userId] !== undefined) {
    delete state.reserved[presence.userId];
    state.reservedCount--;
    return { state: state, accept: true };
  }
  if (seedJsTaken(ctx, state) >= SEED_JS_MAX_PLAYERS) {
    return { state: state, accept: false, rejectMessage: 'match full' };
  }
  return { state: state, accept: true };
}

function seedJsJoin(ctx, logger, nk, dispatcher, tick, state, presences) {
  presences.forEach(function (p) {
    if (!state.presences[p.sessionId]) {
      state.presences[p.sessionId] = p;
      state.count++;
    }
  });
  seedJsUpdateLabel(ctx, dispatcher, state);
  return { state: state };
}

function seedJsLeave(ctx, logger, nk, dispatcher, tick, state, presences) {
  presences.forEach(function (p) {
    if (state.presences[p.sessionId]) {
      delete state.presences[p.sessionId];
      state.count--;
    }
  });
  seedJsUpdateLabel(ctx, dispatcher, state);
  return { state: state };
}

function seedJsLoop(ctx, logger, nk, dispatcher, tick, state, messages) {
  for (var i = 0; i < messages.length; i++) {
    var m = messages[i];
    if (m.opCode === 1) {
      dispatcher.broadcastMessage(1, m.data, [m.sender], m.sender);
    } else if (m.opCode === 2) {
      dispatcher.broadcastMessage(2, m.data, null, m.sender);
    }
  }
  if (state.reservedCount > 0) {
    for (var userId in state.reserved) {
      if (tick >= state.reserved[userId]) {
        delete state.reserved[userId];
        state.reservedCount--;
      }
    }
    seedJsUpdateLabel(ctx, dispatcher, state);
  }
  return { state: state };
}

function seedJsTerminate(ctx, logger, nk, dispatcher, tick, state, graceSeconds) {
  return { state: state };
}

// nk.matchSignal(id, userId): reserve a seat for that user; answers "ok" or "full".
function seedJsSignal(ctx, logger, nk, dispatcher, tick, state, data) {
  if (state.reserved[data] === undefined && seedJsTaken(ctx, state) >= SEED_JS_MAX_PLAYERS) {
    return { state: state, data: 'full' };
  }
  if (state.reserved[data] === undefined) {
    state.reservedCount++;
  }
  state.reserved[data] = tick + SEED_JS_RESERVATION_TICKS;
  seedJsUpdateLabel(ctx, dispatcher, state);
  return { state: state, data: 'ok' };
}

// Rounds of "look for a seat, else create a match" before giving up (as get_match in Lua).
var SEED_JS_ATTEMPTS = 3;

function seedJsReserve(nk, matchId, userId) {
  try {
    return nk.matchSignal(matchId, userId) === 'ok';
  } catch (e) {
    return false; // full of reservations in flight, or ended: try another
  }
}

function seedJsGetMatch(ctx, logger, nk, payload) {
  var userId = ctx.userId || nk.uuidv4();
  if (typeof nk.matchFindSeat === 'function') {
    // MetaFi: find or create, with the seat reserved in the engine (docs/MATCHES.md, "Seats").
    return JSON.stringify({ match_id: nk.matchFindSeat('seed_js', userId, SEED_JS_MAX_PLAYERS) });
  }
  for (var attempt = 0; attempt < SEED_JS_ATTEMPTS; attempt++) {
    // Size counts accepted joins too, so maxSize 9 means "a seat is free".
    var found = nk.matchList(5, true, null, 0, SEED_JS_MAX_PLAYERS - 1, '+handler_name:seed_js +label.open:1');
    for (var i = 0; i < found.length; i++) {
      if (seedJsReserve(nk, found[i].matchId, userId)) {
        return JSON.stringify({ match_id: found[i].matchId });
      }
    }
    // Others see a new match in listings at once and may fill it before our reservation lands.
    var matchId = nk.matchCreate('seed_js', {});
    if (seedJsReserve(nk, matchId, userId)) {
      return JSON.stringify({ match_id: matchId });
    }
  }
  throw new Error('no match had a free seat after ' + SEED_JS_ATTEMPTS + ' attempts: try again');
}

// The seed's logic with no reservation at all (list a match with room, else create), to compare.
function seedJsGetMatchPlain(ctx, logger, nk, payload) {
  var found = nk.matchList(1, true, null, 0, SEED_JS_MAX_PLAYERS - 1, '+handler_name:seed_js');
  if (found.length > 0) {
    return JSON.stringify({ match_id: found[0].matchId });
  }
  return JSON.stringify({ match_id: nk.matchCreate('seed_js', {}) });
}

// A new seed match on the node that runs the call, nothing reserved.
function seedJsCreateMatch(ctx, logger, nk, payload) {
  return JSON.stringify({ match_id: nk.matchCreate('seed_js', {}) });
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerMatch('seed_js', {
    matchInit: seedJsInit,
    matchJoinAttempt: seedJsJoinAttempt,
    matchJoin: seedJsJoin,
    matchLeave: seedJsLeave,
    matchLoop: seedJsLoop,
    matchTerminate: seedJsTerminate,
    matchSignal: seedJsSignal,
  });
  initializer.registerRpc('get_match_js', seedJsGetMatch);
  initializer.registerRpc('get_match_js_plain', seedJsGetMatchPlain);
  initializer.registerRpc('create_match_js', seedJsCreateMatch);
}
