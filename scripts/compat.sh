#!/usr/bin/env bash
# Runs the nakama-js compatibility suite (tests/compat) against a freshly started metafi, or
# against a real Nakama (the oracle: every test asserts Nakama's answer; docs/COMPAT.md).
#
#   scripts/compat.sh [BIN] [extra serve flags...]
#   scripts/compat.sh --nakama [SRC]      build and start Nakama with scripts/nakama.sh
#
# BIN defaults to target/release/metafi. Extra flags go to `metafi serve`, e.g.
# `--database-url postgres://…` to run the suite on PostgreSQL. Tests of known differences
# (KNOWN_DIFFERENCES in tests/compat/support.mjs) are skipped on MetaFi and run on Nakama.
# COMPAT_FILES="party.test.mjs match.test.mjs" runs only those files.
# The browser test needs Chromium (/usr/bin/chromium, or CHROMIUM_PATH).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh
# shellcheck source=scripts/lib/node_test.sh
. scripts/lib/node_test.sh

token_ttl=3

# Reinstall when the lock file changed since the last install (npm keeps a copy of what it
# installed in node_modules/.package-lock.json).
# A node_modules that is a symbolic link (another checkout's) is refused: `npm ci` would empty
# the folder it points to.
(cd tests/compat && {
  if [ -L node_modules ]; then
    echo "tests/compat/node_modules is a symbolic link: npm ci would empty the folder it points to; remove the link and run this again (it installs its own)" >&2
    exit 1
  fi
  [ node_modules/.package-lock.json -nt package-lock.json ] ||
    PUPPETEER_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund --loglevel=error
})

# A hang guard for the whole suite (every test has its own timeouts too).
suite_timeout=${COMPAT_TIMEOUT_SEC:-900}

if [ "${1:-}" = "--nakama" ]; then
  trap 'scripts/nakama.sh stop' EXIT
  port=$(NAKAMA_TOKEN_EXPIRY_SEC=$token_ttl scripts/nakama.sh start "${2:-}")
  echo "compat: Nakama on port $port"
  (cd tests/compat && METAFI_TEST_SERVER=nakama METAFI_TEST_PORT=$port \
    METAFI_TEST_TOKEN_EXPIRY_SEC=$token_ttl timeout "$suite_timeout" npm test -- $force_exit ${COMPAT_FILES:-})
  exit
fi

bin=${1:-target/release/metafi}
shift || true

# The modules: examples/ (lua/echo.lua, js/…; echo_native is compiled in with the `examples`
# feature, which BIN must have) and the suite's own fixtures (tests/compat/modules), side by
# side as scripts/nakama.sh gives them to Nakama.
modules=$(mktemp -d -t metafi-compat-modules.XXXXXX)
cp -r examples/lua examples/js "$modules/"
cp -r tests/compat/modules/. "$modules/"
trap 'stop_server; rm -rf "$modules"' EXIT
# A one-second matchmaker interval, so the matchmaker test does not wait 15 s per pass.
# The Instant Games app secret tests/compat/social_auth.test.mjs signs player info with, and the
# one iap.test.mjs signs Facebook Instant payments with (scripts/nakama.sh sets both too).
start_server "$bin" --set session.token_expiry_sec=$token_ttl --set runtime.path="$modules" \
  --set matchmaker.interval_sec=1 \
  --set social.facebook_instant_game.app_secret=compat-instant-secret \
  --set iap.facebook_instant.app_secret=compat-fb-instant-secret "$@"
require_examples compat
echo "compat: metafi on port $SERVER_PORT ($*)"
(cd tests/compat && METAFI_TEST_SERVER=metafi METAFI_TEST_PORT=$SERVER_PORT \
  METAFI_TEST_TOKEN_EXPIRY_SEC=$token_ttl timeout "$suite_timeout" npm test -- $force_exit ${COMPAT_FILES:-})
