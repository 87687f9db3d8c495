#!/usr/bin/env bash
# The seed benchmark's match workload against metafi on ONE server core (docs/BENCHMARKS.md,
# "Authoritative matches"): the server pinned to core 0, metafi-bench pinned to core 1.
#
#   scripts/bench_match.sh PLAYERS RPC [extra `metafi serve` flags...]
#
# RPC is get_match (Lua), get_match_js (JavaScript) or get_match_native (each reserves the
# player's seat with nk.match_find_seat), or get_match_plain, get_match_js_plain,
# get_match_native_plain (the seed's logic with no reservation, to compare the share of players
# seated, printed as "seats: …"; docs/MATCHES.md, "Seats"). Environment: RATE
# (arrivals per second, default 400), HOLD (seconds of steady state after the ramp, default 60),
# OUT (directory for the reports, default a temporary one), BIN / BENCH (the binaries, default
# target/release/…; a build in another CARGO_TARGET_DIR is named here). Prints the steady-state
# numbers: echo / broadcast latency percentiles over the hold (from the tool's per-second
# histograms), tick lateness p99 (from the server's Prometheus histogram over the same window),
# server CPU; and up to the steady window (the rush) and over it, ticks late past the objective
# by cause, the executor's own part of their lateness by the work that ran while they were due,
# and the matches admission refused.
# Needs release builds (the server with the example modules, for get_match_native):
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

players=$1
rpc=$2
shift 2
rate=${RATE:-400}
hold=${HOLD:-60}
out=${OUT:-$(mktemp -d -t metafi-bench-match.XXXXXX)}
mkdir -p "$out"
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
port=${PORT:-7460}
metrics_port=${METRICS_PORT:-9160}
name=bench_match
# shellcheck source=scripts/bench_server.sh
source scripts/bench_server.sh
trap stop_server EXIT
start_server "$out/server.log" "$@"

ramp=$(( (players + rate - 1) / rate ))
# Steady window: from 5 s after the last arrival to 3 s before the end.
steady_from=$(( ramp + 5 ))
steady_to=$(( ramp + hold - 3 ))
cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
# Each thread's name, id and CPU ticks (user + system): which threads the server's CPU went to.
threads() {
  for t in /proc/"$server"/task/*; do
    printf '%s\t%s\t%s\n' "$(cat "$t/comm" 2>/dev/null)" "${t##*/}" "$(awk '{print $14 + $15}' "$t/stat" 2>/dev/null)"
  done
}
(
  sleep "$steady_from"
  curl -s "http://127.0.0.1:$metrics_port/metrics" >"$out/metrics.start"
  cpu >"$out/cpu.start"
  threads >"$out/threads.start"
  sleep $(( steady_to - steady_from ))
  curl -s "http://127.0.0.1:$metrics_port/metrics" >"$out/metrics.end"
  cpu >"$out/cpu.end"
  threads >"$out/threads.end"
  curl -s "http://127.0.0.1:$metrics_port/debug/matches" >"$out/matches.json"
) &
sampler=$!

taskset -c 1 "$bench" match --server "http://127.0.0.1:$port" --rpc "$rpc" --users "$players" \
  --phase "$rate:${ramp}s" --phase "0:${hold}s" --hold "$(( ramp + hold ))s" \
  --server-pid "$server" --out "$out" --progress-every 10s >"$out/bench.txt" 2>&1 || true
wait "$sampler" || true

python3 - "$out" "$steady_from" "$steady_to" "$(getconf CLK_TCK)" <<'EOF'
import json, sys, re
out, t0, t1, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def buckets(path, name):
    found = {}
    for line in open(path):
        m = re.match(name + r'_bucket\{.*le="([^"]+)"\} (\S+)', line)
        if m:
            le = float('inf') if m.group(1) == '+Inf' else float(m.group(1))
            found[le] = found.get(le, 0) + float(m.group(2))
    return found

def quantile_bound(name, q):
    a, b = buckets(f"{out}/metrics.start", name), buckets(f"{out}/metrics.end", name)
    diff = sorted((le, b[le] - a.get(le, 0)) for le in b)
    total = diff[-1][1] if diff else 0
    if total <= 0:
        return None, 0
    for le, count in diff:
        if count >= q * total:
            return le, total
    return float('inf'), total

report = json.load(open(f"{out}/report.json"))
names = [s if isinstance(s, str) else s.get("name") for s in report["timeline_series"]]
steady = [p for p in report["timeline"] if t0 <= p["at"] <= t1]
for name in ("echo", "broadcast"):
    i = names.index(name)
    rows = [p["series"][i] for p in steady if p["series"][i]["count"] > 0]
    if not rows:
        print(f"{name}: no samples in the steady window")
        continue
    def med(key):
        values = sorted(r[key] for r in rows)
        return values[len(values) // 2]
    count = sum(r["count"] for r in rows)
    worst = max(r["p99_ms"] for r in rows)
    print(f"{name}: {count / len(rows):.0f}/s; per-second p50 median {med('p50_ms'):.1f} ms, p99 median {med('p99_ms'):.1f} ms, p99 worst second {worst:.1f} ms")
errors = report.get("errors")
print(f"errors over the run: {errors}")
for note in report.get("notes", []):
    if note.startswith("seats:"):
        print(note)
cpu = (float(open(f"{out}/cpu.end").read()) - float(open(f"{out}/cpu.start").read())) / hz
print(f"steady window {t0}-{t1} s: server CPU {cpu:.1f} s over {t1 - t0} s = {cpu / (t1 - t0):.2f} cores")
# Cores per thread name (trailing numbers dropped: all IO workers together; threads alive at
# both ends of the window only: one that ended in it took its CPU with it), beside what the
# match engine counts as its matches' cost (metafi_match_executor_cpu_ratio: their own time,
# which includes time blocked in a tick, not only CPU).
def per_thread(path):
    found = {}
    for line in open(path):
        fields = line.rstrip("\n").split("\t")
        if len(fields) == 3 and fields[2]:
            found[fields[1]] = (re.sub(r"[-_ ]?\d+$", "", fields[0]), float(fields[2]))
    return found
a, b = per_thread(f"{out}/threads.start"), per_thread(f"{out}/threads.end")
by_name = {}
for tid, (name, ticks) in b.items():
    if tid in a:
        by_name[name] = by_name.get(name, 0) + ticks - a[tid][1]
shares = sorted((v / hz / (t1 - t0), k) for k, v in by_name.items())
print("steady cores by thread: " + ", ".join(f"{k} {c:.2f}" for c, k in reversed(shares) if c >= 0.005))
for line in open(f"{out}/metrics.end"):
    if line.startswith("metafi_match_executor_cpu_ratio"):
        print("at the end, the engine's count of its matches' cost: " + line.strip())
for q in (0.5, 0.99):
    le, n = quantile_bound("metafi_match_tick_lateness_seconds", q)
    print(f"tick lateness p{int(q*100)} <= {le} s ({int(n)} ticks)")
le, n = quantile_bound("metafi_match_tick_duration_seconds", 0.99)
print(f"tick duration p99 <= {le} s")
# Ticks late past the objective by cause (docs/MATCHES.md, "Whose lateness"), their own lateness
# by work ("Whose work"), tick slots stretched ("Overload") and the matches admission refused: up
# to the steady window's start (the rush and 5 s after it) and over the steady window.
def counters(path):
    found = {}
    for line in open(path):
        if line.startswith(("metafi_match_ticks_late_total", "metafi_match_own_lateness_microseconds_total", "metafi_match_admission_refused_total", "metafi_match_ticks_stretched_total")):
            key, value = line.rsplit(" ", 1)
            found[key] = float(value)
    return found
early, late = counters(f"{out}/metrics.start"), counters(f"{out}/metrics.end")
for key in sorted(late):
    print(f"rush: {key} {early.get(key, 0):.0f}; steady: {late[key] - early.get(key, 0):.0f}")
EOF
echo "reports in $out"
