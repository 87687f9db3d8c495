// The JavaScript echo of the seed benchmark (examples/js/echo.js, RPC `echo_js`) through the
// official Nakama JavaScript client, over REST and over the socket. scripts/compat.sh starts
// the server with runtime.path=examples; rpc.test.mjs covers the Lua and native echoes.
import { test } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { client, freshDeviceId, assertRejects, http, httpKey } from "./support.mjs";

// Node has no global WebSocket; nakama-js expects the browser API, which `ws` provides.
globalThis.WebSocket = WebSocket;

// JSON.parse/JSON.stringify keep nulls (unlike the Lua echo) and any Unicode.
const input = { name: "bot-7", pos: [1.5, -2, 3], flags: { alive: true, team: null }, n: 42, text: "é😀" };

test("echo_js: a signed-in client gets its payload back", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const result = await c.rpc(s, "echo_js", input);
  assert.deepEqual(result.payload, input);
});

test("echo_js: server-to-server with the HTTP key", async () => {
  // POST with the payload as a JSON string: Nakama 3.40 ignores a GET's payload query parameter
  // (rpc.test.mjs pins that).
  const body = JSON.stringify(JSON.stringify({ hello: "world", list: [1, 2, 3] }));
  const r = await http("POST", `/v2/rpc/echo_js?http_key=${httpKey}`, { body });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(JSON.parse(r.json.payload), { hello: "world", list: [1, 2, 3] });
});

test("echo_js: ids are case-insensitive", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const result = await c.rpc(s, "Echo_JS", { a: 1 });
  assert.deepEqual(result.payload, { a: 1 });
});

test("echo_js: a payload that is not JSON is INVALID_ARGUMENT (3)", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  // client.rpc always JSON-encodes its input; the generated API client sends a raw payload.
  const body = await assertRejects(c.apiClient.rpcFunc(s.token, "echo_js", "{not json"), 400, 3);
  assert.match(body.message, /^payload is not valid JSON/);
});

test("echo_js: over the socket, results and errors", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const socket = c.createSocket(false, false, new WebSocketAdapterText());
  await socket.connect(s, false);
  try {
    const result = await socket.rpc("echo_js", JSON.stringify(input));
    assert.equal(result.id, "echo_js");
    assert.deepEqual(JSON.parse(result.payload), input);
    // Several calls in flight on one socket all come back, each to its own promise.
    const many = await Promise.all(
      [1, 2, 3, 4, 5].map((n) => socket.rpc("echo_js", JSON.stringify({ n }))),
    );
    assert.deepEqual(many.map((r) => JSON.parse(r.payload).n), [1, 2, 3, 4, 5]);
    // Nakama's socket reports a function error as RUNTIME_FUNCTION_EXCEPTION (7) with the
    // function's message.
    await assert.rejects(socket.rpc("echo_js", "{not json"), (error) => {
      assert.equal(error.code, 7);
      assert.match(error.message, /^payload is not valid JSON/);
      return true;
    });
  } finally {
    socket.disconnect(false);
  }
});
