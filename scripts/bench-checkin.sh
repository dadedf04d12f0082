#!/usr/bin/env bash
# Check-in figures for docs/performance.md: check-ins per second of distinct tickets with signed
# Form 2 `POST /tickets/verify {autoVerify: true}` requests, and their latency, on loopback.
#
# Builds release, starts a server on a throwaway SQLite data dir with limits off (one IP and one
# key send everything), workers off (the purchase confirmations the seeding queues are not the
# subject) and logging at warn, then runs crates/tessera-server/benches/checkin.rs: it seeds
# BENCH_TICKETS free tickets through the API and checks each in once from BENCH_CONNECTIONS
# connections. Settings (environment): BENCH_PORT (18183), BENCH_CONNECTIONS (64),
# BENCH_TICKETS (20000), DATABASE_URL (empty: SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18183}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
TICKETS=${BENCH_TICKETS:-20000}
URL="http://127.0.0.1:$PORT"

echo "== building (release)"
cargo build --release --quiet
cargo bench -p tessera-server --bench checkin --no-run --quiet

work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && { kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT

echo "== machine: $(nproc) cpus, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# BENCH_SERVER_BIN: the server binary to measure (default the release build); a copy of an
# earlier build compares two builds in adjacent runs.
T=${BENCH_SERVER_BIN:-target/release/tessera}
db_args=()
[ -n "${DATABASE_URL:-}" ] && db_args=(--database-url "$DATABASE_URL")

"$T" --data-dir "$work" "${db_args[@]}" admin account create --slug gate --name Gate --json >/dev/null
key=$("$T" --data-dir "$work" "${db_args[@]}" admin key create --account gate --kind private \
  --scopes campaigns:write,tickets:read,tickets:write,payments:write --json)
key_id=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyId"])')
key_secret=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')

TESSERA_RATE_LIMIT_PER_ACCOUNT=0 TESSERA_RATE_LIMIT_PER_IP=0 TESSERA_AUTH_FAILURE_LIMIT=0 RUST_LOG=warn,tessera=info,tessera_server::app=info \
TESSERA_WORKERS_ENABLED=0 \
  "$T" --data-dir "$work" "${db_args[@]}" serve --listen "127.0.0.1:$PORT" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do grep -q "tessera listening" "$work/server.log" 2>/dev/null && break; sleep 0.1; done
grep -q "tessera listening" "$work/server.log" || { cat "$work/server.log" >&2; exit 1; }

echo "== check-in of $TICKETS distinct tickets, $CONNECTIONS connections"
cargo bench -p tessera-server --bench checkin --quiet -- --url "$URL" --key-id "$key_id" --secret "$key_secret" \
  --connections "$CONNECTIONS" --tickets "$TICKETS"
echo "server rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$server_pid/status")"
