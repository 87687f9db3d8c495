// The console (docs/CONSOLE.md) in a real headless Chromium: sign in, find a user made through
// the client API, edit its metadata and wallet and see them through the client API, browse a storage object,
// call an RPC from the explorer, watch a match's tick chart update, add a console user on the
// Users page, and a read-only user refused.
// Every page is saved as a screenshot (CONSOLE_SCREENSHOTS). Started by scripts/console.sh,
// which passes METAFI_TEST_PORT (client API) and METAFI_TEST_CONSOLE_PORT.
//
// Not a *.test.mjs file: the compatibility suite (which also runs against Nakama) leaves it out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { client } from "../support.mjs";

const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const consolePort = process.env.METAFI_TEST_CONSOLE_PORT;
const shots = process.env.CONSOLE_SCREENSHOTS ?? "console-screenshots";
const base = `http://127.0.0.1:${consolePort}`;
const STEP = { timeout: 15_000 };

test("the console in headless Chromium", async (t) => {
  assert.ok(consolePort, "METAFI_TEST_CONSOLE_PORT is not set (run scripts/console.sh)");
  if (!existsSync(chromium)) throw new Error(`no Chromium at ${chromium}`);
  mkdirSync(shots, { recursive: true });
  const { default: puppeteer } = await import("puppeteer-core");

  // A player made through the client API, with a storage object.
  const nakama = client();
  const username = `ada${randomUUID().slice(0, 8)}`;
  const session = await nakama.authenticateDevice(`console-${randomUUID()}`, true, username);
  await nakama.writeStorageObjects(session, [
    { collection: "saves", key: "slot1", value: { hp: 3, from: "client" }, permission_read: 1, permission_write: 1 },
  ]);

  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"],
    defaultViewport: { width: 1280, height: 900 },
    timeout: 30_000,
    protocolTimeout: 30_000,
  });
  const chromiumProcess = browser.process();
  t.after(async () => {
    await Promise.race([browser.close(), new Promise((resolve) => setTimeout(resolve, 5000).unref())]).catch(() => {});
    if (chromiumProcess && chromiumProcess.exitCode === null) chromiumProcess.kill("SIGKILL");
  });
  const tab = await browser.newPage();
  const logs = [];
  tab.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
  tab.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  tab.on("dialog", (d) => d.accept());
  const shot = (name) => tab.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  const text = (selector) => tab.$eval(selector, (el) => el.textContent);
  const go = async (path) => {
    const response = await tab.goto(`${base}${path}`, { waitUntil: "load", ...STEP });
    assert.equal(response.status(), 200, `${path}: ${response.status()}\n${logs.join("\n")}`);
  };
  const message = async () => {
    await tab.waitForFunction(() => !document.getElementById("message").hidden, STEP);
    return text("#message");
  };

  async function signIn(user, password) {
    await tab.goto(`${base}/login`, { waitUntil: "load", ...STEP });
    await tab.type("#username", user);
    await tab.type("#password", password);
    await Promise.all([tab.waitForNavigation({ waitUntil: "load", ...STEP }), tab.click("#signin")]);
    assert.equal(new URL(tab.url()).pathname, "/status", `sign-in as ${user} failed: ${logs.join("\n")}`);
  }

  await t.test("a page needs a session: the browser is sent to sign in", async () => {
    await tab.goto(`${base}/accounts`, { waitUntil: "load", ...STEP });
    assert.equal(new URL(tab.url()).pathname, "/login");
    await shot("login");
  });

  await t.test("sign in; the status charts draw live samples", async () => {
    await signIn("admin", "console-admin-pw");
    await tab.waitForFunction(() => Number(document.getElementById("chart-rate").dataset.points || 0) >= 3, STEP);
    assert.match(await text("#node-name"), /\S/);
    await shot("status-first");
  });

  let userId;
  await t.test("find the client API's user and edit its metadata; the client sees it", async () => {
    await go(`/accounts?filter=${username}`);
    const rows = await tab.$$eval("#accounts tbody tr", (trs) => trs.map((tr) => tr.textContent));
    assert.equal(rows.length, 1, rows.join("\n"));
    assert.ok(rows[0].includes(username));
    await shot("accounts");
    await Promise.all([tab.waitForNavigation({ waitUntil: "load", ...STEP }), tab.click("#accounts tbody a")]);
    userId = (await text("#account-id")).trim();
    assert.equal(userId, session.user_id);
    await tab.$eval("#metadata", (el) => { el.value = JSON.stringify({ vip: true, from: "console" }); });
    await tab.click("#save-metadata");
    assert.equal(await message(), "Metadata saved.");
    const account = await nakama.getAccount(session);
    assert.deepEqual(JSON.parse(account.user.metadata), { vip: true, from: "console" });
  });

  await t.test("edit its wallet: replaced outright, seen by the client; a negative balance refused", async () => {
    const save = async (wallet) => {
      await tab.$eval("#message", (el) => { el.hidden = true; el.textContent = ""; });
      await tab.$eval("#wallet", (el, w) => { el.value = w; }, wallet);
      await tab.click("#save-wallet");
      return message();
    };
    assert.equal(await save(JSON.stringify({ gold: 250, gems: 3 })), "Wallet saved.");
    let account = await nakama.getAccount(session);
    assert.deepEqual(JSON.parse(account.wallet), { gold: 250, gems: 3 });
    // Replaced, not merged: gems go.
    assert.equal(await save('{"gold": 300}'), "Wallet saved.");
    assert.equal(await save('{"gold": 1, "silver": -5}'), "Wallet rejected negative value at path 'silver'.");
    assert.equal(await save('{"gold": 1.5}'),
      "Wallet must be a valid JSON object with only string keys and integer values.");
    account = await nakama.getAccount(session);
    assert.deepEqual(JSON.parse(account.wallet), { gold: 300 });
    await tab.reload({ waitUntil: "load" });
    assert.deepEqual(JSON.parse(await tab.$eval("#wallet", (el) => el.value)), { gold: 300 });
    await shot("account");
  });

  await t.test("browse a storage object", async () => {
    await go("/storage?collection=saves");
    const keys = await tab.$$eval("#objects tbody a", (as) => as.map((a) => a.textContent));
    assert.ok(keys.includes("slot1"), keys.join(","));
    await Promise.all([tab.waitForNavigation({ waitUntil: "load", ...STEP }), tab.click("#objects tbody a")]);
    const value = JSON.parse(await tab.$eval("#object-value", (el) => el.value));
    assert.deepEqual(value, { hp: 3, from: "client" });
    await shot("storage");
  });

  let matchId;
  await t.test("call RPCs from the explorer: result and time", async () => {
    await go("/runtime");
    await tab.select("#rpc-id", "echo");
    await tab.$eval("#rpc-body", (el) => { el.value = '{"hello":"console"}'; });
    await tab.click("#rpc-call");
    await tab.waitForFunction(() => document.getElementById("rpc-result").textContent.length > 0, STEP);
    assert.deepEqual(JSON.parse(await text("#rpc-result")), { hello: "console" });
    assert.match(await text("#rpc-time"), /^\d+\.\d\d ms$/);
    // get_match, as the player: creates a match (the next step watches it tick).
    await tab.select("#rpc-id", "get_match");
    await tab.$eval("#rpc-user", (el) => { el.value = ""; });
    await tab.type("#rpc-user", session.user_id);
    await tab.$eval("#rpc-result", (el) => { el.textContent = ""; });
    await tab.click("#rpc-call");
    await tab.waitForFunction(() => document.getElementById("rpc-result").textContent.includes("match_id"), STEP);
    matchId = JSON.parse(await text("#rpc-result")).match_id;
    assert.match(matchId, /^[0-9a-f-]{36}\./);
    await shot("runtime");
  });

  await t.test("a match's tick chart updates", async () => {
    await go("/matches");
    const selector = `section.match[data-match-id="${matchId}"]`;
    await tab.waitForSelector(selector, STEP);
    await tab.waitForFunction((s) => Number(document.querySelector(s)?.dataset.ticks || 0) > 0, STEP, selector);
    const first = await tab.$eval(selector, (el) => Number(el.dataset.ticks));
    await tab.waitForFunction(
      (s, before) => Number(document.querySelector(s).dataset.ticks) > before
        && Number(document.querySelector(`${s} canvas`).dataset.points || 0) >= 3,
      STEP, selector, first);
    assert.match(await tab.$eval(`${selector} .stats`, (el) => el.textContent), /ticks \d+ · tick/);
    await shot("matches");
  });

  await t.test("configuration and audit log", async () => {
    await go("/configuration");
    const config = await text("#config");
    assert.ok(!config.includes("console-admin-pw") && !config.includes("defaultkey"));
    await shot("configuration");
    await go("/audit");
    const actions = await tab.$$eval("#audit tbody tr td:nth-child(3)", (tds) => tds.map((td) => td.textContent));
    assert.ok(actions.includes("account.update") && actions.includes("rpc.call"), actions.join(","));
    await shot("audit");
  });

  await t.test("the status page shows the RPCs called, with their counts", async () => {
    await go("/status");
    await tab.waitForFunction(() => Number(document.getElementById("chart-rate").dataset.points || 0) >= 3, STEP);
    const rows = await tab.$$eval("#rpc-stats tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    const echo = rows.find((r) => r[1] === "echo");
    assert.ok(echo && Number(echo[2]) >= 1, JSON.stringify(rows));
    await shot("status");
  });

  await t.test("an admin adds a console user on the Users page", async () => {
    await go("/users");
    const name = `aud${randomUUID().slice(0, 6)}`;
    await tab.type("#new-username", name);
    await tab.type("#new-email", `${name}@example.com`);
    await tab.type("#new-password", "a long enough password");
    await tab.select("#new-role", "4");
    await Promise.all([tab.waitForNavigation({ waitUntil: "load", ...STEP }), tab.click("#add-user-submit")]);
    const rows = await tab.$$eval("#users tbody tr", (trs) => trs.map((tr) => tr.dataset.username));
    assert.ok(rows.includes(name) && rows.includes("viewer"), `${rows.join(",")}\n${logs.join("\n")}`);
    const role = await tab.$eval(`tr[data-username="${name}"] select.role`, (el) => el.value);
    assert.equal(role, "4");
    await shot("users");
  });

  await t.test("a read-only user is refused a change", async () => {
    await Promise.all([tab.waitForNavigation({ waitUntil: "load", ...STEP }), tab.click("#sign-out")]);
    assert.equal(new URL(tab.url()).pathname, "/login");
    await signIn("viewer", "console-viewer-pw");
    await go(`/accounts/${userId}`);
    await tab.$eval("#metadata", (el) => { el.value = '{"hacked":true}'; });
    await tab.click("#save-metadata");
    assert.equal(await message(), "Unauthorized: you do not have permissions to access this resource.");
    await tab.$eval("#message", (el) => { el.hidden = true; el.textContent = ""; });
    await tab.$eval("#wallet", (el) => { el.value = '{"gold":999999}'; });
    await tab.click("#save-wallet");
    assert.equal(await message(), "Unauthorized: you do not have permissions to access this resource.");
    const account = await nakama.getAccount(session);
    assert.deepEqual(JSON.parse(account.user.metadata), { vip: true, from: "console" });
    assert.deepEqual(JSON.parse(account.wallet), { gold: 300 });
    await shot("refused");
  });
});
