// Storage indexes through the official Nakama JavaScript client: objects a client writes
// (writeStorageObjects) are found by server code's storage_index_list (the Lua fixture
// tests/compat/modules/lua/compat_storage_index.lua) with a query, an order and a cursor, and a
// client's delete removes them from the index.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { client, freshDeviceId, assertRejects } from "./support.mjs";

async function list(c, s, input) {
  const reply = await c.rpc(s, "compat_storage_index_list", input);
  return reply.payload;
}

test("client writes are found by query, in order, page by page; deletes leave the index", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  // A mode of this run's own: the server's index outlives test runs.
  const mode = "m" + randomUUID().replaceAll("-", "");
  await c.writeStorageObjects(s, [
    { collection: "compat_levels", key: "a", value: { level: 5, mode } },
    { collection: "compat_levels", key: "b", value: { level: 1, mode } },
    { collection: "compat_levels", key: "c", value: { level: 9, mode } },
    { collection: "compat_levels", key: "d", value: { level: 7, mode: mode + "x" } },
  ]);
  const all = await list(c, s, { query: `+value.mode:${mode}`, limit: 10, order: ["-value.level"] });
  assert.deepEqual(all.keys, ["c", "a", "b"]);
  assert.deepEqual(all.levels, [9, 5, 1]);
  assert.equal(all.cursor, undefined, "one page");

  const ranged = await list(c, s, { query: `+value.mode:${mode} +value.level:>=5`, limit: 10, order: ["value.level"] });
  assert.deepEqual(ranged.keys, ["a", "c"]);

  const first = await list(c, s, { query: `+value.mode:${mode}`, limit: 2, order: ["value.level"] });
  assert.deepEqual(first.keys, ["b", "a"]);
  assert.equal(typeof first.cursor, "string");
  const second = await list(c, s, { query: `+value.mode:${mode}`, limit: 2, order: ["value.level"], cursor: first.cursor });
  assert.deepEqual(second.keys, ["c"]);

  await c.deleteStorageObjects(s, { object_ids: [{ collection: "compat_levels", key: "c" }] });
  const after = await list(c, s, { query: `+value.mode:${mode}`, limit: 10, order: ["-value.level"] });
  assert.deepEqual(after.keys, ["a", "b"]);
});

test("another player's private objects are not listed to a caller", async () => {
  const c = client();
  const owner = await c.authenticateDevice(freshDeviceId(), true);
  const other = await c.authenticateDevice(freshDeviceId(), true);
  const mode = "m" + randomUUID().replaceAll("-", "");
  await c.writeStorageObjects(owner, [
    { collection: "compat_levels", key: "private", value: { level: 1, mode }, permission_read: 1 },
    { collection: "compat_levels", key: "public", value: { level: 2, mode }, permission_read: 2 },
  ]);
  const seen = await list(c, other, { query: `+value.mode:${mode}`, limit: 10, order: ["value.level"] });
  assert.deepEqual(seen.keys, ["public"]);
  const own = await list(c, owner, { query: `+value.mode:${mode}`, limit: 10, order: ["value.level"] });
  assert.deepEqual(own.keys, ["private", "public"]);
});

test("a cursor used with another query is refused", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const mode = "m" + randomUUID().replaceAll("-", "");
  await c.writeStorageObjects(s, [
    { collection: "compat_levels", key: "a", value: { level: 1, mode } },
    { collection: "compat_levels", key: "b", value: { level: 2, mode } },
  ]);
  const first = await list(c, s, { query: `+value.mode:${mode}`, limit: 1, order: [] });
  const body = await assertRejects(
    c.rpc(s, "compat_storage_index_list", { query: "*", limit: 1, order: [], cursor: first.cursor }),
    500,
    13,
  );
  assert.match(body.message, /error in storage index list: invalid cursor: query mismatch/);
});
