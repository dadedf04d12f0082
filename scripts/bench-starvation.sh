#!/usr/bin/env bash
# Starvation figures for docs/performance.md (item 5 of issue 22): check-ins per second and
# `GET /healthz` latency with no background work ("quiet"), against the same while
# BENCH_CONFIRMATIONS confirmation e-mails of 100 tickets each are being rendered ("loaded").
#
# Builds release and runs crates/tessera-server/benches/checkin.rs against one SQLite data dir:
#  1. server with workers OFF: seeds BENCH_TICKETS tickets for the quiet phase, BENCH_TICKETS
#     for the loaded phase and BENCH_CONFIRMATIONS × 100 background tickets (every purchase of
#     100 queues one confirmation e-mail of 100 QR codes); then the quiet phase: /healthz for
#     BENCH_HEALTHZ_SECS, then check-in of the quiet tickets. Workers off: nothing renders.
#  2. the same data dir, server restarted with workers ON, the platform relay unreachable
#     (TESSERA_SMTP_URL at a closed port, retries every few ms: TESSERA_NOTIFICATION_RETRY_SCALE)
#     so every queued confirmation renders and retries; at once the loaded phase (same two
#     measurements). The QR images drawn and notification attempts come from /metrics after.
# Settings (environment): BENCH_PORT (18184), BENCH_CONNECTIONS (64), BENCH_TICKETS (10000),
# BENCH_CONFIRMATIONS (400), BENCH_HEALTHZ_SECS (5), BENCH_SERVER_BIN (target/release/tessera).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18184}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
TICKETS=${BENCH_TICKETS:-10000}
CONFIRMATIONS=${BENCH_CONFIRMATIONS:-400}
HEALTHZ=${BENCH_HEALTHZ_SECS:-5}
URL="http://127.0.0.1:$PORT"

echo "== building (release)"
[ -n "${BENCH_SKIP_BUILD:-}" ] || cargo build --release --quiet -p tessera-server --bin tessera
cargo bench -p tessera-server --bench checkin --no-run --quiet

work=$(mktemp -d)
server_pid=""
stop_server() {
  [ -n "$server_pid" ] && { kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
  server_pid=""
}
cleanup() { stop_server; rm -rf "$work"; }
trap cleanup EXIT

echo "== machine: $(nproc) cpus, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)'), load $(cut -d' ' -f1-3 /proc/loadavg)"

T=${BENCH_SERVER_BIN:-target/release/tessera}
"$T" --data-dir "$work" admin account create --slug gate --name Gate --json >/dev/null
key=$("$T" --data-dir "$work" admin key create --account gate --kind private \
  --scopes campaigns:write,tickets:read,tickets:write,payments:write --json)
key_id=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyId"])')
key_secret=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')

# A port nothing listens on: the relay is unreachable, every attempt fails and retries.
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

start_server() { # $1: workers 0/1
  TESSERA_RATE_LIMIT_PER_ACCOUNT=0 TESSERA_RATE_LIMIT_PER_IP=0 TESSERA_AUTH_FAILURE_LIMIT=0 RUST_LOG=warn \
  TESSERA_WORKERS_ENABLED="$1" TESSERA_SMTP_URL="smtp://127.0.0.1:$closed" TESSERA_NOTIFICATION_RETRY_SCALE=0.0001 \
    "$T" --data-dir "$work" serve --listen "127.0.0.1:$PORT" >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do curl -fs "$URL/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$work/server.log" >&2; exit 1
}
bench() { cargo bench -p tessera-server --bench checkin --quiet -- --url "$URL" --key-id "$key_id" --secret "$key_secret" "$@"; }
metric() { curl -fs "$URL/metrics" | awk -v m="$1" 'index($0, m) == 1 {s += $NF} END {print s + 0}'; }

echo "== seeding (workers off): 2 × $TICKETS check-in tickets, $CONFIRMATIONS × 100 background tickets"
start_server 0
bench --seed-only --tickets "$TICKETS" --codes-out "$work/quiet.txt"
bench --seed-only --tickets "$TICKETS" --codes-out "$work/loaded.txt"
bench --seed-only --tickets $((CONFIRMATIONS * 100)) --codes-out "$work/background.txt"

echo "== quiet (workers off, nothing rendering): /healthz ${HEALTHZ}s, then $TICKETS check-ins, $CONNECTIONS connections"
bench --codes "$work/quiet.txt" --connections "$CONNECTIONS" --healthz "$HEALTHZ"
stop_server

echo "== loaded (workers on, relay unreachable, $((CONFIRMATIONS + 2 * TICKETS / 100)) confirmations of ≤100 tickets queued)"
start_server 1
bench --codes "$work/loaded.txt" --connections "$CONNECTIONS" --healthz "$HEALTHZ"
echo "during the loaded phase: QR images drawn $(metric tessera_qr_images_rendered_total), e-mail attempts $(metric 'tessera_notifications_total{channel="email"')"
sleep "${BENCH_SETTLE_SECS:-0}"
echo "server rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$server_pid/status")"
