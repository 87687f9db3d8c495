#!/usr/bin/env bash
# Where a device sign-in's server time goes on PostgreSQL (docs/BENCHMARKS.md, "The sign-in row
# on PostgreSQL"): MetaFi on a fresh database of scripts/postgres.sh, `metafi-bench auth`
# (1,000 users, 16 clients) for 3 s to warm up, then 10 s under `perf record -F 1999 -g` of the
# server process. Read the result with
#   perf report -i OUT/perf.data --no-children --sort dso -g none      # kernel against user space
#   perf report -i OUT/perf.data --no-children --sort symbol -g none   # the functions
#
#   scripts/auth_profile.sh OUT
#
# Environment: BIN / BENCH (default target/release/…; build them with
#   cargo build --release -p metafi-server --bin metafi && cargo build --release -p metafi-bench),
# PORT (default 7476; the metrics port is the next one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

out=${1:?usage: scripts/auth_profile.sh OUT}
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
port=${PORT:-7476}
command -v perf >/dev/null || { echo "auth_profile: needs perf (Debian: linux-perf)" >&2; exit 2; }
mkdir -p "$out"

db=$(METAFI_PG_DATABASE="metafi_auth_profile_$(date +%s%N)" scripts/postgres.sh)
data=$(mktemp -d -t metafi-auth-profile.XXXXXX)
"$bin" serve --port "$port" --metrics-port $((port + 1)) --data-dir "$data" --database-url "$db" \
  --set session.token_expiry_sec=3600 --set logger.level=warn --set console.enabled=false \
  >"$out/server.log" 2>&1 &
server=$!
stop() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$data"
}
trap stop EXIT

for _ in $(seq 1 100); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthcheck" || true)
  [ "$code" != 000 ] && break
  sleep 0.2
done

sign_in() {
  "$bench" auth --users 1000 --clients 16 --duration "$2" --server "http://127.0.0.1:$port" \
    --out "$out/$1" >"$out/$1.txt" 2>&1
}
sign_in warm 3s
perf record -F 1999 -g -p "$server" -o "$out/perf.data" -- sleep 10 >/dev/null 2>&1 &
recorder=$!
sign_in run 10s
wait "$recorder" || true
echo "auth_profile: $out/perf.data ($(grep -E '^\[ +10 s' "$out/run.txt" | tail -1))"
