#!/usr/bin/env bash
# Ensures a local PostgreSQL server is running for MetaFi's tests and prints a URL for them on
# stdout (everything else goes to stderr):
#
#   export METAFI_TEST_POSTGRES_URL="$(scripts/postgres.sh)"
#
# Idempotent: installs Debian's postgresql package if it is missing (needs root), starts the
# newest cluster, creates the role and database `metafi` (password `metafi`) if absent. It does
# not tune the server: MetaFi must not depend on server tuning.
set -euo pipefail

ROLE="${METAFI_PG_ROLE:-metafi}"
PASSWORD="${METAFI_PG_PASSWORD:-metafi}"
DATABASE="${METAFI_PG_DATABASE:-metafi}"

log() { echo "postgres.sh: $*" >&2; }

if ! command -v pg_lsclusters >/dev/null 2>&1; then
    log "installing postgresql (Debian package)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
fi

# The newest installed version's cluster; create one if the package made none.
version="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
if [ -z "$version" ]; then
    log "no PostgreSQL server version found under /usr/lib/postgresql"
    exit 1
fi
cluster="$(pg_lsclusters -h | awk -v v="$version" '$1 == v { print $2; exit }')"
if [ -z "$cluster" ]; then
    cluster=main
    log "creating cluster $version/$cluster"
    pg_createcluster "$version" "$cluster" >&2
fi
port="$(pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c { print $3; exit }')"
status="$(pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c { print $4; exit }')"
if [ "$status" != "online" ]; then
    log "starting cluster $version/$cluster on port $port"
    pg_ctlcluster "$version" "$cluster" start >&2
fi

as_postgres() { (cd / && runuser -u postgres -- "$@"); }

# Wait until the server accepts connections.
for _ in $(seq 1 50); do
    if as_postgres psql -p "$port" -Atqc 'SELECT 1' >/dev/null 2>&1; then break; fi
    sleep 0.2
done

if [ "$(as_postgres psql -p "$port" -Atqc "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != "1" ]; then
    log "creating role $ROLE"
    # CREATEDB: the tests create and drop a database per test.
    as_postgres psql -p "$port" -qc "CREATE ROLE \"$ROLE\" LOGIN CREATEDB PASSWORD '$PASSWORD'" >&2
fi
if [ "$(as_postgres psql -p "$port" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'")" != "1" ]; then
    log "creating database $DATABASE"
    as_postgres psql -p "$port" -qc "CREATE DATABASE \"$DATABASE\" OWNER \"$ROLE\"" >&2
fi

echo "postgres://$ROLE:$PASSWORD@127.0.0.1:$port/$DATABASE"
