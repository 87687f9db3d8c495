#!/usr/bin/env bash
# Runs every test of MetaFi, as CI does (`.ci/run` calls exactly this):
#   formatting and lints, unit and integration tests (storage conformance on SQLite and on a real
#   PostgreSQL; the engine conformance suite, crates/metafi-runtime-conformance, every fixture in
#   Lua, JavaScript and native Rust), the nakama-js compatibility suite on SQLite and PostgreSQL
#   and on a three-node cluster, the console in headless Chromium, and docs.
# Installs and starts what it needs (PostgreSQL from Debian packages, nats-server with the Go
# toolchain, Node packages with npm ci).
# Exits non-zero on the first failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Each step says how long the one before it took, so a slow step shows in CI's log (the whole
# run must stay under 40 minutes).
started=$(date +%s)
step_started=$started
step() {
  local now
  now=$(date +%s)
  if [ -n "${step_name:-}" ]; then
    printf '(%s took %ss)\n' "$step_name" "$(( now - step_started ))"
  fi
  step_name="$*"
  step_started=$now
  printf '\n==> %s\n' "$*"
}

step "toolchain"
cargo --version
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "node/npm missing: installing from Debian packages"
  apt-get update -qq && apt-get install -y -qq nodejs npm
fi
node --version
# The browser compatibility test (tests/compat/browser.test.mjs) drives Debian's Chromium.
if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  echo "chromium missing: installing from Debian packages (for the browser compatibility test)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
"${CHROMIUM_PATH:-/usr/bin/chromium}" --version 2>/dev/null || true

step "merge conflict markers"
# A merge resolved by hand once left its markers in docs/BENCHMARKS.md; no tracked file may hold one.
if git rev-parse --git-dir >/dev/null 2>&1 && git grep -nE '^(<<<<<<<|>>>>>>>) |^=======$' -- ':!*.lock'; then
  echo "merge conflict markers above: resolve them" >&2
  exit 1
fi

step "rustfmt"
cargo fmt --all -- --check

step "clippy"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

step "postgresql"
pg_url=$(scripts/postgres.sh)
echo "using ${pg_url%%@*}@… (password hidden)"
export METAFI_TEST_POSTGRES_URL="$pg_url"
export METAFI_REQUIRE_POSTGRES=1

step "nats"
# Cluster tests (crates/metafi-cluster, crates/metafi-server/tests/cluster.rs) need a NATS
# server: installed once with the Go toolchain (scripts/nats.sh), started on a free port.
nats_url=$(scripts/nats.sh)
echo "using $nats_url"
export METAFI_TEST_NATS_URL="$nats_url"
# The partition test (crates/metafi-server/tests/cluster_processes.rs) stops and restarts a
# nats-server of its own, so the shared one above is never cut.
METAFI_TEST_NATS_BIN=$(scripts/nats.sh bin)
export METAFI_TEST_NATS_BIN
export METAFI_REQUIRE_NATS=1
trap 'scripts/nats.sh stop' EXIT

step "cargo test"
# Besides the tests, this builds the `metafi` (with `examples`), `metafi-bench` and
# `metafi-linkemu` binaries into target/debug with the same features: the steps below use those,
# because a `cargo build` with another feature set would compile the workspace again (minutes).
cargo test --workspace --all-features --locked

step "docs"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

step "nakama-js compatibility: SQLite"
scripts/compat.sh target/debug/metafi

step "nakama-js compatibility: PostgreSQL"
compat_db_url=$(METAFI_PG_DATABASE="metafi_compat_$(date +%s)" scripts/postgres.sh)
scripts/compat.sh target/debug/metafi --database-url "$compat_db_url"

step "console in headless Chromium"
# docs/CONSOLE.md: sign-in, accounts, storage, the RPC explorer, live match charts and a refused
# read-only user, driven in Debian's Chromium; a screenshot of every page in
# target/console-screenshots.
scripts/console.sh target/debug/metafi

step "a world's top-down view in headless Chromium"
# docs/CONSOLE.md "Worlds": a world with metafi-bench bots, drawn live at /world/{id}; the test
# checks the canvas' pixels. Screenshots in target/world-screenshots.
scripts/world_view.sh target/debug/metafi target/debug/metafi-bench

step "nakama-js cluster suite: three nodes on PostgreSQL and NATS"
# tests/compat/cluster.test.mjs with its clients spread over three nodes (scripts/cluster.sh),
# then a metafi-bench smoke run spreading its users over the three.
CLUSTER_BENCH=target/debug/metafi-bench scripts/cluster.sh target/debug/metafi

step "metafi-bench smoke run"
scripts/bench-smoke.sh target/debug/metafi target/debug/metafi-bench

step "done"
printf '\nall tests passed in %ss\n' "$(( $(date +%s) - started ))"
