#!/usr/bin/env bash
# Payment figures for docs/performance.md: callback intake (the durable hand-off) and the
# end-to-end purchase rate (initialize → provider confirms → fulfilled), on loopback.
#
# Builds release, starts the sandbox (`tessera sandbox`, its own process) and a server on a
# throwaway SQLite data dir with limits off (one IP and one key send everything), logging at warn,
# then runs crates/tessera-server/benches/payments.rs:
#   1. intake: the server runs with its workers off (TESSERA_WORKERS_ENABLED=0), so the figure is
#      the hand-off alone: signature check, event and job committed, 200.
#   2. e2e: a second server with workers on (TESSERA_WORKER_POLL_MS=10); each buyer initializes,
#      settles at the sandbox (which sends the signed callback) and polls until fulfilled.
# Settings (environment): BENCH_PORT (18182), BENCH_SANDBOX_PORT (18190), BENCH_CONNECTIONS (64),
# BENCH_E2E_CONNECTIONS (16), BENCH_DURATION_SECS (10), BENCH_WARMUP_SECS (2), DATABASE_URL (empty: SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18182}
SANDBOX_PORT=${BENCH_SANDBOX_PORT:-18190}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
E2E_CONNECTIONS=${BENCH_E2E_CONNECTIONS:-16}
DURATION=${BENCH_DURATION_SECS:-10}
WARMUP=${BENCH_WARMUP_SECS:-2}
URL="http://127.0.0.1:$PORT"
SANDBOX="http://127.0.0.1:$SANDBOX_PORT"
SECRET=sk_bench_platform_a

echo "== building (release)"
cargo build --release --quiet
cargo bench -p tessera-server --bench payments --no-run --quiet

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "== machine: $(nproc) cpus, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# BENCH_SERVER_BIN: the server binary to measure (default the release build); a copy of an
# earlier build compares two builds in adjacent runs.
T=${BENCH_SERVER_BIN:-target/release/tessera}
db_args=()
[ -n "${DATABASE_URL:-}" ] && db_args=(--database-url "$DATABASE_URL")

wait_listening() { # log file
  for _ in $(seq 1 300); do curl -fs "$URL/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$1" >&2; return 1
}

start_server() { # data dir, workers on (1/0), log
  TESSERA_RATE_LIMIT_PER_ACCOUNT=0 TESSERA_RATE_LIMIT_PER_IP=0 TESSERA_AUTH_FAILURE_LIMIT=0 RUST_LOG=warn \
  TESSERA_PROVIDER_A_BASE_URL="$SANDBOX/provider_a" TESSERA_PROVIDER_A_SECRET_KEY=$SECRET \
  TESSERA_WORKERS_ENABLED=$2 TESSERA_WORKER_POLL_MS=10 \
    "$T" --data-dir "$1" "${db_args[@]}" serve --listen "127.0.0.1:$PORT" >"$3" 2>&1 &
  pids+=($!)
  server_pid=$!
  wait_listening "$3"
}

"$T" sandbox --data-dir "$work" --listen "127.0.0.1:$SANDBOX_PORT" --smtp-listen "127.0.0.1:$((SANDBOX_PORT + 1))" --notify-url "$URL" >"$work/sandbox.log" 2>&1 &
pids+=($!)

echo "== 1. callback intake (hand-off only, workers off), $CONNECTIONS connections"
mkdir -p "$work/intake"
start_server "$work/intake" 0 "$work/intake.log"
cargo bench -p tessera-server --bench payments --quiet -- --phase intake --url "$URL" --webhook-secret "$SECRET" \
  --connections "$CONNECTIONS" --duration-secs "$DURATION" --warmup-secs "$WARMUP"
echo "server rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$server_pid/status")"
kill -TERM "$server_pid"; wait "$server_pid" 2>/dev/null || true

echo "== 2. end to end (initialize → sandbox pays → callback → verify → fulfilled), $E2E_CONNECTIONS buyers"
mkdir -p "$work/e2e"
"$T" --data-dir "$work/e2e" "${db_args[@]}" admin account create --slug bench --name Bench --json >/dev/null
key=$("$T" --data-dir "$work/e2e" "${db_args[@]}" admin key create --account bench --kind private \
  --scopes campaigns:write,tickets:write,payments:write --json)
key_id=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyId"])')
key_secret=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
start_server "$work/e2e" 1 "$work/e2e.log"
cargo bench -p tessera-server --bench payments --quiet -- --phase e2e --url "$URL" --sandbox-url "$SANDBOX" \
  --key-id "$key_id" --secret "$key_secret" --connections "$E2E_CONNECTIONS" --duration-secs "$DURATION" --warmup-secs "$WARMUP"
echo "server rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$server_pid/status")"
"$T" --data-dir "$work/e2e" "${db_args[@]}" admin ledger check --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print("ledger check:", "ok" if r["ok"] else r)'
