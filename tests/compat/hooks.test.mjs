// Before/after hooks and a sample of nk utilities, as a real Nakama 3.40 answers them (pinned
// with scripts/compat.sh --nakama). The fixture is tests/compat/modules/lua/compat_hooks.lua:
// its hooks act only on inputs marked "hook-…".
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { client, freshDeviceId, assertRejects, differs } from "./support.mjs";

globalThis.WebSocket = WebSocket;

async function signedIn() {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  return { c, s };
}

/** What the after hook recorded for this user, or undefined. */
async function recorded(c, s) {
  const page = await c.listStorageObjects(s, "compat_hooks", s.user_id);
  const object = (page.objects ?? []).find((o) => o.key === "after_update_account");
  return object?.value;
}

test("a before hook can rewrite the input; the after hook sees the rewritten input", async () => {
  const { c, s } = await signedIn();
  assert.equal(await c.updateAccount(s, { display_name: "hook-rewrite" }), true);
  const account = await c.getAccount(s);
  assert.equal(account.user.display_name, "hook-rewritten");
  // After hooks of REST calls run before the answer is sent (Nakama): no wait needed.
  assert.deepEqual(await recorded(c, s), { display_name: "hook-rewritten", user_id: s.user_id });
});

test("an error raised in a before hook reaches the client with its code, and the call does not run", async () => {
  const { c, s } = await signedIn();
  const body = await assertRejects(c.updateAccount(s, { display_name: "hook-reject" }), 400, 9);
  assert.equal(body.message, "rejected by compat hook");
  const account = await c.getAccount(s);
  assert.equal(account.user.display_name, undefined);
  assert.equal(await recorded(c, s), undefined, "no after hook for a rejected call");
});

test("a before hook that returns nil drops the call: 404 / NOT_FOUND", async () => {
  const { c, s } = await signedIn();
  const body = await assertRejects(c.updateAccount(s, { display_name: "hook-drop" }), 404, 5);
  assert.equal(body.message, "Requested resource was not found.");
  const account = await c.getAccount(s);
  assert.equal(account.user.display_name, undefined);
  assert.equal(await recorded(c, s), undefined);
});

test("calls the hooks do not mark pass through unchanged", async () => {
  const { c, s } = await signedIn();
  assert.equal(await c.updateAccount(s, { display_name: "plain name" }), true);
  assert.equal((await c.getAccount(s)).user.display_name, "plain name");
  assert.equal(await recorded(c, s), undefined);
});

async function connected() {
  const { c, s } = await signedIn();
  const socket = c.createSocket(false, false, new WebSocketAdapterText());
  let closed;
  const closedPromise = new Promise((resolve) => {
    socket.ondisconnect = (event) => {
      closed = event;
      resolve(event);
    };
  });
  await socket.connect(s, false);
  return { socket, closedPromise, isClosed: () => closed !== undefined };
}

test("socket: an error in a realtime before hook is RUNTIME_FUNCTION_EXCEPTION (7) with its message", async () => {
  const { socket } = await connected();
  try {
    await assert.rejects(socket.joinChat("hook-reject-room", 1, false, false), (error) => {
      // The hook raised code 3; Nakama's socket reports every hook error as code 7.
      assert.equal(error.code, 7);
      assert.equal(error.message, "room refused by compat hook");
      return true;
    });
    // The session stays open and serves the next message.
    const channel = await socket.joinChat("compat-hooks-ok-room", 1, false, false);
    assert.equal(channel.room_name, "compat-hooks-ok-room");
  } finally {
    socket.disconnect(false);
  }
});

test("socket: a realtime before hook that returns nil gets no answer and the session is closed", async () => {
  const { socket, closedPromise } = await connected();
  const answer = socket.joinChat("hook-drop-room", 1, false, false).then(
    () => "answered",
    (e) => `refused: ${JSON.stringify(e)}`,
  );
  const timeout = new Promise((resolve) => setTimeout(() => resolve("no answer"), 10_000));
  const closed = await Promise.race([closedPromise.then(() => "closed"), timeout]);
  assert.equal(closed, "closed", "Nakama closes the session of a dropped realtime message");
  // The join was never answered (nakama-js may reject the pending call when the socket closes).
  const outcome = await Promise.race([answer, new Promise((r) => setTimeout(() => r("no answer"), 100))]);
  assert.ok(outcome !== "answered", outcome);
});

test("nk utilities answer as Nakama's", async () => {
  const { c, s } = await signedIn();
  const result = await c.rpc(s, "compat_nk_sample", {});
  const r = result.payload;
  const text = "héllo wörld";
  assert.equal(r.base64, Buffer.from(text).toString("base64"));
  // Nakama's base64url has no padding.
  assert.equal(r.base64url, Buffer.from("héllo wörld?>").toString("base64url"));
  assert.equal(r.base16, Buffer.from("MetaFi").toString("hex"));
  assert.equal(r.md5, createHash("md5").update("abc").digest("hex"));
  assert.equal(r.sha256, createHash("sha256").update("abc").digest("hex"));
  // The fixture calls hmac_sha256_hash("The quick brown fox", "key"): Nakama's order is (input, key).
  assert.equal(r.hmac, createHmac("sha256", "key").update("The quick brown fox").digest("hex"));
  // "0 12 * * 1" after 2023-11-14T22:13:20Z is Monday 2023-11-20T12:00:00Z.
  assert.equal(r.cron_next, Date.UTC(2023, 10, 20, 12) / 1000);
  assert.equal(r.uuid_roundtrip, "2c7ec03e-8cb4-4b8a-a7a8-4b8d0e5d2b3f");
  assert.deepEqual(JSON.parse(r.json), { a: 1, list: [1, 2, 3] });
  // Caught errors are "<module path>:<line>: <reason>"; the path differs between servers.
  assert.equal(reason(r.errors.base64_decode), "not a valid base64 string: illegal base64 data at input byte 0");
  assert.equal(reason(r.errors.json_decode), "not a valid JSON string: unexpected end of JSON input");
});

const reason = (message) => message.replace(/^.*compat_hooks\.lua:\d+: /, "");

test("an argument error of a function handed to pcall names it (anonymous)", differs("lua-arg-error-name"), async () => {
  const { c, s } = await signedIn();
  const r = (await c.rpc(s, "compat_nk_sample", {})).payload;
  assert.equal(reason(r.errors.uuid_string_to_bytes), "bad argument #1 to (anonymous) (not a valid UUID string)");
});
