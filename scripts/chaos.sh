#!/usr/bin/env bash
# Chaos run (issue 13): a real `tessera serve` with the sandbox on loopback under mixed load,
# SIGKILLed at random moments and started again, then a money audit and per-operation invariants
# (scripts/chaos.py says which). Results: docs/reliability.md, "Chaos run".
#
#   bash scripts/chaos.sh [sqlite|postgres|cluster] [kills]      (default: sqlite 30)
#
# cluster (issue 23): PostgreSQL, TESSERA_CHAOS_INSTANCES (default 3) instances behind HAProxy
# with their own Redis, started by scripts/cluster.sh with deploy/haproxy.cfg and
# deploy/tessera.toml; one instance at a time is SIGKILLed (docs/deployment.md).
#
# PostgreSQL: TESSERA_CHAOS_DATABASE_URL, or a throwaway database on the local server (dropped
# afterwards). Uses the debug build (TESSERA_CHAOS_BIN to use another binary, e.g. a release one).
# Extra arguments after the first two go to chaos.py (--threads, --seed, --hold-seconds ...).
set -euo pipefail
cd "$(dirname "$0")/.."

backend=${1:-sqlite}
kills=${2:-30}
shift $(( $# < 2 ? $# : 2 ))
bin=${TESSERA_CHAOS_BIN:-${CARGO_TARGET_DIR:-target}/debug/tessera}
if [ -z "${TESSERA_CHAOS_BIN:-}" ]; then cargo build --quiet --bin tessera; fi

created_db=""
cleanup() {
  if [ -n "$created_db" ]; then
    psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $created_db WITH (FORCE)" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

db_args=()
if [ "$backend" = postgres ] || [ "$backend" = cluster ]; then
  url=${TESSERA_CHAOS_DATABASE_URL:-}
  if [ -z "$url" ]; then
    created_db="tessera_chaos_$(date +%s)_$$"
    psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE $created_db"
    url="postgres://postgres@127.0.0.1:5432/$created_db"
  fi
  db_args=(--database-url "$url")
  if [ "$backend" = cluster ]; then
    db_args+=(--cluster "${TESSERA_CHAOS_INSTANCES:-3}")
  fi
elif [ "$backend" != sqlite ]; then
  echo "usage: scripts/chaos.sh [sqlite|postgres|cluster] [kills]" >&2
  exit 2
fi
python3 scripts/chaos.py --bin "$bin" --kills "$kills" "${db_args[@]}" "$@"
