// RPC over REST and the socket through the official Nakama JavaScript client: the Lua (`echo`) and native
// (`echo_native`) echoes of the seed benchmark, server-to-server calls with the HTTP key, and
// the error codes. scripts/compat.sh starts the server with runtime.path=examples.
import { test } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { client, freshDeviceId, assertRejects, differs, http, httpKey } from "./support.mjs";

// Node has no global WebSocket; nakama-js expects the browser API, which `ws` provides.
globalThis.WebSocket = WebSocket;

const input = { name: "bot-7", pos: [1.5, -2, 3], flags: { alive: true, team: null }, n: 42 };
// A JSON null decodes to Lua nil, which a table cannot hold: the Lua echo (like Nakama's) drops
// null members, the native echo keeps them.
const withoutNulls = (v) => JSON.parse(JSON.stringify(v, (_k, x) => (x === null ? undefined : x)));

for (const id of ["echo", "echo_native"]) {
  test(`${id}: a signed-in client gets its payload back`, async () => {
    const c = client();
    const s = await c.authenticateDevice(freshDeviceId(), true);
    const result = await c.rpc(s, id, input);
    if (id === "echo") {
      assert.deepEqual(result.payload, withoutNulls(input));
    } else {
      assert.deepEqual(result.payload, input);
    }
  });

  test(`${id}: server-to-server with the HTTP key (POST, the payload as a JSON string)`, async () => {
    const body = JSON.stringify(JSON.stringify({ hello: "world", list: [1, 2, 3] }));
    const r = await http("POST", `/v2/rpc/${id}?http_key=${httpKey}`, { body });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(JSON.parse(r.json.payload), { hello: "world", list: [1, 2, 3] });
  });

  test(`${id}: GET ignores a payload query parameter (the function gets an empty payload)`, differs("rpc-get-payload"), async () => {
    // nakama-js's rpcHttpKey sends its input this way; Nakama 3.40 hands the function "" (and
    // the query parameters in its context), so the echo refuses the empty payload.
    const c = client();
    const body = await assertRejects(c.rpcHttpKey(httpKey, id, { hello: "world" }), 400, 3);
    assert.match(body.message, /^payload is not valid JSON/);
  });

  test(`${id}: a payload that is not JSON is INVALID_ARGUMENT (3)`, async () => {
    const c = client();
    const s = await c.authenticateDevice(freshDeviceId(), true);
    // client.rpc always JSON-encodes its input; the generated API client sends a raw payload.
    const body = await assertRejects(c.apiClient.rpcFunc(s.token, id, "{not json"), 400, 3);
    assert.match(body.message, /not valid JSON/);
  });

  test(`${id}: over the socket`, async () => {
    const c = client();
    const s = await c.authenticateDevice(freshDeviceId(), true);
    const socket = c.createSocket(false, false, new WebSocketAdapterText());
    await socket.connect(s, false);
    try {
      const result = await socket.rpc(id, JSON.stringify({ z: [1, 2], a: "b" }));
      assert.equal(result.id, id);
      assert.deepEqual(JSON.parse(result.payload), { a: "b", z: [1, 2] });
      // Nakama's socket reports every function error as RUNTIME_FUNCTION_EXCEPTION (7) with the
      // function's message (the gRPC code 3 is what REST shows).
      await assert.rejects(socket.rpc(id, "{not json"), (error) => {
        assert.equal(error.code, 7);
        assert.match(error.message, /not valid JSON/);
        return true;
      });
    } finally {
      socket.disconnect(false);
    }
  });
}

test("a Lua error caught with pcall reaches the client as one line, without a stack traceback", async () => {
  // tests/compat/modules/lua/compat_errors.lua raises "caught: " .. the error pcall caught.
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const body = await assertRejects(c.apiClient.rpcFunc(s.token, "compat_pcall_error", "{not json"), 400, 3);
  // Nakama: "caught: <module path>:8: not a valid JSON string: <reason>".
  assert.match(body.message, /^caught: .*not a valid JSON string/);
  assert.doesNotMatch(body.message, /stack traceback|\n/);
  const socket = c.createSocket(false, false, new WebSocketAdapterText());
  await socket.connect(s, false);
  try {
    await assert.rejects(socket.rpc("compat_pcall_error", "{not json"), (error) => {
      assert.equal(error.code, 7);
      assert.doesNotMatch(error.message, /stack traceback|\n/);
      return true;
    });
  } finally {
    socket.disconnect(false);
  }
});

test("rpc ids are case-insensitive, as in Nakama", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const result = await c.rpc(s, "ECHO_NATIVE", { a: 1 });
  assert.deepEqual(result.payload, { a: 1 });
});

test("an unknown RPC is NOT_FOUND (5)", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const body = await assertRejects(c.rpc(s, "no_such_rpc", {}), 404, 5);
  assert.equal(body.message, "RPC function not found");
});

test("a wrong HTTP key is UNAUTHENTICATED (16)", async () => {
  const c = client();
  const body = await assertRejects(c.rpcHttpKey("not-the-key", "echo_native", { a: 1 }), 401, 16);
  assert.equal(body.message, "HTTP key invalid");
});
