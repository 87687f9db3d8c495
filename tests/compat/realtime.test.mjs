// The realtime socket through nakama-js's DefaultSocket, with the text (JSON) adapter and the
// protobuf adapter of @heroiclabs/nakama-js-protobuf: connect, RPC, status, chat channels and
// their history, presence events, and what a disconnect tells the others.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { WebSocketAdapterPb } from "@heroiclabs/nakama-js-protobuf";
import { client, freshDeviceId, recordEvents } from "./support.mjs";

// Node 20 has no global WebSocket; nakama-js expects the browser API, which `ws` provides.
globalThis.WebSocket = WebSocket;

const adapters = [
  ["json", () => new WebSocketAdapterText()],
  ["protobuf", () => new WebSocketAdapterPb()],
];

/** A signed-in player with a connected socket whose pushed events are recorded. */
async function player(makeAdapter, { online = false } = {}) {
  const c = client();
  const session = await c.authenticateDevice(freshDeviceId(), true);
  const socket = c.createSocket(false, false, makeAdapter());
  const events = recordEvents(socket, ["onchannelmessage", "onchannelpresence", "onstatuspresence", "onnotification", "ondisconnect"]);
  await socket.connect(session, online);
  return { client: c, session, socket, events };
}

const done = (...players) => players.forEach((p) => p.socket.disconnect(false));

test("a bad token is refused; a good one connects", async () => {
  const c = client();
  const session = await c.authenticateDevice(freshDeviceId(), true);
  const bad = c.createSocket(false, false, new WebSocketAdapterText());
  await assert.rejects(bad.connect({ ...session, token: "not-a-token" }, false));
  const good = c.createSocket(false, false, new WebSocketAdapterText());
  assert.equal(await good.connect(session, false), session);
  good.disconnect(false);
});

for (const [format, makeAdapter] of adapters) {
  test(`${format}: rpc over the socket`, async () => {
    const p = await player(makeAdapter);
    const result = await p.socket.rpc("echo_native", JSON.stringify({ b: 2, a: 1 }));
    assert.equal(result.id, "echo_native");
    assert.deepEqual(JSON.parse(result.payload), { a: 1, b: 2 });
    await assert.rejects(p.socket.rpc("no_such_function", "{}"), (error) => {
      assert.equal(error.code, 6);
      assert.equal(error.message, "RPC function not found");
      return true;
    });
    done(p);
  });

  test(`${format}: follow a user, see them come online, change status and go offline`, async () => {
    const fan = await player(makeAdapter, { online: true });
    const star = await player(makeAdapter);
    const status = await fan.socket.followUsers([star.session.user_id]);
    assert.deepEqual(status.presences ?? [], [], "not online yet");
    star.socket.disconnect(false);

    const again = star.client.createSocket(false, false, makeAdapter());
    await again.connect(star.session, true);
    const online = await fan.events.next("onstatuspresence", (e) => e.joins?.some((j) => j.user_id === star.session.user_id));
    assert.equal(online.joins.length, 1);

    await again.updateStatus("in a match");
    const changed = await fan.events.next("onstatuspresence", (e) => e.joins?.[0]?.status === "in a match");
    assert.equal(changed.leaves.length, 1);

    const snapshot = await fan.socket.followUsers([star.session.user_id]);
    assert.equal(snapshot.presences.length, 1);
    assert.equal(snapshot.presences[0].status, "in a match");

    again.disconnect(false);
    const offline = await fan.events.next("onstatuspresence", (e) => (e.leaves ?? []).length === 1 && !(e.joins ?? []).length);
    assert.equal(offline.leaves[0].user_id, star.session.user_id);
    await fan.socket.unfollowUsers([star.session.user_id]);
    done(fan);
  });

  test(`${format}: room chat with presence events, edits and history`, async () => {
    const room = `room-${randomUUID().slice(0, 8)}`;
    const alice = await player(makeAdapter);
    const bob = await player(makeAdapter);
    const channel = await alice.socket.joinChat(room, 1, true, false);
    assert.equal(channel.id, `2...${room}`);
    assert.equal(channel.self.user_id, alice.session.user_id);

    const bobsView = await bob.socket.joinChat(room, 1, true, false);
    assert.equal(bobsView.presences.length, 1);
    assert.equal(bobsView.presences[0].user_id, alice.session.user_id);
    const joined = await alice.events.next("onchannelpresence", (e) => e.joins?.some((j) => j.user_id === bob.session.user_id));
    assert.equal(joined.channel_id, channel.id);

    const ack = await alice.socket.writeChatMessage(channel.id, { text: "hello" });
    assert.equal(ack.channel_id, channel.id);
    const received = await bob.events.next("onchannelmessage", (m) => m.message_id === ack.message_id);
    assert.deepEqual(received.content, { text: "hello" });
    assert.equal(received.code, 0);
    assert.equal(received.persistent, true);
    assert.equal(received.sender_id, alice.session.user_id);

    const updated = await alice.socket.updateChatMessage(channel.id, ack.message_id, { text: "hello!" });
    assert.equal(updated.code, 1);
    const second = await bob.socket.writeChatMessage(channel.id, { text: "bye" });
    await bob.socket.removeChatMessage(channel.id, second.message_id);

    const history = await alice.client.listChannelMessages(alice.session, channel.id, 10);
    assert.equal(history.messages.length, 1);
    assert.deepEqual(history.messages[0].content, { text: "hello!" });
    assert.equal(history.messages[0].code, 0);
    assert.equal(history.messages[0].persistent, true);
    assert.ok(history.cacheable_cursor, "a cacheable cursor to resume from");

    await bob.socket.leaveChat(channel.id);
    const left = await alice.events.next("onchannelpresence", (e) => e.leaves?.some((l) => l.user_id === bob.session.user_id));
    assert.equal(left.channel_id, channel.id);
    await assert.rejects(bob.socket.writeChatMessage(channel.id, { late: true }), (error) => error.code === 3);
    done(alice, bob);
  });

  test(`${format}: messages without persistence are relayed, not stored`, async () => {
    const room = `eph-${randomUUID().slice(0, 8)}`;
    const p = await player(makeAdapter);
    const channel = await p.socket.joinChat(room, 1, false, false);
    await p.socket.writeChatMessage(channel.id, { hello: "world" });
    const message = await p.events.next("onchannelmessage");
    assert.deepEqual(message.content, { hello: "world" });
    assert.equal(message.persistent, false);
    const history = await p.client.listChannelMessages(p.session, channel.id, 10);
    assert.equal((history.messages ?? []).length, 0);
    done(p);
  });

  test(`${format}: direct messages, and a disconnect seen by the other member`, async () => {
    const alice = await player(makeAdapter);
    const bob = await player(makeAdapter);
    const dm = await alice.socket.joinChat(bob.session.user_id, 2, true, false);
    assert.ok(dm.id.startsWith("4."), dm.id);
    const invite = await bob.events.next("onnotification", (n) => n.code === -1);
    assert.equal(invite.sender_id, alice.session.user_id);
    const same = await bob.socket.joinChat(alice.session.user_id, 2, true, false);
    assert.equal(same.id, dm.id);
    await bob.socket.writeChatMessage(dm.id, { psst: 1 });
    await alice.events.next("onchannelmessage", (m) => m.content?.psst === 1);
    const history = await alice.client.listChannelMessages(alice.session, dm.id, 10);
    assert.equal(history.messages.length, 1);

    bob.socket.disconnect(false);
    const gone = await alice.events.next("onchannelpresence", (e) => e.leaves?.some((l) => l.user_id === bob.session.user_id));
    assert.equal(gone.channel_id, dm.id);
    await assert.rejects(alice.socket.joinChat(randomUUID(), 3, true, false), (error) => {
      assert.equal(error.code, 3);
      assert.match(error.message, /Group not found/);
      return true;
    });
    done(alice);
  });
}

test("JSON and protobuf clients share a channel", async () => {
  const room = `mixed-${randomUUID().slice(0, 8)}`;
  const text = await player(adapters[0][1]);
  const binary = await player(adapters[1][1]);
  const channel = await text.socket.joinChat(room, 1, false, false);
  await binary.socket.joinChat(room, 1, false, false);
  await binary.socket.writeChatMessage(channel.id, { from: "protobuf" });
  const got = await text.events.next("onchannelmessage", (m) => m.content?.from === "protobuf");
  assert.equal(got.sender_id, binary.session.user_id);
  await text.socket.writeChatMessage(channel.id, { from: "json" });
  const back = await binary.events.next("onchannelmessage", (m) => m.content?.from === "json");
  assert.equal(back.sender_id, text.session.user_id);
  done(text, binary);
});
