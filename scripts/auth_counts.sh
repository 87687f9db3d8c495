#!/usr/bin/env bash
# What one device sign-in on PostgreSQL costs the server, counted rather than timed (docs/
# BENCHMARKS.md, "The sign-in row on PostgreSQL"), so it can run on a busy machine:
#
#   scripts/auth_counts.sh instructions   # user-space instructions per sign-in (callgrind)
#   scripts/auth_counts.sh syscalls       # system calls per sign-in, by name (strace -c)
#
# Both run MetaFi on a fresh database of scripts/postgres.sh, pinned to core 0 as
# scripts/bench_nakama.sh pins it (so its runtime has one worker thread, as in the timed row),
# driven by `metafi-bench auth` (1,000 existing users, 16 clients) from core 1.
#
# instructions: the server under callgrind, counting from the first run on with a dump after
# each: 3 s to warm up, then 8 s and 16 s. Each run first creates its 1,000 users (the same
# work in both), so (16 s count − 8 s count) / (their sign-in difference) is one sign-in. The
# second line splits off SHA-256's compression function: valgrind's CPU has no SHA extensions,
# so the tokens' HMACs run in software under it, several times their cost on the real CPU.
#
# syscalls: the server runs natively; after a 3 s warm-up, strace -c -f counts its system calls
# over a 4 s and a 12 s run: their difference over their sign-in difference, by name. The
# epoll_wait count per sign-in depends on load (a busy server finds more events per call), so
# compare builds one after the other.
#
# Environment: BIN / BENCH (default target/release/…; build them with
#   cargo build --release -p metafi-server --bin metafi && cargo build --release -p metafi-bench),
# OUT (default a temporary directory), PORT (default 7950; the metrics port is the next one),
# SERVER_ARGS (more `metafi serve` arguments, split on spaces, e.g.
# "--set runtime.path=DIR" to count a sign-in with the hooks of DIR's modules).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mode=${1:?usage: scripts/auth_counts.sh instructions|syscalls}
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
port=${PORT:-7950}
out=${OUT:-$(mktemp -d -t metafi-auth-counts.XXXXXX)}
mkdir -p "$out"
case "$mode" in
  instructions) wrapper=(valgrind --tool=callgrind --instr-atstart=no
    --callgrind-out-file="$out/callgrind.%p") ;;
  syscalls)
    command -v strace >/dev/null || { echo "auth_counts: needs strace" >&2; exit 2; }
    wrapper=() ;;
  *) echo "usage: scripts/auth_counts.sh instructions|syscalls" >&2; exit 2 ;;
esac

read -r -a server_args <<<"${SERVER_ARGS:-}"
db=$(METAFI_PG_DATABASE="metafi_auth_counts_$(date +%s%N)" scripts/postgres.sh)
data=$(mktemp -d -t metafi-auth-counts-data.XXXXXX)
taskset -c 0 "${wrapper[@]}" "$bin" serve --port "$port" --metrics-port $((port + 1)) \
  --data-dir "$data" --database-url "$db" --set session.token_expiry_sec=3600 \
  --set logger.level=warn --set console.enabled=false "${server_args[@]}" >"$out/server.log" 2>&1 &
server=$!
tracer=""
stop() {
  [ -z "$tracer" ] || { kill -INT "$tracer" 2>/dev/null || true; wait "$tracer" 2>/dev/null || true; }
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$data"
}
trap stop EXIT

# Under valgrind the server takes a while to listen.
for _ in $(seq 1 600); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthcheck" || true)
  [ "$code" != 000 ] && break
  kill -0 "$server" 2>/dev/null || { cat "$out/server.log" >&2; exit 1; }
  sleep 0.5
done

sign_in() {
  # A generous timeout: under callgrind the first answers are slow.
  taskset -c 1 "$bench" auth --users 1000 --clients 16 --duration "$2s" --timeout 120s \
    --server "http://127.0.0.1:$port" --out "$out/$1" >"$out/$1.txt" 2>&1
}

if [ "$mode" = syscalls ]; then
  sign_in warmup 3
  # strace counts a whole run, its 1,000 new users included; those are the same work in a 4 s
  # and a 12 s run, so the difference of the two is sign-ins alone.
  for run in short:4 long:12; do
    strace -c -f -p "$server" -o "$out/strace.${run%:*}.txt" 2>"$out/strace.${run%:*}.log" &
    tracer=$!
    sleep 1 # strace attaches to every thread before the run starts
    sign_in "${run%:*}" "${run#*:}"
    kill -INT "$tracer"
    wait "$tracer" || true
    tracer=""
  done
  python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
def counts(name):
    calls = {}
    for line in open(f"{out}/strace.{name}.txt"):
        parts = line.split()
        # % time, seconds, usecs/call, calls, [errors,] syscall
        if len(parts) in (5, 6) and parts[3].isdigit() and parts[-1] != "total":
            calls[parts[-1]] = int(parts[3])
    n = json.load(open(f"{out}/{name}/report.json"))["per_server"][0]["successes"]
    return calls, n
(short, n1), (long, n2) = counts("short"), counts("long")
n = n2 - n1
per = {k: (long.get(k, 0) - short.get(k, 0)) / n for k in set(short) | set(long)}
print(f"{out}: {n1:,} and {n2:,} sign-ins; per sign-in (long - short): "
      f"{sum(per.values()):.2f} system calls")
for name, count in sorted(per.items(), key=lambda kv: -kv[1]):
    if abs(count) >= 0.005:
        print(f"  {name:<16} {count:6.2f}")
EOF
  exit 0
fi

# Counting stays on from the first run to the last; the server is idle between runs.
callgrind_control -i on "$server" >/dev/null
for run in warmup:3 short:8 long:16; do
  sign_in "${run%:*}" "${run#*:}"
  # A dump holds what was counted since the one before.
  callgrind_control -d "${run%:*}" "$server" >/dev/null
done
stop
trap - EXIT

PYTHONPATH=scripts/lib python3 - "$out" <<'EOF'
import re, subprocess, sys
from callgrind_dumps import dump, successes
out = sys.argv[1]
runs = {}
for name in ("short", "long"):
    path, ir = dump(out, name)
    # Self cost, summed over the lines callgrind splits a function into by source file.
    annotated = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", path],
        capture_output=True, text=True, check=True).stdout
    sha = sum(int(m.group(1).replace(",", "")) for m in re.finditer(
        r"^\s*([\d,]+) \([^)]*\)\s+\S*:\S*(?:sha256::soft::compress|sha256_block_data_order)",
        annotated, re.M))
    calls = successes(out, name)
    runs[name] = (ir, sha, calls)
    print(f"{name}: {ir:,} instructions ({sha:,} in SHA-256), {calls:,} sign-ins")
(i1, s1, n1), (i2, s2, n2) = runs["short"], runs["long"]
print(f"{out}: {(i2 - i1) / (n2 - n1):,.0f} instructions per sign-in (long - short)")
print(f"{out}: {((i2 - s2) - (i1 - s1)) / (n2 - n1):,.0f} of them outside SHA-256's compression")
EOF
