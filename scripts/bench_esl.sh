#!/usr/bin/env bash
# The ESL consolidation benchmark (docs/BENCHMARKS.md, "ESL consolidation"; issue 20): metafi on
# ONE core (taskset core 0, one match executor thread), metafi-bench on core 1 adding 12-player
# matches step by step until the node refuses ("Node is full") or MAX_MATCHES.
#
#   scripts/bench_esl.sh [extra `metafi serve` flags...]
#
# Environment: TICK_RATE (64 or 128, default 64), PLACEMENT (match.placement: cost or count,
# default cost; it chooses between executor threads, so it only matters with THREADS > 1),
# THREADS (match.executor_threads, default 1: the objective counts each thread as one core),
# EXPENSIVE (the first N matches burn 10x CPU per tick, default 0), MAX_MATCHES (default 40),
# STEP (measured seconds per step, default 10), WORK (rounds of simulated game logic per tick,
# default 20000), OUT (directory for esl.json, the charts esl-latency.svg and esl-cpu.svg,
# bench.txt and the server log, default a temporary one), PORT / METRICS_PORT, SERVER_BIN /
# BENCH_BIN (default the release builds), SERVER_CPUS / BENCH_CPUS (the cores of the server
# and of the tool, default 0 and 1).
# Prints the tool's table (one row per step) and the last step the node accepted.
#
# Placement by cost against by count: MIX (a share of the matches, spread evenly, that burn 10x:
# 0.25 is every fourth match) runs the same load once per placement in PLACEMENTS (default
# "cost count"), alternated RUNS times (default 1), with THREADS default 2, each run in
# OUT/<placement>-<run>/; then prints one row per run with the players' input → update latency
# of cheap and of expensive matches apart (p50/p99, at the run's last step):
#   MIX=0.25 MAX_MATCHES=12 RUNS=2 scripts/bench_esl.sh
#
# Needs release builds:
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

tick_rate=${TICK_RATE:-64}
expensive=${EXPENSIVE:-0}
mix=${MIX:-0}
max_matches=${MAX_MATCHES:-40}
step=${STEP:-10}
work=${WORK:-20000}
out=${OUT:-$(mktemp -d -t metafi-bench-esl.XXXXXX)}
mkdir -p "$out"
target=${CARGO_TARGET_DIR:-target}
bin=${SERVER_BIN:-$target/release/metafi}
bench=${BENCH_BIN:-$target/release/metafi-bench}
port=${PORT:-7470}
metrics_port=${METRICS_PORT:-9170}
server_cpus=${SERVER_CPUS:-0}
bench_cpus=${BENCH_CPUS:-1}
name=bench_esl
# shellcheck source=scripts/bench_server.sh
source scripts/bench_server.sh
trap stop_server EXIT

# run_one DIR PLACEMENT THREADS [extra serve flags...]: one run, its table and summary printed,
# its files in DIR (matches.json: the node's GET /debug/matches, read every 2 s, the last one
# with the most matches: each match's executor thread and tick lateness; matches end when their
# players leave, so the run's end is not the last read).
run_one() {
  local dir=$1 placement=$2 threads=$3 poller
  shift 3
  mkdir -p "$dir"
  start_server "$dir/server.log" --set "match.executor_threads=$threads" \
    --set "match.placement=$placement" "$@"
  [ "$server_cpus" = 0 ] || taskset -a -cp "$server_cpus" "$server" >/dev/null
  (
    most=0
    while sleep 2; do
      curl -sf "http://127.0.0.1:$metrics_port/debug/matches" >"$dir/matches.tmp" || continue
      n=$(grep -o '"match_id"' "$dir/matches.tmp" | wc -l)
      if [ "$n" -ge "$most" ]; then
        most=$n
        mv "$dir/matches.tmp" "$dir/matches.json"
      fi
    done
  ) &
  poller=$!
  taskset -c "$bench_cpus" "$bench" esl --server "http://127.0.0.1:$port" --server-pid "$server" \
    --tick-rate "$tick_rate" --expensive "$expensive" --mix "$mix" \
    --max-matches "$max_matches" --step "${step}s" --work "$work" --out "$dir" |
    tee "$dir/bench.txt" || true
  kill "$poller" 2>/dev/null || true
  wait "$poller" 2>/dev/null || true
  rm -f "$dir/matches.tmp"
  stop_server

  python3 - "$dir/esl.json" "$tick_rate" "$placement" "$expensive" "$mix" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
mix = "" if float(sys.argv[5]) == 0 else f", mix {sys.argv[5]}"
print(f"tick rate {sys.argv[2]}, placement {sys.argv[3]}, expensive {sys.argv[4]}{mix}: stopped: {report['stopped']}")
steps = report["steps"]
if steps:
    last = steps[-1]
    print(f"last step accepted: {last['matches']} matches, {last['players']} players, "
          f"server {last['server_cores']:.2f} cores, {last['players_per_core']:.1f} players per core used, "
          f"input->update p50 {last['latency_p50_ms']} ms p99 {last['latency_p99_ms']} ms, "
          f"node cpu {last['load'].get('cpu')} of {last['load'].get('cpu_objective')}")
    if last.get("expensive_matches"):
        print(f"by class: {last['expensive_matches']} expensive matches; "
              f"cheap p50 {last['cheap_p50_ms']} ms p99 {last['cheap_p99_ms']} ms, "
              f"expensive p50 {last['expensive_p50_ms']} ms p99 {last['expensive_p99_ms']} ms")
PY
}

if ! awk -v mix="$mix" 'BEGIN { exit !(mix > 0) }'; then
  run_one "$out" "${PLACEMENT:-cost}" "${THREADS:-1}" "$@"
  echo "reports in $out"
  exit 0
fi

runs=${RUNS:-1}
placements=${PLACEMENTS:-cost count}
threads=${THREADS:-2}
dirs=()
for run in $(seq 1 "$runs"); do
  for placement in $placements; do
    echo "== run $run, placement $placement, $threads executor threads, mix $mix"
    run_one "$out/$placement-$run" "$placement" "$threads" "$@"
    dirs+=("$out/$placement-$run")
  done
done

python3 - "$mix" "$threads" "${dirs[@]}" <<'PY'
import json, os, sys
mix, threads, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
def ms(v):
    return "-" if v is None else f"{v:.2f}"
def by_class(d, report):
    """Expensive matches per executor thread, and the highest tick lateness (ms) of cheap and
    of expensive matches, from the node's last /debug/matches of the run."""
    try:
        listed = json.load(open(os.path.join(d, "matches.json")))["matches"]
    except (OSError, ValueError, KeyError):
        return "-", "-", "-"
    dear = set(report.get("expensive_ids", []))
    per_thread = [0] * int(threads)
    late = {True: None, False: None}
    for m in listed:
        e = m["match_id"] in dear
        if e and 0 <= m["executor_thread"] < len(per_thread):
            per_thread[m["executor_thread"]] += 1
        v = m["max_lateness_seconds"] * 1000
        late[e] = v if late[e] is None else max(late[e], v)
    return "/".join(map(str, per_thread)), ms(late[False]), ms(late[True])
print(f"\nplacement by cost against by count: mix {mix}, {threads} executor threads "
      "(players' input -> update latency at each run's last step; expensive matches per thread "
      "and the highest tick lateness of cheap and expensive matches from /debug/matches; ms)")
print(f"{'placement':<10} {'run':>3} {'matches':>7} {'expensive':>9} {'cheap p50':>9} {'cheap p99':>9} "
      f"{'exp. p50':>9} {'exp. p99':>9} {'all p99':>9} {'exp./thread':>11} {'cheap late':>10} "
      f"{'exp. late':>9}  stopped")
for d in dirs:
    placement, run = os.path.basename(d).rsplit("-", 1)
    try:
        report = json.load(open(os.path.join(d, "esl.json")))
    except (OSError, ValueError):
        print(f"{placement:<10} {run:>3}  no esl.json")
        continue
    steps = report["steps"]
    if not steps:
        print(f"{placement:<10} {run:>3}  no step measured; stopped: {report['stopped']}")
        continue
    s = steps[-1]
    threads_of, cheap_late, dear_late = by_class(d, report)
    print(f"{placement:<10} {run:>3} {s['matches']:>7} {s.get('expensive_matches', 0):>9} "
          f"{ms(s.get('cheap_p50_ms')):>9} {ms(s.get('cheap_p99_ms')):>9} "
          f"{ms(s.get('expensive_p50_ms')):>9} {ms(s.get('expensive_p99_ms')):>9} "
          f"{ms(s.get('latency_p99_ms')):>9} {threads_of:>11} {cheap_late:>10} {dear_late:>9}  "
          f"{report['stopped']}")
PY
echo "reports in $out"
