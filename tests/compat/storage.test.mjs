// Storage objects through the official Nakama JavaScript client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { client, freshDeviceId, assertRejects, http } from "./support.mjs";

async function player(c) {
  return c.authenticateDevice(freshDeviceId(), true);
}

test("write, read back, version and timestamps", async () => {
  const c = client();
  const s = await player(c);
  const acks = await c.writeStorageObjects(s, [
    { collection: "saves", key: "slot1", value: { level: 3, hp: 90 } },
  ]);
  assert.equal(acks.acks.length, 1);
  const ack = acks.acks[0];
  assert.equal(ack.user_id, s.user_id);
  assert.match(ack.version, /^[0-9a-f]{32}$/, "version is the MD5 of the value, as Nakama's");

  const read = await c.readStorageObjects(s, {
    object_ids: [{ collection: "saves", key: "slot1", user_id: s.user_id }],
  });
  assert.equal(read.objects.length, 1);
  const o = read.objects[0];
  assert.deepEqual(o.value, { level: 3, hp: 90 });
  assert.equal(o.version, ack.version);
  assert.equal(o.permission_read, 1);
  assert.equal(o.permission_write, 1);
  assert.ok(Date.parse(o.create_time) > 0);
});

test("optimistic concurrency: matching version, stale version, and create-only", async () => {
  const c = client();
  const s = await player(c);
  const first = await c.writeStorageObjects(s, [{ collection: "inv", key: "k", value: { n: 1 } }]);
  const v1 = first.acks[0].version;
  const second = await c.writeStorageObjects(s, [{ collection: "inv", key: "k", value: { n: 2 }, version: v1 }]);
  assert.notEqual(second.acks[0].version, v1);
  await assertRejects(c.writeStorageObjects(s, [{ collection: "inv", key: "k", value: { n: 3 }, version: v1 }]), 400, 3);
  await assertRejects(c.writeStorageObjects(s, [{ collection: "inv", key: "k", value: { n: 4 }, version: "*" }]), 400, 3);
  const fresh = await c.writeStorageObjects(s, [{ collection: "inv", key: "new", value: { n: 5 }, version: "*" }]);
  assert.equal(fresh.acks.length, 1);
});

test("read permissions: private, owner-only and public objects as another player sees them", async () => {
  const c = client();
  const owner = await player(c);
  const other = await player(c);
  await c.writeStorageObjects(owner, [
    { collection: "profile", key: "hidden", value: { a: 1 }, permission_read: 0, permission_write: 1 },
    { collection: "profile", key: "mine", value: { a: 2 }, permission_read: 1, permission_write: 1 },
    { collection: "profile", key: "public", value: { a: 3 }, permission_read: 2, permission_write: 1 },
  ]);
  const ids = ["hidden", "mine", "public"].map((key) => ({ collection: "profile", key, user_id: owner.user_id }));
  const asOther = await c.readStorageObjects(other, { object_ids: ids });
  assert.deepEqual(asOther.objects.map((o) => o.key), ["public"]);
  const asOwner = await c.readStorageObjects(owner, { object_ids: ids });
  assert.deepEqual(asOwner.objects.map((o) => o.key).sort(), ["mine", "public"], "read 0 hides from the owner too");
});

test("a read-only object cannot be overwritten or deleted by its owner", async () => {
  const c = client();
  const s = await player(c);
  await c.writeStorageObjects(s, [{ collection: "locked", key: "k", value: { a: 1 }, permission_write: 0 }]);
  await assertRejects(c.writeStorageObjects(s, [{ collection: "locked", key: "k", value: { a: 2 } }]), 400, 3);
  await assertRejects(c.deleteStorageObjects(s, { object_ids: [{ collection: "locked", key: "k" }] }), 400, 3);
});

test("listing pages through a collection with a cursor", async () => {
  const c = client();
  const s = await player(c);
  const collection = `list_${randomUUID().slice(0, 8)}`;
  const objects = Array.from({ length: 7 }, (_, i) => ({ collection, key: `k${i}`, value: { i }, permission_read: 2 }));
  await c.writeStorageObjects(s, objects);
  const seen = [];
  let cursor;
  do {
    const page = await c.listStorageObjects(s, collection, s.user_id, 3, cursor);
    assert.ok(page.objects.length <= 3);
    seen.push(...page.objects.map((o) => o.key));
    cursor = page.cursor;
  } while (cursor);
  assert.deepEqual(seen.sort(), objects.map((o) => o.key).sort());
});

test("delete removes an object; bad input is refused", async () => {
  const c = client();
  const s = await player(c);
  await c.writeStorageObjects(s, [{ collection: "tmp", key: "gone", value: { x: 1 } }]);
  await c.deleteStorageObjects(s, { object_ids: [{ collection: "tmp", key: "gone" }] });
  const read = await c.readStorageObjects(s, { object_ids: [{ collection: "tmp", key: "gone", user_id: s.user_id }] });
  assert.equal(read.objects.length, 0);
  await assertRejects(c.writeStorageObjects(s, [{ collection: "", key: "k", value: { a: 1 } }]), 400, 3);
  await assertRejects(c.writeStorageObjects(s, [{ collection: "c", key: "k", value: [1, 2] }]), 400, 3);
  await assertRejects(c.listStorageObjects(s, "tmp", s.user_id, 101), 400, 3);
  // Nakama refuses a client's delete that deletes nothing.
  await assertRejects(c.deleteStorageObjects(s, { object_ids: [{ collection: "tmp", key: "gone" }] }), 400, 3);
});

test("deleting an object that does not exist is refused", async () => {
  const c = client();
  const s = await player(c);
  await assertRejects(
    c.deleteStorageObjects(s, { object_ids: [{ collection: "tmp", key: `never-${randomUUID()}` }] }),
    400,
    3,
    "Storage delete rejected - not found, version check failed, or permission denied.",
  );
});

test("the owner's listing is ordered by read permission, then key (Nakama's order)", async () => {
  const c = client();
  const s = await player(c);
  const other = await player(c);
  const collection = `order_${randomUUID().slice(0, 8)}`;
  await c.writeStorageObjects(s, [
    { collection, key: "a", value: { n: 1 }, permission_read: 2 },
    { collection, key: "b", value: { n: 2 }, permission_read: 1 },
    { collection, key: "c", value: { n: 3 }, permission_read: 2 },
    { collection, key: "d", value: { n: 4 }, permission_read: 1 },
  ]);
  const own = await c.listStorageObjects(s, collection, s.user_id, 10);
  assert.deepEqual(own.objects.map((o) => o.key), ["b", "d", "a", "c"]);
  const paged = [];
  let cursor;
  do {
    const page = await c.listStorageObjects(s, collection, s.user_id, 1, cursor);
    paged.push(...page.objects.map((o) => o.key));
    cursor = page.cursor;
  } while (cursor);
  assert.deepEqual(paged, ["b", "d", "a", "c"], "a cursor continues in the same order");
  const seen = await c.listStorageObjects(other, collection, s.user_id, 10);
  assert.deepEqual(seen.objects.map((o) => o.key), ["a", "c"], "others see public objects only");
});

test("an empty result omits its empty list, as proto3 JSON does", async () => {
  // Nakama renders protobuf messages without unpopulated fields: no objects is `{}`, not
  // `{"objects":[]}`. A client that tests for the field sees the difference.
  const c = client();
  const s = await player(c);
  const collection = `empty_${randomUUID().slice(0, 8)}`;
  const read = await http("POST", "/v2/storage", {
    token: s.token,
    body: JSON.stringify({ object_ids: [{ collection, key: "k", user_id: s.user_id }] }),
  });
  assert.equal(read.status, 200);
  assert.deepEqual(read.json, {});
  const listed = await http("GET", `/v2/storage/${collection}?user_id=${s.user_id}`, { token: s.token });
  assert.equal(listed.status, 200);
  assert.deepEqual(listed.json, {});
  const written = await http("PUT", "/v2/storage", { token: s.token, body: JSON.stringify({ objects: [] }) });
  assert.equal(written.status, 200);
  assert.deepEqual(written.json, {});
});
