// A world's live top-down view in the console (docs/CONSOLE.md, "Worlds") in a real headless
// Chromium: sign in, find the world in the Worlds list, open /world/{id}, and check the canvas
// really draws the bots (pixels of the player colour, a drawing that changes as they move);
// the binary frame feed refuses a request without a console session. Saves screenshots
// (WORLD_SCREENSHOTS). Started by scripts/world_view.sh, which runs a world with bots
// (metafi-bench world) and passes METAFI_TEST_PORT and METAFI_TEST_CONSOLE_PORT.
//
// Not a *.test.mjs file: the compatibility suite (which also runs against Nakama) leaves it out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const consolePort = process.env.METAFI_TEST_CONSOLE_PORT;
const shots = process.env.WORLD_SCREENSHOTS ?? "world-screenshots";
const minPlayers = Number(process.env.WORLD_VIEW_MIN_PLAYERS ?? 10);
const base = `http://127.0.0.1:${consolePort}`;
const STEP = { timeout: 30_000 };

// Pixels close to the page's player colour (#2563eb) and item colour (#16a34a).
function countColours(canvasId) {
  const canvas = document.getElementById(canvasId);
  const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
  let player = 0, item = 0, hash = 0;
  const near = (i, r, g, b) => Math.abs(data[i] - r) < 24 && Math.abs(data[i + 1] - g) < 24 && Math.abs(data[i + 2] - b) < 24;
  for (let i = 0; i < data.length; i += 4) {
    if (near(i, 0x25, 0x63, 0xeb)) { player++; hash = (hash * 31 + i) | 0; }
    else if (near(i, 0x16, 0xa3, 0x4a)) item++;
  }
  return { player, item, hash };
}

test("a world's top-down view in headless Chromium", async (t) => {
  assert.ok(consolePort, "METAFI_TEST_CONSOLE_PORT is not set (run scripts/world_view.sh)");
  if (!existsSync(chromium)) throw new Error(`no Chromium at ${chromium}`);
  mkdirSync(shots, { recursive: true });
  const { default: puppeteer } = await import("puppeteer-core");
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"],
    defaultViewport: { width: 1100, height: 1250 },
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
  const shot = (name) => tab.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

  await tab.goto(`${base}/login`, { waitUntil: "load", ...STEP });
  await tab.type("#username", "admin");
  await tab.type("#password", "console-admin-pw");
  await Promise.all([tab.waitForNavigation({ waitUntil: "load", ...STEP }), tab.click("#signin")]);
  assert.equal(new URL(tab.url()).pathname, "/status", `sign-in failed: ${logs.join("\n")}`);

  let worldId;
  await t.test("the Worlds list links each world's view", async () => {
    await tab.goto(`${base}/worlds`, { waitUntil: "load", ...STEP });
    const links = await tab.$$eval("#worlds tbody a", (as) => as.map((a) => a.getAttribute("href")));
    assert.equal(links.length, 1, `worlds listed: ${links}`);
    assert.match(links[0], /^\/world\/[0-9a-f-]{36}\./);
    worldId = links[0].slice("/world/".length);
    await shot("worlds");
    await Promise.all([tab.waitForNavigation({ waitUntil: "load", ...STEP }), tab.click("#worlds tbody a")]);
    assert.equal(new URL(tab.url()).pathname, `/world/${worldId}`);
  });

  await t.test("the view draws the bots from live frames", async () => {
    await tab.waitForFunction(
      (min) => {
        const c = document.getElementById("world-canvas");
        return Number(c.dataset.frames || 0) >= 3 && Number(c.dataset.players || 0) >= min;
      },
      STEP, minPlayers,
    ).catch((e) => { throw new Error(`${e.message}\n${logs.join("\n")}`); });
    const first = await tab.evaluate(countColours, "world-canvas");
    assert.ok(first.player > 0, `no player pixels on the canvas: ${JSON.stringify(first)}`);
    assert.ok(first.item > 0, `no item pixels on the canvas: ${JSON.stringify(first)}`);
    // Later frames (deltas against the page's frame) move the bots on the canvas.
    const frames = await tab.$eval("#world-canvas", (c) => Number(c.dataset.frames));
    await tab.waitForFunction(
      (n) => Number(document.getElementById("world-canvas").dataset.frames) >= n + 5, STEP, frames);
    let later = await tab.evaluate(countColours, "world-canvas");
    for (let i = 0; i < 20 && later.hash === first.hash; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      later = await tab.evaluate(countColours, "world-canvas");
    }
    assert.notEqual(later.hash, first.hash, "the drawing did not change while bots move");
    const players = Number(await tab.$eval("#world-players", (el) => el.textContent));
    assert.ok(players >= minPlayers, `players card: ${players}`);
    await shot("world");
  });

  await t.test("the frame feed needs a console session", async () => {
    const response = await fetch(`${base}/v2/console/world/${worldId}/frame`);
    assert.equal(response.status, 401);
    const unknown = await tab.evaluate(async () => (await fetch("/v2/console/world/nope/frame")).status);
    assert.equal(unknown, 404);
  });
});
