// The official client in a real browser: nakama-js's own browser build, loaded by a page in
// headless Chromium, signs in, calls an RPC over REST, opens the socket and calls an RPC over it.
// The page comes from a small static server on another 127.0.0.1 port than the game server, so
// every call is cross-origin and the browser enforces CORS (preflights included) as it would for
// a game on the web.
//
// Needs Chromium (Debian's `chromium`; CHROMIUM_PATH overrides /usr/bin/chromium) and
// puppeteer-core (a dev dependency). Bounded: every step has a timeout, and the browser is
// closed (killed if closing fails) whatever happens, so no Chromium process outlives the test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import { host, port, serverKey } from "./support.mjs";

const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const clientBuild = fileURLToPath(import.meta.resolve("@heroiclabs/nakama-js")).replace(/[^/]*$/, "nakama-js.esm.mjs");

// The page: what a web game does first. It reports to window.result (or window.failure).
const page = `<!doctype html>
<meta charset="utf-8">
<title>nakama-js in a browser</title>
<script type="module">
import { Client } from "/nakama-js.mjs";
const params = new URLSearchParams(location.search);
async function run() {
  const client = new Client(params.get("key"), params.get("host"), params.get("port"), false, 7000, false);
  const session = await client.authenticateDevice(params.get("device"), true);
  const rest = await client.rpc(session, "echo", { from: "browser", n: 1 });
  const socket = client.createSocket(false, false);
  await socket.connect(session, false);
  const overSocket = await socket.rpc("echo", JSON.stringify({ over: "socket" }));
  socket.disconnect(false);
  return { userId: session.user_id, rest: rest.payload, socket: JSON.parse(overSocket.payload), origin: location.origin };
}
run().then(
  (r) => { window.result = r; },
  (e) => { window.failure = e instanceof Error ? e.message : (e && e.status ? "HTTP " + e.status : JSON.stringify(e)); },
);
</script>`;

/** Serves the page and the client's browser build; nothing else. */
async function pageServer() {
  const client = await readFile(clientBuild);
  const server = createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (path === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page);
    } else if (path === "/favicon.ico") {
      res.writeHead(204).end();
    } else if (path === "/nakama-js.mjs") {
      res.writeHead(200, { "content-type": "text/javascript" }).end(client);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

test("nakama-js in headless Chromium signs in, calls an RPC and opens the socket (cross-origin)", async (t) => {
  if (!existsSync(chromium)) {
    throw new Error(`no Chromium at ${chromium}: install Debian's chromium (scripts/test.sh does) or set CHROMIUM_PATH`);
  }
  const { default: puppeteer } = await import("puppeteer-core");
  const server = await pageServer();
  t.after(() => server.close());
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"],
    timeout: 30_000,
    protocolTimeout: 30_000,
  });
  const chromiumProcess = browser.process();
  t.after(async () => {
    await Promise.race([browser.close(), new Promise((resolve) => setTimeout(resolve, 5000).unref())]).catch(() => {});
    if (chromiumProcess && chromiumProcess.exitCode === null) chromiumProcess.kill("SIGKILL");
  });

  const tab = await browser.newPage();
  const consoleLines = [];
  tab.on("console", (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  tab.on("pageerror", (e) => consoleLines.push(`pageerror: ${e.message}`));
  const pagePort = server.address().port;
  assert.notEqual(String(pagePort), String(port), "the page must come from another origin than the game server");
  const query = new URLSearchParams({ key: serverKey, host, port, device: `browser-${randomUUID()}` });
  await tab.goto(`http://127.0.0.1:${pagePort}/?${query}`, { timeout: 15_000 });
  await tab.waitForFunction(() => window.result || window.failure, { timeout: 20_000 }).catch(() => {});
  const outcome = await tab.evaluate(() => ({ result: window.result, failure: window.failure }));
  assert.ok(outcome.result, `the page failed: ${outcome.failure ?? "no answer within 20 s"}\nbrowser console:\n${consoleLines.join("\n")}`);
  assert.match(outcome.result.userId, /^[0-9a-f-]{36}$/);
  assert.deepEqual(outcome.result.rest, { from: "browser", n: 1 });
  assert.deepEqual(outcome.result.socket, { over: "socket" });
  assert.equal(outcome.result.origin, `http://127.0.0.1:${pagePort}`);
});
