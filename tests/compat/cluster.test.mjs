// A MetaFi cluster through nakama-js: three nodes on one PostgreSQL and one NATS
// (scripts/cluster.sh starts them and passes their ports in METAFI_TEST_PORTS), with the
// clients spread over the nodes — a chat room with members on three nodes, a single socket
// across nodes, a notification from server code reaching a user on another node, status
// follows, authoritative and relayed matches, listings, the matchmaker across nodes, party
// listings from every node, a party's matchmaking reaching its members on every node, and two
// users joining one room at the same moment on two nodes hearing of each other. On one server
// (scripts/compat.sh) or Nakama (whose open-source edition has no cluster) every test skips.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { WebSocketAdapterPb } from "@heroiclabs/nakama-js-protobuf";
import { clientOn, freshDeviceId, host, ports, recordEvents, server, sleep } from "./support.mjs";

globalThis.WebSocket = WebSocket;

const clustered = server === "metafi" && ports.length >= 3;
const skip = clustered ? {} : { skip: "needs a three-node MetaFi cluster: scripts/cluster.sh" };

const EVENTS = [
  "onchannelmessage",
  "onchannelpresence",
  "onstatuspresence",
  "onnotification",
  "onmatchdata",
  "onmatchpresence",
  "onmatchmakermatched",
  "onparty",
  "onpartymatchmakerticket",
  "ondisconnect",
];

/** A new player signed in on node `node` with a socket there whose events are recorded. */
async function player(node, { format = "json", online = false } = {}) {
  const c = clientOn(node);
  const session = await c.authenticateDevice(freshDeviceId(), true);
  return connect(c, session, { format, online, node });
}

async function connect(c, session, { format = "json", online = false, node }) {
  const socket = c.createSocket(false, false, format === "json" ? new WebSocketAdapterText() : new WebSocketAdapterPb());
  const events = recordEvents(socket, EVENTS);
  await socket.connect(session, online);
  return { client: c, session, socket, events, node };
}

/**
 * A presence tracked on one node reaches the other nodes' books over NATS a moment later
 * (sub-millisecond on loopback); until then a join on another node does not list it (the
 * joiner hears of it as a join event instead: docs/CLUSTER.md, "Presences"). The tests that
 * check join answers let that moment pass between joins on different nodes.
 */
const settle = () => sleep(200);

const done = (...players) => players.forEach((p) => p.socket.disconnect(false));
const text = (data) => new TextDecoder().decode(data);
const id = (p) => p.session.user_id;

test("a chat room with members on three nodes: joins, messages every way, leaves", skip, async (t) => {
  const room = `cluster-${randomUUID().slice(0, 8)}`;
  const a = await player(0);
  const b = await player(1, { format: "protobuf" });
  const c = await player(2);
  t.after(() => done(a, b, c));

  const channel = await a.socket.joinChat(room, 1, false, false);
  await settle();
  const bView = await b.socket.joinChat(room, 1, false, false);
  assert.equal(bView.id, channel.id);
  assert.deepEqual(bView.presences.map((p) => p.user_id), [id(a)], "b on node 2 sees a on node 1");
  await a.events.next("onchannelpresence", (e) => e.joins?.some((j) => j.user_id === id(b)));
  await settle();
  const cView = await c.socket.joinChat(room, 1, false, false);
  assert.deepEqual(cView.presences.map((p) => p.user_id).sort(), [id(a), id(b)].sort());
  for (const p of [a, b]) await p.events.next("onchannelpresence", (e) => e.joins?.some((j) => j.user_id === id(c)));

  // Each one's message reaches the two others, on their nodes.
  for (const [from, others] of [[a, [b, c]], [b, [a, c]], [c, [a, b]]]) {
    const ack = await from.socket.writeChatMessage(channel.id, { from: from.node });
    for (const to of others) {
      const got = await to.events.next("onchannelmessage", (m) => m.message_id === ack.message_id);
      assert.deepEqual(got.content, { from: from.node });
      assert.equal(got.sender_id, id(from));
      assert.equal(got.channel_id, channel.id);
    }
  }

  // b leaves (node 2): a (node 1) and c (node 3) see it; c's disconnect is a leave too.
  await b.socket.leaveChat(channel.id);
  for (const p of [a, c]) {
    const left = await p.events.next("onchannelpresence", (e) => e.leaves?.some((l) => l.user_id === id(b)));
    assert.equal(left.channel_id, channel.id);
  }
  c.socket.disconnect(false);
  await a.events.next("onchannelpresence", (e) => e.leaves?.some((l) => l.user_id === id(c)));
});

test("single socket across nodes: a newer socket on another node closes the older one", skip, async (t) => {
  const first = await player(0);
  const second = await connect(clientOn(1), first.session, { node: 1 });
  t.after(() => done(first, second));
  // As on one node: Nakama's single_socket notification (code -7), then the close.
  const notice = await first.events.next("onnotification", (n) => Number(n.code) === -7);
  assert.equal(notice.subject, "single_socket");
  await first.events.next("ondisconnect");
  // The newer socket, on node 2, keeps working.
  const status = await second.socket.followUsers([id(first)]);
  assert.ok(status);
  // And back: a third socket on node 3 closes the one on node 2.
  const third = await connect(clientOn(2), first.session, { node: 2 });
  t.after(() => done(third));
  await second.events.next("ondisconnect");
});

test("a notification from server code reaches the user's socket on another node", skip, async (t) => {
  const alice = await player(0);
  const bob = await player(1, { format: "protobuf" });
  t.after(() => done(alice, bob));
  // bob's call runs the Lua fixture (modules/lua/compat_notifications.lua) on node 2; alice's
  // socket is on node 1.
  await bob.client.rpc(bob.session, "compat_notify", {
    user_id: id(alice),
    subject: "across",
    content: { node: 2 },
    code: 101,
    persistent: true,
  });
  const got = await alice.events.next("onnotification", (n) => n.subject === "across");
  assert.deepEqual(got.content, { node: 2 });
  assert.equal(Number(got.code), 101);
  // Stored in the shared database: listed through node 3 too.
  const listed = await clientOn(2).listNotifications(alice.session, 10);
  assert.equal(listed.notifications.find((n) => n.subject === "across")?.id, got.id);
});

test("status follow across nodes: online, status change, offline", skip, async (t) => {
  const fan = await player(0);
  const star = await player(1);
  t.after(() => done(fan, star));
  const status = await fan.socket.followUsers([id(star)]);
  assert.deepEqual(status.presences ?? [], [], "connected without status: not online");
  star.socket.disconnect(false);
  const again = await connect(star.client, star.session, { online: true, node: 1 });
  t.after(() => done(again));
  const online = await fan.events.next("onstatuspresence", (e) => e.joins?.some((j) => j.user_id === id(star)));
  assert.equal(online.joins.length, 1);
  await again.socket.updateStatus("on node 2");
  const changed = await fan.events.next("onstatuspresence", (e) => e.joins?.[0]?.status === "on node 2");
  assert.equal(changed.leaves.length, 1);
  again.socket.disconnect(false);
  const offline = await fan.events.next("onstatuspresence", (e) => (e.leaves ?? []).length === 1 && !(e.joins ?? []).length);
  assert.equal(offline.leaves[0].user_id, id(star));
});

test("authoritative match on node 1 with a player on node 2: join, echo, broadcast, leave, listing", skip, async (t) => {
  const a = await player(0);
  const b = await player(1, { format: "protobuf" });
  t.after(() => done(a, b));
  // The seed match of examples/lua/match_rpc.lua, created on node 1.
  const matchId = JSON.parse((await a.socket.rpc("get_match", "{}")).payload).match_id;
  assert.match(matchId, /^[0-9a-f-]{36}\.n1$/, "the match id names its node");
  await a.socket.joinMatch(matchId);
  await a.events.next("onmatchpresence", (e) => e.joins?.[0]?.user_id === id(a));
  const joinedB = await b.socket.joinMatch(matchId);
  assert.equal(joinedB.match_id, matchId);
  assert.equal(joinedB.authoritative, true);
  assert.deepEqual(joinedB.presences.map((p) => p.user_id), [id(a)]);
  await a.events.next("onmatchpresence", (e) => e.joins?.[0]?.user_id === id(b));

  await b.socket.sendMatchState(matchId, 1, "echo across");
  const echo = await b.events.next("onmatchdata", (d) => d.op_code === 1);
  assert.equal(text(echo.data), "echo across");
  await b.socket.sendMatchState(matchId, 2, "to all");
  for (const p of [a, b]) {
    const all = await p.events.next("onmatchdata", (d) => d.op_code === 2);
    assert.equal(all.presence.user_id, id(b));
  }
  // Listed from node 3 too (a stated bound for other nodes' matches; look for up to 5 s).
  let mine;
  for (let i = 0; i < 50 && !mine; i++) {
    if (i > 0) await sleep(100);
    const listed = await clientOn(2).listMatches(a.session, 100, true);
    mine = (listed.matches ?? []).find((m) => m.match_id === matchId);
  }
  assert.ok(mine, "node 3 lists the match of node 1");
  await b.socket.leaveMatch(matchId);
  const left = await a.events.next("onmatchpresence", (e) => e.leaves?.length === 1);
  assert.equal(left.leaves[0].user_id, id(b));
});

test("relayed match created on node 1, joined from node 2 and node 3", skip, async (t) => {
  const a = await player(0);
  const b = await player(1, { format: "protobuf" });
  const c = await player(2);
  t.after(() => done(a, b, c));
  const created = await a.socket.createMatch();
  const joinedB = await b.socket.joinMatch(created.match_id);
  assert.deepEqual(joinedB.presences.map((p) => p.user_id), [id(a)]);
  await a.events.next("onmatchpresence", (e) => e.joins?.[0]?.user_id === id(b));
  await c.socket.joinMatch(created.match_id);
  for (const p of [a, b]) await p.events.next("onmatchpresence", (e) => e.joins?.[0]?.user_id === id(c));

  await b.socket.sendMatchState(created.match_id, 7, "from node 2");
  for (const p of [a, c]) {
    const got = await p.events.next("onmatchdata", (d) => d.op_code === 7);
    assert.equal(text(got.data), "from node 2");
    assert.equal(got.presence.user_id, id(b));
  }
  await c.socket.leaveMatch(created.match_id);
  for (const p of [a, b]) await p.events.next("onmatchpresence", (e) => e.leaves?.[0]?.user_id === id(c));
});

test("matchmaker across nodes: tickets on node 1 and node 2 form one match", skip, async (t) => {
  const mode = `cluster-${randomUUID()}`;
  const a = await player(0);
  const b = await player(1, { format: "protobuf" });
  t.after(() => done(a, b));
  const ticketA = await a.socket.addMatchmaker(`+properties.mode:${mode}`, 2, 2, { mode });
  const ticketB = await b.socket.addMatchmaker(`+properties.mode:${mode}`, 2, 2, { mode });
  // scripts/cluster.sh runs the matchmaker every second.
  const matchedA = await a.events.next("onmatchmakermatched", () => true, 5000);
  const matchedB = await b.events.next("onmatchmakermatched", () => true, 5000);
  assert.equal(matchedA.ticket, ticketA.ticket);
  assert.equal(matchedB.ticket, ticketB.ticket);
  assert.equal(matchedA.users.length, 2);
  assert.equal(matchedA.token, matchedB.token);
  const joinedA = await a.socket.joinMatch(undefined, matchedA.token);
  const joinedB = await b.socket.joinMatch(undefined, matchedB.token);
  assert.equal(joinedA.match_id, joinedB.match_id);
  await b.socket.sendMatchState(joinedB.match_id, 3, "matched across");
  assert.equal(text((await a.events.next("onmatchdata")).data), "matched across");
});

/** `GET /v2/party?{query}` on node `node`: the listed party ids. */
async function listParties(node, session, query) {
  const response = await fetch(`http://${host}:${ports[node]}/v2/party?${query}`, {
    headers: { authorization: `Bearer ${session.token}` },
  });
  assert.equal(response.status, 200);
  const body = await response.json();
  return (body.parties ?? []).map((p) => p.party_id);
}

/** Polls node `node`'s party listing until `ok(ids)` holds (other nodes' parties are at most
 *  `cluster.party_listing_interval_ms` old); returns the last ids. */
async function partiesUntil(node, session, query, ok) {
  let ids = [];
  for (let i = 0; i < 50; i++) {
    if (i > 0) await sleep(100);
    ids = await listParties(node, session, query);
    if (ok(ids)) return ids;
  }
  assert.fail(`node ${node + 1} never listed what was expected: ${JSON.stringify(ids)}`);
}

test("parties: every node lists every node's parties; a party's matchmaking reaches members on every node", skip, async (t) => {
  const a = await player(0);
  const b = await player(1);
  const c = await player(2);
  const d = await player(2);
  t.after(() => done(a, b, c, d));
  const party = await a.socket.createParty(true, 4);
  const closed = await c.socket.createParty(false, 4);
  assert.match(party.party_id, /\.n1$/);
  assert.match(closed.party_id, /\.n3$/);
  // Listed from node 2 (both), and node 1 lists node 3's closed one with open=false.
  await partiesUntil(1, b.session, "limit=100", (ids) => ids.includes(party.party_id) && ids.includes(closed.party_id));
  await partiesUntil(0, a.session, "limit=100&open=false", (ids) => ids.includes(closed.party_id) && !ids.includes(party.party_id));

  // b (node 2) and c (node 3) join a's party (node 1).
  for (const p of [b, c]) {
    await p.socket.joinParty(party.party_id);
    await p.events.next("onparty", (e) => e.party_id === party.party_id);
  }
  // The leader adds the party (three members) to the matchmaker with d (node 3) alone: four.
  const mode = `party-${randomUUID()}`;
  const ticket = await a.socket.addMatchmakerParty(party.party_id, `+properties.mode:${mode}`, 4, 4, { mode });
  for (const p of [b, c]) {
    const told = await p.events.next("onpartymatchmakerticket", (e) => e.party_id === party.party_id);
    assert.equal(told.ticket, ticket.ticket);
  }
  const solo = await d.socket.addMatchmaker(`+properties.mode:${mode}`, 4, 4, { mode });
  const tokens = new Set();
  for (const p of [a, b, c, d]) {
    const matched = await p.events.next("onmatchmakermatched", () => true, 5000);
    assert.equal(matched.ticket, p === d ? solo.ticket : ticket.ticket);
    assert.equal(matched.users.length, 4);
    assert.equal(matched.self.presence.user_id, id(p));
    tokens.add(matched.token);
  }
  assert.equal(tokens.size, 1, "one group");

  // Closed on node 3: gone from node 2's listing too.
  await c.socket.closeParty(closed.party_id);
  await partiesUntil(1, b.session, "limit=100&open=false", (ids) => !ids.includes(closed.party_id));
});

test("two users joining one room at the same moment on two nodes each hear of the other", skip, async (t) => {
  const a = await player(0);
  const b = await player(1);
  t.after(() => done(a, b));
  for (let round = 0; round < 10; round++) {
    const room = `race-${randomUUID().slice(0, 8)}`;
    const [viewA, viewB] = await Promise.all([a.socket.joinChat(room, 1, false, false), b.socket.joinChat(room, 1, false, false)]);
    // Each one is listed in the other's join answer, or the other hears of it as a join event.
    for (const [me, view, other] of [[a, viewA, b], [b, viewB, a]]) {
      if ((view.presences ?? []).some((p) => p.user_id === id(other))) continue;
      const joined = await me.events.next("onchannelpresence", (e) => e.channel_id === view.id && e.joins?.some((j) => j.user_id === id(other)), 3000);
      assert.equal(joined.channel_id, view.id);
    }
    await Promise.all([a.socket.leaveChat(viewA.id), b.socket.leaveChat(viewB.id)]);
  }
});
