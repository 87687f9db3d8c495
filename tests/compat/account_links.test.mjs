// Linking and unlinking device ids, custom ids and email to an account, and deleting it,
// through the official Nakama JavaScript client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { client, freshDeviceId, assertRejects } from "./support.mjs";

const LAST_IDENTITY = "Cannot unlink last account identifier. Check profile exists and is not last link.";

test("link a device, a custom id and an email, then sign in with each", async () => {
  const c = client();
  const s = await c.authenticateDevice(freshDeviceId(), true);
  const device = freshDeviceId();
  const custom = `custom-${randomUUID()}`;
  const email = `l${randomUUID().slice(0, 8)}@example.com`;
  assert.equal(await c.linkDevice(s, { id: device }), true);
  assert.equal(await c.linkCustom(s, { id: custom }), true);
  assert.equal(await c.linkEmail(s, { email, password: "correct-horse" }), true);
  const account = await c.getAccount(s);
  assert.equal(account.custom_id, custom);
  assert.equal(account.email, email);
  assert.ok(account.devices.some((d) => d.id === device));
  for (const signIn of [
    c.authenticateDevice(device, false),
    c.authenticateCustom(custom, false),
    c.authenticateEmail(email, "correct-horse", false),
  ]) {
    assert.equal((await signIn).user_id, s.user_id);
  }
  // Linking the same device again is not an error.
  assert.equal(await c.linkDevice(s, { id: device }), true);
});

test("another user's identities cannot be linked", async () => {
  const c = client();
  const owner = await c.authenticateDevice(freshDeviceId(), true);
  const device = freshDeviceId();
  const custom = `custom-${randomUUID()}`;
  await c.linkDevice(owner, { id: device });
  await c.linkCustom(owner, { id: custom });
  const other = await c.authenticateDevice(freshDeviceId(), true);
  await assertRejects(c.linkDevice(other, { id: device }), 409, 6, "Device ID already in use.");
  await assertRejects(c.linkCustom(other, { id: custom }), 409, 6, "Custom ID is already in use.");
  await assertRejects(c.linkDevice(other, { id: "short" }), 400, 3);
  await assertRejects(c.linkEmail(other, { email: "", password: "" }), 400, 3, "Email address and password is required.");
});

test("unlinking keeps the last identity", async () => {
  const c = client();
  const first = freshDeviceId();
  const s = await c.authenticateDevice(first, true);
  const custom = `custom-${randomUUID()}`;
  await c.linkCustom(s, { id: custom });
  assert.equal(await c.unlinkDevice(s, { id: first }), true);
  await assertRejects(c.authenticateDevice(first, false), 404, 5);
  await assertRejects(c.unlinkCustom(s, { id: custom }), 403, 7, LAST_IDENTITY);
  const email = `u${randomUUID().slice(0, 8)}@example.com`;
  await c.linkEmail(s, { email, password: "correct-horse" });
  assert.equal(await c.unlinkCustom(s, { id: custom }), true);
  await assertRejects(c.unlinkEmail(s, { email, password: "correct-horse" }), 403, 7, LAST_IDENTITY);
  const account = await c.getAccount(s);
  assert.equal(account.email, email);
  assert.equal(account.custom_id, undefined);
  assert.equal(account.devices, undefined);
});

test("a deleted account's identities are free again and its storage is gone", async () => {
  const c = client({ autoRefresh: false });
  const deviceId = freshDeviceId();
  const s = await c.authenticateDevice(deviceId, true);
  await c.writeStorageObjects(s, [{ collection: "saves", key: "slot", value: { level: 2 }, permission_read: 2 }]);
  assert.equal(await c.deleteAccount(s), true);
  const again = await c.authenticateDevice(deviceId, true);
  assert.equal(again.created, true);
  assert.notEqual(again.user_id, s.user_id);
  const read = await c.readStorageObjects(again, {
    object_ids: [{ collection: "saves", key: "slot", user_id: s.user_id }],
  });
  assert.deepEqual(read.objects, [], "the deleted user's public object went with it");
});
