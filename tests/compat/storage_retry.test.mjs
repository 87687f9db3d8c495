// storage_write_retry through the official Nakama JavaScript client: concurrent RPCs that each
// increment one counter through the retry loop (tests/compat/modules/lua/compat_storage_retry.lua)
// lose no increment, and the stored object is the caller's, read over REST.
import { test } from "node:test";
import assert from "node:assert/strict";
import { client, freshDeviceId, assertRejects } from "./support.mjs";

test("concurrent retry-writers on one counter lose no increment", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const calls = 8;
  const answers = await Promise.all(
    Array.from({ length: calls }, () => c.rpc(s, "compat_storage_retry_increment", {})),
  );
  for (const answer of answers) {
    assert.deepEqual(answer.payload, { acks: 1 });
  }
  const read = await c.readStorageObjects(s, {
    object_ids: [{ collection: "compat_counters", key: "hits", user_id: s.user_id }],
  });
  assert.equal(read.objects.length, 1);
  assert.deepEqual(read.objects[0].value, { count: calls });
  assert.equal(read.objects[0].permission_write, 0, "the permissions the update function chose");
});

test("max_retries outside 0..10 is Nakama's argument error", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const body = await assertRejects(c.rpc(s, "compat_storage_retry_bad", {}), 500, 13);
  assert.match(body.message, /max retries must be a value between 0 and 10/);
});
