#!/usr/bin/env bash
# Runs the nakama-js compatibility suite (tests/compat) against a freshly started metafi.
#
#   scripts/compat.sh [BIN] [extra serve flags...]
#
# BIN defaults to target/release/metafi. Extra flags go to `metafi serve`, e.g.
# `--database-url postgres://…` to run the suite on PostgreSQL.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh

bin=${1:-target/release/metafi}
shift || true
token_ttl=3

# Reinstall when the lock file changed since the last install (npm keeps a copy of what it
# installed in node_modules/.package-lock.json).
(cd tests/compat && {
  [ node_modules/.package-lock.json -nt package-lock.json ] ||
    npm ci --no-audit --no-fund --loglevel=error
})

trap stop_server EXIT
# examples/ holds the echo modules (lua/echo.lua, js/…); echo_native is compiled in with the
# `examples` feature, which BIN must have.
# A one-second matchmaker interval, so the matchmaker test does not wait 15 s per pass.
start_server "$bin" --set session.token_expiry_sec=$token_ttl --set runtime.path=examples \
  --set matchmaker.interval_sec=1 "$@"
require_examples compat
echo "compat: metafi on port $SERVER_PORT ($*)"
(cd tests/compat && METAFI_TEST_PORT=$SERVER_PORT METAFI_TEST_TOKEN_EXPIRY_SEC=$token_ttl npm test)
