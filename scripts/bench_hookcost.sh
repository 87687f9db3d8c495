#!/usr/bin/env bash
# The hook-pair cost before and after a change, in one session (docs/BENCHMARKS.md, "Hooks"):
# two server binaries (BASE_BIN, BIN) alternate run by run; device authentication of 1,000
# existing users with no hook, then with the pass-through Lua, JavaScript and native
# before+after pairs on AuthenticateDevice; and the hook-free Lua and JS RPC echo over REST and
# the socket. Server on core 0, metafi-bench on core 1, a fresh server and data directory per
# row. Prints the median server CPU per call of every row.
#
#   BASE_BIN=/path/to/old/metafi scripts/bench_hookcost.sh [auth] [rpc]   (default: both)
#
# Environment: BIN / BENCH (default target/release/…), RUNS (default 3), DURATION (seconds per
# run, default 8), CLIENTS (default 64), OUT, PORT / METRICS_PORT (default 7490 / 9190).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=${RUNS:-3}
duration=${DURATION:-8}
clients=${CLIENTS:-64}
port=${PORT:-7490}
metrics_port=${METRICS_PORT:-9190}
out=${OUT:-$(mktemp -d -t metafi-bench-hookcost.XXXXXX)}
mkdir -p "$out"
new_bin=${BIN:-target/release/metafi}
base_bin=${BASE_BIN:?set BASE_BIN to the metafi binary to compare with}
bench=${BENCH:-target/release/metafi-bench}
for b in "$new_bin" "$base_bin" "$bench"; do
  [ -x "$b" ] || { echo "bench_hookcost: $b is missing: build it first" >&2; exit 1; }
done

name=bench_hookcost
bin=$new_bin
# shellcheck source=scripts/bench_server.sh
source scripts/bench_server.sh
trap stop_server EXIT

modules=$out/modules
write_hook_modules "$modules"

auth_rows() {
  for r in $(seq 1 "$runs"); do
    for hooks in none lua js native; do
      for build in base new; do
        if [ "$build" = base ]; then bin=$base_bin; else bin=$new_bin; fi
        local env='[]'
        [ "$hooks" = native ] && env='["native_hooks=on"]'
        start_server "$out/server.log" --set "runtime.path=$modules/$hooks" --set "runtime.env=$env"
        run "auth-$hooks-$build-$r" auth --users 1000
        stop_server
      done
    done
  done
}

rpc_rows() {
  for r in $(seq 1 "$runs"); do
    for build in base new; do
      if [ "$build" = base ]; then bin=$base_bin; else bin=$new_bin; fi
      start_server "$out/server.log"
      run "rpc-lua-rest-$build-$r" rpc --id echo --users "$clients"
      run "rpc-lua-socket-$build-$r" rpc --id echo --socket --users "$clients"
      run "rpc-js-rest-$build-$r" rpc --id echo_js --users "$clients"
      run "rpc-js-socket-$build-$r" rpc --id echo_js --socket --users "$clients"
      stop_server
    done
  done
}

echo "bench_hookcost: $runs run(s) of ${duration}s, $clients clients; reports in $out"
uptime
for part in "${@:-auth rpc}"; do
  for p in $part; do
    case "$p" in
      auth) auth_rows ;;
      rpc) rpc_rows ;;
      *) echo "bench_hookcost: unknown part $p (auth, rpc)" >&2; exit 2 ;;
    esac
  done
done
uptime
echo
# Names are NAME-RUN; the median is over a row's runs, by server CPU per call.
sed -E 's/-[0-9]+\t.*//' "$out/summary.txt" | sort -u | while read -r row; do
  grep -P "^$row-[0-9]+\t" "$out/summary.txt" | awk -F'\t' '{split($7, a, " "); print a[1] "\t" $0}' |
    sort -g | awk -v n="$runs" 'NR == int((n + 1) / 2)' | cut -f2- | sed 's/^/median: /'
done
