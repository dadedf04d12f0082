#!/usr/bin/env bash
# Console page figures for docs/performance.md (issue 27): an account with BENCH_PAYMENTS paid
# payments (a charge and a fee entry each), a signed-in owner, and /console, /console/payments,
# /console/ledger, /console/campaigns fetched BENCH_REQUESTS times each: p50/p99/max latency and
# each page's size. Target: p99 < 50 ms, pages < 100 KB.
#
# Builds (release unless BENCH_PROFILE=debug), starts the sandbox (`tessera sandbox`, its own
# process, with its SMTP sink for the sign-in passcode) and a server with workers on
# (TESSERA_WORKER_POLL_MS=10) on a throwaway SQLite data dir (or DATABASE_URL) with limits off,
# logging at warn, adds an owner member, then runs crates/tessera-server/benches/console.rs.
# Settings (environment): BENCH_PORT (18185), BENCH_SANDBOX_PORT (18194; its SMTP sink on the
# next port), BENCH_PAYMENTS (10000), BENCH_REQUESTS (1000), BENCH_CONNECTIONS (16),
# BENCH_TIMEOUT_SECS (3600), BENCH_PROFILE (release), DATABASE_URL (empty: SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18185}
SANDBOX_PORT=${BENCH_SANDBOX_PORT:-18194}
PAYMENTS=${BENCH_PAYMENTS:-10000}
REQUESTS=${BENCH_REQUESTS:-1000}
CONNECTIONS=${BENCH_CONNECTIONS:-16}
TIMEOUT=${BENCH_TIMEOUT_SECS:-3600}
PROFILE=${BENCH_PROFILE:-release}
URL="http://127.0.0.1:$PORT"
SANDBOX="http://127.0.0.1:$SANDBOX_PORT"
SECRET=sk_bench_platform_a
OWNER=owner@bench.example
profile_flag=()
[ "$PROFILE" = release ] && profile_flag=(--release)
echo "== building ($PROFILE)"
cargo build "${profile_flag[@]}" --quiet --bin tessera
if [ "$PROFILE" = release ]; then
  cargo bench -p tessera-server --bench console --no-run --quiet
  run_bench() { cargo bench -p tessera-server --bench console --quiet -- "$@"; }
else
  # A debug harness (cargo bench always builds optimized): the executable cargo reports.
  bench_bin=$(cargo build -p tessera-server --bench console --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "console" and m.get("executable"):
        print(m["executable"])')
  run_bench() { "$bench_bin" "$@"; }
fi
T=${BENCH_SERVER_BIN:-${CARGO_TARGET_DIR:-target}/$PROFILE/tessera}

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [ -n "${BENCH_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

echo "== machine: $(nproc) cpus, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)'), load $(cut -d' ' -f1-3 /proc/loadavg), server $PROFILE, database $([ -n "${DATABASE_URL:-}" ] && echo postgres || echo sqlite)"

db_args=()
[ -n "${DATABASE_URL:-}" ] && db_args=(--database-url "$DATABASE_URL")

"$T" sandbox --data-dir "$work" --listen "127.0.0.1:$SANDBOX_PORT" --smtp-listen "127.0.0.1:$((SANDBOX_PORT + 1))" --notify-url "$URL" >"$work/sandbox.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$work/sandbox-ca.pem" ] && break; sleep 0.1; done

mkdir -p "$work/data"
"$T" --data-dir "$work/data" "${db_args[@]}" admin account create --slug bench --name Bench --json >/dev/null
key=$("$T" --data-dir "$work/data" "${db_args[@]}" admin key create --account bench --kind private \
  --scopes settings:read,settings:write,campaigns:read,campaigns:write,tickets:write,payments:write --json)
"$T" --data-dir "$work/data" "${db_args[@]}" admin member add --account bench --email "$OWNER" --role owner --json >/dev/null
key_id=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyId"])')
key_secret=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')

TESSERA_RATE_LIMIT_PER_ACCOUNT=0 TESSERA_RATE_LIMIT_PER_IP=0 TESSERA_AUTH_FAILURE_LIMIT=0 RUST_LOG=warn \
TESSERA_PROVIDER_A_BASE_URL="$SANDBOX/provider_a" TESSERA_PROVIDER_A_SECRET_KEY=$SECRET \
TESSERA_WORKERS_ENABLED=1 TESSERA_WORKER_POLL_MS=10 TESSERA_NOTIFICATION_RETRY_SCALE=1000 \
TESSERA_ALLOW_PRIVATE_ENDPOINTS=1 TESSERA_EXTRA_CA_FILE="$work/sandbox-ca.pem" \
  "$T" --data-dir "$work/data" "${db_args[@]}" serve --listen "127.0.0.1:$PORT" >"$work/server.log" 2>&1 &
pids+=($!)
server_pid=$!
for _ in $(seq 1 300); do curl -fs "$URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "$URL/healthz" >/dev/null || { cat "$work/server.log" >&2; exit 1; }
sleep 0.05 # signed timestamps must be later than the server's start

echo "== console pages: $PAYMENTS paid payments, $REQUESTS requests per page"
run_bench --url "$URL" --sandbox-url "$SANDBOX" --smtp-port "$((SANDBOX_PORT + 1))" \
  --key-id "$key_id" --secret "$key_secret" --owner "$OWNER" --payments "$PAYMENTS" \
  --requests "$REQUESTS" --connections "$CONNECTIONS" --timeout-secs "$TIMEOUT" || { tail -n 40 "$work/server.log" >&2; exit 1; }
echo "server rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$server_pid/status")"
"$T" --data-dir "$work/data" "${db_args[@]}" admin ledger check --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print("ledger check:", "ok" if r["ok"] else r); sys.exit(0 if r["ok"] else 1)'
