// Tournaments through the official Nakama JavaScript client: the tournament a module created at
// load time in the list, writes by several users with the records list and records around an
// owner, joins of a join-required tournament up to its max size, the attempt limit, and writes
// before the tournament starts. The tournaments come from the Lua fixture
// tests/compat/modules/lua/compat_tournament.lua; the expected answers are Nakama 3.40's
// (server/api_tournament.go, core_tournament.go).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { client, freshDeviceId, assertRejects } from "./support.mjs";

async function users(c, n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await c.authenticateDevice(freshDeviceId(), true));
  return out;
}

/** A tournament of our own, so reruns against one server start empty. */
async function freshTournament(c, session, options = {}) {
  const id = `compat_t_${randomUUID().slice(0, 8)}`;
  await c.rpc(session, "compat_tournament_create", { id, ...options });
  return id;
}

test("the tournament the module created at load time is listed", async () => {
  const c = client();
  const [s] = await users(c, 1);
  const list = await c.listTournaments(s, 5, 5);
  const t = list.tournaments.find((x) => x.id === "compat_tournament");
  assert.ok(t, JSON.stringify(list));
  assert.equal(t.title, "Compat cup");
  assert.equal(t.description, "A tournament the module made");
  assert.equal(t.category, 5);
  assert.equal(t.sort_order, 1);
  assert.equal(t.duration, 86400);
  assert.equal(t.max_size, 2147483647, "no max size reads as Nakama's MaxInt32");
  assert.equal(t.can_enter, true);
  assert.deepEqual(t.metadata, { fixture: true });
  assert.equal(t.end_time, undefined, "a tournament that never ends has no end time");
  assert.equal(t.end_active - t.start_active, 86400);
  assert.ok(t.start_time && t.create_time);
  // Outside the category range it is not listed.
  const other = await c.listTournaments(s, 6, 7);
  assert.equal((other.tournaments ?? []).find((x) => x.id === "compat_tournament"), undefined);
});

test("writes by three users: records in rank order, owners' records, around an owner", async () => {
  const c = client();
  const [a, b, d] = await users(c, 3);
  const id = await freshTournament(c, a, { max_num_score: 3 });
  const first = await c.writeTournamentRecord(a, id, { score: "10" });
  assert.equal(first.leaderboard_id, id);
  assert.equal(first.owner_id, a.user_id);
  assert.equal(first.username, a.username);
  assert.equal(first.score, 10);
  assert.equal(first.num_score, 1);
  assert.equal(first.max_num_score, 3);
  assert.equal(first.rank, 1);
  await c.writeTournamentRecord(b, id, { score: "30" });
  await c.writeTournamentRecord(d, id, { score: "20" });
  // Every write counts as an attempt, even one that does not improve the score.
  const worse = await c.writeTournamentRecord(b, id, { score: "5" });
  assert.equal(worse.score, 30);
  assert.equal(worse.num_score, 2);

  const list = await c.listTournamentRecords(a, id, [a.user_id], 10);
  assert.deepEqual(list.records.map((r) => [r.owner_id, r.score, r.rank]), [
    [b.user_id, 30, 1],
    [d.user_id, 20, 2],
    [a.user_id, 10, 3],
  ]);
  assert.deepEqual(list.owner_records.map((r) => [r.owner_id, r.rank]), [[a.user_id, 3]]);

  const around = await c.listTournamentRecordsAroundOwner(a, id, d.user_id, 1);
  assert.deepEqual(around.records.map((r) => r.owner_id), [d.user_id]);
});

test("a join-required tournament refuses writes before joining and joins past its max size", async () => {
  const c = client();
  const [a, b] = await users(c, 2);
  const id = await freshTournament(c, a, { join_required: true, max_size: 1, category: 9 });
  await assertRejects(c.writeTournamentRecord(a, id, { score: "5" }), 400, 9,
    "Must join tournament before attempting to write value.");
  assert.equal(await c.joinTournament(a, id), true);
  assert.equal(await c.joinTournament(a, id), true, "joining again is a no-op");
  await assertRejects(c.joinTournament(b, id), 400, 3,
    "Tournament cannot be joined as it has reached its max size.");
  const record = await c.writeTournamentRecord(a, id, { score: "5" });
  assert.equal(record.score, 5);
  assert.equal(record.num_score, 1);
  const list = await c.listTournaments(a, 9, 9);
  const t = list.tournaments.find((x) => x.id === id);
  assert.equal(t.size, 1);
  assert.equal(t.can_enter, undefined, "a full tournament cannot be entered (false is omitted)");
});

test("the attempt limit and a tournament that has not started refuse writes", async () => {
  const c = client();
  const [a] = await users(c, 1);
  const once = await freshTournament(c, a, { max_num_score: 1 });
  await c.writeTournamentRecord(a, once, { score: "1" });
  await assertRejects(c.writeTournamentRecord(a, once, { score: "2" }), 400, 9,
    "Reached allowed max number of score attempts.");
  const later = await freshTournament(c, a, { start_in: 86400 });
  await assertRejects(c.writeTournamentRecord(a, later, { score: "1" }), 400, 9,
    "Tournament is not active and cannot accept new scores.");
  await assertRejects(c.writeTournamentRecord(a, "compat_t_missing", { score: "1" }), 404, 5,
    "Tournament not found.");
});
