# Starting and stopping the server for the benchmark scripts (sourced, not run).
#
# The caller sets: bin (the metafi binary), port, metrics_port, and name (for messages).
# start_server LOG [extra serve flags...] runs it pinned to core 0 on a fresh data directory
# and waits for its health check; if it dies or does not answer within 20 s, prints its log and
# exits. SERVER_ARGS (split on spaces, e.g. "--set match.tick_batch_window_ms=0") goes after the
# extra flags, so every script can run one build with another setting. stop_server ends it and removes the data directory (install it as the EXIT trap).
# write_hook_modules and run (below) are the parts the hook and inline benchmarks share.

server=""
data=""

stop_server() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  server=""
  [ -z "$data" ] || rm -rf "$data"
  data=""
}

# console_off BIN: the flag that keeps BIN's console listener closed (two servers on one host
# would share its port); nothing for a build older than the console, which has no such key.
console_off() {
  if "$1" config default 2>/dev/null | grep -q '^\[console\]'; then
    echo "--set console.enabled=false"
  fi
}

start_server() {
  local log=$1
  shift
  data=$(mktemp -d -t metafi-bench-data.XXXXXX)
  local more
  read -r -a more <<<"${SERVER_ARGS:-}"
  taskset -c 0 "$bin" serve --port "$port" --metrics-port "$metrics_port" --data-dir "$data" \
    --set runtime.path=examples --set session.token_expiry_sec=3600 --set logger.level=warn \
    $(console_off "$bin") "$@" "${more[@]}" >"$log" 2>&1 &
  server=$!
  for _ in $(seq 1 200); do
    curl -sf "http://127.0.0.1:$port/healthcheck" >/dev/null && return 0
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  echo "$name: the server did not start; its log:" >&2
  cat "$log" >&2
  exit 1
}

# write_hook_modules DIR: module folders DIR/{none,lua,js,native}; lua and js hold a pass-through
# before+after hook pair on AuthenticateDevice (native hooks are switched on by runtime.env).
write_hook_modules() {
  local modules=$1
  mkdir -p "$modules/none" "$modules/lua" "$modules/js" "$modules/native"
  cat >"$modules/lua/hooks.lua" <<'EOF'
local nk = require("nakama")
nk.register_req_before(function(context, payload) return payload end, "AuthenticateDevice")
nk.register_req_after(function(context, output, input) end, "AuthenticateDevice")
EOF
  cat >"$modules/js/hooks.js" <<'EOF'
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerBeforeAuthenticateDevice(function (ctx, logger, nk, data) { return data; });
  initializer.registerAfterAuthenticateDevice(function (ctx, logger, nk, data, request) {});
}
EOF
}

# run NAME WORKLOAD-ARGS...: one metafi-bench run against the server started (tool on core 1;
# the caller's bench, port, clients, duration and out); prints its summary line and appends it
# to out/summary.txt for the medians.
run() {
  local run_name=$1
  shift
  local dir=$out/$run_name
  mkdir -p "$dir"
  taskset -c 1 "$bench" "$@" --server "http://127.0.0.1:$port" --clients "$clients" \
    --duration "${duration}s" --server-pid "$server" --out "$dir" >"$dir/bench.txt" 2>&1 || {
    echo "$name: $run_name failed; its output:" >&2
    cat "$dir/bench.txt" >&2
    exit 1
  }
  python3 - "$dir/report.json" "$run_name" <<'EOF' | tee -a "$out/summary.txt"
import json, sys
report = json.load(open(sys.argv[1]))
name = sys.argv[2]
row = max(report["requests"], key=lambda r: r["count"])
usage = report.get("server_usage") or {}
cores = usage.get("cores_used", float("nan"))
per_cpu = row["count"] / usage["cpu_secs"] if usage.get("cpu_secs") else float("nan")
print(f"{name}\t{row['mean_rate']:.1f}/s\tmean {row['mean_ms']:.2f} ms\tp99 {row['p99_ms']:.2f} ms"
      f"\tserver {cores:.2f} cores\t{per_cpu:.0f} per server CPU-second\t{1e6 / per_cpu:.1f} us server CPU per call")
EOF
}
