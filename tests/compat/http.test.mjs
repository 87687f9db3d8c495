// The HTTP edge as a browser sees it: CORS preflights and the headers on answers.
// browser.test.mjs runs the official client in Chromium; these pin the headers that make that
// work, Nakama's answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { http, serverKey } from "./support.mjs";

const origin = "http://127.0.0.1:9";
const basic = `Basic ${Buffer.from(`${serverKey}:`).toString("base64")}`;
const headerList = (value) => (value ?? "").split(",").map((h) => h.trim().toLowerCase()).filter(Boolean);

test("a CORS preflight is allowed for any origin with Authorization and Content-Type", async () => {
  for (const [method, path] of [
    ["PUT", "/v2/storage"],
    ["POST", "/v2/rpc/echo"],
    ["GET", "/v2/account"],
  ]) {
    const r = await http("OPTIONS", path, {
      headers: {
        origin,
        "access-control-request-method": method,
        "access-control-request-headers": "authorization,content-type",
      },
    });
    assert.equal(r.status, 200, `${method} ${path} preflight: ${r.status} ${r.text}`);
    assert.equal(r.headers.get("access-control-allow-origin"), "*");
    const allowed = headerList(r.headers.get("access-control-allow-headers"));
    assert.ok(allowed.includes("authorization") && allowed.includes("content-type"), `allowed headers: ${allowed}`);
    if (method === "PUT") {
      // A method that is not CORS-safelisted must be allowed explicitly.
      assert.ok(headerList(r.headers.get("access-control-allow-methods")).includes("put"));
    }
  }
  const withAgent = await http("OPTIONS", "/v2/account/authenticate/device", {
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type,user-agent" },
  });
  assert.equal(withAgent.status, 200);
  assert.ok(headerList(withAgent.headers.get("access-control-allow-headers")).includes("user-agent"));
});

test("answers to a cross-origin request carry Access-Control-Allow-Origin, errors too", async () => {
  const ok = await http("POST", "/v2/account/authenticate/device?create=true", {
    headers: { origin, authorization: basic, "content-type": "application/json" },
    body: JSON.stringify({ id: `cors-${Date.now()}-${Math.random()}` }),
  });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get("access-control-allow-origin"), "*");
  // A browser lets the page read an error only when the header is there too.
  const refused = await http("GET", "/v2/account", { headers: { origin } });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get("access-control-allow-origin"), "*");
  assert.equal(refused.json.code, 16);
});
