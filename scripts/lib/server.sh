# Start and stop a throwaway metafi server for tests and benchmarks. Source this file.
#
#   start_server BIN [serve flags...]   starts BIN serve on free ports with a fresh data dir,
#                                       waits until it is ready, and sets SERVER_PID,
#                                       SERVER_PORT, SERVER_METRICS_PORT, SERVER_CONSOLE_PORT,
#                                       SERVER_DATA, SERVER_LOG
#   stop_server                         SIGTERM, wait, and remove the data dir (keeps the log
#                                       on failure)
#   require_examples WHO                fails, saying how to build it, unless the running server
#                                       has the example native modules (echo_native, ...: a
#                                       binary built with `--features examples`)

start_server() {
  local bin=$1
  shift
  SERVER_DATA=$(mktemp -d -t metafi-test.XXXXXX)
  SERVER_LOG="$SERVER_DATA/server.log"
  "$bin" serve --port 0 --metrics-port 0 --console-port 0 --data-dir "$SERVER_DATA/data" "$@" >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  local ready=""
  for _ in $(seq 1 300); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "metafi exited during startup; its log:" >&2
      cat "$SERVER_LOG" >&2
      return 1
    fi
    ready=$(grep -m1 "metafi is ready" "$SERVER_LOG" || true)
    [ -n "$ready" ] && break
    sleep 0.1
  done
  if [ -z "$ready" ]; then
    echo "metafi did not become ready within 30 s; its log:" >&2
    cat "$SERVER_LOG" >&2
    return 1
  fi
  SERVER_PORT=$(echo "$ready" | sed -E 's/.*address=[0-9.]+:([0-9]+).*/\1/')
  SERVER_METRICS_PORT=$(grep -m1 "metrics at /metrics" "$SERVER_LOG" | sed -E 's/.*:([0-9]+)\).*/\1/')
  # Empty when the console is disabled (console.enabled = false).
  SERVER_CONSOLE_PORT=$(grep -m1 "console at /" "$SERVER_LOG" | sed -E 's/.*address=[0-9.]+:([0-9]+).*/\1/' || true)
  export SERVER_PID SERVER_PORT SERVER_METRICS_PORT SERVER_CONSOLE_PORT SERVER_DATA SERVER_LOG
}

stop_server() {
  [ -n "${SERVER_PID:-}" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  local status=0
  wait "$SERVER_PID" || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 143 ]; then
    echo "metafi exited with status $status; its log:" >&2
    cat "$SERVER_LOG" >&2
  fi
  rm -rf "$SERVER_DATA"
  SERVER_PID=""
}

require_examples() {
  # The runtime logs the RPCs it registered ("runtime ready rpcs=[...]") before "metafi is ready".
  grep -q 'runtime ready.*echo_native' "$SERVER_LOG" && return 0
  echo "$1: this metafi has no example native modules (echo_native, get_match_native, ...);" \
    "build it with: cargo build -p metafi-server --bin metafi --features examples" >&2
  return 1
}
