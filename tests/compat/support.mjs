// Shared helpers of the compatibility suite. The server under test is started by
// scripts/compat.sh, which passes its address in METAFI_TEST_HOST / METAFI_TEST_PORT, and
// METAFI_TEST_SERVER=nakama when it is a real Nakama (the oracle: scripts/nakama.sh,
// docs/COMPAT.md). Every test asserts Nakama's answer.
import { Client } from "@heroiclabs/nakama-js";
import { randomUUID } from "node:crypto";
import assert from "node:assert/strict";

// The suite runs the server with 3-second tokens to test expiry; nakama-js warns about any
// lifetime under 70 s on every refresh. Drop that one warning, keep every other.
const warn = console.warn;
console.warn = (...args) => {
  if (typeof args[0] === "string" && args[0].startsWith("Session") && args[0].includes("lifetime too short")) return;
  warn(...args);
};

export const host = process.env.METAFI_TEST_HOST ?? "127.0.0.1";
export const port = process.env.METAFI_TEST_PORT ?? "7350";
/**
 * The API ports of every node of a cluster under test (METAFI_TEST_PORTS=7350,7360,7370, set by
 * scripts/cluster.sh); one server: just `port`. `clientOn(i)` talks to node i.
 */
export const ports = (process.env.METAFI_TEST_PORTS ?? port).split(",").map((p) => p.trim()).filter(Boolean);
export const serverKey = process.env.METAFI_TEST_SERVER_KEY ?? "defaultkey";
export const httpKey = process.env.METAFI_TEST_HTTP_KEY ?? "defaulthttpkey";
/** "metafi" (default) or "nakama" (the oracle). */
export const server = process.env.METAFI_TEST_SERVER ?? "metafi";

/**
 * Where MetaFi does not give Nakama's answer yet: the tests that assert Nakama's answer there are
 * skipped on MetaFi (they always run against Nakama). Remove an entry when its fix lands, and the
 * tests keyed by it run again. METAFI_TEST_UNSKIP=key1,key2 runs them without editing (to check a
 * fix); METAFI_TEST_UNSKIP=all runs every one. docs/COMPAT.md lists each with the exact answers.
 */
export const KNOWN_DIFFERENCES = {
  "delete-account-token": "deliberate (README): a deleted account's tokens are revoked (401); Nakama 3.40's session logout forgets the user's invalidations, so its token still authenticates and getAccount answers 404 Account not found.",
  "lua-arg-error-name": "gopher-lua names a function in 'bad argument' errors as the call site did ('(anonymous)' under pcall(nk.f, …)); MetaFi always uses the nk function's name (LuaJIT cannot tell a pcall from a tail call)",
  "js-after-hook-empty-vars": "an after hook whose JavaScript before hook ran: Nakama reads the before hook's answer back with every field, so a request without vars gives the after hook's ctx vars {}; MetaFi's request has no unset map to tell apart, and the ctx has no vars when there are none (as Nakama's without a before hook)",
  "js-logger-own-methods": "the JavaScript logger's methods are on its prototype (one per VM; Nakama: frozen own properties of each logger), so Object.keys(logger) is ['fields']",
  "rpc-get-payload": "deliberate (README): GET /v2/rpc/{id}?payload=… hands the query's payload to the function, as nakama-js rpcHttpKey expects; Nakama 3.40 ignores it (empty payload)",
};

const unskipped = new Set((process.env.METAFI_TEST_UNSKIP ?? "").split(",").filter(Boolean));

/**
 * Options for a test that asserts Nakama's answer where MetaFi differs (`key` in
 * KNOWN_DIFFERENCES): skipped on MetaFi until the difference is fixed, run on Nakama.
 */
export function differs(key) {
  if (!(key in KNOWN_DIFFERENCES)) throw new Error(`unknown difference '${key}': add it to KNOWN_DIFFERENCES`);
  if (server === "nakama" || unskipped.has(key) || unskipped.has("all")) return {};
  return { skip: `known difference '${key}': ${KNOWN_DIFFERENCES[key]}` };
}

/** Options for a test that needs something only MetaFi has (an extension, see docs/COMPAT.md). */
export function metafiOnly(why) {
  return server === "nakama" ? { skip: `MetaFi only: ${why}` } : {};
}

/** A client as a game would create it (auto refresh on). */
export function client(options = {}) {
  const { key = serverKey, autoRefresh = true } = options;
  return new Client(key, host, port, false, 7000, autoRefresh);
}

/** A client of node `i` of the cluster (`ports[i]`, round-robin past the last). */
export function clientOn(i, options = {}) {
  const { key = serverKey, autoRefresh = true } = options;
  return new Client(key, host, ports[i % ports.length], false, 7000, autoRefresh);
}

/** A device id that no other test uses. */
export function freshDeviceId() {
  return `device-${randomUUID()}`;
}

/**
 * Asserts that a nakama-js call failed with the given HTTP status and gRPC code (and, when given,
 * Nakama's exact message). nakama-js rejects with the fetch Response of a failed call. The body
 * is Nakama's error shape: `code` and `message` always; `error` is not required (Nakama sends it
 * only on some paths, e.g. RPC and its own auth checks).
 */
export async function assertRejects(promise, status, code, message) {
  let response;
  try {
    await promise;
  } catch (e) {
    response = e;
  }
  assert.ok(response, `expected the call to fail with HTTP ${status}, but it succeeded`);
  assert.equal(response.status, status, `HTTP status (body: ${await safeText(response)})`);
  const body = await response.json();
  assert.equal(body.code, code, `gRPC code in ${JSON.stringify(body)}`);
  assert.equal(typeof body.message, "string");
  if (message !== undefined) assert.equal(body.message, message, `message in ${JSON.stringify(body)}`);
  return body;
}

async function safeText(response) {
  try {
    return await response.clone().text();
  } catch {
    return "<unreadable>";
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw HTTP call to the server under test (for what nakama-js cannot send). */
export async function http(method, path, { headers = {}, body, token } = {}) {
  const h = { ...headers };
  if (token) h.authorization = `Bearer ${token}`;
  const response = await fetch(`http://${host}:${port}${path}`, { method, headers: h, body });
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/**
 * Records the pushed socket events named in `names` (`onparty`, `onmatchdata`, …).
 * `next(name, accept)` hands out the first recorded event `accept` takes, or waits for the next
 * one; either way the event is consumed, so a later `next` never sees it again. `seen` holds the
 * events no `next` has taken yet.
 */
export function recordEvents(socket, names) {
  const seen = {};
  const waiters = [];
  for (const name of names) {
    seen[name] = [];
    socket[name] = (event) => {
      const w = waiters.find((w) => w.name === name && w.accept(event));
      if (w) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(event);
      } else {
        seen[name].push(event);
      }
    };
  }
  return {
    seen,
    next(name, accept = () => true, ms = 5000) {
      const found = seen[name].find(accept);
      if (found) {
        seen[name].splice(seen[name].indexOf(found), 1);
        return Promise.resolve(found);
      }
      return new Promise((resolve, reject) => {
        const w = { name, accept, resolve };
        waiters.push(w);
        setTimeout(() => {
          const at = waiters.indexOf(w);
          if (at >= 0) waiters.splice(at, 1);
          reject(new Error(`no ${name} event within ${ms} ms`));
        }, ms).unref();
      });
    },
  };
}
