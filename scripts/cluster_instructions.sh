#!/usr/bin/env bash
# The server's user-space instructions per delivered match message, two nodes that are not a
# cluster ("pair") against two that are ("cluster") (issue 18; docs/CLUSTER.md, "Cost per
# request in a cluster"). CPU time cannot tell the two apart on this shared 2-core machine
# (runs of one layout spread by up to 14 %); instruction counts do not depend on its load.
#
#   scripts/cluster_instructions.sh                  (both layouts, one repeat)
#   REPEATS=2 LAYOUTS=cluster scripts/cluster_instructions.sh
#
# Both nodes run under callgrind with counting off. WORKLOAD=match (the default) is
# bench_cluster.sh's `metafi-bench match` (Lua match, 10 players a match) at a small fixed
# scale, so that the nodes keep up although valgrind slows them ~50x, with the players placed
# (`--cross-node`): the matches are made on both nodes first, and in the cluster CROSS (default
# half) of each node's players join the other node's match by id, so their messages cross NATS
# both ways; in the pair every player stays on its node (two nodes that are not a cluster cannot
# join each other's matches), in matches of the same size. Once every player is in (the
# sign-ins and joins are not counted), counting goes on for two windows of play, SHORT and LONG
# seconds, each ended by a read of both nodes' `metafi_realtime_messages_sent_total{type=
# "match_data"}` (match data queued to their clients: every delivery once, echo and broadcast),
# of `metafi_cluster_messages_sent_total{kind}` (what crossed NATS: deliveries, casts, …) and a
# dump. Each window's instructions, summed over both nodes, per delivered message are printed,
# and (long − short) over (long − short) messages; both include what goes with time at that
# rate (match ticks; in the cluster, heartbeats, digests and listings).
#
# WORKLOAD=ccu counts held sockets (`metafi-bench ccu`: each user signs up by device, opens the
# socket and holds it): an IDLE-second window with no user (what the nodes cost with time
# alone), then the PLAYERS sign-ins and connects (counted until the last socket is open, plus
# 5 s; the wait reads the bench's progress, not the nodes), then LONG seconds of holding them
# all. Printed: instructions per sign-in and connect, also without PostgreSQL's SCRAM
# authentication of the pool's new connections (how many the pool opens depends on the pace),
# and per socket and second held over the idle rate, both nodes summed.
#
# NATS batching depends on timing, and valgrind changes the timing: the count is for this
# scale and rate (REPEATS shows how much it moves from run to run).
#
# Callgrind sees user space only. COUNT=syscalls runs the nodes natively instead and counts,
# with `perf stat` over one window of LONG seconds, the system calls (raw_syscalls:sys_enter)
# and context switches of both nodes per delivered message: the kernel side of the cost
# (sockets, wake-ups), which depends on how messages are batched, so on timing, and the
# context switches also on what else runs on the machine.
#
# Environment: BIN / BENCH (default target/release/…; build them with
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench),
# COUNT (instructions or syscalls, default instructions), WORKLOAD (match or ccu, default
# match), LAYOUTS (default "pair cluster"), REPEATS (default 1), PLAYERS (default 100; ccu: the
# sockets), INTERVAL (time between two messages of one player, default 1s), CROSS (share of each
# node's players in the other node's match in the cluster, default 0.5), SHORT / LONG (seconds
# of a window, default 15 / 30), IDLE (ccu: seconds of the idle window, default 10), OUT
# (callgrind files and reports, default a temporary directory), PORT_BASE (node n listens on
# PORT_BASE + 10n, default 7700). Needs PostgreSQL (scripts/postgres.sh) and NATS
# (METAFI_TEST_NATS_URL, else scripts/nats.sh's shared server, which is left running).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
for b in "$bin" "$bench"; do
  [ -x "$b" ] || { echo "cluster_instructions: $b is missing: build it first (see the header)" >&2; exit 1; }
done
count=${COUNT:-instructions}
case $count in
  instructions) command -v callgrind_control >/dev/null || { echo "cluster_instructions: needs valgrind (apt-get install valgrind)" >&2; exit 1; } ;;
  syscalls) command -v perf >/dev/null || { echo "cluster_instructions: needs perf (apt-get install linux-perf)" >&2; exit 1; } ;;
  *) echo "cluster_instructions: COUNT is instructions or syscalls" >&2; exit 2 ;;
esac
workload=${WORKLOAD:-match}
case $workload in
  match | ccu) ;;
  *) echo "cluster_instructions: WORKLOAD is match or ccu" >&2; exit 2 ;;
esac
if [ "$workload" = ccu ] && [ "$count" = syscalls ]; then
  echo "cluster_instructions: COUNT=syscalls is for WORKLOAD=match" >&2
  exit 2
fi
players=${PLAYERS:-100}
cross=${CROSS:-0.5}
idle=${IDLE:-10}
interval=${INTERVAL:-1s}
short=${SHORT:-15}
long=${LONG:-30}
repeats=${REPEATS:-1}
port_base=${PORT_BASE:-7700}
out=${OUT:-$(mktemp -d -t metafi-cluster-instructions.XXXXXX)}
mkdir -p "$out"
nats=${METAFI_TEST_NATS_URL:-$(scripts/nats.sh)}

pids=()
datas=()
bench_pid=""
stop_nodes() {
  local pid d
  if [ -n "$bench_pid" ]; then
    kill -INT "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
    bench_pid=""
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
  for d in "${datas[@]}"; do rm -rf "$d"; done
  datas=()
}
trap stop_nodes EXIT

# start_nodes LAYOUT DIR: two nodes under callgrind on a fresh database; sets servers/pids.
start_nodes() {
  local layout=$1 dir=$2 db n port data
  db=$(METAFI_PG_DATABASE="metafi_cluster_instr_$(date +%s%N)" scripts/postgres.sh)
  servers=""
  for n in 1 2; do
    port=$((port_base + 10 * n))
    data=$(mktemp -d -t metafi-instructions-data.XXXXXX)
    datas+=("$data")
    local cluster=()
    # Budgets and timeouts raised for valgrind's pace, the same in both layouts (defaults
    # otherwise: heartbeats, digests and listings every second, batching as configured).
    if [ "$layout" = cluster ]; then
      cluster=(--cluster "$nats" --node "n$n" --set "cluster.subject_prefix=instr$$"
        --set cluster.peer_lost_timeout_ms=30000 --set cluster.call_timeout_ms=30000)
    fi
    local wrap=()
    if [ "$count" = instructions ]; then
      wrap=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/callgrind.n$n.%p")
    fi
    "${wrap[@]}" "$bin" serve --port "$port" --metrics-port $((port + 1)) --quic-port $((port + 2)) \
      --data-dir "$data" --database-url "$db" "${cluster[@]}" \
      --set runtime.path=examples --set session.token_expiry_sec=3600 --set logger.level=warn --set console.enabled=false \
      --set runtime.call_timeout_ms=60000 --set match.handler_budget_ms=5000 \
      >"$dir/node$n.log" 2>&1 &
    pids+=("$!")
    servers+="${servers:+,}http://127.0.0.1:$port"
  done
  for n in 1 2; do
    port=$((port_base + 10 * n))
    for i in $(seq 1 600); do
      curl -sf "http://127.0.0.1:$port/healthcheck" >/dev/null && break
      kill -0 "${pids[n - 1]}" 2>/dev/null || { cat "$dir/node$n.log" >&2; exit 1; }
      [ "$i" = 600 ] && { echo "cluster_instructions: node $n did not answer in 300 s" >&2; exit 1; }
      sleep 0.5
    done
  done
  # A cluster's nodes hear each other before the runs (the listings settle).
  if [ "$layout" = cluster ]; then
    for n in 1 2; do
      port=$((port_base + 10 * n))
      for i in $(seq 1 120); do
        curl -sf "http://127.0.0.1:$((port + 1))/metrics" | grep -q '^metafi_cluster_peers 1$' && break
        [ "$i" = 120 ] && { echo "cluster_instructions: node $n never heard its peer" >&2; exit 1; }
        sleep 0.5
      done
    done
    sleep 2
  fi
}

# scrape: both nodes' metrics, each node read once (a read renders every series, ≈ 2 million
# instructions a node under callgrind: read once per counter, as before, it was a sixth of
# what a window counted).
scrape() {
  local n
  for n in 1 2; do curl -sf "http://127.0.0.1:$((port_base + 10 * n + 1))/metrics" || true; done
}

# metric NAME-PATTERN [TEXT]: the sum over both nodes of the series matching the awk pattern,
# in TEXT (a scrape) or in a fresh scrape.
metric() {
  if [ $# -gt 1 ]; then printf '%s\n' "$2"; else scrape; fi |
    awk -v pattern="$1" '$0 ~ pattern { total += $NF } END { printf "%d\n", total }'
}

# marks: the counters a window ends with, both nodes (one scrape): match data delivered to
# clients, sockets open, and what the cluster sent over NATS by kind (none in the pair).
marks() {
  local kind text
  text=$(scrape)
  printf 'delivered=%s sockets=%s' "$(metric '^metafi_realtime_messages_sent_total[{].*type="match_data"' "$text")" \
    "$(metric '^metafi_realtime_sessions ' "$text")"
  for kind in deliver cast sessions heartbeat call matches; do
    printf ' %s=%s' "$kind" "$(metric "^metafi_cluster_messages_sent_total[{].*kind=\"$kind\"" "$text")"
  done
  echo
}

# window DIR NAME SECONDS: go on for SECONDS, then note the counters and dump.
window() {
  local dir=$1 name=$2 seconds=$3 pid
  sleep "$seconds"
  echo "$name $(date +%s.%N) $(marks)" >>"$dir/marks.txt"
  # A dump holds what was counted since the one before.
  for pid in "${pids[@]}"; do callgrind_control -d "$name" "$pid" >/dev/null; done
}

# wait_for DIR WHAT CONDITION...: waits (up to 300 s) until the command CONDITION succeeds;
# the bench ending first, or the time running out, ends the script (WHAT names it).
wait_for() {
  local dir=$1 what=$2 i
  shift 2
  for i in $(seq 1 600); do
    "$@" && return 0
    kill -0 "$bench_pid" 2>/dev/null || { cat "$dir/bench.txt" >&2; exit 1; }
    sleep 0.5
  done
  echo "cluster_instructions: $what in 300 s" >&2
  exit 1
}

# nodes_hold N: both nodes hold N sockets together (their /metrics).
nodes_hold() {
  [ "$(metric '^metafi_realtime_sessions ')" -ge "$1" ]
}

# bench_connected N DIR: the bench reports N sockets connected (its progress line, every 5 s).
# Read from the bench's output, not from the nodes' /metrics: a read renders every series, and
# reads every 0.5 s during the counted connect window were ≈ 100,000 instructions per sign-in,
# more in the cluster (it has more series).
bench_connected() {
  local connected
  # (No line yet is no error: awk reads what grep found, or nothing.)
  connected=$(awk '{ while (match($0, /connected [0-9]+/)) { n = substr($0, RSTART + 10, RLENGTH - 10); $0 = substr($0, RSTART + RLENGTH) } } END { print n + 0 }' "$2/bench.txt" 2>/dev/null || echo 0)
  [ "${connected:-0}" -ge "$1" ]
}

# report DIR NAME: each window's instructions against its counters.
report() {
  python3 - "$1" "$2" "$workload" <<'EOF' | tee -a "$out/summary.txt"
import glob, re, sys
dir, name, workload = sys.argv[1:4]
marks = {}
for line in open(f"{dir}/marks.txt"):
    fields = line.split()
    marks[fields[0]] = {"at": float(fields[1]), **{k: int(v) for k, v in (f.split("=") for f in fields[2:])}}
def instructions(run):
    per_node = {}
    for path in glob.glob(f"{dir}/callgrind.n*.*"):
        text = open(path, errors="replace").read()
        if re.search(rf"^desc: Trigger: dump {run}$", text, re.M):
            node = re.search(r"callgrind\.(n\d)\.", path).group(1)
            per_node[node] = int(re.search(r"^summary: (\d+)", text, re.M).group(1))
    return per_node
def crossed(previous, run):
    kinds = ("deliver", "cast", "sessions", "heartbeat", "call", "matches")
    sent = {k: marks[run][k] - marks[previous][k] for k in kinds}
    return "sent over NATS: " + (", ".join(f"{k} {n:,}" for k, n in sent.items() if n) or "none")
def scram(run):
    # PostgreSQL's SCRAM-SHA-256 authentication of each new connection of the database pool
    # (4,096 rounds of HMAC-SHA-256, ≈ 12 million instructions a connection): how many
    # connections the pool opens while sign-ins overlap depends on the nodes' pace, not on
    # the layout, and it was 60-75 % of a sign-in's count.
    import subprocess
    total = 0
    for path in glob.glob(f"{dir}/callgrind.n*.*"):
        text = open(path, errors="replace").read()
        if not re.search(rf"^desc: Trigger: dump {run}$", text, re.M):
            continue
        out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--auto=no", "--threshold=100", path],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.*)$", line)
            if m and not m.group(2).startswith("PROGRAM TOTALS") and re.search(r"sha2::|hmac::|digest::|sasl|pbkdf2", m.group(2)):
                total += int(m.group(1).replace(",", ""))
    return total
def nodes(per_node):
    return ", ".join(f"{n} {ir:,}" for n, ir in sorted(per_node.items()))
if workload == "match":
    runs = {}
    previous = "start"
    for run in ("short", "long"):
        per_node = instructions(run)
        messages = marks[run]["delivered"] - marks[previous]["delivered"]
        runs[run] = (per_node, messages)
        print(f"{name} {run}: {messages:,} messages delivered; instructions {nodes(per_node)} "
              f"({sum(per_node.values()) / max(messages, 1):,.0f} per message); {crossed(previous, run)}")
        previous = run
    (s, ms), (l, ml) = runs["short"], runs["long"]
    per = {n: (l[n] - s[n]) / (ml - ms) for n in sorted(l)}
    parts = " + ".join(f"{n} {v:,.0f}" for n, v in per.items())
    print(f"{name}: {sum(per.values()):,.0f} instructions per delivered message ({parts}; long - short)")
else:
    idle, connect, hold = (sum(instructions(run).values()) for run in ("idle", "connect", "hold"))
    seconds = {run: marks[run]["at"] - marks[before]["at"]
               for run, before in (("idle", "start"), ("connect", "idle"), ("hold", "connect"))}
    sockets = marks["hold"]["sockets"]
    rate = idle / seconds["idle"]
    print(f"{name} idle: {idle:,} instructions in {seconds['idle']:.1f} s ({rate:,.0f} per s); "
          f"{crossed('start', 'idle')}")
    print(f"{name} connect: {sockets:,} sign-ins and sockets, {connect:,} instructions in "
          f"{seconds['connect']:.1f} s: {connect / sockets:,.0f} per sign-in and connect "
          f"({(connect - rate * seconds['connect']) / sockets:,.0f} over the idle rate); "
          f"{crossed('idle', 'connect')}")
    pg = scram("connect")
    print(f"{name} connect without PostgreSQL's connection set-up (SCRAM, {pg / sockets:,.0f} per sign-in): "
          f"{(connect - pg) / sockets:,.0f} per sign-in and connect "
          f"({(connect - pg - rate * seconds['connect']) / sockets:,.0f} over the idle rate)")
    held = (hold - rate * seconds["hold"]) / (sockets * seconds["hold"])
    print(f"{name} hold: {hold:,} instructions in {seconds['hold']:.1f} s with {sockets:,} sockets: "
          f"{held:,.0f} per socket and second over the idle rate; {crossed('connect', 'hold')}")
EOF
}

for r in $(seq 1 "$repeats"); do
  for layout in ${LAYOUTS:-pair cluster}; do
    case $layout in
      pair | cluster) ;;
      *) echo "cluster_instructions: unknown layout '$layout' in LAYOUTS (pair, cluster)" >&2; exit 2 ;;
    esac
    dir=$out/$workload-$layout-$r
    mkdir -p "$dir"
    start_nodes "$layout" "$dir"
    echo "start $(date +%s.%N) $(marks)" >"$dir/marks.txt"
    if [ "$workload" = ccu ]; then
      # Sign-ins, sockets and holding are all counted; the users arrive over 20 s (PLAYERS
      # rounded up to a multiple of 20).
      for pid in "${pids[@]}"; do callgrind_control -i on "$pid" >/dev/null; done
      window "$dir" idle "$idle"
      "$bench" ccu --phase "$(((players + 19) / 20)):20s" --phase 0:3600s --hold 3600s --timeout 60s \
        --server "$servers" --out "$dir/bench" >"$dir/bench.txt" 2>&1 &
      bench_pid=$!
      connect=$(( (players + 19) / 20 * 20 ))
      wait_for "$dir" "the bench did not connect $connect sockets" bench_connected "$connect" "$dir"
      window "$dir" connect 5
      window "$dir" hold "$long"
      stop_nodes
      report "$dir" "$workload-$layout-$r"
      continue
    fi
    # Players placed: in the pair none crosses (it cannot), in the cluster CROSS of each node's.
    share=0
    [ "$layout" = cluster ] && share=$cross
    # A closed loop: each player signs in, joins its match and plays until the bench is
    # stopped (its hold and duration outlast the windows).
    "$bench" match --users "$players" --clients "$players" --duration 3600s --hold 3600s \
      --interval "$interval" --timeout 60s --setup-concurrency 8 --cross-node "$share" \
      --server "$servers" --out "$dir/bench" >"$dir/bench.txt" 2>&1 &
    bench_pid=$!
    wait_for "$dir" "not all $players sockets open" nodes_hold "$players"
    # The last players' joins and first messages.
    sleep 10
    echo "start $(date +%s.%N) $(marks)" >"$dir/marks.txt"
    if [ "$count" = syscalls ]; then
      perf stat -x, -e raw_syscalls:sys_enter,context-switches -p "$(IFS=,; echo "${pids[*]}")" \
        -o "$dir/perf.txt" -- sleep "$long"
      echo "long $(date +%s.%N) $(marks)" >>"$dir/marks.txt"
      stop_nodes
      python3 - "$dir" "$layout-$r" <<'EOF' | tee -a "$out/summary.txt"
import sys
dir, name = sys.argv[1], sys.argv[2]
marks = {}
for line in open(f"{dir}/marks.txt"):
    fields = line.split()
    marks[fields[0]] = {k: int(v) for k, v in (f.split("=") for f in fields[2:])}
messages = marks["long"]["delivered"] - marks["start"]["delivered"]
counts = {}
for line in open(f"{dir}/perf.txt"):
    fields = line.strip().split(",")
    if len(fields) > 2 and fields[0].isdigit():
        counts[fields[2]] = int(fields[0])
sys_calls = counts.get("raw_syscalls:sys_enter", 0)
switches = counts.get("context-switches", 0)
print(f"{name}: {messages:,} messages delivered; {sys_calls / messages:.3f} system calls and "
      f"{switches / messages:.3f} context switches per delivered message (both nodes)")
EOF
      continue
    fi
    for pid in "${pids[@]}"; do callgrind_control -i on "$pid" >/dev/null; done
    window "$dir" short "$short"
    window "$dir" long "$long"
    stop_nodes
    report "$dir" "$workload-$layout-$r"
  done
done
echo "cluster_instructions: counts, callgrind files and reports in $out"
