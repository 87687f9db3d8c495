// Shared helpers of the compatibility suite. The server under test is started by
// scripts/compat.sh, which passes its address in METAFI_TEST_HOST / METAFI_TEST_PORT.
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
export const serverKey = process.env.METAFI_TEST_SERVER_KEY ?? "defaultkey";

/** A client as a game would create it (auto refresh on). */
export function client(options = {}) {
  const { key = serverKey, autoRefresh = true } = options;
  return new Client(key, host, port, false, 7000, autoRefresh);
}

/** A device id that no other test uses. */
export function freshDeviceId() {
  return `device-${randomUUID()}`;
}

/**
 * Asserts that a nakama-js call failed with the given HTTP status and gRPC code. nakama-js
 * rejects with the fetch Response of a failed call.
 */
export async function assertRejects(promise, status, code) {
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
  assert.equal(body.error, body.message);
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
