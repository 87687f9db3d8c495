# Starting and stopping the server for the benchmark scripts (sourced, not run).
#
# The caller sets: bin (the metafi binary), port, metrics_port, and name (for messages).
# start_server LOG [extra serve flags...] runs it pinned to core 0 on a fresh data directory
# and waits for its health check; if it dies or does not answer within 20 s, prints its log and
# exits. stop_server ends it and removes the data directory (install it as the EXIT trap).

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

start_server() {
  local log=$1
  shift
  data=$(mktemp -d -t metafi-bench-data.XXXXXX)
  taskset -c 0 "$bin" serve --port "$port" --metrics-port "$metrics_port" --data-dir "$data" \
    --set runtime.path=examples --set session.token_expiry_sec=3600 --set logger.level=warn \
    "$@" >"$log" 2>&1 &
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
