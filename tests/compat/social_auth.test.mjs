// Social sign-in through the official Nakama JavaScript client. Only what needs no provider on
// the network: Facebook Instant Games (signed player info is checked locally with the app
// secret, which scripts/compat.sh and scripts/nakama.sh configure), and the answers given
// before any provider is asked (unconfigured Apple and Steam, missing credentials, a Game
// Center key URL that is not Apple's).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { client, freshDeviceId, assertRejects } from "./support.mjs";

// Must match `social.facebook_instant_game.app_secret` in scripts/compat.sh and nakama.sh.
const INSTANT_SECRET = "compat-instant-secret";

function signedPlayerInfo(playerId, secret = INSTANT_SECRET) {
  const payload = Buffer.from(
    JSON.stringify({ algorithm: "HMAC-SHA256", player_id: playerId, issued_at: Math.floor(Date.now() / 1000) }),
  ).toString("base64url");
  const signature = createHmac("sha256", secret).update(payload).digest("base64url");
  return `${signature}.${payload}`;
}

test("Facebook Instant Games sign-in creates the account once, then signs in to it", async () => {
  const c = client();
  const info = signedPlayerInfo(`fbig-${randomUUID()}`);
  const first = await c.authenticateFacebookInstantGame(info, true);
  assert.equal(first.created, true);
  const second = await c.authenticateFacebookInstantGame(info, true);
  assert.equal(second.created, false);
  assert.equal(second.user_id, first.user_id);
  const account = await c.getAccount(second);
  assert.match(account.user.facebook_instant_game_id, /^fbig-/);
  await assertRejects(c.authenticateFacebookInstantGame(signedPlayerInfo(`fbig-${randomUUID()}`), false), 404, 5,
    "User account not found.");
});

test("player info signed with another secret is refused as Nakama refuses it", async () => {
  const info = signedPlayerInfo(`fbig-${randomUUID()}`, "not-the-secret");
  await assertRejects(client().authenticateFacebookInstantGame(info, true), 500, 15,
    "Error extracting the Facebook Instant Game player ID or validating the signature");
  await assertRejects(client().authenticateFacebookInstantGame("", true), 400, 3,
    "Signed Player Info for a Facebook Instant Game is required.");
});

test("Facebook Instant Games ids are linked, shown, taken and unlinked", async () => {
  const c = client();
  const owner = await c.authenticateFacebookInstantGame(signedPlayerInfo(`fbig-${randomUUID()}`), true);
  const ownerAccount = await c.getAccount(owner);
  const taken = ownerAccount.user.facebook_instant_game_id;
  const device = await c.authenticateDevice(freshDeviceId(), true);
  await assertRejects(c.linkFacebookInstantGame(device, { signed_player_info: signedPlayerInfo(taken) }), 409, 6,
    "Facebook Instant Game ID is already in use.");
  await assertRejects(c.linkFacebookInstantGame(device, { signed_player_info: signedPlayerInfo("x", "wrong") }), 401, 16,
    "Could not authenticate Facebook Instant Game profile.");
  const mine = `fbig-${randomUUID()}`;
  assert.equal(await c.linkFacebookInstantGame(device, { signed_player_info: signedPlayerInfo(mine) }), true);
  assert.equal((await c.getAccount(device)).user.facebook_instant_game_id, mine);
  assert.equal(await c.unlinkFacebookInstantGame(device, {}), true);
  assert.equal((await c.getAccount(device)).user.facebook_instant_game_id, undefined);
  // The owner's Instant Games id is its only identity.
  await assertRejects(c.unlinkFacebookInstantGame(owner, {}), 403, 7,
    "Cannot unlink last account identifier. Check profile exists and is not last link.");
});

test("unconfigured Apple and Steam, and missing credentials, are refused before any provider call", async () => {
  const c = client();
  await assertRejects(c.authenticateApple("token", true), 400, 9, "Apple authentication is not configured.");
  await assertRejects(c.authenticateSteam("ticket", true), 400, 9, "Steam authentication is not configured.");
  await assertRejects(c.authenticateGoogle("", true), 400, 3, "Google access token is required.");
  await assertRejects(c.authenticateFacebook("", true), 400, 3, "Facebook access token is required.");
  await assertRejects(
    c.authenticateGameCenter("", "player", "public_key_url", "salt", "signature", "1700000000", undefined, true),
    400, 3, "GameCenter bundle ID is required.");
});

test("a Game Center key URL that is not Apple's is refused without fetching it", async () => {
  await assertRejects(
    client().authenticateGameCenter("com.example.game", "G:1", "https://example.com/key.cer",
      Buffer.from("salt").toString("base64"), Buffer.from("sig").toString("base64"), "1700000000", undefined, true),
    401, 16, "Could not authenticate GameCenter profile.");
});
