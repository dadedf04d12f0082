#!/usr/bin/env bash
# Cancellation figures for docs/performance.md (issue 26 acceptance): a campaign of BENCH_TICKETS
# paid tickets is cancelled with `refund: true`; the time until every refund is filed, every
# ticket is void, every refund is at the provider, and (once the sandbox pays them) every refund
# succeeded, with the rates. Then `tessera admin ledger check` must be clean.
#
# Builds (release unless BENCH_PROFILE=debug), starts the sandbox (`tessera sandbox`, its own
# process) and a server with workers on (TESSERA_WORKER_POLL_MS=10) on a throwaway SQLite data dir
# (or DATABASE_URL) with limits off, logging at warn, then runs crates/tessera-server/benches/cancel.rs.
# Settings (environment): BENCH_PORT (18184), BENCH_SANDBOX_PORT (18192), BENCH_TICKETS (10000),
# BENCH_PER_PURCHASE (10: tickets per purchase, so 1,000 purchases and 1,000 refunds; 1 gives
# 10,000 of each), BENCH_CONNECTIONS (16), BENCH_TIMEOUT_SECS (3600), BENCH_PROFILE (release),
# DATABASE_URL (empty: SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18184}
SANDBOX_PORT=${BENCH_SANDBOX_PORT:-18192}
TICKETS=${BENCH_TICKETS:-10000}
PER_PURCHASE=${BENCH_PER_PURCHASE:-10}
CONNECTIONS=${BENCH_CONNECTIONS:-16}
TIMEOUT=${BENCH_TIMEOUT_SECS:-3600}
PROFILE=${BENCH_PROFILE:-release}
URL="http://127.0.0.1:$PORT"
SANDBOX="http://127.0.0.1:$SANDBOX_PORT"
SECRET=sk_bench_platform_a

profile_flag=()
[ "$PROFILE" = release ] && profile_flag=(--release)
echo "== building ($PROFILE)"
cargo build "${profile_flag[@]}" --quiet --bin tessera
if [ "$PROFILE" = release ]; then
  cargo bench -p tessera-server --bench cancel --no-run --quiet
  run_bench() { cargo bench -p tessera-server --bench cancel --quiet -- "$@"; }
else
  # A debug harness (cargo bench always builds optimized): the executable cargo reports.
  bench_bin=$(cargo build -p tessera-server --bench cancel --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "cancel" and m.get("executable"):
        print(m["executable"])')
  run_bench() { "$bench_bin" "$@"; }
fi
T=${BENCH_SERVER_BIN:-${CARGO_TARGET_DIR:-target}/$PROFILE/tessera}

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "== machine: $(nproc) cpus, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)'), load $(cut -d' ' -f1-3 /proc/loadavg), server $PROFILE, database $([ -n "${DATABASE_URL:-}" ] && echo postgres || echo sqlite)"

db_args=()
[ -n "${DATABASE_URL:-}" ] && db_args=(--database-url "$DATABASE_URL")

"$T" sandbox --data-dir "$work" --listen "127.0.0.1:$SANDBOX_PORT" --smtp-listen "127.0.0.1:$((SANDBOX_PORT + 1))" --notify-url "$URL" >"$work/sandbox.log" 2>&1 &
pids+=($!)

mkdir -p "$work/data"
"$T" --data-dir "$work/data" "${db_args[@]}" admin account create --slug bench --name Bench --json >/dev/null
key=$("$T" --data-dir "$work/data" "${db_args[@]}" admin key create --account bench --kind private \
  --scopes campaigns:read,campaigns:write,tickets:write,payments:write --json)
key_id=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyId"])')
key_secret=$(printf '%s' "$key" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')

TESSERA_RATE_LIMIT_PER_ACCOUNT=0 TESSERA_RATE_LIMIT_PER_IP=0 TESSERA_AUTH_FAILURE_LIMIT=0 RUST_LOG=warn \
TESSERA_PROVIDER_A_BASE_URL="$SANDBOX/provider_a" TESSERA_PROVIDER_A_SECRET_KEY=$SECRET \
TESSERA_WORKERS_ENABLED=1 TESSERA_WORKER_POLL_MS=10 \
  "$T" --data-dir "$work/data" "${db_args[@]}" serve --listen "127.0.0.1:$PORT" >"$work/server.log" 2>&1 &
pids+=($!)
server_pid=$!
for _ in $(seq 1 300); do curl -fs "$URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "$URL/healthz" >/dev/null || { cat "$work/server.log" >&2; exit 1; }
sleep 0.05 # signed timestamps must be later than the server's start

echo "== cancel a campaign of $TICKETS paid tickets ($PER_PURCHASE per purchase) with refunds, $CONNECTIONS connections"
run_bench --url "$URL" --sandbox-url "$SANDBOX" \
  --key-id "$key_id" --secret "$key_secret" --tickets "$TICKETS" --per-purchase "$PER_PURCHASE" \
  --connections "$CONNECTIONS" --timeout-secs "$TIMEOUT" || { tail -n 40 "$work/server.log" >&2; exit 1; }
echo "server rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$server_pid/status")"
"$T" --data-dir "$work/data" "${db_args[@]}" admin ledger check --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print("ledger check:", "ok" if r["ok"] else r); sys.exit(0 if r["ok"] else 1)'
