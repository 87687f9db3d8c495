// Leaderboards through the official Nakama JavaScript client: writes by three users, listing
// with owners and cursors both ways, records around an owner, deleting one's own record, and
// the refusal of client writes to an authoritative board. The boards come from the Lua fixture
// tests/compat/modules/lua/compat_leaderboard.lua.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { client, freshDeviceId, assertRejects } from "./support.mjs";

/** nakama-js's Client has no call for DELETE /v2/leaderboard/{id}; its generated API does. */
function deleteRecord(c, session, id) {
  return c.apiClient.deleteLeaderboardRecord(session.token, id);
}

async function users(c, n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await c.authenticateDevice(freshDeviceId(), true));
  return out;
}

/** A board of our own, so reruns against one server start empty. */
async function freshBoard(c, session, options = {}) {
  const id = `compat_lb_${randomUUID().slice(0, 8)}`;
  await c.rpc(session, "compat_leaderboard_create", { id, ...options });
  return id;
}

test("the board the module created at load time takes writes", async () => {
  const c = client();
  const [s] = await users(c, 1);
  const record = await c.writeLeaderboardRecord(s, "compat_leaderboard", { score: "7", subscore: "1", metadata: { car: "red" } });
  assert.equal(record.leaderboard_id, "compat_leaderboard");
  assert.equal(record.owner_id, s.user_id);
  assert.equal(record.username, s.username);
  assert.equal(record.score, 7);
  assert.equal(record.subscore, 1);
  assert.equal(record.num_score, 1);
  assert.deepEqual(record.metadata, { car: "red" });
  assert.ok(record.rank >= 1);
  assert.equal(record.expiry_time, undefined, "a board without a reset schedule never expires");
});

test("three users write; the list is in rank order with owners' records and a rank count", async () => {
  const c = client();
  const [a, b, d] = await users(c, 3);
  const id = await freshBoard(c, a);
  await c.writeLeaderboardRecord(a, id, { score: "10" });
  await c.writeLeaderboardRecord(b, id, { score: "30" });
  await c.writeLeaderboardRecord(d, id, { score: "20" });
  // "best" keeps the higher score: a lower one changes nothing.
  const kept = await c.writeLeaderboardRecord(b, id, { score: "5" });
  assert.equal(kept.score, 30);
  assert.equal(kept.num_score, 1);
  const better = await c.writeLeaderboardRecord(a, id, { score: "40" });
  assert.equal(better.score, 40);
  assert.equal(better.num_score, 2);
  assert.equal(better.rank, 1);

  const list = await c.listLeaderboardRecords(a, id, [d.user_id], 10);
  assert.deepEqual(list.records.map((r) => [r.owner_id, r.score, r.rank]), [
    [a.user_id, 40, 1],
    [b.user_id, 30, 2],
    [d.user_id, 20, 3],
  ]);
  assert.deepEqual(list.owner_records.map((r) => [r.owner_id, r.rank]), [[d.user_id, 3]]);
  assert.equal(list.rank_count, 3);
  assert.equal(list.next_cursor, undefined);
  assert.equal(list.prev_cursor, undefined);
});

test("cursors walk forward and back", async () => {
  const c = client();
  const sessions = await users(c, 3);
  const id = await freshBoard(c, sessions[0]);
  for (const [i, s] of sessions.entries()) await c.writeLeaderboardRecord(s, id, { score: String(100 - i) });
  const first = await c.listLeaderboardRecords(sessions[0], id, undefined, 1);
  assert.deepEqual(first.records.map((r) => r.score), [100]);
  assert.ok(first.next_cursor);
  assert.equal(first.prev_cursor, undefined);
  const second = await c.listLeaderboardRecords(sessions[0], id, undefined, 1, first.next_cursor);
  assert.deepEqual(second.records.map((r) => [r.score, r.rank]), [[99, 2]]);
  assert.ok(second.prev_cursor && second.next_cursor);
  const back = await c.listLeaderboardRecords(sessions[0], id, undefined, 1, second.prev_cursor);
  assert.deepEqual(back.records.map((r) => [r.score, r.rank]), [[100, 1]]);
  await assertRejects(c.listLeaderboardRecords(sessions[0], id, undefined, 1, "not-a-cursor"), 400, 3, "Cursor is invalid or expired.");
  await assertRejects(c.listLeaderboardRecords(sessions[0], id, undefined, 1001), 400, 3, "Invalid limit - limit must be between 1 and 1000.");
});

test("records around an owner", async () => {
  const c = client();
  const sessions = await users(c, 5);
  const id = await freshBoard(c, sessions[0]);
  for (const [i, s] of sessions.entries()) await c.writeLeaderboardRecord(s, id, { score: String(50 - i * 10) });
  const around = await c.listLeaderboardRecordsAroundOwner(sessions[0], id, sessions[2].user_id, 3);
  assert.deepEqual(around.records.map((r) => [r.score, r.rank]), [[40, 2], [30, 3], [20, 4]]);
  assert.equal(around.rank_count, 5);
  assert.ok(around.prev_cursor && around.next_cursor);
  const top = await c.listLeaderboardRecordsAroundOwner(sessions[0], id, sessions[0].user_id, 3);
  assert.deepEqual(top.records.map((r) => r.rank), [1, 2, 3]);
  const nobody = await c.listLeaderboardRecordsAroundOwner(sessions[0], id, randomUUID(), 3);
  assert.equal((nobody.records ?? []).length, 0);
  await assertRejects(c.listLeaderboardRecordsAroundOwner(sessions[0], id, "nope", 3), 400, 3, "Invalid owner ID provided.");
});

test("a user deletes their own record and the ranks close up", async () => {
  const c = client();
  const [a, b] = await users(c, 2);
  const id = await freshBoard(c, a);
  await c.writeLeaderboardRecord(a, id, { score: "2" });
  await c.writeLeaderboardRecord(b, id, { score: "1" });
  await deleteRecord(c, a, id);
  const list = await c.listLeaderboardRecords(b, id, undefined, 10);
  assert.deepEqual(list.records.map((r) => [r.owner_id, r.rank]), [[b.user_id, 1]]);
  assert.equal(list.rank_count, 1);
});

test("authoritative boards refuse client writes and deletes", async () => {
  const c = client();
  const [s] = await users(c, 1);
  await assertRejects(
    c.writeLeaderboardRecord(s, "compat_leaderboard_auth", { score: "1" }),
    403, 7, "Leaderboard only allows authoritative score submissions.");
  await assertRejects(deleteRecord(c, s, "compat_leaderboard_auth"), 403, 7,
    "Leaderboard only allows authoritative score deletions.");
});

test("an unknown board is NotFound", async () => {
  const c = client();
  const [s] = await users(c, 1);
  await assertRejects(c.writeLeaderboardRecord(s, `missing_${randomUUID()}`, { score: "1" }), 404, 5, "Leaderboard not found.");
  await assertRejects(c.listLeaderboardRecords(s, `missing_${randomUUID()}`), 404, 5, "Leaderboard not found.");
});
