// What server code sees of its ctx and logger, pinned against Nakama 3.40 (compared on
// 2026-11-27 with the fixtures tests/compat/modules/js/compat_ctx.js and
// tests/compat/modules/lua/compat_ctx.lua on both servers). JavaScript: `headers` and
// `queryParams` only in an RPC called over REST (`{}` when the request has none), never over
// the socket or in a hook (Nakama's NewRuntimeJsContext sets them only when its callers pass
// the maps, and only api_rpc.go does); the logger's `fields` start empty (the RPC id and hook
// name go to the server log, not to the script). Lua: `headers` and `query_params` always,
// empty tables where there is no REST request (NewRuntimeLuaContext).
import { test } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { client, freshDeviceId, http, differs } from "./support.mjs";

globalThis.WebSocket = WebSocket;

const serverKey = "Basic " + Buffer.from("defaultkey:").toString("base64");
const marker = () => Math.random().toString(36).slice(2);

async function signedIn() {
  const c = client();
  return { c, s: await c.authenticateDevice(freshDeviceId(), true) };
}

/** What the fixture RPC `id` saw, called over REST with `query` (e.g. "?a=1"). */
async function overRest(id, query = "") {
  const { s } = await signedIn();
  const r = await http("POST", `/v2/rpc/${id}${query}`, { token: s.token, body: JSON.stringify("{}") });
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.json.payload);
}

/** What the fixture RPC `id` saw, called over the socket. */
async function overSocket(id) {
  const { c, s } = await signedIn();
  const socket = c.createSocket(false, false, new WebSocketAdapterText());
  await socket.connect(s, false);
  try {
    return JSON.parse((await socket.rpc(id, "{}")).payload);
  } finally {
    socket.disconnect(false);
  }
}

/** What a before hook saw: the fixture refuses the marked call with it as the message. */
async function beforeAuthenticate(path, body) {
  const r = await http("POST", `${path}?create=true`, {
    headers: { authorization: serverKey },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 400, r.text);
  return JSON.parse(r.json.message);
}

/** What an after hook saw: the fixture keeps it in the local cache for `rpc` to hand out. */
async function afterAuthenticate(path, body, rpc) {
  const r = await http("POST", `${path}?create=true`, {
    headers: { authorization: serverKey },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, r.text);
  const { s } = await signedIn();
  const seen = await http("POST", `/v2/rpc/${rpc}`, { token: s.token, body: JSON.stringify(JSON.stringify(body)) });
  assert.equal(seen.status, 200, seen.text);
  assert.notEqual(seen.json.payload, "", "the after hook ran");
  return JSON.parse(seen.json.payload);
}

const customProbe = (kind) => ({ id: `ctxprobe-${kind}-${marker()}` });
const emailProbe = (kind) => ({ email: `ctxprobe-${kind}-${marker()}@example.com`, password: "password1234" });

/** Every logger has Nakama's methods and empty `fields`. */
function assertNakamaLogger(seen, where) {
  assert.deepEqual(seen.loggerFields, {}, `${where}: logger.fields`);
  assert.deepEqual(seen.loggerFunctions, ["debug", "error", "getFields", "info", "warn", "withField", "withFields"], where);
  assert.equal(seen.getFieldsIsFields, true, `${where}: getFields() answers fields`);
}

test("JS: a REST RPC's ctx has headers and queryParams, {} when the request has no query", async () => {
  const plain = await overRest("compat_ctx_js");
  assert.ok(plain.keys.includes("headers") && plain.keys.includes("queryParams"), `${plain.keys}`);
  assert.deepEqual(plain.values.queryParams, {});
  assert.deepEqual(plain.values.headers["Content-Type"], ["text/plain;charset=UTF-8"]);
  assert.equal(plain.values.executionMode, "rpc");
  // Nakama's order: after executionMode, before the caller's keys.
  assert.deepEqual(plain.keys.slice(0, 6), ["node", "version", "env", "executionMode", "headers", "queryParams"]);
  assertNakamaLogger(plain, "REST RPC");
  const queried = await overRest("compat_ctx_js", "?a=1&a=2&b=");
  assert.deepEqual(queried.values.queryParams, { a: ["1", "2"], b: [""] });
});

test("JS: a socket RPC's ctx has no headers or queryParams", async () => {
  const seen = await overSocket("compat_ctx_js");
  assert.equal(seen.values.executionMode, "rpc");
  assert.ok(seen.keys.includes("sessionId"), `${seen.keys}`);
  assert.ok(!seen.keys.includes("headers") && !seen.keys.includes("queryParams"), `${seen.keys}`);
  assertNakamaLogger(seen, "socket RPC");
});

test("JS: hooks' ctx has no headers or queryParams, and their logger no fields", async () => {
  const before = await beforeAuthenticate("/v2/account/authenticate/custom", customProbe("before"));
  assert.equal(before.values.executionMode, "before");
  assert.deepEqual(before.keys.slice(0, 4), ["node", "version", "env", "executionMode"]);
  assert.ok(!before.keys.includes("headers") && !before.keys.includes("queryParams"), `${before.keys}`);
  assertNakamaLogger(before, "before hook");

  const after = await afterAuthenticate("/v2/account/authenticate/custom", customProbe("after"), "compat_ctx_js_after");
  assert.equal(after.values.executionMode, "after");
  assert.ok(!after.keys.includes("headers") && !after.keys.includes("queryParams"), `${after.keys}`);
  assertNakamaLogger(after, "after hook");

  const { c, s } = await signedIn();
  const socket = c.createSocket(false, false, new WebSocketAdapterText());
  await socket.connect(s, false);
  try {
    await assert.rejects(socket.updateStatus(`ctxprobe-${marker()}`), (error) => {
      assert.equal(error.code, 7);
      const seen = JSON.parse(error.message);
      assert.equal(seen.values.executionMode, "before");
      assert.ok(seen.keys.includes("sessionId"), `${seen.keys}`);
      assert.ok(!seen.keys.includes("headers") && !seen.keys.includes("queryParams"), `${seen.keys}`);
      assertNakamaLogger(seen, "realtime before hook");
      return true;
    });
  } finally {
    socket.disconnect(false);
  }
});

test("JS: ctx has exactly Nakama's keys", differs("js-ctx-keys"), async () => {
  const rest = await overRest("compat_ctx_js");
  assert.deepEqual(rest.keys, ["node", "version", "env", "executionMode", "headers", "queryParams", "userSessionExp", "userId", "username", "clientIp", "clientPort", "traceId"]);
  const socket = await overSocket("compat_ctx_js");
  assert.deepEqual(socket.keys, ["node", "version", "env", "executionMode", "userSessionExp", "userId", "username", "sessionId", "lang", "clientIp", "clientPort", "traceId"]);
  const after = await afterAuthenticate("/v2/account/authenticate/custom", customProbe("after"), "compat_ctx_js_after");
  assert.deepEqual(after.keys, ["node", "version", "env", "executionMode", "userSessionExp", "userId", "username", "vars", "clientIp", "traceId"]);
});

test("JS: the logger's methods are its own properties", differs("js-logger-own-methods"), async () => {
  const seen = await overRest("compat_ctx_js");
  assert.deepEqual(seen.loggerKeys, ["debug", "error", "fields", "getFields", "info", "warn", "withField", "withFields"]);
});

test("Lua: context has headers and query_params everywhere, empty tables outside a REST RPC", async () => {
  const rest = await overRest("compat_ctx_lua", "?a=1&a=2&b=");
  assert.deepEqual(rest.values.query_params, { a: ["1", "2"], b: [""] });
  assert.deepEqual(rest.values.headers["Content-Type"], ["text/plain;charset=UTF-8"]);
  assert.deepEqual((await overRest("compat_ctx_lua")).values.query_params, {});

  const socket = await overSocket("compat_ctx_lua");
  assert.ok(socket.keys.includes("session_id"), `${socket.keys}`);
  const before = await beforeAuthenticate("/v2/account/authenticate/email", emailProbe("before"));
  assert.equal(before.values.execution_mode, "before");
  const after = await afterAuthenticate("/v2/account/authenticate/email", emailProbe("after"), "compat_ctx_lua_after");
  assert.equal(after.values.execution_mode, "after");
  for (const [where, seen] of Object.entries({ socket, before, after })) {
    assert.deepEqual(seen.values.headers, {}, `${where}: headers`);
    assert.deepEqual(seen.values.query_params, {}, `${where}: query_params`);
  }

  // A realtime hook (compat_hooks.lua's ChannelJoin hook refuses "ctxprobe-room" with what it saw).
  const { c, s } = await signedIn();
  const ws = c.createSocket(false, false, new WebSocketAdapterText());
  await ws.connect(s, false);
  try {
    await assert.rejects(ws.joinChat("ctxprobe-room", 1, false, false), (error) => {
      const seen = JSON.parse(error.message);
      assert.ok(seen.keys.includes("headers") && seen.keys.includes("query_params"), `${seen.keys}`);
      assert.deepEqual([seen.headers, seen.query_params], [{}, {}]);
      return true;
    });
  } finally {
    ws.disconnect(false);
  }
});
