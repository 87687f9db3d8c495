// What server code sees of its ctx and logger, pinned against Nakama 3.40 (compared on
// 2026-11-27 with the fixtures tests/compat/modules/js/compat_ctx.js and
// tests/compat/modules/lua/compat_ctx.lua on both servers). JavaScript: `headers` and
// `queryParams` only in an RPC called over REST (`{}` when the request has none), never over
// the socket or in a hook (Nakama's NewRuntimeJsContext sets them only when its callers pass
// the maps, and only api_rpc.go does); the logger's `fields` start empty (the RPC id and hook
// name go to the server log, not to the script). Lua: `headers` and `query_params` always,
// empty tables where there is no REST request (NewRuntimeLuaContext). Both: the caller's
// `vars` only when its session has some; `sessionId` and `lang` over a socket; `clientPort`
// (text) where Nakama's edge has the peer's port: an RPC over REST or the socket and a realtime
// hook, not a REST hook (its gRPC gateway forwards the address without one); a `traceId` per
// request (a random UUID); a sign-in's after hook runs as the new session's user.
import { test } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { client, freshDeviceId, http, differs, host, port } from "./support.mjs";

globalThis.WebSocket = WebSocket;

const serverKey = "Basic " + Buffer.from("defaultkey:").toString("base64");
const marker = () => Math.random().toString(36).slice(2);

async function signedIn(vars) {
  const c = client();
  return { c, s: await c.authenticateDevice(freshDeviceId(), true, undefined, vars) };
}

/** What the fixture RPC `id` saw, called over REST with `query` (e.g. "?a=1") by a session with `vars`. */
async function overRest(id, query = "", vars = undefined) {
  const { s } = await signedIn(vars);
  const r = await http("POST", `/v2/rpc/${id}${query}`, { token: s.token, body: JSON.stringify("{}") });
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.json.payload);
}

/** What the fixture RPC `id` saw, called over the socket by a session with `vars`. */
async function overSocket(id, vars = undefined) {
  const { c, s } = await signedIn(vars);
  const socket = c.createSocket(false, false, new WebSocketAdapterText());
  await socket.connect(s, false);
  try {
    return JSON.parse((await socket.rpc(id, "{}")).payload);
  } finally {
    socket.disconnect(false);
  }
}

/**
 * What the fixture RPC `id` saw over a socket opened with `query` in its URL (nakama-js always
 * sends `lang=en`).
 */
async function overRawSocket(id, query) {
  const { s } = await signedIn();
  const ws = new WebSocket(`ws://${host}:${port}/ws?${query}&token=${encodeURIComponent(s.token)}`);
  try {
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    const answer = new Promise((resolve, reject) => {
      ws.on("message", (data) => {
        const envelope = JSON.parse(data.toString());
        if (envelope.cid === "1") resolve(envelope);
      });
      ws.once("close", () => reject(new Error("the socket closed before the RPC answered")));
    });
    ws.send(JSON.stringify({ cid: "1", rpc: { id, payload: "{}" } }));
    const envelope = await answer;
    assert.ok(envelope.rpc, JSON.stringify(envelope));
    return JSON.parse(envelope.rpc.payload);
  } finally {
    ws.close();
  }
}

/** The claims of a session token. */
const claims = (token) => JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString());

/** What a before hook saw: the fixture refuses the marked call with it as the message. */
async function beforeAuthenticate(path, body) {
  const r = await http("POST", `${path}?create=true`, {
    headers: { authorization: serverKey },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 400, r.text);
  return JSON.parse(r.json.message);
}

/**
 * What an after hook saw: the fixture keeps it in the local cache for `rpc` to hand out. Also
 * answers the session the call created.
 */
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
  return { ...JSON.parse(seen.json.payload), session: r.json };
}

const customProbe = (kind, vars) => ({ id: `ctxprobe-${kind}-${marker()}`, vars });
const emailProbe = (kind, vars) => ({ email: `ctxprobe-${kind}-${marker()}@example.com`, password: "password1234", vars });

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

test("JS: ctx has exactly Nakama's keys: the caller's, vars only when the session has some, clientPort where the edge has the port, a traceId per request", async () => {
  const rest = await overRest("compat_ctx_js");
  assert.deepEqual(rest.keys, ["node", "version", "env", "executionMode", "headers", "queryParams", "userSessionExp", "userId", "username", "clientIp", "clientPort", "traceId"]);
  const restWithVars = await overRest("compat_ctx_js", "", { a: "1" });
  assert.deepEqual(restWithVars.keys, ["node", "version", "env", "executionMode", "headers", "queryParams", "userSessionExp", "userId", "username", "vars", "clientIp", "clientPort", "traceId"]);
  assert.deepEqual(restWithVars.values.vars, { a: "1" });

  const socket = await overSocket("compat_ctx_js");
  assert.deepEqual(socket.keys, ["node", "version", "env", "executionMode", "userSessionExp", "userId", "username", "sessionId", "lang", "clientIp", "clientPort", "traceId"]);
  assert.equal(socket.values.lang, "en");
  const socketWithVars = await overSocket("compat_ctx_js", { a: "1" });
  assert.deepEqual(socketWithVars.keys, ["node", "version", "env", "executionMode", "userSessionExp", "userId", "username", "vars", "sessionId", "lang", "clientIp", "clientPort", "traceId"]);
  assert.deepEqual((await overRawSocket("compat_ctx_js", "lang=fr")).values.lang, "fr");
  assert.deepEqual((await overRawSocket("compat_ctx_js", "lang=")).values.lang, "en");

  // The trace id is a random UUID, the port a number as text (both differ per request).
  for (const [where, seen] of Object.entries({ rest, restWithVars, socket, socketWithVars })) {
    assert.deepEqual([seen.traceIdIsUuid, seen.clientPortIsDecimal], [true, true], where);
  }
  assert.notEqual(rest.identity.userId, restWithVars.identity.userId);

  // REST hooks: the address without a port (Nakama's come through its gRPC gateway).
  const before = await beforeAuthenticate("/v2/account/authenticate/custom", customProbe("before"));
  assert.deepEqual(before.keys, ["node", "version", "env", "executionMode", "clientIp", "traceId"]);
  assert.equal(before.traceIdIsUuid, true);

  // A realtime message's hook: the socket's keys.
  const { c, s } = await signedIn();
  const ws = c.createSocket(false, false, new WebSocketAdapterText());
  await ws.connect(s, false);
  try {
    await assert.rejects(ws.updateStatus(`ctxprobe-${marker()}`), (error) => {
      const seen = JSON.parse(error.message);
      assert.deepEqual(seen.keys, ["node", "version", "env", "executionMode", "userSessionExp", "userId", "username", "sessionId", "lang", "clientIp", "clientPort", "traceId"]);
      assert.deepEqual([seen.traceIdIsUuid, seen.clientPortIsDecimal, seen.values.lang], [true, true, "en"]);
      return true;
    });
  } finally {
    ws.disconnect(false);
  }
});

test("JS: an authenticate call's after hook runs as the new session's user", async () => {
  const after = await afterAuthenticate("/v2/account/authenticate/custom", customProbe("after", { a: "1" }), "compat_ctx_js_after");
  assert.deepEqual(after.keys, ["node", "version", "env", "executionMode", "userSessionExp", "userId", "username", "vars", "clientIp", "traceId"]);
  assert.deepEqual(after.values.vars, { a: "1" });
  assert.equal(after.traceIdIsUuid, true);
  const token = claims(after.session.token);
  assert.deepEqual(after.identity, { userId: token.uid, username: token.usn, userSessionExp: token.exp });
});

test("JS: an after hook whose before hook ran sees vars {} when the request had none", differs("js-after-hook-empty-vars"), async () => {
  const after = await afterAuthenticate("/v2/account/authenticate/custom", customProbe("after"), "compat_ctx_js_after");
  assert.deepEqual(after.keys, ["node", "version", "env", "executionMode", "userSessionExp", "userId", "username", "vars", "clientIp", "traceId"]);
  assert.deepEqual(after.values.vars, {});
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

test("Lua: context has exactly Nakama's keys: vars only when the session has some, client_port where the edge has the port, a trace_id per request", async () => {
  const common = ["env", "execution_mode", "headers", "node", "query_params", "version"];
  const sorted = (keys) => [...common, ...keys].sort();
  const user = ["user_id", "user_session_exp", "username"];
  const rest = await overRest("compat_ctx_lua");
  assert.deepEqual(rest.keys, sorted([...user, "client_ip", "client_port", "trace_id"]));
  const restWithVars = await overRest("compat_ctx_lua", "", { a: "1" });
  assert.deepEqual(restWithVars.keys, sorted([...user, "vars", "client_ip", "client_port", "trace_id"]));
  assert.deepEqual(restWithVars.values.vars, { a: "1" });
  const socket = await overSocket("compat_ctx_lua");
  assert.deepEqual(socket.keys, sorted([...user, "session_id", "lang", "client_ip", "client_port", "trace_id"]));
  assert.equal(socket.values.lang, "en");
  assert.equal((await overRawSocket("compat_ctx_lua", "lang=de")).values.lang, "de");
  for (const [where, seen] of Object.entries({ rest, restWithVars, socket })) {
    assert.deepEqual([seen.trace_id_is_uuid, seen.client_port_is_decimal], [true, true], where);
  }

  const before = await beforeAuthenticate("/v2/account/authenticate/email", emailProbe("before"));
  assert.deepEqual(before.keys, sorted(["client_ip", "trace_id"]));
  assert.equal(before.trace_id_is_uuid, true);
  // The after hook of a sign-in runs as the new session's user; here the before hook leaves
  // no empty vars behind (Nakama's Lua request has no unset fields), so there are none.
  const after = await afterAuthenticate("/v2/account/authenticate/email", emailProbe("after"), "compat_ctx_lua_after");
  assert.deepEqual(after.keys, sorted([...user, "client_ip", "trace_id"]));
  const token = claims(after.session.token);
  assert.deepEqual(after.identity, { user_id: token.uid, username: token.usn, user_session_exp: token.exp });
  const afterWithVars = await afterAuthenticate("/v2/account/authenticate/email", emailProbe("after", { a: "1" }), "compat_ctx_lua_after");
  assert.deepEqual(afterWithVars.keys, sorted([...user, "vars", "client_ip", "trace_id"]));
  assert.deepEqual(afterWithVars.values.vars, { a: "1" });

  const { c, s } = await signedIn();
  const ws = c.createSocket(false, false, new WebSocketAdapterText());
  await ws.connect(s, false);
  try {
    await assert.rejects(ws.joinChat("ctxprobe-room", 1, false, false), (error) => {
      const seen = JSON.parse(error.message);
      assert.deepEqual(seen.keys, sorted([...user, "session_id", "lang", "client_ip", "client_port", "trace_id"]));
      assert.equal(seen.lang, "en");
      return true;
    });
  } finally {
    ws.disconnect(false);
  }
});
