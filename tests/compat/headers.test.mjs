// What server code sees of a REST call's headers (ctx.headers), pinned against Nakama 3.40
// (compared on 2026-11-27 with tests/compat/modules/lua/compat_headers.lua on both servers):
// names as Go's net/http writes them ("Content-Type", "X-Game-Build"), every value kept, and
// Host and Grpc-Timeout left out (Nakama's server/api_rpc.go).
import { test } from "node:test";
import assert from "node:assert/strict";
import { client, freshDeviceId, http } from "./support.mjs";

test("an RPC's ctx.headers are named as Nakama names them, without Host and Grpc-Timeout", async () => {
  const session = await client().authenticateDevice(freshDeviceId(), true);
  const r = await http("POST", "/v2/rpc/compat_headers", {
    token: session.token,
    headers: { "content-type": "application/json", "x-game-build": "41", "grpc-timeout": "5S" },
    body: JSON.stringify("{}"),
  });
  assert.equal(r.status, 200, r.text);
  const seen = JSON.parse(r.json.payload);
  for (const name of ["Authorization", "Content-Type", "X-Game-Build"]) {
    assert.ok(seen.names.includes(name), `${name} in ${seen.names}`);
  }
  assert.ok(!seen.names.includes("Host") && !seen.names.includes("Grpc-Timeout"), `${seen.names}`);
  for (const name of seen.names) {
    assert.match(name, /^[A-Z0-9][a-z0-9]*(-[A-Z0-9][a-z0-9]*)*$/, `canonical name: ${name}`);
  }
  assert.deepEqual(seen.build, ["41"]);
});
