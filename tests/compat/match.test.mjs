// Matches through nakama-js: the seed benchmark's authoritative match in Lua, JavaScript and
// native Rust (get_match* RPCs, joins, opcode 1 echoed to the sender, opcode 2 broadcast to
// all, presence events, listing), a relayed match (create, join, data, leave), and the
// matchmaker forming a match the players join with its token.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { WebSocketAdapterPb } from "@heroiclabs/nakama-js-protobuf";
import { client, freshDeviceId, recordEvents, server, sleep } from "./support.mjs";

globalThis.WebSocket = WebSocket;

const adapters = {
  json: () => new WebSocketAdapterText(),
  protobuf: () => new WebSocketAdapterPb(),
};

/** A signed-in player whose socket records match events. */
async function player(format = "json") {
  const c = client();
  const session = await c.authenticateDevice(freshDeviceId(), true);
  const socket = c.createSocket(false, false, adapters[format]());
  const events = recordEvents(socket, ["onmatchdata", "onmatchpresence", "onmatchmakermatched"]);
  await socket.connect(session, false);
  return { client: c, session, socket, events };
}

const text = (data) => new TextDecoder().decode(data);
const done = (...players) => players.forEach((p) => p.socket.disconnect(false));

for (const [runtime, rpc, format] of [
  ["Lua", "get_match", "json"],
  ["JavaScript", "get_match_js", "protobuf"],
  ["native", "get_match_native", "json"],
]) {
  test(`${runtime}: the seed match echoes opcode 1, broadcasts opcode 2, announces presences`, async (t) => {
    const a = await player(format);
    const b = await player("json");
    t.after(() => done(a, b));
    const matchId = JSON.parse((await a.socket.rpc(rpc, "{}")).payload).match_id;
    assert.match(matchId, /^[0-9a-f-]{36}\..+$/);
    const forB = JSON.parse((await b.socket.rpc(rpc, "{}")).payload).match_id;
    assert.match(forB, /^[0-9a-f-]{36}\..+$/);
    if (server === "metafi") {
      // MetaFi lists a new match at once; Nakama indexes labels every
      // match.label_update_interval_ms (1 s), so there b may be sent to a match of its own.
      assert.equal(forB, matchId, "a match with room is shared");
    }

    const joinedA = await a.socket.joinMatch(matchId, undefined, { skill: "12" });
    assert.equal(joinedA.match_id, matchId);
    assert.equal(joinedA.authoritative, true);
    assert.deepEqual(JSON.parse(joinedA.label), { kind: "seed", open: 1 });
    assert.equal(joinedA.self.user_id, a.session.user_id);
    const ownJoin = await a.events.next("onmatchpresence");
    assert.equal(ownJoin.joins[0].user_id, a.session.user_id);

    const joinedB = await b.socket.joinMatch(matchId);
    assert.equal(joinedB.presences.length, 1);
    assert.equal(joinedB.presences[0].user_id, a.session.user_id);
    const bJoins = await a.events.next("onmatchpresence", (e) => e.joins?.[0]?.user_id === b.session.user_id);
    assert.equal(bJoins.match_id, matchId);

    await a.socket.sendMatchState(matchId, 1, `echo from ${runtime}`);
    const echo = await a.events.next("onmatchdata", (d) => d.op_code === 1);
    assert.equal(text(echo.data), `echo from ${runtime}`);
    assert.equal(echo.presence.user_id, a.session.user_id);
    assert.equal(echo.match_id, matchId);

    await b.socket.sendMatchState(matchId, 2, JSON.stringify({ to: "all" }));
    for (const p of [a, b]) {
      const all = await p.events.next("onmatchdata", (d) => d.op_code === 2);
      assert.deepEqual(JSON.parse(text(all.data)), { to: "all" });
      assert.equal(all.presence.user_id, b.session.user_id);
    }
    await sleep(300);
    assert.equal(b.events.seen.onmatchdata.filter((d) => d.op_code === 1).length, 0, "an echo goes to its sender only");

    // The listing knows the match, its handler, tick rate and size: MetaFi at once, Nakama
    // within match.label_update_interval_ms (1 s), so look for up to 5 s.
    let listed;
    let mine;
    for (let i = 0; i < 50 && !mine; i++) {
      if (i > 0) await sleep(100);
      listed = await a.client.listMatches(a.session, 100, true, undefined, 2, 10, "+label.open:1");
      mine = (listed.matches ?? []).find((m) => m.match_id === matchId);
    }
    assert.ok(mine, `listed: ${JSON.stringify(listed)}`);
    assert.equal(mine.authoritative, true);
    assert.equal(mine.size, 2);
    assert.equal(mine.tick_rate, 10);
    assert.ok(mine.handler_name);

    await b.socket.leaveMatch(matchId);
    const left = await a.events.next("onmatchpresence", (e) => e.leaves?.length === 1);
    assert.equal(left.leaves[0].user_id, b.session.user_id);
  });
}

test("relayed: create, join, data to the others, leave", async (t) => {
  const a = await player("json");
  const b = await player("protobuf");
  t.after(() => done(a, b));
  const created = await a.socket.createMatch();
  assert.ok(created.match_id.endsWith("."));
  assert.ok(!created.authoritative, "relayed (false is omitted on the wire, as Nakama does)");
  assert.equal(created.self.user_id, a.session.user_id);
  const joined = await b.socket.joinMatch(created.match_id);
  assert.equal(joined.presences.length, 1);
  await a.events.next("onmatchpresence", (e) => e.joins?.[0]?.user_id === b.session.user_id);

  await a.socket.sendMatchState(created.match_id, 7, "relayed hello");
  const got = await b.events.next("onmatchdata");
  assert.equal(got.op_code, 7);
  assert.equal(text(got.data), "relayed hello");
  assert.equal(got.presence.user_id, a.session.user_id);

  await b.socket.leaveMatch(created.match_id);
  await a.events.next("onmatchpresence", (e) => e.leaves?.[0]?.user_id === b.session.user_id);
});

test("matchmaker: two players are matched and join with the token", async (t) => {
  const mode = `compat-${randomUUID()}`;
  const a = await player("json");
  const b = await player("protobuf");
  t.after(() => done(a, b));
  const ticketA = await a.socket.addMatchmaker(`+properties.mode:${mode}`, 2, 2, { mode }, { skill: 10 });
  const ticketB = await b.socket.addMatchmaker(`+properties.mode:${mode}`, 2, 2, { mode }, { skill: 12 });
  assert.ok(ticketA.ticket && ticketB.ticket && ticketA.ticket !== ticketB.ticket);

  const matchedA = await a.events.next("onmatchmakermatched", () => true, 20000);
  const matchedB = await b.events.next("onmatchmakermatched", () => true, 20000);
  assert.equal(matchedA.ticket, ticketA.ticket);
  assert.equal(matchedA.users.length, 2);
  assert.equal(matchedA.self.presence.user_id, a.session.user_id);
  assert.ok(matchedA.token, `no hook in the examples: players get a token (${JSON.stringify(matchedA)})`);
  assert.equal(matchedA.token, matchedB.token);

  const joinedA = await a.socket.joinMatch(undefined, matchedA.token);
  const joinedB = await b.socket.joinMatch(undefined, matchedB.token);
  assert.equal(joinedA.match_id, joinedB.match_id);
  await b.socket.sendMatchState(joinedB.match_id, 3, "matched");
  assert.equal(text((await a.events.next("onmatchdata")).data), "matched");

  // A removed ticket is gone.
  const ticket = await a.socket.addMatchmaker("*", 2, 4);
  await a.socket.removeMatchmaker(ticket.ticket);
  await assert.rejects(a.socket.removeMatchmaker(ticket.ticket));
});

test("a leave from a player not in the match is acknowledged and changes nothing", async (t) => {
  const a = await player("json");
  const stranger = await player("json");
  t.after(() => done(a, stranger));
  const matchId = JSON.parse((await a.socket.rpc("get_match", "{}")).payload).match_id;
  await a.socket.joinMatch(matchId);
  await a.events.next("onmatchpresence", (e) => e.joins?.[0]?.user_id === a.session.user_id);

  // Nakama answers with an empty acknowledgement; MetaFi does too and queues nothing.
  await stranger.socket.leaveMatch(matchId);
  await stranger.socket.leaveMatch(`${randomUUID()}.nowhere`);

  await a.socket.sendMatchState(matchId, 1, "still here");
  const echo = await a.events.next("onmatchdata");
  assert.equal(text(echo.data), "still here");
  assert.ok(
    !a.events.seen.onmatchpresence.some((e) => e.leaves?.some((p) => p.user_id === stranger.session.user_id)),
    "no leave announced for a player who was never in the match",
  );
});
