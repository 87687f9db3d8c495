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

(cd tests/compat && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; })

trap stop_server EXIT
start_server "$bin" --set session.token_expiry_sec=$token_ttl "$@"
echo "compat: metafi on port $SERVER_PORT ($*)"
(cd tests/compat && METAFI_TEST_PORT=$SERVER_PORT METAFI_TEST_TOKEN_EXPIRY_SEC=$token_ttl npm test)
