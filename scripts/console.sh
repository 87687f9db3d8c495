#!/usr/bin/env bash
# Drives the console (docs/CONSOLE.md) in headless Chromium: signs in, finds a user made
# through the client API, edits its metadata and wallet and reads them back through the client API, browses
# a storage object, calls an RPC from the explorer, watches a match's tick chart move, and checks
# that a read-only user is refused. Saves a screenshot of every page and prints where.
#
#   scripts/console.sh [BIN] [extra serve flags...]
#
# BIN defaults to target/debug/metafi. Needs Debian's chromium (CHROMIUM_PATH overrides
# /usr/bin/chromium) and puppeteer-core (tests/compat's dev dependency, installed here with
# PUPPETEER_SKIP_DOWNLOAD). Screenshots go to CONSOLE_SCREENSHOTS (default
# target/console-screenshots).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh
# shellcheck source=scripts/lib/node_test.sh
. scripts/lib/node_test.sh

bin=${1:-target/debug/metafi}
shift || true

if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  echo "console: chromium missing: installing from Debian packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
(cd tests/compat && {
  [ node_modules/.package-lock.json -nt package-lock.json ] ||
    PUPPETEER_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund --loglevel=error
})

shots=${CONSOLE_SCREENSHOTS:-$root/target/console-screenshots}
mkdir -p "$shots"
config=$(mktemp -t metafi-console-config.XXXXXX.toml)
cat >"$config" <<'TOML'
[console]
users = [
  { username = "admin", password = "console-admin-pw", role = "admin" },
  { username = "viewer", password = "console-viewer-pw", role = "readonly" },
]
TOML
trap 'stop_server; rm -f "$config"' EXIT
start_server "$bin" --config "$config" --set runtime.path=examples "$@"
if [ -z "$SERVER_CONSOLE_PORT" ]; then
  echo "console: the server did not start its console; its log:" >&2
  cat "$SERVER_LOG" >&2
  exit 1
fi
echo "console: metafi API on port $SERVER_PORT, console on port $SERVER_CONSOLE_PORT"
(cd tests/compat && METAFI_TEST_PORT=$SERVER_PORT METAFI_TEST_CONSOLE_PORT=$SERVER_CONSOLE_PORT \
  CONSOLE_SCREENSHOTS=$shots timeout "${CONSOLE_TIMEOUT_SEC:-300}" \
  node --test $force_exit --test-reporter=spec console/console_browser.mjs)
echo "console: screenshots in $shots"
