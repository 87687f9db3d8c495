// Sends the same raw requests to two Nakama-compatible servers and prints where their answers
// differ (status, gRPC code, message, body shape). A tool for finding differences, not a test:
// what it finds that a client can notice becomes a test in differences.test.mjs.
//
//   node probe.mjs A_PORT B_PORT      e.g. node probe.mjs 7450 7350 (Nakama, MetaFi)
//
// Each server gets its own fresh accounts, so ids differ; answers are compared after ids, tokens
// and times are replaced by placeholders.
import { randomUUID } from "node:crypto";

const [portA, portB] = process.argv.slice(2);
if (!portA || !portB) {
  console.error("usage: node probe.mjs A_PORT B_PORT");
  process.exit(2);
}
const basic = "Basic " + Buffer.from("defaultkey:").toString("base64");
const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

async function call(port, { method = "GET", path, auth, body, headers = {}, raw }) {
  const h = { ...headers };
  if (auth) h.authorization = auth;
  let payload = body;
  if (body !== undefined && !raw) payload = JSON.stringify(body);
  const r = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: h, body: payload });
  const text = await r.text();
  return { status: r.status, text, headers: Object.fromEntries(r.headers) };
}

async function session(port, username) {
  const r = await call(port, {
    method: "POST",
    path: `/v2/account/authenticate/device?create=true${username ? `&username=${username}` : ""}`,
    auth: basic,
    body: { id: `probe-${randomUUID()}` },
  });
  const s = JSON.parse(r.text);
  const claims = JSON.parse(Buffer.from(s.token.split(".")[1], "base64url").toString());
  return { token: s.token, refresh: s.refresh_token, user: claims.uid, bearer: `Bearer ${s.token}` };
}

function normalize(text, ctx) {
  let t = text;
  for (const [k, v] of Object.entries(ctx)) if (v) t = t.split(v).join(`<${k}>`);
  return t
    .replace(/eyJ[\w-]+\.[\w-]+\.[\w-]+/g, "<jwt>")
    .replace(uuid, "<uuid>")
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>")
    .replace(/"version":"[0-9a-f]{32}"/g, '"version":"<md5>"');
}

// The cases: every route MetaFi serves, with missing, invalid and oversized input, wrong auth,
// wrong methods, unknown ids and pagination.
function cases(s, other) {
  const B = s.bearer ?? "";
  const long = "x".repeat(129);
  return [
    ["health", { path: "/healthcheck" }],
    ["v2 health", { path: "/v2/healthcheck" }],
    ["unknown path", { path: "/v2/nope", auth: B }],
    ["root", { path: "/" }],
    ["device: no auth", { method: "POST", path: "/v2/account/authenticate/device", body: { id: "abcdefghijkl" } }],
    ["device: bearer instead of key", { method: "POST", path: "/v2/account/authenticate/device", auth: B, body: { id: "abcdefghijkl" } }],
    ["device: empty body", { method: "POST", path: "/v2/account/authenticate/device", auth: basic, body: "", raw: true }],
    ["device: not JSON", { method: "POST", path: "/v2/account/authenticate/device", auth: basic, body: "{nope", raw: true }],
    ["device: id wrong type", { method: "POST", path: "/v2/account/authenticate/device", auth: basic, body: { id: 12345678901 } }],
    ["device: id too long", { method: "POST", path: "/v2/account/authenticate/device", auth: basic, body: { id: long } }],
    ["device: username too long", { method: "POST", path: `/v2/account/authenticate/device?username=${long}`, auth: basic, body: { id: `d-${randomUUID()}` } }],
    ["device: username with space", { method: "POST", path: `/v2/account/authenticate/device?username=a%20b${Date.now()}`, auth: basic, body: { id: `d-${randomUUID()}` } }],
    ["device: create=maybe", { method: "POST", path: "/v2/account/authenticate/device?create=maybe", auth: basic, body: { id: `d-${randomUUID()}` } }],
    ["device: GET", { method: "GET", path: "/v2/account/authenticate/device", auth: basic }],
    ["device: unknown field", { method: "POST", path: "/v2/account/authenticate/device", auth: basic, body: { id: `d-${randomUUID()}`, bogus: 1 } }],
    ["device: vars not strings", { method: "POST", path: "/v2/account/authenticate/device", auth: basic, body: { id: `d-${randomUUID()}`, vars: { a: 1 } } }],
    ["custom: short", { method: "POST", path: "/v2/account/authenticate/custom", auth: basic, body: { id: "abc" } }],
    ["custom: missing", { method: "POST", path: "/v2/account/authenticate/custom?create=false", auth: basic, body: { id: `c-${randomUUID()}` } }],
    ["email: no password", { method: "POST", path: "/v2/account/authenticate/email", auth: basic, body: { email: "a@example.com" } }],
    ["email: bad email", { method: "POST", path: "/v2/account/authenticate/email", auth: basic, body: { email: "nope", password: "password1" } }],
    ["email: short password", { method: "POST", path: "/v2/account/authenticate/email", auth: basic, body: { email: `e${Date.now()}@example.com`, password: "short" } }],
    ["email: missing create=false", { method: "POST", path: "/v2/account/authenticate/email?create=false", auth: basic, body: { email: `m${Date.now()}@example.com`, password: "password1" } }],
    ["account: no auth", { path: "/v2/account" }],
    ["account: basic auth", { path: "/v2/account", auth: basic }],
    ["account: garbage bearer", { path: "/v2/account", auth: "Bearer garbage" }],
    ["account: bearer no token", { path: "/v2/account", auth: "Bearer " }],
    ["account: lowercase bearer", { path: "/v2/account", auth: `bearer ${s.token}` }],
    ["account: DELETE", { method: "DELETE", path: "/v2/account", auth: B }],
    ["account: POST", { method: "POST", path: "/v2/account", auth: B, body: {} }],
    ["account update: empty", { method: "PUT", path: "/v2/account", auth: B, body: {} }],
    ["account update: username empty", { method: "PUT", path: "/v2/account", auth: B, body: { username: "" } }],
    ["account update: username too long", { method: "PUT", path: "/v2/account", auth: B, body: { username: long } }],
    ["account update: bad lang", { method: "PUT", path: "/v2/account", auth: B, body: { lang_tag: long } }],
    ["account update: display long", { method: "PUT", path: "/v2/account", auth: B, body: { display_name: "d".repeat(256) } }],
    ["account update: avatar long", { method: "PUT", path: "/v2/account", auth: B, body: { avatar_url: "a".repeat(513) } }],
    ["account update: not JSON", { method: "PUT", path: "/v2/account", auth: B, body: "{", raw: true }],
    ["refresh: empty", { method: "POST", path: "/v2/account/session/refresh", auth: basic, body: {} }],
    ["refresh: garbage", { method: "POST", path: "/v2/account/session/refresh", auth: basic, body: { token: "garbage" } }],
    ["refresh: session token as refresh", { method: "POST", path: "/v2/account/session/refresh", auth: basic, body: { token: s.token } }],
    ["refresh: no auth", { method: "POST", path: "/v2/account/session/refresh", body: { token: s.refresh } }],
    ["logout: empty", { method: "POST", path: "/v2/session/logout", auth: B, body: {} }],
    ["logout: garbage tokens", { method: "POST", path: "/v2/session/logout", auth: B, body: { token: "x", refresh_token: "y" } }],
    ["channel: bad id", { path: "/v2/channel/nope", auth: B }],
    ["channel: room never joined", { path: "/v2/channel/2...lobby", auth: B }],
    ["channel: group unknown", { path: `/v2/channel/3.${randomUUID()}..`, auth: B }],
    ["channel: dm other", { path: `/v2/channel/4.${s.user}.${other.user}.`, auth: B }],
    ["channel: limit 0", { path: "/v2/channel/2...lobby?limit=0", auth: B }],
    ["channel: limit 101", { path: "/v2/channel/2...lobby?limit=101", auth: B }],
    ["channel: bad cursor", { path: "/v2/channel/2...lobby?cursor=garbage", auth: B }],
    ["match: list", { path: "/v2/match", auth: B }],
    ["match: limit 0", { path: "/v2/match?limit=0", auth: B }],
    ["match: limit 101", { path: "/v2/match?limit=101", auth: B }],
    ["match: limit -1", { path: "/v2/match?limit=-1", auth: B }],
    ["match: limit abc", { path: "/v2/match?limit=abc", auth: B }],
    ["match: min>max", { path: "/v2/match?min_size=5&max_size=2", auth: B }],
    ["match: bad query", { path: "/v2/match?query=%2B%2B%2B&authoritative=true", auth: B }],
    ["match: no auth", { path: "/v2/match" }],
    ["storage read: empty", { method: "POST", path: "/v2/storage", auth: B, body: {} }],
    ["storage read: empty ids", { method: "POST", path: "/v2/storage", auth: B, body: { object_ids: [] } }],
    ["storage read: missing key", { method: "POST", path: "/v2/storage", auth: B, body: { object_ids: [{ collection: "c" }] } }],
    ["storage read: bad user id", { method: "POST", path: "/v2/storage", auth: B, body: { object_ids: [{ collection: "c", key: "k", user_id: "nope" }] } }],
    ["storage read: nothing there", { method: "POST", path: "/v2/storage", auth: B, body: { object_ids: [{ collection: "c", key: "k", user_id: s.user }] } }],
    ["storage write: empty", { method: "PUT", path: "/v2/storage", auth: B, body: {} }],
    ["storage write: empty list", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [] } }],
    ["storage write: value not JSON", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [{ collection: "c", key: "k", value: "nope" }] } }],
    ["storage write: value string JSON", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [{ collection: "c", key: "k", value: '"str"' }] } }],
    ["storage write: collection 129", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [{ collection: long, key: "k", value: "{}" }] } }],
    ["storage write: key 129", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [{ collection: "c", key: long, value: "{}" }] } }],
    ["storage write: NUL key", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [{ collection: "c", key: "a\u0000b", value: "{}" }] } }],
    ["storage write: permission_read 3", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [{ collection: "c", key: "k", value: "{}", permission_read: 3 }] } }],
    ["storage write: permission_write 2", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [{ collection: "c", key: "k", value: "{}", permission_write: 2 }] } }],
    ["storage write: version mismatch new", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [{ collection: "c", key: `n${Date.now()}`, value: "{}", version: "abc" }] } }],
    ["storage write: ok", { method: "PUT", path: "/v2/storage", auth: B, body: { objects: [{ collection: "c", key: "k", value: '{"a":1}' }] } }],
    ["storage delete: missing", { method: "PUT", path: "/v2/storage/delete", auth: B, body: { object_ids: [{ collection: "c", key: "nothing" }] } }],
    ["storage delete: empty", { method: "PUT", path: "/v2/storage/delete", auth: B, body: {} }],
    ["storage delete: wrong version", { method: "PUT", path: "/v2/storage/delete", auth: B, body: { object_ids: [{ collection: "c", key: "k", version: "abc" }] } }],
    ["storage delete: POST", { method: "POST", path: "/v2/storage/delete", auth: B, body: {} }],
    ["storage list: own", { path: `/v2/storage/c?user_id=${s.user}`, auth: B }],
    ["storage list: no user", { path: "/v2/storage/c", auth: B }],
    ["storage list: user path", { path: `/v2/storage/c/${s.user}`, auth: B }],
    ["storage list: other user", { path: `/v2/storage/c?user_id=${other.user}`, auth: B }],
    ["storage list: bad user", { path: "/v2/storage/c?user_id=nope", auth: B }],
    ["storage list: limit 0", { path: "/v2/storage/c?limit=0", auth: B }],
    ["storage list: limit 101", { path: "/v2/storage/c?limit=101", auth: B }],
    ["storage list: bad cursor", { path: "/v2/storage/c?cursor=garbage", auth: B }],
    ["rpc: no id", { method: "POST", path: "/v2/rpc/", auth: B, body: "{}" }],
    ["rpc: unknown", { method: "POST", path: "/v2/rpc/nope", auth: B, body: "{}" }],
    ["rpc: no auth", { method: "POST", path: "/v2/rpc/echo", body: "{}" }],
    ["rpc: body not a JSON string", { method: "POST", path: "/v2/rpc/echo", auth: B, body: { a: 1 } }],
    ["rpc: empty body", { method: "POST", path: "/v2/rpc/echo", auth: B, body: "", raw: true }],
    ["rpc: unwrap", { method: "POST", path: "/v2/rpc/echo_native?unwrap", auth: B, body: '{"a":1}', raw: true }],
    ["rpc: GET with payload (bearer)", { path: "/v2/rpc/echo_native?payload=%22%7B%7D%22", auth: B }],
    ["rpc: GET with payload (http key)", { path: "/v2/rpc/echo_native?http_key=defaulthttpkey&payload=%22%7B%7D%22" }],
    ["rpc: http key in basic auth", { method: "POST", path: "/v2/rpc/echo_native", auth: "Basic " + Buffer.from("defaulthttpkey:").toString("base64"), body: '{"a":1}' }],
    ["rpc: wrong http key", { path: "/v2/rpc/echo_native?http_key=nope" }],
    ["rpc: empty echo (lua)", { method: "POST", path: "/v2/rpc/echo", auth: B, body: "" }],
    ["rpc: empty echo (js)", { method: "POST", path: "/v2/rpc/echo_js", auth: B, body: "" }],
    ["rpc: empty echo (native)", { method: "POST", path: "/v2/rpc/echo_native", auth: B, body: "" }],
    ["rpc: invalid echo (lua)", { method: "POST", path: "/v2/rpc/echo", auth: B, body: "{" }],
    ["rpc: invalid echo (js)", { method: "POST", path: "/v2/rpc/echo_js", auth: B, body: "{" }],
    ["rpc: invalid echo (native)", { method: "POST", path: "/v2/rpc/echo_native", auth: B, body: "{" }],
    ["rpc: DELETE", { method: "DELETE", path: "/v2/rpc/echo", auth: B }],
    ["user: by id", { path: `/v2/user?ids=${other.user}`, auth: B }],
    ["user: none", { path: "/v2/user", auth: B }],
    ["user: bad id", { path: "/v2/user?ids=nope", auth: B }],
    ["user: unknown", { path: `/v2/user?ids=${randomUUID()}`, auth: B }],
    ["preflight", { method: "OPTIONS", path: "/v2/account", headers: { origin: "http://127.0.0.1:1", "access-control-request-method": "GET", "access-control-request-headers": "authorization" } }],
    ["cors on GET", { path: "/healthcheck", headers: { origin: "http://127.0.0.1:1" } }],
    ["PATCH account", { method: "PATCH", path: "/v2/account", auth: B, body: {} }],
    ["big body", { method: "POST", path: "/v2/account/authenticate/device", auth: basic, body: { id: "x".repeat(5_000_000) } }],
  ];
}

// Bodies compared without "error" (MetaFi always sends it; Nakama only on some paths) and with
// keys sorted.
function canonical(text) {
  try {
    const j = JSON.parse(text);
    if (j && typeof j === "object" && !Array.isArray(j)) delete j.error;
    const sort = (v) =>
      Array.isArray(v) ? v.map(sort) : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort(v[k])])) : v;
    return JSON.stringify(sort(j));
  } catch {
    return text;
  }
}

const summary = (r) => {
  let code, message, keys;
  try {
    const j = JSON.parse(r.text);
    if (j && typeof j === "object") {
      code = j.code;
      message = j.message;
      keys = Object.keys(j).sort().join(",");
    }
  } catch {}
  return { status: r.status, code, message, keys };
};

// Some cases end their session (logout, account delete): each case gets fresh accounts.
const total = cases({}, {}).length;
let differences = 0;
for (let i = 0; i < total; i++) {
  const a = { s: await session(portA), o: await session(portA) };
  const b = { s: await session(portB), o: await session(portB) };
  const [name, reqA] = cases(a.s, a.o)[i];
  const reqB = cases(b.s, b.o)[i][1];
  const [ra, rb] = await Promise.all([call(portA, reqA).catch((e) => ({ status: "ERR", text: String(e) })), call(portB, reqB).catch((e) => ({ status: "ERR", text: String(e) }))]);
  const na = canonical(normalize(ra.text, { self: a.s.user, other: a.o.user }));
  const nb = canonical(normalize(rb.text, { self: b.s.user, other: b.o.user }));
  const sa = summary({ ...ra, text: na });
  const sb = summary({ ...rb, text: nb });
  const same = sa.status === sb.status && sa.code === sb.code && sa.message === sb.message;
  const cors = (r) => r.headers?.["access-control-allow-origin"] ?? "-";
  // Without an Origin the header means nothing to a browser (MetaFi sends it anyway).
  const corsSame = !reqA.headers?.origin || cors(ra) === cors(rb);
  if (same && corsSame && (na === nb || process.env.PROBE_STATUS_ONLY)) continue;
  differences++;
  console.log(`\n### ${name}: ${reqA.method ?? "GET"} ${reqA.path.slice(0, 120)}`);
  console.log(`  A ${ra.status} ${na.slice(0, 300)}${cors(ra) !== "-" ? `  [ACAO ${cors(ra)}]` : ""}`);
  console.log(`  B ${rb.status} ${nb.slice(0, 300)}${cors(rb) !== "-" ? `  [ACAO ${cors(rb)}]` : ""}`);
}
console.log(`\n${differences} of ${total} cases differ`);
