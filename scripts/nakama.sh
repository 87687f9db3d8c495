#!/usr/bin/env bash
# Builds a real Nakama from its source and runs it as the oracle of the compatibility suite
# (docs/COMPAT.md). Optional: nothing in scripts/test.sh needs it.
#
#   scripts/nakama.sh start [SRC]   build if needed, start in the background, print the port
#   scripts/nakama.sh stop          stop the Nakama this script started
#   scripts/nakama.sh build [SRC]   only build (prints the binary's path)
#
# SRC (or NAKAMA_SRC) is Nakama's source: a checked-out tree (with main.go), or a bare git
# clone of heroiclabs/nakama, from which tag NAKAMA_VERSION (default v3.40.0) is extracted into
# NAKAMA_BUILD_DIR (default /work/nakama-src). It downloads nothing but Go modules (one, only
# when the vendor tree lacks a file; see restore_vendor).
#
# Nakama listens on 127.0.0.1: API and socket on NAKAMA_PORT (default 7450), gRPC on the port
# below, console on NAKAMA_CONSOLE_PORT (7451). Its database is NAKAMA_DATABASE (default
# `nakama_oracle`; another name lets two oracles run side by side) on the local PostgreSQL of
# scripts/postgres.sh (wiped on every start, so runs do not see each other's accounts). The
# runtime directory holds the repository's examples (and the suite's fixtures,
# tests/compat/modules) as Nakama loads them: the Lua modules as they are, the JavaScript modules
# (examples/js and tests/compat/modules/js) joined into one index.js, and the native
# example as a Go plugin (tests/compat/nakama/native) built in the same tree. Sessions last
# NAKAMA_TOKEN_EXPIRY_SEC (3, as scripts/compat.sh gives MetaFi) and the matchmaker runs every
# second, also as compat.sh does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

version=${NAKAMA_VERSION:-v3.40.0}
build_dir=${NAKAMA_BUILD_DIR:-/work/nakama-src}
port=${NAKAMA_PORT:-7450}
console_port=${NAKAMA_CONSOLE_PORT:-7451}
token_ttl=${NAKAMA_TOKEN_EXPIRY_SEC:-3}
state=${NAKAMA_STATE_DIR:-/tmp/metafi-nakama}
database=${NAKAMA_DATABASE:-nakama_oracle}

log() { echo "nakama.sh: $*" >&2; }

# The source tree to build: SRC itself, or the tag extracted from a bare clone.
source_tree() {
  local src=${1:-${NAKAMA_SRC:-/work/.mirror/heroiclabs+nakama/repo}}
  if [ -f "$src/main.go" ]; then
    echo "$src"
    return
  fi
  if [ ! -d "$src/objects" ]; then
    log "$src is neither a Nakama source tree nor a bare git clone"
    exit 1
  fi
  if [ ! -f "$build_dir/main.go" ]; then
    log "extracting $version from $src into $build_dir"
    extract "$src" "$version" "$build_dir"
  fi
  echo "$build_dir"
}

# `git archive` stops at the first missing blob, and a stored snapshot may lack a few: write
# every blob that exists, and list the missing ones (restore_vendor replaces what the build needs).
extract() {
  local git_dir=$1 tag=$2 out=$3
  mkdir -p "$out"
  git -C "$git_dir" ls-tree -r "$tag" | while read -r mode type sha path; do
    [ "$type" = blob ] || continue
    mkdir -p "$out/$(dirname "$path")"
    if ! git -C "$git_dir" cat-file -e "$sha" 2>/dev/null; then
      log "missing from the snapshot: $path"
      continue
    fi
    if [ "$mode" = 120000 ]; then
      ln -sfn "$(git -C "$git_dir" cat-file blob "$sha")" "$out/$path"
    else
      git -C "$git_dir" cat-file blob "$sha" >"$out/$path"
      [ "$mode" = 100755 ] && chmod +x "$out/$path"
    fi
  done
  # The console's embedded UI may miss a bundle; the API does not need it.
  true
}

# A vendored file missing from the snapshot is restored from the Go module cache (the module
# proxy's copy of the exact version go.mod names; Go checks its hash against go.sum).
restore_vendor() {
  local tree=$1
  local tables=vendor/golang.org/x/text/collate/tables.go
  [ -f "$tree/$tables" ] && return
  local v
  v=$(awk '$1 == "golang.org/x/text" { print $2; exit }' "$tree/go.mod")
  log "restoring $tables from golang.org/x/text@$v"
  local dir
  dir=$(cd "$tree" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "golang.org/x/text@$v" |
    sed -nE 's/^\s*"Dir": "(.*)",?$/\1/p')
  cp "$dir/collate/tables.go" "$tree/$tables"
  chmod 644 "$tree/$tables"
}

build() {
  local tree
  tree=$(source_tree "${1:-}")
  restore_vendor "$tree"
  if [ ! -x "$tree/nakama" ]; then
    log "building Nakama in $tree (a few minutes)"
    (cd "$tree" && GOTOOLCHAIN=local go build -mod=vendor -trimpath -o nakama .) >&2
  fi
  # The native example as a Go plugin: built in the same tree with the same flags, as Nakama
  # requires of plugins.
  local plugin_src="$root/tests/compat/nakama/native"
  if [ ! -f "$tree/metafi_compat_native/main.go" ] ||
    ! cmp -s "$plugin_src/main.go" "$tree/metafi_compat_native/main.go" ||
    [ ! -f "$tree/metafi_compat_native.so" ]; then
    log "building the native example plugin"
    mkdir -p "$tree/metafi_compat_native"
    cp "$plugin_src/main.go" "$tree/metafi_compat_native/main.go"
    (cd "$tree" && GOTOOLCHAIN=local go build -mod=vendor -trimpath -buildmode=plugin \
      -o metafi_compat_native.so ./metafi_compat_native) >&2
  fi
  echo "$tree"
}

# The repository's examples laid out for Nakama.
runtime_dir() {
  local tree=$1 dir=$2
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$root"/examples/lua/*.lua "$root"/tests/compat/modules/lua/*.lua "$dir/"
  # Nakama loads one JavaScript file and finds registrations by reading the body of the
  # function named InitModule: keep each example's other code as it is and join the bodies of
  # their InitModule functions (all take ctx, logger, nk, initializer) into one.
  awk '
    /^function InitModule\(/ { inside = 1; next }
    inside && /^}/ { inside = 0; next }
    inside { body = body $0 "\n"; next }
    { print }
    END { printf "function InitModule(ctx, logger, nk, initializer) {\n%s}\n", body }
  ' "$root"/examples/js/*.js "$root"/tests/compat/modules/js/*.js >"$dir/index.js"
  cp "$tree/metafi_compat_native.so" "$dir/"
}

start() {
  local tree
  tree=$(build "${1:-}")
  stop_running
  local db_url db_address
  db_url=$(METAFI_PG_DATABASE=$database "$root/scripts/postgres.sh")
  # postgres://user:pass@host:port/db -> user:pass@host:port/db (Nakama's form)
  db_address=${db_url#postgres://}
  reset_database "$db_url"
  mkdir -p "$state"
  runtime_dir "$tree" "$state/modules"
  "$tree/nakama" migrate up --database.address "$db_address" >"$state/migrate.log" 2>&1 || {
    cat "$state/migrate.log" >&2
    exit 1
  }
  "$tree/nakama" --name oracle --data_dir "$state/data" \
    --database.address "$db_address" \
    --socket.address 127.0.0.1 --socket.port "$port" \
    --console.address 127.0.0.1 --console.port "$console_port" \
    --runtime.path "$state/modules" \
    --session.token_expiry_sec "$token_ttl" \
    --matchmaker.interval_sec 1 \
    --social.facebook_instant_game.app_secret compat-instant-secret \
    --iap.facebook_instant.app_secret compat-fb-instant-secret \
    --logger.level INFO >"$state/nakama.log" 2>&1 &
  echo $! >"$state/pid"
  for _ in $(seq 1 300); do
    if ! kill -0 "$(cat "$state/pid")" 2>/dev/null; then
      log "Nakama exited during startup; its log:"
      tail -n 40 "$state/nakama.log" >&2
      exit 1
    fi
    if curl -fsS "http://127.0.0.1:$port/healthcheck" >/dev/null 2>&1; then
      log "Nakama $version ready (pid $(cat "$state/pid"), log $state/nakama.log)"
      echo "$port"
      return
    fi
    sleep 0.1
  done
  log "Nakama did not answer /healthcheck within 30 s; its log is $state/nakama.log"
  exit 1
}

# Drops and recreates the oracle's database, so each run starts empty.
reset_database() {
  local url=$1 db=$database pg_port
  pg_port=${url##*:}
  pg_port=${pg_port%%/*}
  (cd / && runuser -u postgres -- psql -p "$pg_port" -qc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null &&
    runuser -u postgres -- psql -p "$pg_port" -qc "CREATE DATABASE \"$db\" OWNER \"${METAFI_PG_ROLE:-metafi}\"" >/dev/null)
}

stop_running() {
  [ -f "$state/pid" ] || return 0
  local pid
  pid=$(cat "$state/pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$state/pid"
}

case ${1:-} in
  start) start "${2:-}" ;;
  stop) stop_running ;;
  build) build "${2:-}" ;;
  *)
    echo "usage: scripts/nakama.sh start|stop|build [SRC]" >&2
    exit 2
    ;;
esac
