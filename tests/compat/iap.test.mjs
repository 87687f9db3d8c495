// In-app purchases through the official Nakama JavaScript client. Facebook Instant needs no
// store call: the suite signs payment requests with the app secret both servers are started
// with (scripts/compat.sh and scripts/nakama.sh pass iap.facebook_instant.app_secret). The
// other stores are not configured, and answer so.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { client, freshDeviceId, assertRejects } from "./support.mjs";

const SECRET = process.env.METAFI_TEST_FB_INSTANT_SECRET ?? "compat-fb-instant-secret";

function b64url(buffer) {
  return Buffer.from(buffer).toString("base64").replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
}

/** A signed request as Facebook Instant Games sends it: base64url(HMAC-SHA256).payload. */
function signedRequest(payment, secret = SECRET) {
  const payload = b64url(JSON.stringify(payment));
  const signature = createHmac("sha256", secret).update(payload).digest();
  return `${b64url(signature)}.${payload}`;
}

async function signIn() {
  const c = client();
  const session = await c.authenticateDevice(freshDeviceId(), true);
  return { c, session };
}

test("a Facebook Instant purchase is validated, recorded, then seen before", async () => {
  const { c, session } = await signIn();
  const token = `fb-${randomUUID()}`;
  const request = signedRequest({
    algorithm: "HMAC-SHA256",
    app_id: "123",
    is_consumed: false,
    issued_at: 1700000000,
    payment_id: "p-1",
    product_id: "gems_100",
    purchase_time: 1700000000,
    purchase_token: token,
  });
  const first = await c.validatePurchaseFacebookInstant(session, request);
  assert.equal(first.validated_purchases.length, 1);
  const p = first.validated_purchases[0];
  assert.equal(p.user_id, session.user_id);
  assert.equal(p.product_id, "gems_100");
  assert.equal(p.transaction_id, token);
  assert.equal(p.store, 3, "FACEBOOK_INSTANT_STORE");
  assert.equal(p.environment, 2, "PRODUCTION");
  assert.equal(p.purchase_time, "2023-11-14T22:13:20Z");
  assert.ok(p.create_time, "recorded");
  assert.equal(p.seen_before, undefined, "false is omitted");

  const other = await signIn();
  const again = await other.c.validatePurchaseFacebookInstant(other.session, request);
  assert.equal(again.validated_purchases[0].seen_before, true);
});

test("persist=false validates without recording", async () => {
  const { c, session } = await signIn();
  const request = signedRequest({ product_id: "p", purchase_time: 1700000000, purchase_token: `fb-${randomUUID()}` });
  const out = await c.validatePurchaseFacebookInstant(session, request, false);
  assert.equal(out.validated_purchases[0].create_time, undefined);
  const recorded = await c.validatePurchaseFacebookInstant(session, request, true);
  assert.equal(recorded.validated_purchases[0].seen_before, undefined, "the first recording");
});

test("a request signed with another secret is refused", async () => {
  const { c, session } = await signIn();
  const forged = signedRequest({ product_id: "p", purchase_token: "t" }, "not-the-secret");
  await assertRejects(c.validatePurchaseFacebookInstant(session, forged), 500, 2, "signedRequest verification failed");
  await assertRejects(c.validatePurchaseFacebookInstant(session, ""), 400, 3, "SignedRequest cannot be empty.");
});

test("stores without credentials answer FailedPrecondition", async () => {
  const { c, session } = await signIn();
  await assertRejects(c.validatePurchaseApple(session, "cmVjZWlwdA=="), 400, 9, "Apple IAP is not configured.");
  await assertRejects(c.validatePurchaseGoogle(session, "{}"), 400, 9, "Google IAP is not configured.");
  await assertRejects(c.validatePurchaseHuawei(session, "{}", "sig"), 400, 9, "Huawei IAP is not configured.");
  await assertRejects(c.validateSubscriptionApple(session, "cmVjZWlwdA=="), 400, 9, "Apple IAP is not configured.");
  await assertRejects(c.validateSubscriptionGoogle(session, "{}"), 400, 9, "Google IAP is not configured.");
});

test("subscriptions: none yet, and an unknown product is not found", async () => {
  const { c, session } = await signIn();
  const list = await c.listSubscriptions(session);
  assert.deepEqual(list.validated_subscriptions ?? [], []);
  assert.equal(list.cursor, undefined);
  await assertRejects(c.getSubscription(session, "no_such_product"), 404, 5, "subscription not found");
});
