#!/usr/bin/env bash
# Outbound webhooks under chaos (issue 25, the acceptance): 10,000 sandbox ticket payments while
# a real `tessera serve` is SIGKILLed every 2 s and started again; a receiver on loopback verifies
# every delivery (Standard Webhooks, by hand in Python) and refuses 10 % of first attempts with a
# 500. Asserts exactly 10,000 distinct verified `ticket.purchase.confirmed` ids, second successes
# of an id ≤ the number of kills, sequences 1..N with no hole (cross-checked with GET /events),
# then prints the delivery throughput and p50/p99 commit→delivery. scripts/chaos_webhooks.py
# says how.
#
#   bash scripts/chaos-webhooks.sh [sqlite|postgres] [payments]      (default: sqlite 10000)
#
# Runs with TESSERA_WEBHOOKS_RETRY_SCALE=0.001 (retries at 5 ms, 300 ms, 1.8 s, …),
# TESSERA_WORKER_POLL_MS=20, 1 s worker leases and a 500 ms delivery timeout (a delivery claim is
# leased for max(lease, timeout + 1 s)), so it finishes in minutes on 2 cores.
# PostgreSQL: TESSERA_CHAOS_DATABASE_URL, or a throwaway database on the local server (dropped
# afterwards). Uses the debug build (TESSERA_CHAOS_BIN to use another binary, e.g. a release one).
# Extra arguments after the first two go to chaos_webhooks.py (--threads, --kill-every, --seed …).
set -euo pipefail
cd "$(dirname "$0")/.."

backend=${1:-sqlite}
payments=${2:-10000}
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
if [ "$backend" = postgres ]; then
  url=${TESSERA_CHAOS_DATABASE_URL:-}
  if [ -z "$url" ]; then
    created_db="tessera_chaos_hooks_$(date +%s)_$$"
    psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE $created_db"
    url="postgres://postgres@127.0.0.1:5432/$created_db"
  fi
  db_args=(--database-url "$url")
elif [ "$backend" != sqlite ]; then
  echo "usage: scripts/chaos-webhooks.sh [sqlite|postgres] [payments]" >&2
  exit 2
fi
TESSERA_WEBHOOKS_RETRY_SCALE=0.001 TESSERA_WORKER_POLL_MS=20 \
  python3 scripts/chaos_webhooks.py --bin "$bin" --payments "$payments" "${db_args[@]}" "$@"
