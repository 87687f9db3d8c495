#!/usr/bin/env bash
# The console's live top-down view of a world (docs/CONSOLE.md, "Worlds") in headless
# Chromium: starts a metafi with a world (`[world] enabled`, the arena), puts bots in it with
# `metafi-bench world`, then tests/compat/console/world_browser.mjs signs in, opens the world
# from the Worlds list and checks the canvas draws the bots (pixels, and a drawing that changes
# as they move). Saves screenshots and prints where.
#
#   scripts/world_view.sh [METAFI_BIN] [BENCH_BIN]     (defaults: the debug builds)
#
# Needs Debian's chromium (CHROMIUM_PATH overrides /usr/bin/chromium) and puppeteer-core
# (tests/compat's dev dependency). Screenshots go to WORLD_SCREENSHOTS (default
# target/world-screenshots); WORLD_VIEW_BOTS bots (default 40).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh
# shellcheck source=scripts/lib/node_test.sh
. scripts/lib/node_test.sh

bin=${1:-target/debug/metafi}
bench=${2:-target/debug/metafi-bench}
bots=${WORLD_VIEW_BOTS:-40}

if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  echo "world view: chromium missing: installing from Debian packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
(cd tests/compat && {
  [ node_modules/.package-lock.json -nt package-lock.json ] ||
    PUPPETEER_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund --loglevel=error
})

shots=${WORLD_SCREENSHOTS:-$root/target/world-screenshots}
mkdir -p "$shots"
config=$(mktemp -t metafi-world-view.XXXXXX.toml)
cat >"$config" <<'TOML'
[console]
users = [{ username = "admin", password = "console-admin-pw", role = "admin" }]

[world]
enabled = true
map = "arena"
threads = 1
max_players = 200
TOML
bench_pid=""
cleanup() {
  if [ -n "$bench_pid" ]; then kill "$bench_pid" 2>/dev/null || true; wait "$bench_pid" 2>/dev/null || true; fi
  stop_server
  rm -f "$config"
}
trap cleanup EXIT
start_server "$bin" --config "$config" --set session.token_expiry_sec=600
if [ -z "$SERVER_CONSOLE_PORT" ]; then
  echo "world view: the server did not start its console; its log:" >&2
  cat "$SERVER_LOG" >&2
  exit 1
fi
echo "world view: metafi API on port $SERVER_PORT, console on port $SERVER_CONSOLE_PORT; $bots bots"
bench_log="$SERVER_DATA/bench.log"
"$bench" world --server "http://127.0.0.1:$SERVER_PORT" --users "$bots" --phase "$bots:1s" --phase 0:200s \
  --hold 200s --format protobuf --progress-every 60s >"$bench_log" 2>&1 &
bench_pid=$!
(cd tests/compat && METAFI_TEST_PORT=$SERVER_PORT METAFI_TEST_CONSOLE_PORT=$SERVER_CONSOLE_PORT \
  WORLD_SCREENSHOTS=$shots WORLD_VIEW_MIN_PLAYERS=$((bots / 2)) timeout "${WORLD_VIEW_TIMEOUT_SEC:-180}" \
  node --test $force_exit --test-reporter=spec console/world_browser.mjs) || {
  echo "world view: failed; the bots' log:" >&2
  tail -20 "$bench_log" >&2
  exit 1
}
echo "world view: screenshots in $shots"
