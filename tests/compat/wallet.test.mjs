// The wallet through the official Nakama JavaScript client: changed by server code (the Lua
// fixture tests/compat/modules/lua/compat_wallet.lua), seen in getAccount, never below zero.
import { test } from "node:test";
import assert from "node:assert/strict";
import { client, freshDeviceId, assertRejects } from "./support.mjs";

async function player(c) {
  return c.authenticateDevice(freshDeviceId(), true);
}

async function wallet(c, s) {
  const account = await c.getAccount(s);
  assert.equal(typeof account.wallet, "string", "the wallet is JSON text, as Nakama sends it");
  return JSON.parse(account.wallet);
}

test("a new account's wallet is empty", async () => {
  const c = client();
  const s = await player(c);
  assert.deepEqual(await wallet(c, s), {});
});

test("server code changes the wallet and getAccount shows it", async () => {
  const c = client();
  const s = await player(c);
  const first = await c.rpc(s, "compat_wallet_update", { changeset: { coins: 100, gems: 5 }, metadata: { reason: "welcome" } });
  assert.deepEqual(first.payload, { updated: { coins: 100, gems: 5 }, previous: {} });
  const second = await c.rpc(s, "compat_wallet_update", { changeset: { coins: -30 } });
  assert.deepEqual(second.payload, { updated: { coins: 70, gems: 5 }, previous: { coins: 100, gems: 5 } });
  assert.deepEqual(await wallet(c, s), { coins: 70, gems: 5 });

  const ledger = await c.rpc(s, "compat_wallet_ledger", { limit: 1 });
  assert.equal(ledger.payload.items.length, 1);
  assert.deepEqual(ledger.payload.items[0].changeset, { coins: -30 }, "newest first");
  assert.equal(ledger.payload.items[0].user_id, s.user_id);
  assert.notEqual(ledger.payload.cursor, "", "a second page");
  const rest = await c.rpc(s, "compat_wallet_ledger", { limit: 10, cursor: ledger.payload.cursor });
  assert.equal(rest.payload.items.length, 1);
  assert.deepEqual(rest.payload.items[0].changeset, { coins: 100, gems: 5 });
  assert.deepEqual(rest.payload.items[0].metadata, { reason: "welcome" });
  assert.equal(rest.payload.cursor, "");
});

test("a change below zero is refused with Nakama's error and changes nothing", async () => {
  const c = client();
  const s = await player(c);
  await c.rpc(s, "compat_wallet_update", { changeset: { coins: 10 } });
  const body = await assertRejects(c.rpc(s, "compat_wallet_update", { changeset: { coins: 5, gems: -1 } }), 500, 13);
  assert.match(body.message, /failed to update user wallet: wallet update rejected negative value at path 'gems'/);
  assert.deepEqual(await wallet(c, s), { coins: 10 }, "not even the coins were added");
  const ledger = await c.rpc(s, "compat_wallet_ledger", {});
  assert.equal(ledger.payload.items.length, 1, "no ledger row for the refused change");
});

test("multi_update: the purchase and its storage object together, or neither", async () => {
  const c = client();
  const s = await player(c);
  await c.rpc(s, "compat_wallet_update", { changeset: { coins: 50 } });
  const bought = await c.rpc(s, "compat_wallet_purchase", { item: "sword", price: 40 });
  assert.deepEqual(bought.payload.updated, { coins: 10 });
  assert.match(bought.payload.version, /^[0-9a-f]{32}$/);
  const body = await assertRejects(c.rpc(s, "compat_wallet_purchase", { item: "shield", price: 20 }), 500, 13);
  assert.match(body.message, /error running multi update: wallet update rejected negative value at path 'coins'/);
  assert.deepEqual(await wallet(c, s), { coins: 10 });
  const objects = await c.readStorageObjects(s, {
    object_ids: [
      { collection: "compat_purchases", key: "sword", user_id: s.user_id },
      { collection: "compat_purchases", key: "shield", user_id: s.user_id },
    ],
  });
  assert.deepEqual(objects.objects.map((o) => o.key), ["sword"], "the refused purchase wrote nothing");
});
