#!/usr/bin/env bash
# Ensures a local nats-server is running for MetaFi's cluster tests and prints its URL on stdout
# (everything else goes to stderr):
#
#   export METAFI_TEST_NATS_URL="$(scripts/nats.sh)"
#   scripts/nats.sh stop        # ends the server this script started (by its PID)
#   scripts/nats.sh restart     # stops it and starts it again on the same port (a NATS outage
#                               # and its end, for the cluster's partition tests); prints the URL
#   scripts/nats.sh bin         # installs nats-server if needed and prints its path (tests that
#                               # start and stop a server of their own: METAFI_TEST_NATS_BIN)
#
# Idempotent: installs nats-server (NATS_VERSION, default v2.15.2) once with the Go toolchain from
# the Go module proxy into a cache dir (METAFI_NATS_CACHE, default ~/.cache/metafi/nats), starts it
# on a free loopback port (or METAFI_NATS_PORT) with its state under /tmp (METAFI_NATS_DIR), and
# prints the URL. A
# server started earlier by this script that is still alive is reused. Debian's nats-server
# package (2.9) is older than what async-nats targets, so it is not used.
set -euo pipefail

VERSION="${NATS_VERSION:-v2.15.2}"
CACHE="${METAFI_NATS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metafi/nats}"
DIR="${METAFI_NATS_DIR:-/tmp/metafi-nats-$(id -u)}"
BIN="$CACHE/$VERSION/nats-server"

log() { echo "nats.sh: $*" >&2; }

running_pid() {
    [ -f "$DIR/pid" ] || return 1
    local pid
    pid="$(cat "$DIR/pid")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    # A reused PID of an unrelated process does not count.
    [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$BIN")" ] || return 1
    echo "$pid"
}

stop_running() {
    if pid="$(running_pid)"; then
        log "stopping nats-server (pid $pid)"
        kill "$pid"
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -f "$DIR/pid" "$DIR/url"
}

case "${1:-}" in
stop)
    stop_running
    exit 0
    ;;
restart)
    # The same port again, so the nodes' reconnect loop finds it at the URL they were given.
    if [ ! -s "$DIR/url" ]; then
        log "restart: no nats-server started by this script is known (no $DIR/url)"
        exit 1
    fi
    METAFI_NATS_PORT="$(sed -E 's/.*:([0-9]+)$/\1/' "$DIR/url")"
    stop_running
    ;;
""|bin) ;;
*)
    log "unknown command '$1' (stop, restart, bin, or nothing to start)"
    exit 1
    ;;
esac

if [ ! -x "$BIN" ]; then
    if ! command -v go >/dev/null 2>&1; then
        log "the Go toolchain (go) is needed to install nats-server $VERSION"
        exit 1
    fi
    log "installing nats-server $VERSION with go install (once, into $CACHE/$VERSION)"
    started=$(date +%s)
    mkdir -p "$CACHE/$VERSION"
    # GOTOOLCHAIN=local: build with the installed Go, never download another toolchain.
    # -trimpath -ldflags=-s -w: a smaller binary, no DWARF to write.
    GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -trimpath" GOBIN="$CACHE/$VERSION" \
        go install -ldflags='-s -w' "github.com/nats-io/nats-server/v2@$VERSION" >&2
    log "installed in $(( $(date +%s) - started ))s"
fi

if [ "${1:-}" = "bin" ]; then
    echo "$BIN"
    exit 0
fi

if pid="$(running_pid)" && [ -s "$DIR/url" ]; then
    cat "$DIR/url"
    exit 0
fi

mkdir -p "$DIR"
rm -f "$DIR"/nats-server_*.ports "$DIR/url"
# -p -1: a free port chosen by the server, written to the ports file (no race with a port probe).
"$BIN" -a 127.0.0.1 -p "${METAFI_NATS_PORT:--1}" --ports_file_dir "$DIR" --pid "$DIR/pid.server" \
    --log "$DIR/nats.log" >/dev/null 2>&1 &
pid=$!
echo "$pid" >"$DIR/pid"
url=""
for _ in $(seq 1 100); do
    ports="$DIR/nats-server_$pid.ports"
    if [ -s "$ports" ]; then
        url="$(grep -o 'nats://[0-9.]*:[0-9]*' "$ports" | head -n 1 || true)"
        [ -n "$url" ] && break
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
        log "nats-server exited at start; its log:"
        cat "$DIR/nats.log" >&2 || true
        exit 1
    fi
    sleep 0.1
done
if [ -z "$url" ]; then
    log "nats-server did not report its port (see $DIR/nats.log)"
    exit 1
fi
echo "$url" >"$DIR/url"
log "nats-server $VERSION (pid $pid) listening on $url"
echo "$url"
