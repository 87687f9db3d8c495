#!/usr/bin/env bash
# The server's user-space instructions per RPC over REST or the socket (docs/BENCHMARKS.md, "The
# floor of the RPC rows"): MetaFi running an echo RPC (`echo_native` unless ID says which: `echo`
# is the Lua one, `echo_js` JavaScript) or the floor (`metafi-bench floor`) under callgrind,
# driven by metafi-bench's `rpc` workload (16 users, 16 clients, each user's session token reused
# for all its calls, so the verified-token cache is hit after its first call; over the socket
# each client keeps one socket for all its calls).
# Instruction counts do not depend on the machine's load (this KVM exposes no hardware
# counters to `perf stat`), so it can run on a busy machine.
#
#   [ID=echo] [TRANSPORT=socket] scripts/rest_instructions.sh metafi|floor
#
# Three runs, counted from the first on, a dump after each: 3 s to warm the server up (its
# threads, allocator pages, lazily made handles), then 8 s and 16 s. Every run signs 16 new
# devices in first (not part of the client's measurement, but the server's work), the same
# cost in the 8 s and 16 s runs, so their difference divided by the difference of their call
# counts is the instructions of one call: the last line printed.
#
# Environment: BIN / BENCH (default target/release/…; build them with
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench),
# OUT (callgrind files and reports, default a temporary directory), PORT (default 7470),
# ID (the RPC, default echo_native), TRANSPORT (rest, the default, or socket).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

target=${1:?usage: scripts/rest_instructions.sh metafi|floor}
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
port=${PORT:-7470}
out=${OUT:-$(mktemp -d -t metafi-instructions.XXXXXX)}
id=${ID:-echo_native}
case "${TRANSPORT:-rest}" in
  rest) transport=() ;;
  socket) transport=(--socket) ;;
  *) echo "TRANSPORT is rest or socket, not '$TRANSPORT'" >&2; exit 2 ;;
esac
mkdir -p "$out"

data=""
case "$target" in
  metafi)
    data=$(mktemp -d -t metafi-instructions-data.XXXXXX)
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.%p" \
      "$bin" serve --port "$port" --metrics-port $((port + 1)) --data-dir "$data" \
      --set runtime.path=examples --set session.token_expiry_sec=3600 \
      --set logger.level=warn --set console.enabled=false >"$out/server.log" 2>&1 &
    ;;
  floor)
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.%p" \
      "$bench" floor --listen "127.0.0.1:$port" >"$out/server.log" 2>&1 &
    ;;
  *) echo "usage: scripts/rest_instructions.sh metafi|floor" >&2; exit 2 ;;
esac
server=$!
stop() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  [ -z "$data" ] || rm -rf "$data"
}
trap stop EXIT

# Under valgrind the server takes a while to listen; any HTTP answer will do (the floor has no
# /healthcheck).
for _ in $(seq 1 600); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthcheck" || true)
  [ "$code" != 000 ] && break
  sleep 0.5
done

# Counting stays on from the first run to the last (switching it off and on between runs
# leaves dumps whose totals do not add up); the server is idle between runs.
callgrind_control -i on "$server" >/dev/null
run() {
  local name=$1 seconds=$2
  "$bench" rpc --id "$id" "${transport[@]}" --users 16 --clients 16 --duration "${seconds}s" \
    --server "http://127.0.0.1:$port" --out "$out/$name" >"$out/$name.txt" 2>&1
  # A dump holds what was counted since the one before.
  callgrind_control -d "$name" "$server" >/dev/null
}
run warmup 3
run short 8
run long 16
stop
trap - EXIT

PYTHONPATH=scripts/lib python3 - "$out" <<'EOF'
import sys
from callgrind_dumps import dump, successes
out = sys.argv[1]
runs = {}
for name in ("short", "long"):
    _, ir = dump(out, name)
    calls = successes(out, name)
    runs[name] = (ir, calls)
    print(f"{name}: {ir:,} instructions, {calls:,} calls ({ir / calls:,.0f} per call, sign-ins included)")
(i1, n1), (i2, n2) = runs["short"], runs["long"]
print(f"{out}: {(i2 - i1) / (n2 - n1):,.0f} instructions per call (long - short)")
EOF
