// Friends through the official Nakama JavaScript client: invites and accepts seen from both
// sides, blocks, deletes, usernames, cursor paging, and Nakama's codes and messages for bad input.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { client, freshDeviceId, assertRejects, recordEvents } from "./support.mjs";

// Node has no global WebSocket; nakama-js expects the browser API, which `ws` provides.
globalThis.WebSocket = WebSocket;

async function player(c, prefix = "f") {
  const username = `${prefix}_${randomUUID().slice(0, 8)}`;
  const session = await c.authenticateDevice(freshDeviceId(), true, username);
  return { session, username, id: session.user_id };
}

/** `[username, state]` of every relationship the player sees, in listing order. */
async function states(c, p, state) {
  const list = await c.listFriends(p.session, state, 1000);
  return list.friends.map((f) => [f.user.username, f.state]);
}

test("an invite shows from both sides, and adding back accepts it", async () => {
  const c = client();
  const ada = await player(c);
  const bob = await player(c);
  assert.equal(await c.addFriends(ada.session, [bob.id]), true);
  assert.deepEqual(await states(c, ada), [[bob.username, 1]]);
  assert.deepEqual(await states(c, bob), [[ada.username, 2]]);
  // Asking again changes nothing.
  await c.addFriends(ada.session, [bob.id]);
  assert.deepEqual(await states(c, ada), [[bob.username, 1]]);

  // Bob accepts by username.
  await c.addFriends(bob.session, undefined, [ada.username]);
  assert.deepEqual(await states(c, ada), [[bob.username, 0]]);
  assert.deepEqual(await states(c, bob), [[ada.username, 0]]);
  const list = await c.listFriends(bob.session);
  assert.equal(list.friends[0].user.id, ada.id);
  assert.equal(list.friends[0].state, 0, "state 0 is sent, not omitted");
  assert.equal(list.cursor, undefined, "no cursor on the last page");
  // Filtered by state.
  assert.deepEqual(await states(c, bob, 0), [[ada.username, 0]]);
  assert.deepEqual(await states(c, bob, 1), []);
});

test("blocking hides the blocker and ignores the blocked user's requests", async () => {
  const c = client();
  const ada = await player(c);
  const bob = await player(c);
  await c.addFriends(ada.session, [bob.id]);
  await c.addFriends(bob.session, [ada.id]);
  assert.equal(await c.blockFriends(ada.session, [bob.id]), true);
  assert.deepEqual(await states(c, ada), [[bob.username, 3]]);
  assert.deepEqual(await states(c, bob), []);
  // Bob's add is silently ignored.
  assert.equal(await c.addFriends(bob.session, undefined, [ada.username]), true);
  assert.deepEqual(await states(c, bob), []);
  assert.deepEqual(await states(c, ada), [[bob.username, 3]]);
  // Deleting the block (unblocking) leaves nobody related.
  assert.equal(await c.deleteFriends(ada.session, undefined, [bob.username]), true);
  assert.deepEqual(await states(c, ada), []);
  // Blocking a stranger by username works too.
  await c.blockFriends(bob.session, undefined, [ada.username]);
  assert.deepEqual(await states(c, bob), [[ada.username, 3]]);
});

test("deleting a friend or an invite removes both sides", async () => {
  const c = client();
  const ada = await player(c);
  const bob = await player(c);
  const cy = await player(c);
  await c.addFriends(ada.session, [bob.id, cy.id]);
  await c.addFriends(bob.session, [ada.id]);
  await c.deleteFriends(ada.session, [bob.id, cy.id]);
  for (const p of [ada, bob, cy]) assert.deepEqual(await states(c, p), []);
  // Deleting what is not there is fine.
  assert.equal(await c.deleteFriends(ada.session, [bob.id]), true);
});

test("a listing pages with cursors in state order", async () => {
  const c = client();
  const ada = await player(c);
  const others = [];
  for (let i = 0; i < 7; i++) others.push(await player(c));
  await c.addFriends(ada.session, others.map((o) => o.id));
  for (const o of others.slice(0, 3)) await c.addFriends(o.session, [ada.id]);
  const seen = [];
  let cursor;
  let pages = 0;
  do {
    const page = await c.listFriends(ada.session, undefined, 2, cursor);
    assert.ok(page.friends.length <= 2);
    for (const f of page.friends) seen.push([f.user.id, f.state]);
    cursor = page.cursor;
    pages += 1;
  } while (cursor);
  assert.equal(pages, 4);
  assert.deepEqual(seen.map(([, s]) => s), [0, 0, 0, 1, 1, 1, 1]);
  assert.deepEqual(new Set(seen.map(([id]) => id)), new Set(others.map((o) => o.id)));
  // A cursor of one state filter is refused under another.
  const first = await c.listFriends(ada.session, 1, 2);
  assert.ok(first.cursor);
  await assertRejects(c.listFriends(ada.session, 0, 2, first.cursor), 400, 3, "Cursor is invalid.");
});

test("friends of friends", async () => {
  const c = client();
  const ada = await player(c);
  const bob = await player(c);
  const cy = await player(c);
  for (const [x, y] of [[ada, bob], [bob, cy]]) {
    await c.addFriends(x.session, [y.id]);
    await c.addFriends(y.session, [x.id]);
  }
  const list = await c.listFriendsOfFriends(ada.session);
  assert.equal(list.friends_of_friends.length, 1);
  assert.equal(list.friends_of_friends[0].referrer, bob.id);
  assert.equal(list.friends_of_friends[0].user.id, cy.id);
  assert.equal(list.friends_of_friends[0].user.username, cy.username);
});

test("bad input gets Nakama's codes and messages", async () => {
  const c = client();
  const ada = await player(c);
  const s = ada.session;
  await assertRejects(c.addFriends(s, [ada.id]), 400, 3, "Cannot add self as friend.");
  await assertRejects(c.addFriends(s, undefined, [ada.username]), 400, 3, "Cannot add self as friend.");
  await assertRejects(c.deleteFriends(s, [ada.id]), 400, 3, "Cannot delete self.");
  await assertRejects(c.blockFriends(s, undefined, [ada.username]), 400, 3, "Cannot block self.");
  await assertRejects(c.addFriends(s, ["not-a-uuid"]), 400, 3, "Invalid user ID 'not-a-uuid'.");
  await assertRejects(
    c.addFriends(s, ["00000000-0000-0000-0000-000000000000"]),
    400,
    3,
    "Invalid user ID '00000000-0000-0000-0000-000000000000'.",
  );
  await assertRejects(c.addFriends(s, undefined, [""]), 400, 3, "Username must not be empty.");
  const ghost = `ghost_${randomUUID().slice(0, 8)}`;
  await assertRejects(c.addFriends(s, undefined, [ghost]), 400, 3, "No valid ID or username was provided.");
  await assertRejects(c.blockFriends(s, undefined, [ghost]), 400, 3, "No valid ID or username was provided.");
  assert.equal(await c.deleteFriends(s, undefined, [ghost]), true);
  await assertRejects(c.listFriends(s, undefined, 0), 400, 3, "Invalid limit - limit must be between 1 and 1000.");
  await assertRejects(c.listFriends(s, undefined, 1001), 400, 3, "Invalid limit - limit must be between 1 and 1000.");
  await assertRejects(c.listFriends(s, 4), 400, 3, "Invalid state - state must be between 0 and 3.");
  await assertRejects(c.listFriends(s, undefined, 10, "garbage"), 400, 3, "Cursor is invalid.");
  await assertRejects(c.listFriendsOfFriends(s, 101), 400, 3, "Invalid limit - limit must be between 1 and 100.");
  // Adding nobody is fine.
  assert.equal(await c.addFriends(s, []), true);
});

test("importing Steam friends without a configured provider fails as in Nakama", async () => {
  const c = client();
  const ada = await player(c);
  await assertRejects(
    c.importSteamFriends(ada.session, { token: "t" }, false),
    400,
    9,
    "Steam authentication is not configured.",
  );
  await assertRejects(c.importFacebookFriends(ada.session, {}), 400, 3, "Facebook token is required.");
});

test("a block ends the direct chat; the blocked user cannot open it again", async () => {
  const c = client();
  const ada = await player(c);
  const bob = await player(c);
  const sockets = [];
  const connect = async (p) => {
    const socket = c.createSocket(false, false);
    const events = recordEvents(socket, ["onchannelpresence", "onnotification"]);
    await socket.connect(p.session, false);
    sockets.push(socket);
    return { socket, events };
  };
  try {
    const adaLive = await connect(ada);
    const bobLive = await connect(bob);
    const dm = await adaLive.socket.joinChat(bob.id, 2, true, false);
    await bobLive.socket.joinChat(ada.id, 2, true, false);
    await adaLive.events.next("onchannelpresence", (e) => e.joins?.some((j) => j.user_id === bob.id));
    await bobLive.socket.writeChatMessage(dm.id, { text: "hi" });

    // Nakama untracks the chat's stream on a block (server/core_friend.go): both are out.
    await c.blockFriends(ada.session, [bob.id]);
    await assert.rejects(bobLive.socket.writeChatMessage(dm.id, { text: "still there?" }), (error) => error.code === 3);
    await assert.rejects(adaLive.socket.writeChatMessage(dm.id, { text: "bye" }), (error) => error.code === 3);
    // The blocked user finds no such user (UserExistsAndDoesNotBlock in core_channel.go) …
    await assert.rejects(bobLive.socket.joinChat(ada.id, 2, true, false), (error) => {
      assert.equal(error.code, 3);
      assert.equal(error.message, "User ID not found: Invalid channel target");
      return true;
    });
    // … the blocker may still open it.
    const again = await adaLive.socket.joinChat(bob.id, 2, true, false);
    assert.equal(again.id, dm.id);
  } finally {
    for (const socket of sockets) socket.disconnect(false);
  }
});
