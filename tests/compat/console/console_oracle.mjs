// The console's JSON API against a real Nakama 3.40 console (the oracle): the same calls on
// both, compared by status, gRPC code, error message and JSON shape (field names and the JSON
// type of each value: int64 as text, timestamps as RFC 3339 text). Not a test of the suite: a
// tool for docs/CONSOLE.md's "Compared with Nakama 3.40's console" table. Run by hand:
//
//   scripts/nakama.sh start    # NAKAMA_PORT / NAKAMA_CONSOLE_PORT to move it
//   node tests/compat/console/console_oracle.mjs \
//     nakama=http://127.0.0.1:7350,http://127.0.0.1:7351,admin,password \
//     metafi=http://127.0.0.1:7350,http://127.0.0.1:7351,admin,password
//
// Each argument is name=API base,console base,console user,password (the client API's server
// key is `defaultkey`). Prints one line per call: same, or what differs; ORACLE_OUT=DIR also
// writes every answer as DIR/<name>.json.
import { randomUUID } from "node:crypto";
import { writeFileSync, mkdirSync } from "node:fs";

const targets = process.argv.slice(2).map((arg) => {
  const [name, rest] = arg.split("=");
  const [api, console, user, password] = rest.split(",");
  return { name, api, console, user, password };
});
if (targets.length !== 2) {
  console.error("usage: console_oracle.mjs a=API,CONSOLE,USER,PASSWORD b=API,CONSOLE,USER,PASSWORD");
  process.exit(2);
}

async function call(base, method, path, { token, body, basic } = {}) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (basic) headers.authorization = `Basic ${Buffer.from(basic).toString("base64")}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${base}${path}`, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: "manual",
  });
  const text = await response.text();
  let json;
  try { json = text ? JSON.parse(text) : {}; } catch { json = text.slice(0, 200); }
  return { status: response.status, body: json };
}

// The shape of a JSON value: objects by key (sorted), arrays by their first element, leaves by
// type, strings that are timestamps or int64 noted as such.
function shape(value) {
  if (Array.isArray(value)) return value.length ? [shape(value[0])] : [];
  if (value && typeof value === "object") {
    const out = {};
    for (const key of Object.keys(value).sort()) out[key] = shape(value[key]);
    return out;
  }
  if (typeof value === "string") {
    if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(value)) return "timestamp";
    if (/^-?\d+$/.test(value) && value.length > 0) return "intstring";
    return "string";
  }
  return typeof value;
}

function keysOf(s, prefix = "") {
  if (Array.isArray(s)) return s.length ? keysOf(s[0], `${prefix}[]`) : [`${prefix}[]`];
  if (s && typeof s === "object") {
    const keys = Object.keys(s);
    if (!keys.length) return [`${prefix}{}`];
    return keys.flatMap((k) => keysOf(s[k], prefix ? `${prefix}.${k}` : k));
  }
  return [`${prefix}:${s}`];
}

// The calls, in order, each a function of the run's context (ids made on the way).
function calls(ctx) {
  const id = ctx.userId;
  const acct = `/v2/console/account/${id}`;
  const nil = "00000000-0000-0000-0000-000000000000";
  const upd = (label, body) => ["POST", acct, body, `update ${label}`];
  return [
    ["GET", "/v2/console/account", undefined, "no session", { noToken: true }],
    ["GET", `/v2/console/account?filter=${ctx.username}`],
    ["GET", acct],
    ["GET", "/v2/console/account/nope"],
    upd("wallet", { wallet: '{"gold": 100, "gems": 2}' }),
    ["CLIENT", "/v2/account", undefined, "client sees the wallet"],
    upd("wallet replaced", { wallet: '{"gold": 7}' }),
    ["CLIENT", "/v2/account", undefined, "client sees the replaced wallet"],
    upd("wallet negative", { wallet: '{"gold": -1}' }),
    upd("wallet fraction", { wallet: '{"gold": 1.5}' }),
    upd("wallet nested", { wallet: '{"gold": {"bars": 1}}' }),
    upd("wallet array", { wallet: "[1]" }),
    upd("wallet empty text", { wallet: "" }),
    upd("metadata empty text", { metadata: "" }),
    upd("metadata array", { metadata: "[1]" }),
    upd("username empty", { username: "" }),
    upd("display name", { display_name: "Ada L.", location: "Oslo" }),
    upd("unknown field", { colour: "red" }),
    ["CLIENT", "/v2/account", undefined, "client after the refusals"],
    ["POST", "/v2/console/account/nope", {}, "update bad id"],
    ["POST", `/v2/console/account/${nil}`, { display_name: "x" }, "update system user"],
    ["POST", `/v2/console/account/${randomUUID()}`, { display_name: "x" }, "update unknown user"],
    ["GET", `${acct}/wallet?limit=10`],
    ["GET", `${acct}/wallet`, undefined, "ledger without limit"],
    ["GET", `${acct}/friend`],
    ["GET", `${acct}/group`],
    ["GET", `${acct}/export`],
    ["POST", `${acct}/ban`, {}],
    ["POST", `/v2/console/account/${nil}/ban`, {}, "ban system user"],
    ["POST", `${acct}/unban`, {}],
    ["PUT", `/v2/console/storage/saves/slot1/${id}`, { value: '{"hp": 3}', permission_read: 1, permission_write: 1 }],
    ["PUT", `/v2/console/storage/saves/slot1/${id}`, { value: '{"hp": 4}', version: "bad" }, "storage write stale version"],
    ["GET", "/v2/console/storage/collections"],
    ["GET", "/v2/console/storage?collection=saves"],
    ["GET", "/v2/console/storage?user_id=nope", undefined, "storage list bad user"],
    ["GET", `/v2/console/storage/saves/slot1/${id}`],
    ["GET", `/v2/console/storage/saves/missing/${id}`, undefined, "storage get missing"],
    ["DELETE", `/v2/console/storage/saves/slot1/${id}`],
    ["GET", "/v2/console/match"],
    ["GET", "/v2/console/match/nope/state"],
    ["GET", `/v2/console/match/${randomUUID()}.node/state`, undefined, "match state unknown"],
    ["GET", "/v2/console/user"],
    ["POST", "/v2/console/user", { username: ctx.consoleUser, email: `${ctx.consoleUser}@example.com`, password: "a-long-password-1", role: 4 }, "user add"],
    ["POST", "/v2/console/user", { username: "x", email: "x@example.com", role: 4 }, "user add bad name"],
    ["GET", `/v2/console/user/${ctx.consoleUser}`],
    ["POST", `/v2/console/user/${ctx.consoleUser}/mfa/require`, { required: true }],
    ["POST", `/v2/console/user/${ctx.consoleUser}/mfa/reset`, {}],
    ["DELETE", `/v2/console/user?username=${ctx.consoleUser}`],
    ["DELETE", "/v2/console/user?username=nobody-here", undefined, "user delete unknown"],
    ["GET", "/v2/console/status"],
    ["GET", "/v2/console/config"],
    ["GET", "/v2/console/runtime"],
    ["GET", "/v2/console/api/endpoints"],
    ["POST", "/v2/console/api/endpoints/rpc/nope", { body: "" }, "rpc unknown"],
    ["GET", "/v2/console/audit/log"],
    ["DELETE", acct],
    ["GET", acct, undefined, "account after delete"],
  ];
}

async function run(target) {
  const signIn = await call(target.console, "POST", "/v2/console/authenticate", {
    body: { username: target.user, password: target.password },
  });
  if (signIn.status !== 200) throw new Error(`${target.name}: sign-in ${signIn.status} ${JSON.stringify(signIn.body)}`);
  const token = signIn.body.token;
  const wrong = await call(target.console, "POST", "/v2/console/authenticate", {
    body: { username: target.user, password: "wrong-password" },
  });
  const username = `oracle${randomUUID().slice(0, 8)}`;
  const auth = await call(target.api, "POST", `/v2/account/authenticate/device?create=true&username=${username}`, {
    basic: "defaultkey:", body: { id: `oracle-${randomUUID()}` },
  });
  if (auth.status !== 200) throw new Error(`${target.name}: device auth ${auth.status}`);
  const session = auth.body.token;
  const me = await call(target.api, "GET", "/v2/account", { token: session });
  const ctx = { userId: me.body.user.id, username, consoleUser: `oracle${randomUUID().slice(0, 6)}` };
  const answers = [{ label: "sign-in", ...signIn, body: shapeOnlyToken(signIn.body) }, { label: "sign-in wrong password", ...wrong }];
  for (const [method, path, body, label, opts] of calls(ctx)) {
    const name = label ?? `${method} ${path.replace(ctx.userId, "{id}").replace(ctx.consoleUser, "{user}")}`;
    const answer = method === "CLIENT"
      ? await call(target.api, "GET", path, { token: session })
      : await call(target.console, method, path, { token: opts?.noToken ? undefined : token, body });
    answers.push({ label: name, ...answer });
  }
  return answers;
}

function shapeOnlyToken(body) {
  return { ...body, token: body.token ? "<token>" : body.token };
}

const [a, b] = targets;
const [ra, rb] = [await run(a), await run(b)];
if (process.env.ORACLE_OUT) {
  mkdirSync(process.env.ORACLE_OUT, { recursive: true });
  writeFileSync(`${process.env.ORACLE_OUT}/${a.name}.json`, JSON.stringify(ra, null, 1));
  writeFileSync(`${process.env.ORACLE_OUT}/${b.name}.json`, JSON.stringify(rb, null, 1));
}
for (let i = 0; i < ra.length; i++) {
  const x = ra[i], y = rb[i];
  const diffs = [];
  if (x.status !== y.status) diffs.push(`status ${a.name} ${x.status} / ${b.name} ${y.status}`);
  const mx = x.body?.message, my = y.body?.message;
  if ((x.status >= 400 || y.status >= 400) && mx !== my) diffs.push(`message ${JSON.stringify(mx)} / ${JSON.stringify(my)}`);
  if ((x.status >= 400 || y.status >= 400) && x.body?.code !== y.body?.code) diffs.push(`code ${x.body?.code} / ${y.body?.code}`);
  if (x.status < 400 && y.status < 400) {
    const kx = new Set(keysOf(shape(x.body))), ky = new Set(keysOf(shape(y.body)));
    const onlyX = [...kx].filter((k) => !ky.has(k)), onlyY = [...ky].filter((k) => !kx.has(k));
    if (onlyX.length) diffs.push(`only ${a.name}: ${onlyX.join(" ")}`);
    if (onlyY.length) diffs.push(`only ${b.name}: ${onlyY.join(" ")}`);
  }
  console.log(`${diffs.length ? "DIFF" : "same"}  ${x.label}${diffs.length ? `\n      ${diffs.join("\n      ")}` : ""}`);
}
