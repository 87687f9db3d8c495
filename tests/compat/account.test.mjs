// Accounts and sessions through the official Nakama JavaScript client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Session } from "@heroiclabs/nakama-js";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { client, freshDeviceId, assertRejects, sleep, differs, metafiOnly, http } from "./support.mjs";

// Node has no global WebSocket; nakama-js expects the browser API, which `ws` provides.
globalThis.WebSocket = WebSocket;

test("device authentication creates the account once, then signs in to it", async () => {
  const c = client();
  const deviceId = freshDeviceId();
  const first = await c.authenticateDevice(deviceId, true);
  assert.equal(first.created, true);
  assert.match(first.user_id, /^[0-9a-f-]{36}$/);
  assert.equal(first.username.length, 10, "generated username like Nakama's");
  assert.ok(first.expires_at > Date.now() / 1000, "expiry read from the token");
  assert.ok(first.refresh_expires_at > first.expires_at);

  const second = await c.authenticateDevice(deviceId, true);
  assert.equal(second.created, false);
  assert.equal(second.user_id, first.user_id);
  assert.equal(second.username, first.username);
});

test("create=false does not create and answers NotFound", async () => {
  await assertRejects(client().authenticateDevice(freshDeviceId(), false), 404, 5);
});

test("a chosen username is used, and a taken one is refused", async () => {
  const c = client();
  const username = `player_${randomUUID().slice(0, 8)}`;
  const s = await c.authenticateDevice(freshDeviceId(), true, username);
  assert.equal(s.username, username);
  await assertRejects(c.authenticateDevice(freshDeviceId(), true, username), 409, 6);
});

test("invalid device ids are refused with InvalidArgument", async () => {
  await assertRejects(client().authenticateDevice("short", true), 400, 3);
  await assertRejects(client().authenticateDevice("has spaces in it", true), 400, 3);
});

test("session variables travel in the token", async () => {
  const s = await client().authenticateDevice(freshDeviceId(), true, undefined, { region: "eu", tier: "gold" });
  assert.deepEqual(s.vars, { region: "eu", tier: "gold" });
});

test("email accounts: sign up, sign in, wrong password, bad input", async () => {
  const c = client();
  const email = `p${randomUUID().slice(0, 8)}@example.com`;
  const created = await c.authenticateEmail(email, "correct-horse", true);
  assert.equal(created.created, true);
  const again = await c.authenticateEmail(email.toUpperCase(), "correct-horse", false);
  assert.equal(again.user_id, created.user_id, "emails are case-insensitive");
  await assertRejects(c.authenticateEmail(email, "wrong-horse", false), 401, 16);
  await assertRejects(c.authenticateEmail("not-an-email", "correct-horse", true), 400, 3);
  await assertRejects(c.authenticateEmail(email, "short", true), 400, 3);
  const account = await c.getAccount(created);
  assert.equal(account.email, email);
});

test("custom id authentication", async () => {
  const c = client();
  const customId = `custom-${randomUUID()}`;
  const s = await c.authenticateCustom(customId, true);
  assert.equal(s.created, true);
  const account = await c.getAccount(s);
  assert.equal(account.custom_id, customId);
  await assertRejects(c.authenticateCustom("abc", true), 400, 3);
});

test("account read and update", async () => {
  const c = client();
  const deviceId = freshDeviceId();
  const s = await c.authenticateDevice(deviceId, true);
  const before = await c.getAccount(s);
  assert.equal(before.user.id, s.user_id);
  assert.equal(before.user.username, s.username);
  assert.deepEqual(before.devices.map((d) => d.id), [deviceId]);
  assert.ok(Date.parse(before.user.create_time) > 0, "create_time is RFC 3339");

  const newName = `renamed_${randomUUID().slice(0, 8)}`;
  await c.updateAccount(s, {
    username: newName,
    display_name: "Ada",
    avatar_url: "https://example.com/a.png",
    lang_tag: "fr",
    location: "Paris",
    timezone: "Europe/Paris",
  });
  const after = await c.getAccount(s);
  assert.equal(after.user.username, newName);
  assert.equal(after.user.display_name, "Ada");
  assert.equal(after.user.avatar_url, "https://example.com/a.png");
  assert.equal(after.user.lang_tag, "fr");
  assert.equal(after.user.location, "Paris");
  assert.equal(after.user.timezone, "Europe/Paris");
});

test("renaming to a taken username is 400/3 with Nakama's wrapped message", async () => {
  const c = client();
  const taken = `taken_${randomUUID().slice(0, 8)}`;
  await c.authenticateDevice(freshDeviceId(), true, taken);
  const other = await c.authenticateDevice(freshDeviceId(), true);
  // Sign-up with a taken name is 409/6 (above); the update wraps the same error in code 3.
  await assertRejects(
    c.updateAccount(other, { username: taken }),
    400,
    3,
    "rpc error: code = AlreadyExists desc = Username is already in use.",
  );
});

test("a username with a plain space is accepted", async () => {
  const c = client();
  const username = `two words ${randomUUID().slice(0, 8)}`;
  const s = await c.authenticateDevice(freshDeviceId(), true, username);
  assert.equal(s.username, username);
  const renamed = `new name ${randomUUID().slice(0, 8)}`;
  await c.updateAccount(s, { username: renamed });
  assert.equal((await c.getAccount(s)).user.username, renamed);
});

test("GET /v2/user: users by id and by username, with online", async (t) => {
  const c = client();
  const me = await c.authenticateDevice(freshDeviceId(), true);
  const name = `seen_${randomUUID().slice(0, 8)}`;
  const other = await c.authenticateDevice(freshDeviceId(), true, name);
  const socket = c.createSocket(false, false, new WebSocketAdapterText());
  await socket.connect(other, true);
  t.after(() => socket.disconnect(false));

  const byId = await c.getUsers(me, [other.user_id]);
  assert.equal(byId.users.length, 1);
  assert.equal(byId.users[0].id, other.user_id);
  assert.equal(byId.users[0].username, name);
  assert.equal(byId.users[0].online, true, "a user with a connected socket is online");
  assert.equal(byId.users[0].lang_tag, "en");
  assert.ok(Date.parse(byId.users[0].create_time) > 0);

  const both = await c.getUsers(me, [me.user_id], [name]);
  assert.deepEqual(both.users.map((u) => u.id).sort(), [me.user_id, other.user_id].sort());
  const self = both.users.find((u) => u.id === me.user_id);
  assert.ok(!self.online, "no socket: not online (false is omitted on the wire)");

  const unknown = await c.getUsers(me, [randomUUID()]);
  assert.deepEqual(unknown.users ?? [], [], "an unknown id is left out, not an error");
  const none = await http("GET", "/v2/user", { token: me.token });
  assert.equal(none.status, 200);
  assert.deepEqual(none.json.users ?? [], []);
  const bad = await http("GET", "/v2/user?ids=nope", { token: me.token });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.code, 3);
  assert.equal(bad.json.message, "ID 'nope' is not a valid system ID.");
});

test("the account is online while a socket that shows status is connected", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const hidden = c.createSocket(false, false, new WebSocketAdapterText());
  await hidden.connect(s, false);
  assert.ok(!(await c.getAccount(s)).user.online, "a socket connected with status=false does not show online");
  hidden.disconnect(false);
  const shown = c.createSocket(false, false, new WebSocketAdapterText());
  await shown.connect(s, true);
  try {
    assert.equal((await c.getAccount(s)).user.online, true);
  } finally {
    shown.disconnect(false);
  }
  let after;
  for (let i = 0; i < 30; i++) {
    await sleep(100);
    after = (await c.getAccount(s)).user.online;
    if (!after) break;
  }
  assert.ok(!after, "offline again once the socket is gone");
});

test("deleteAccount deletes the account", async () => {
  const c = client({ autoRefresh: false });
  const deviceId = freshDeviceId();
  const s = await c.authenticateDevice(deviceId, true);
  assert.equal(await c.deleteAccount(s), true);
  const again = await c.authenticateDevice(deviceId, true);
  assert.equal(again.created, true, "the device is free again");
  assert.notEqual(again.user_id, s.user_id);
});

test("a deleted account's token still authenticates and finds no account", differs("delete-account-token"), async () => {
  const c = client({ autoRefresh: false });
  const s = await c.authenticateDevice(freshDeviceId(), true);
  await c.deleteAccount(s);
  await assertRejects(c.getAccount(s), 404, 5, "Account not found.");
});

test("a deleted account's token is refused (its sessions ended)", metafiOnly("Nakama 3.40 keeps accepting the token"), async () => {
  const c = client({ autoRefresh: false });
  const s = await c.authenticateDevice(freshDeviceId(), true);
  await c.deleteAccount(s);
  await assertRejects(c.getAccount(s), 401, 16);
  await assertRejects(c.sessionRefresh(s), 401, 16);
});

test("refresh gives a working session of the same user", async () => {
  const c = client({ autoRefresh: false });
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const refreshed = await c.sessionRefresh(s);
  assert.equal(refreshed.user_id, s.user_id);
  const account = await c.getAccount(refreshed);
  assert.equal(account.user.id, s.user_id);
});

test("logout ends the session token and the refresh token", async () => {
  const c = client({ autoRefresh: false });
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const copy = Session.restore(s.token, s.refresh_token);
  await c.sessionLogout(s, s.token, s.refresh_token);
  await assertRejects(c.getAccount(copy), 401, 16);
  await assertRejects(c.sessionRefresh(copy), 401, 16);
});

test("a revoked token's message is Nakama's 'Auth token invalid'", async () => {
  const c = client({ autoRefresh: false });
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const copy = Session.restore(s.token, s.refresh_token);
  await c.sessionLogout(s, s.token, s.refresh_token);
  await assertRejects(c.getAccount(copy), 401, 16, "Auth token invalid");
});

test("a wrong server key is refused", async () => {
  await assertRejects(client({ key: "not-the-key" }).authenticateDevice(freshDeviceId(), true), 401, 16);
});

test("an expired session token is refused", async () => {
  const ttl = Number(process.env.METAFI_TEST_TOKEN_EXPIRY_SEC ?? "0");
  if (!ttl || ttl > 5) {
    throw new Error("scripts/compat.sh must start the server with a short session.token_expiry_sec");
  }
  const c = client({ autoRefresh: false });
  const s = await c.authenticateDevice(freshDeviceId(), true);
  await sleep(ttl * 1000 + 1200);
  await assertRejects(c.getAccount(s), 401, 16);
});

test("a token of another server key/signature is refused", async () => {
  const c = client({ autoRefresh: false });
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const parts = s.token.split(".");
  const forged = Session.restore(`${parts[0]}.${parts[1]}.${"A".repeat(parts[2].length)}`, s.refresh_token);
  await assertRejects(c.getAccount(forged), 401, 16);
});

test("users by id and username (GET /v2/user), with who is online", async () => {
  const { default: WebSocket } = await import("ws");
  const { WebSocketAdapterText } = await import("@heroiclabs/nakama-js");
  globalThis.WebSocket ??= WebSocket;
  const c = client();
  const tag = randomUUID().slice(0, 8);
  const ada = await c.authenticateDevice(freshDeviceId(), true, `ada_${tag}`);
  // A plain space in a username is accepted, as by Nakama.
  const bob = await c.authenticateDevice(freshDeviceId(), true, `bob ${tag}`);
  assert.equal(bob.username, `bob ${tag}`);
  const socket = c.createSocket(false, false, new WebSocketAdapterText());
  await socket.connect(bob, true);
  try {
    const found = await c.getUsers(ada, [ada.user_id], [bob.username, `nobody_${tag}`]);
    const byName = Object.fromEntries(found.users.map((u) => [u.username, u]));
    assert.deepEqual(Object.keys(byName).sort(), [`ada_${tag}`, `bob ${tag}`]);
    assert.equal(byName[`ada_${tag}`].id, ada.user_id);
    assert.ok(!byName[`ada_${tag}`].online, "no socket: offline");
    assert.equal(byName[`bob ${tag}`].online, true, "a connected socket: online");
  } finally {
    socket.disconnect(false);
  }
  const none = await c.getUsers(ada, []);
  assert.deepEqual(none.users, []);
  await assertRejects(c.getUsers(ada, ["not-a-uuid"]), 400, 3);
});
