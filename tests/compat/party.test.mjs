// Parties through nakama-js (both socket adapters): create, join open and closed parties with
// join requests and accept, data between members, promote, leave with leader handover, remove,
// close, Nakama's refusals; a party of two matchmaking with another party as one unit; the
// party listing (GET /v2/party); matchmaker stats (GET /v2/matchmaker/stats); events
// (POST /v2/event, nk.event) reaching the event processors.
//
// nakama-js-protobuf 1.4.0 decodes `Party` with an older field numbering than Nakama 3.40's
// (3.40 added `hidden` as field 3 and `label` as 8, moving max_size, self, leader and
// presences), so a protobuf socket's `onparty` is garbled against Nakama itself too: the tests
// read `Party` messages on JSON sockets only; protobuf sockets carry every other party message.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { WebSocketAdapterPb } from "@heroiclabs/nakama-js-protobuf";
import { client, freshDeviceId, http, metafiOnly, recordEvents, sleep } from "./support.mjs";

globalThis.WebSocket = WebSocket;

const adapters = {
  json: () => new WebSocketAdapterText(),
  protobuf: () => new WebSocketAdapterPb(),
};

const EVENTS = [
  "onparty",
  "onpartypresence",
  "onpartyjoinrequest",
  "onpartyleader",
  "onpartydata",
  "onpartyclose",
  "onpartymatchmakerticket",
  "onmatchmakermatched",
];

/** A signed-in player whose socket records party events. */
async function player(format = "json") {
  const c = client();
  const session = await c.authenticateDevice(freshDeviceId(), true);
  const socket = c.createSocket(false, false, adapters[format]());
  const events = recordEvents(socket, EVENTS);
  await socket.connect(session, false);
  const self = { user_id: session.user_id, username: session.username };
  return { client: c, session, socket, events, self };
}

/** The member presence of `p` in a party (its socket session id, from the party it got). */
const member = (party, p) => party.presences.find((m) => m.user_id === p.session.user_id);
const done = (...players) => players.forEach((p) => p.socket.disconnect(false));
const text = (data) => new TextDecoder().decode(data);

async function rejected(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail("expected the request to be refused");
}

test("an open party: create, join, data, promote, leave hands over leadership, close", async (t) => {
  const a = await player("json");
  const b = await player("json");
  const c = await player("protobuf");
  t.after(() => done(a, b, c));

  const party = await a.socket.createParty(true, 3);
  assert.match(party.party_id, /^[0-9a-f-]{36}\..+$/);
  assert.equal(party.open, true);
  assert.equal(party.max_size, 3);
  assert.equal(party.leader.user_id, a.session.user_id);
  assert.equal(party.self.user_id, a.session.user_id);
  assert.deepEqual(party.presences.map((p) => p.user_id), [a.session.user_id]);

  await b.socket.joinParty(party.party_id);
  const forB = await b.events.next("onparty");
  assert.equal(forB.party_id, party.party_id);
  assert.equal(forB.leader.user_id, a.session.user_id);
  assert.equal(forB.self.user_id, b.session.user_id);
  assert.deepEqual(forB.presences.map((p) => p.user_id).sort(), [a.session.user_id, b.session.user_id].sort());
  const joined = await a.events.next("onpartypresence", (e) => (e.joins ?? []).some((j) => j.user_id === b.session.user_id));
  assert.equal(joined.party_id, party.party_id);

  await c.socket.joinParty(party.party_id);
  await c.events.next("onparty");
  const joinOfC = await a.events.next("onpartypresence", (e) => (e.joins ?? []).some((j) => j.user_id === c.session.user_id));
  const presenceOfC = joinOfC.joins.find((j) => j.user_id === c.session.user_id);
  // Full now: a fourth player is refused with Nakama's text.
  const d = await player("json");
  t.after(() => done(d));
  const full = await rejected(d.socket.joinParty(party.party_id));
  assert.equal(full.code, 3);
  assert.equal(full.message, "Error joining party: party full");

  // Data reaches the other members, not the sender.
  await b.socket.sendPartyData(party.party_id, 7, JSON.stringify({ hp: 3 }));
  for (const p of [a, c]) {
    const data = await p.events.next("onpartydata");
    assert.equal(data.op_code, 7);
    assert.equal(text(data.data), '{"hp":3}');
    assert.equal(data.presence.user_id, b.session.user_id);
  }

  // Only the leader promotes; everyone hears the new leader.
  const notLeader = await rejected(b.socket.promotePartyMember(party.party_id, presenceOfC));
  assert.equal(notLeader.message, "Error promoting new party leader: party leader only");
  await a.socket.promotePartyMember(party.party_id, presenceOfC);
  for (const p of [a, b, c]) {
    const leader = await p.events.next("onpartyleader");
    assert.equal(leader.presence.user_id, c.session.user_id);
  }

  // The leader leaves: the oldest remaining member (a) leads, the others see the leave.
  await c.socket.leaveParty(party.party_id);
  for (const p of [a, b]) {
    const leader = await p.events.next("onpartyleader", (e) => e.presence.user_id === a.session.user_id);
    assert.equal(leader.party_id, party.party_id);
    await p.events.next("onpartypresence", (e) => (e.leaves ?? []).some((l) => l.user_id === c.session.user_id));
  }

  // Closing: every member is told, and the party is gone.
  await a.socket.closeParty(party.party_id);
  for (const p of [a, b]) {
    const closed = await p.events.next("onpartyclose");
    assert.equal(closed.party_id, party.party_id);
  }
  const gone = await rejected(d.socket.joinParty(party.party_id));
  assert.equal(gone.message, "Error joining party: party not found");
});

test("a closed party: join requests, the leader lists, accepts and removes", async (t) => {
  const a = await player("json");
  const b = await player("json");
  const c = await player("protobuf");
  t.after(() => done(a, b, c));
  const party = await a.socket.createParty(false, 4);
  assert.equal(party.open ?? false, false, "false is omitted, as protobuf JSON does");

  await b.socket.joinParty(party.party_id);
  const request = await a.events.next("onpartyjoinrequest");
  assert.equal(request.party_id, party.party_id);
  assert.equal(request.presences[0].user_id, b.session.user_id);
  const duplicate = await rejected(b.socket.joinParty(party.party_id));
  assert.equal(duplicate.message, "Error joining party: party join request duplicate");

  const notLeader = await rejected(b.socket.listPartyJoinRequests(party.party_id));
  assert.equal(notLeader.code, 3);
  assert.equal(notLeader.message, "Error listing party join requests: party leader only");
  const list = await a.socket.listPartyJoinRequests(party.party_id);
  assert.equal(list.party_id, party.party_id);
  assert.deepEqual(list.presences.map((p) => p.user_id), [b.session.user_id]);

  await a.socket.acceptPartyMember(party.party_id, list.presences[0]);
  const forB = await b.events.next("onparty");
  assert.deepEqual(forB.presences.map((p) => p.user_id).sort(), [a.session.user_id, b.session.user_id].sort());
  await a.events.next("onpartypresence", (e) => (e.joins ?? []).some((j) => j.user_id === b.session.user_id));
  const again = await rejected(a.socket.acceptPartyMember(party.party_id, list.presences[0]));
  assert.equal(again.message, "Error accepting party join request: party join request not found");

  // The leader cannot remove itself; removing b tells b the party closed for it.
  const self = await rejected(a.socket.removePartyMember(party.party_id, party.self));
  assert.equal(self.message, "Error removing party member or join request: party cannot remove self");
  await a.socket.removePartyMember(party.party_id, member(forB, b));
  const closed = await b.events.next("onpartyclose");
  assert.equal(closed.party_id, party.party_id);
  await a.events.next("onpartypresence", (e) => (e.leaves ?? []).some((l) => l.user_id === b.session.user_id));

  // A protobuf member: its request reaches the leader, and a refusal removes it quietly.
  await c.socket.joinParty(party.party_id);
  const requestOfC = await a.events.next("onpartyjoinrequest");
  assert.equal(requestOfC.presences[0].user_id, c.session.user_id);
  await a.socket.removePartyMember(party.party_id, requestOfC.presences[0]);
  assert.deepEqual((await a.socket.listPartyJoinRequests(party.party_id)).presences ?? [], []);

  const badSize = await rejected(c.socket.createParty(true, 300));
  assert.equal(badSize.code, 3);
  assert.equal(badSize.message, "Invalid party max size, must be 1-256");
  const badId = await rejected(c.socket.joinParty("not-a-party"));
  assert.equal(badId.message, "Invalid party ID");
});

test("a party of two matchmakes with another party of two as one unit", async (t) => {
  const a1 = await player("json");
  const a2 = await player("json");
  const b1 = await player("json");
  const b2 = await player("protobuf");
  t.after(() => done(a1, a2, b1, b2));
  const partyA = await a1.socket.createParty(true, 2);
  const partyB = await b1.socket.createParty(true, 2);
  await a2.socket.joinParty(partyA.party_id);
  await b2.socket.joinParty(partyB.party_id);
  await a2.events.next("onparty");
  await b2.events.next("onparty");
  // A tag no other test's tickets carry.
  const tag = randomUUID().replaceAll("-", "");
  const query = `+properties.party_test:${tag}`;

  const notLeader = await rejected(a2.socket.addMatchmakerParty(partyA.party_id, query, 4, 4, { party_test: tag }, {}));
  assert.equal(notLeader.message, "Error adding party to matchmaker: party leader only");
  const ticketA = await a1.socket.addMatchmakerParty(partyA.party_id, query, 4, 4, { party_test: tag }, {});
  assert.equal(ticketA.party_id, partyA.party_id);
  assert.ok(ticketA.ticket);
  const told = await a2.events.next("onpartymatchmakerticket");
  assert.equal(told.ticket, ticketA.ticket);
  await b1.socket.addMatchmakerParty(partyB.party_id, query, 4, 4, { party_test: tag }, {});

  const matched = [];
  for (const p of [a1, a2, b1, b2]) matched.push(await p.events.next("onmatchmakermatched", () => true, 20000));
  for (const m of matched) {
    assert.equal(m.users.length, 4);
    assert.ok(m.token || m.match_id);
  }
  assert.equal(new Set(matched.map((m) => m.token ?? m.match_id)).size, 1, "one match for all four");
  const parties = matched[0].users.map((u) => u.party_id).sort();
  assert.deepEqual(parties, [partyA.party_id, partyA.party_id, partyB.party_id, partyB.party_id].sort());
  assert.equal(matched[0].self.party_id, partyA.party_id);

  // The stats count these completions (Nakama keeps the last ten).
  let stats;
  for (let i = 0; i < 40; i++) {
    stats = await http("GET", "/v2/matchmaker/stats", { token: a1.session.token });
    if ((stats.json?.completions ?? []).length > 0) break;
    await sleep(250);
  }
  assert.equal(stats.status, 200);
  assert.ok(stats.json.completions.length >= 1 && stats.json.completions.length <= 10);
  for (const c of stats.json.completions) {
    assert.match(c.create_time, /^\d{4}-\d\d-\d\dT/);
    assert.match(c.complete_time, /^\d{4}-\d\d-\d\dT/);
  }
});

test("GET /v2/party lists parties that are not hidden, with filters and Nakama's errors", async (t) => {
  const a = await player("json");
  const b = await player("json");
  t.after(() => done(a, b));
  const open = await a.socket.createParty(true, 4);
  const closed = await b.socket.createParty(false, 4);
  const token = a.session.token;
  const find = async (path, id) => {
    for (let i = 0; i < 20; i++) {
      const r = await http("GET", path, { token });
      if ((r.json?.parties ?? []).some((p) => p.party_id === id)) return r;
      await sleep(200);
    }
    return http("GET", path, { token });
  };
  const all = await find("/v2/party?limit=100", open.party_id);
  assert.equal(all.status, 200);
  const listed = all.json.parties.find((p) => p.party_id === open.party_id);
  assert.equal(listed.open, true);
  assert.equal(listed.max_size, 4);
  assert.equal(listed.label, "{}");
  const onlyClosed = await find("/v2/party?limit=100&open=false", closed.party_id);
  assert.ok(onlyClosed.json.parties.every((p) => !p.open));
  assert.ok(onlyClosed.json.parties.some((p) => p.party_id === closed.party_id));

  const badLimit = await http("GET", "/v2/party?limit=101", { token });
  assert.equal(badLimit.status, 400);
  assert.equal(badLimit.json.code, 3);
  assert.equal(badLimit.json.message, "Invalid limit - limit must be between 1 and 100.");
  const badCursor = await http("GET", "/v2/party?limit=10&cursor=garbage", { token });
  assert.equal(badCursor.status, 500);
  assert.equal(badCursor.json.code, 13);
  assert.equal(badCursor.json.message, "Error listing matches.");
  const anonymous = await http("GET", "/v2/party");
  assert.equal(anonymous.status, 401);
});

test("POST /v2/event answers at once", async (t) => {
  const a = await player("json");
  t.after(() => done(a));
  assert.equal(await a.client.emitEvent(a.session, { name: "level_up", properties: { level: "3" } }), true);
  const raw = await http("POST", "/v2/event", {
    token: a.session.token,
    body: JSON.stringify({ name: "raw", properties: {}, timestamp: "2024-01-02T03:04:05Z" }),
  });
  assert.equal(raw.status, 200);
  assert.deepEqual(raw.json, {});
  const anonymous = await http("POST", "/v2/event", { body: "{}" });
  assert.equal(anonymous.status, 401);
});

test("events from clients and from nk.event reach the event processors", metafiOnly("the example native event processor"), async (t) => {
  const a = await player("json");
  t.after(() => done(a));
  await a.client.emitEvent(a.session, { name: "level_up", properties: { level: "3" }, external: false });
  await a.client.rpc(a.session, "compat_emit_event", {});
  let log = [];
  for (let i = 0; i < 40; i++) {
    log = (await a.client.rpc(a.session, "event_log_native", {})).payload ?? [];
    if (Array.isArray(log) && log.length >= 2) break;
    await sleep(100);
  }
  const fromClient = log.find((e) => e.name === "level_up");
  assert.ok(fromClient, `the client's event in ${JSON.stringify(log)}`);
  assert.equal(fromClient.external, true, "a client's event is always external");
  assert.equal(fromClient.from_client, true);
  assert.deepEqual(fromClient.properties, { level: "3" });
  const fromServer = log.find((e) => e.name === "compat_server_event");
  assert.ok(fromServer, `the server's event in ${JSON.stringify(log)}`);
  assert.equal(fromServer.external, false);
  assert.equal(fromServer.properties.source, "lua");
});
