// One screenshot of a world's live top-down view (docs/WORLD.md, "Watching a large run") in
// headless Chromium, taken during a benchmark run: signs in to the console, opens the first
// world of the Worlds list, waits for live frames with at least WORLD_VIEW_MIN_PLAYERS players,
// then WORLD_VIEW_DELAY_MS more (the picture mid-run, not at the end of the ramp), saves the
// page to WORLD_VIEW_SHOT and prints what the canvas drew as one JSON line. Not a
// test: scripts/bench_world.sh runs it with VIEW_SCREENSHOT=1 (not in scripts/test.sh; the
// view's checks are world_browser.mjs).
//
//   METAFI_CONSOLE_PORT=… WORLD_VIEW_SHOT=out.png node tests/compat/console/world_screenshot.mjs
import { existsSync } from "node:fs";

const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const port = process.env.METAFI_CONSOLE_PORT;
const shot = process.env.WORLD_VIEW_SHOT ?? "world-view.png";
const minPlayers = Number(process.env.WORLD_VIEW_MIN_PLAYERS ?? 1);
const username = process.env.METAFI_CONSOLE_USER ?? "admin";
const password = process.env.METAFI_CONSOLE_PASSWORD ?? "console-admin-pw";
const timeout = Number(process.env.WORLD_VIEW_TIMEOUT_MS ?? 60_000);
const delay = Number(process.env.WORLD_VIEW_DELAY_MS ?? 0);
const base = `http://127.0.0.1:${port}`;

if (!port) throw new Error("METAFI_CONSOLE_PORT is not set");
if (!existsSync(chromium)) throw new Error(`no Chromium at ${chromium}`);
const { default: puppeteer } = await import("puppeteer-core");
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"],
  defaultViewport: { width: 1100, height: 1250 },
  timeout,
  protocolTimeout: timeout,
});
const chromiumProcess = browser.process();
let failed = null;
try {
  const tab = await browser.newPage();
  const logs = [];
  tab.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  await tab.goto(`${base}/login`, { waitUntil: "load", timeout });
  await tab.type("#username", username);
  await tab.type("#password", password);
  await Promise.all([tab.waitForNavigation({ waitUntil: "load", timeout }), tab.click("#signin")]);
  if (new URL(tab.url()).pathname !== "/status") throw new Error(`sign-in failed: ${tab.url()}`);
  await tab.goto(`${base}/worlds`, { waitUntil: "load", timeout });
  const link = await tab.$eval("#worlds tbody a", (a) => a.getAttribute("href"));
  await tab.goto(`${base}${link}`, { waitUntil: "load", timeout });
  const started = Date.now();
  await tab.waitForFunction(
    (min) => {
      const c = document.getElementById("world-canvas");
      return Number(c.dataset.frames || 0) >= 3 && Number(c.dataset.players || 0) >= min;
    },
    { timeout, polling: 250 }, minPlayers,
  ).catch((e) => { throw new Error(`${e.message}\n${logs.join("\n")}`); });
  const reached = Date.now() - started;
  await new Promise((resolve) => setTimeout(resolve, delay));
  // A few more frames, so the picture is a live delta-fed one, not the first full frame.
  const frames = await tab.$eval("#world-canvas", (c) => Number(c.dataset.frames));
  await tab.waitForFunction(
    (n) => Number(document.getElementById("world-canvas").dataset.frames) >= n + 5,
    { timeout, polling: 250 }, frames,
  );
  await tab.screenshot({ path: shot, fullPage: true });
  const drawn = await tab.$eval("#world-canvas", (c) => ({ ...c.dataset }));
  console.log(JSON.stringify({
    shot, world: link.slice("/world/".length), players_reached_after_ms: reached, delay_ms: delay,
    frames: Number(drawn.frames), players: Number(drawn.players), rockets: Number(drawn.rockets),
    tick: Number(drawn.tick),
  }));
} catch (e) {
  failed = e;
} finally {
  await Promise.race([browser.close(), new Promise((resolve) => setTimeout(resolve, 5000).unref())]).catch(() => {});
  if (chromiumProcess && chromiumProcess.exitCode === null) chromiumProcess.kill("SIGKILL");
}
if (failed) {
  console.error(`world view screenshot failed: ${failed.message}`);
  process.exit(1);
}
