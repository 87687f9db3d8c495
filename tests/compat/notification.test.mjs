// Notifications through the official Nakama JavaScript client: server code (an RPC of the
// Lua fixture modules/lua/compat_notifications.lua) sends them, every socket of the receiver
// gets them live (`onnotification`), the receiver lists them with the cacheable cursor and
// deletes them; nobody else can list or delete them.
import { test } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { WebSocketAdapterPb } from "@heroiclabs/nakama-js-protobuf";
import { assertRejects, client, freshDeviceId, recordEvents } from "./support.mjs";

// Node 20 has no global WebSocket; nakama-js expects the browser API, which `ws` provides.
globalThis.WebSocket = WebSocket;

/** A socket whose notifications are recorded; `next` takes the oldest or waits for one. */
async function listen(c, session, adapter) {
  const socket = c.createSocket(false, false, adapter);
  const events = recordEvents(socket, ["onnotification"]);
  await socket.connect(session, false);
  return { socket, next: (ms) => events.next("onnotification", undefined, ms) };
}

async function notify(c, session, body) {
  await c.rpc(session, "compat_notify", body);
}

test("server code's notification reaches every socket of the user, then lists and deletes", async () => {
  const c = client();
  const alice = await c.authenticateDevice(freshDeviceId(), true);
  const bob = await c.authenticateDevice(freshDeviceId(), true);
  const json = await listen(c, alice, new WebSocketAdapterText());
  const pb = await listen(c, alice, new WebSocketAdapterPb());
  try {
    // Nothing yet: Nakama hands out a cursor anyway, to keep.
    const empty = await c.listNotifications(alice, 10);
    assert.deepEqual(empty.notifications, []);
    assert.equal(typeof empty.cacheable_cursor, "string");
    assert.ok(empty.cacheable_cursor.length > 0);

    await notify(c, bob, { user_id: alice.user_id, subject: "gift", content: { coins: 5 }, code: 101, persistent: true });
    const [live, livePb] = await Promise.all([json.next(), pb.next()]);
    for (const n of [live, livePb]) {
      assert.equal(n.subject, "gift");
      assert.deepEqual(n.content, { coins: 5 });
      assert.equal(Number(n.code), 101);
      assert.equal(n.persistent, true);
      assert.equal(n.sender_id, "00000000-0000-0000-0000-000000000000", "the system's sender is the nil UUID");
    }
    assert.equal(live.id, livePb.id, "the same notification on both sockets");

    const first = await c.listNotifications(alice, 10, empty.cacheable_cursor);
    assert.equal(first.notifications.length, 1);
    const stored = first.notifications[0];
    assert.equal(stored.id, live.id);
    assert.deepEqual(stored.content, { coins: 5 });
    assert.equal(stored.code, 101);
    assert.equal(stored.persistent, true);
    assert.ok(Date.parse(stored.create_time) > 0);

    // A later persistent one and a live-only one; the kept cursor lists only the new stored one.
    await notify(c, bob, { user_id: alice.user_id, subject: "second", content: {}, code: 102, persistent: true });
    await notify(c, bob, { user_id: alice.user_id, subject: "live only", content: { x: 1 }, code: 103, persistent: false });
    const liveOnly = [await json.next(), await json.next()].find((n) => n.subject === "live only");
    assert.ok(liveOnly, "the live-only one is pushed too");
    assert.ok(!liveOnly.persistent);
    const newer = await c.listNotifications(alice, 10, first.cacheable_cursor);
    assert.deepEqual(newer.notifications.map((n) => n.subject), ["second"]);
    const caughtUp = await c.listNotifications(alice, 10, newer.cacheable_cursor);
    assert.deepEqual(caughtUp.notifications, []);
    assert.equal(caughtUp.cacheable_cursor, newer.cacheable_cursor, "an empty page hands the cursor back");

    // Without a limit Nakama lists one; the cursor walks on.
    const one = await c.listNotifications(alice);
    assert.deepEqual(one.notifications.map((n) => n.subject), ["gift"]);
    const two = await c.listNotifications(alice, 1, one.cacheable_cursor);
    assert.deepEqual(two.notifications.map((n) => n.subject), ["second"]);

    // Bob sees none of Alice's and cannot delete them.
    const bobs = await c.listNotifications(bob, 100);
    assert.deepEqual(bobs.notifications, []);
    const ids = [...first.notifications, ...newer.notifications].map((n) => n.id);
    assert.equal(await c.deleteNotifications(bob, ids), true);
    const still = await c.listNotifications(alice, 100);
    assert.equal(still.notifications.length, 2);

    // Alice deletes the first; server code's listing agrees.
    assert.equal(await c.deleteNotifications(alice, [ids[0]]), true);
    const left = await c.listNotifications(alice, 100);
    assert.deepEqual(left.notifications.map((n) => n.subject), ["second"]);
    const server = await c.rpc(bob, "compat_notifications_list", { user_id: alice.user_id });
    assert.deepEqual(server.payload.notifications.map((n) => n.subject), ["second"]);
    assert.equal(server.payload.notifications[0].senderId, "");
    assert.equal(server.payload.cursor, "", "server code gets a cursor only when more follow");
  } finally {
    json.socket.disconnect(false);
    pb.socket.disconnect(false);
  }
});

test("limits out of 1..100 are refused in Nakama's words", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  for (const limit of [0, 101]) {
    await assertRejects(c.listNotifications(s, limit), 400, 3, "Invalid limit - limit must be between 1 and 100.");
  }
});

test("a notification from a user names its sender", async () => {
  const c = client();
  const alice = await c.authenticateDevice(freshDeviceId(), true);
  const bob = await c.authenticateDevice(freshDeviceId(), true);
  const socket = await listen(c, alice, new WebSocketAdapterText());
  try {
    await notify(c, bob, { user_id: alice.user_id, subject: "hi", content: {}, code: 7, persistent: true, sender_id: bob.user_id });
    const live = await socket.next();
    assert.equal(live.sender_id, bob.user_id);
    const listed = await c.listNotifications(alice, 10);
    assert.equal(listed.notifications[0].sender_id, bob.user_id);
  } finally {
    socket.socket.disconnect(false);
  }
});
