#!/usr/bin/env bash
# USSD figures for docs/performance.md (issue 24's acceptance line): simulated voters dial through
# the sandbox on each gateway (africastalking, hubtel, nalo, arkesel) with injected faults (lost
# replies and re-dials, re-dials after confirming, dropped and duplicated webhooks, slow charge
# calls), the handset approves or refuses each mobile-money prompt, and the bench checks that
# credited votes = votes of the successful charges, 0 double charges, every screen <= 160
# characters, and reports the USSD reply latency (sandbox -> Tessera -> sandbox) per gateway.
#
# Builds release, starts the sandbox (`tessera sandbox`, its own process, playing the gateways,
# the handset and the payment providers) and a server on a throwaway SQLite data dir with limits
# off, workers on with a short poll and a short verify interval (a dropped webhook is credited by
# the verify poll), all three providers pointed at the sandbox, logging at warn; then runs
# crates/tessera-server/benches/ussd.rs (see its docs for the voters' script and the checks).
# Settings (environment): BENCH_PORT (18184), BENCH_SANDBOX_PORT (18192), BENCH_VOTERS (1000),
# BENCH_CONNECTIONS (32), BENCH_SEED (24), BENCH_GATEWAYS (all four), BENCH_PROVIDERS
# (provider_a,provider_b,provider_c: one per gateway in turn), BENCH_SLOW_CHARGE_MS (300),
# BENCH_P99_LIMIT_MS (500), DATABASE_URL (empty: SQLite), BENCH_SERVER_BIN (the server binary,
# default the build's), BENCH_SKIP_BUILD=1 (use what is built), BENCH_DEBUG=1 (debug builds of the
# server and the bench instead of release: a quick check that it runs, not figures).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18184}
SANDBOX_PORT=${BENCH_SANDBOX_PORT:-18192}
VOTERS=${BENCH_VOTERS:-1000}
CONNECTIONS=${BENCH_CONNECTIONS:-32}
SEED=${BENCH_SEED:-24}
GATEWAYS=${BENCH_GATEWAYS:-africastalking,hubtel,nalo,arkesel}
PROVIDERS=${BENCH_PROVIDERS:-provider_a,provider_b,provider_c}
SLOW_MS=${BENCH_SLOW_CHARGE_MS:-300}
P99_LIMIT=${BENCH_P99_LIMIT_MS:-500}
URL="http://127.0.0.1:$PORT"
SANDBOX="http://127.0.0.1:$SANDBOX_PORT"
SECRET_A=sk_bench_ussd_a
SECRET_B=sk_bench_ussd_b
SECRET_C=sk_bench_ussd_c
TARGET=${CARGO_TARGET_DIR:-target}

if [ -n "${BENCH_DEBUG:-}" ]; then
  profile=debug
  build() { cargo build --quiet -p tessera-server "$@"; }
  bench_build() { cargo build --quiet -p tessera-server --bench ussd --message-format=json; }
else
  profile=release
  build() { cargo build --release --quiet -p tessera-server "$@"; }
  bench_build() { cargo bench -p tessera-server --bench ussd --no-run --quiet --message-format=json; }
fi
if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
  echo "== building ($profile)"
  build --bin tessera
fi
# The bench binary's path, as cargo reports it (built now unless it is fresh).
BENCH_BIN=$(bench_build | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "ussd" and m.get("executable"):
        print(m["executable"])')
[ -x "$BENCH_BIN" ] || { echo "no bench binary ($BENCH_BIN)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "== machine: $(nproc) cpus, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# BENCH_SERVER_BIN: the server binary to measure (default the build's); a copy of an earlier
# build compares two builds in adjacent runs.
T=${BENCH_SERVER_BIN:-$TARGET/$profile/tessera}
db_args=()
[ -n "${DATABASE_URL:-}" ] && db_args=(--database-url "$DATABASE_URL")

"$T" sandbox --data-dir "$work" --listen "127.0.0.1:$SANDBOX_PORT" --smtp-listen "127.0.0.1:$((SANDBOX_PORT + 1))" \
  --notify-url "$URL" >"$work/sandbox.log" 2>&1 &
pids+=($!)

"$T" --data-dir "$work" "${db_args[@]}" admin account create --slug ussdbench --name "USSD Bench" --json >/dev/null
key=$("$T" --data-dir "$work" "${db_args[@]}" admin key create --account ussdbench --kind private \
  --scopes campaigns:read,campaigns:write,payments:write,settings:read,settings:write --json)
key_id=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyId"])')
key_secret=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')

TESSERA_RATE_LIMIT_PER_ACCOUNT=0 TESSERA_RATE_LIMIT_PER_IP=0 TESSERA_AUTH_FAILURE_LIMIT=0 RUST_LOG=warn \
TESSERA_PROVIDER_A_BASE_URL="$SANDBOX/provider_a" TESSERA_PROVIDER_A_SECRET_KEY=$SECRET_A \
TESSERA_PROVIDER_B_BASE_URL="$SANDBOX/provider_b" TESSERA_PROVIDER_B_SECRET_KEY=$SECRET_B \
TESSERA_PROVIDER_C_BASE_URL="$SANDBOX/provider_c" TESSERA_PROVIDER_C_SECRET_KEY=$SECRET_C \
TESSERA_WORKERS_ENABLED=1 TESSERA_WORKER_POLL_MS=10 TESSERA_PAYMENT_VERIFY_INTERVAL_SECONDS=1 \
  "$T" --data-dir "$work" "${db_args[@]}" serve --listen "127.0.0.1:$PORT" >"$work/server.log" 2>&1 &
server_pid=$!
pids+=($server_pid)
for _ in $(seq 1 300); do
  curl -fs "$URL/healthz" >/dev/null 2>&1 && curl -fs "$SANDBOX/sandbox/faults" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fs "$URL/healthz" >/dev/null || { cat "$work/server.log" >&2; exit 1; }
curl -fs "$SANDBOX/sandbox/faults" >/dev/null || { cat "$work/sandbox.log" >&2; exit 1; }

echo "== USSD votes: $VOTERS voters per gateway ($GATEWAYS), $CONNECTIONS at a time, seed $SEED"
status=0
"$BENCH_BIN" --url "$URL" --sandbox-url "$SANDBOX" --key-id "$key_id" --secret "$key_secret" --account ussdbench \
  --voters "$VOTERS" --connections "$CONNECTIONS" --seed "$SEED" --gateways "$GATEWAYS" --providers "$PROVIDERS" \
  --slow-charge-ms "$SLOW_MS" --p99-limit-ms "$P99_LIMIT" || status=$?
echo "server rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$server_pid/status")"
"$T" --data-dir "$work" "${db_args[@]}" admin ledger check --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print("ledger check:", "ok" if r["ok"] else r)'
if [ "$status" != 0 ]; then
  echo "== server log (last 40 lines)" >&2; tail -n 40 "$work/server.log" >&2
fi
exit "$status"
