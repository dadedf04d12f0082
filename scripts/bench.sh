#!/usr/bin/env bash
# Load figures for docs/performance.md: builds release, starts a throwaway demo server on
# loopback, runs the load harness (crates/tessera-server/benches/load.rs) against it, prints the
# server's memory, and stops it.
#
# The server runs with the rate limits and failed-auth blocking turned off
# (TESSERA_RATE_LIMIT_PER_ACCOUNT=0, TESSERA_RATE_LIMIT_PER_IP=0, TESSERA_AUTH_FAILURE_LIMIT=0):
# every request of the harness comes from one IP and one key, so with the defaults almost all of
# them would be answered 429 by the limiter (600/min per IP) or blocked after 10 bad signatures,
# and the run would measure the limiter's refusal instead of the signature check and the route.
# The replay store is made large enough for the run (BENCH_REPLAY_CAPACITY, default 64000000;
# set it empty to keep the server's default of 4000000): each accepted signed request holds two
# entries for up to the 5-minute clock window, and the harness sends ~20 000 signed requests/s
# from one key, which would fill the default within a minute and measure 429s. See
# docs/performance.md.
# Logging is at warn: the per-request access log at info would measure log formatting and
# terminal/file writes rather than the service.
#
# The harness builds every request before the clock starts (pre-signed, each sent once, the
# /healthz phase carrying the same four signed headers), releases all connections together, and
# runs the four phases (healthz, signed, rejected, list) BENCH_ROUNDS times in turn; the median of
# the rounds' ratios is the figure of record. It also reports the server's CPU time per request
# (from /proc/<pid>/stat).
#
# Settings (environment): BENCH_PORT (18181), BENCH_CONNECTIONS (64), BENCH_REQUESTS (200000 timed
# requests per phase and round), BENCH_LIST_REQUESTS (40000), BENCH_ROUNDS (3),
# BENCH_CLIENT_THREADS (2), BENCH_SERVER_BIN (the server binary to measure, default the release
# build; set it to a copy of an earlier build to compare two builds in adjacent runs).
# Extra arguments go to the harness (e.g. --phases healthz,list).
# BENCH_SERVER_CPUS and BENCH_CLIENT_CPUS (taskset CPU lists, e.g. 0 and 1) pin the server and the
# load generator to CPUs of their own, so that the server's rate is not also paying for its
# clients' (or a Redis's) CPU; docs/performance.md says which runs were pinned.
# BENCH_REDIS_CPUS (a taskset CPU list) starts a Redis of the run's own (empty, no persistence) on
# those CPUs and points REDIS_URL at it: Redis on a core of its own, as on its own host.
# REDIS_URL, when set, reaches the server (the shared replay and limit store of several instances,
# docs/deployment.md), so the signed path can be measured with Redis; its keys go under
# TESSERA_REDIS_KEY_PREFIX, by default one of this run's own (a shared Redis is left alone).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-18181}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
REQUESTS=${BENCH_REQUESTS:-200000}
LIST_REQUESTS=${BENCH_LIST_REQUESTS:-40000}
ROUNDS=${BENCH_ROUNDS:-3}
CLIENT_THREADS=${BENCH_CLIENT_THREADS:-2}
REPLAY_CAPACITY=${BENCH_REPLAY_CAPACITY-64000000}
URL="http://127.0.0.1:$PORT"
SERVER_BIN=${BENCH_SERVER_BIN:-target/release/tessera}
server_pin=()
client_pin=()
if [ -n "${BENCH_SERVER_CPUS:-}" ]; then server_pin=(taskset -c "$BENCH_SERVER_CPUS"); fi
if [ -n "${BENCH_CLIENT_CPUS:-}" ]; then client_pin=(taskset -c "$BENCH_CLIENT_CPUS"); fi

echo "== building (release)"
cargo build --release --quiet
cargo bench -p tessera-server --bench load --no-run --quiet

data_dir=$(mktemp -d)
server_pid=""
redis_pid=""
cleanup() {
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$data_dir"
}
trap cleanup EXIT

echo "== machine"
echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "kernel: $(uname -sr), $(rustc --version)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
echo "server: $SERVER_BIN"
echo "cpus: server ${BENCH_SERVER_CPUS:-any}, load generator ${BENCH_CLIENT_CPUS:-any}"
if [ -n "${BENCH_REDIS_CPUS:-}" ]; then
  redis_port=$((PORT + 1))
  taskset -c "$BENCH_REDIS_CPUS" redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$data_dir" >"$data_dir/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 1 50); do
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  REDIS_URL="redis://127.0.0.1:$redis_port"
  echo "redis: its own, on 127.0.0.1:$redis_port, cpus $BENCH_REDIS_CPUS"
fi
if [ -n "${REDIS_URL:-}" ]; then
  export REDIS_URL TESSERA_REDIS_KEY_PREFIX=${TESSERA_REDIS_KEY_PREFIX:-tessera:bench:$$:}
  echo "replay store: redis (key prefix $TESSERA_REDIS_KEY_PREFIX)"
else
  echo "replay store: in memory"
fi

config_args=()
if [ -n "$REPLAY_CAPACITY" ]; then
  printf '[security]\nreplay_capacity = %s\n' "$REPLAY_CAPACITY" >"$data_dir/bench.toml"
  config_args=(--config "$data_dir/bench.toml")
fi

echo "== starting tessera on $URL (data in $data_dir, limits off, replay capacity ${REPLAY_CAPACITY:-default}, RUST_LOG=warn)"
TESSERA_RATE_LIMIT_PER_ACCOUNT=0 TESSERA_RATE_LIMIT_PER_IP=0 TESSERA_AUTH_FAILURE_LIMIT=0 RUST_LOG=warn \
  "${server_pin[@]}" "$SERVER_BIN" "${config_args[@]}" --data-dir "$data_dir" serve --demo --listen "127.0.0.1:$PORT" \
  >"$data_dir/server.log" 2>&1 &
server_pid=$!

key=""
for _ in $(seq 1 300); do
  key=$(sed -n 's/^ *private key: *//p' "$data_dir/server.log" | head -n 1)
  [ -n "$key" ] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "the server exited:" >&2
    cat "$data_dir/server.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$key" ]; then
  echo "no demo key in the server's banner after 30 s:" >&2
  cat "$data_dir/server.log" >&2
  exit 1
fi
key_id=${key%%:*}
secret=${key#*:}
echo "demo private key: $key_id"
echo "server rss at start: $(awk '/VmRSS/ {print $2, $3}' "/proc/$server_pid/status")"

echo "== load (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
rc=0
"${client_pin[@]}" cargo bench -p tessera-server --bench load --quiet -- --url "$URL" --key-id "$key_id" --secret "$secret" \
  --connections "$CONNECTIONS" --requests "$REQUESTS" --list-requests "$LIST_REQUESTS" --rounds "$ROUNDS" \
  --client-threads "$CLIENT_THREADS" \
  --server-pid "$server_pid" "$@" || rc=$?
echo "load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== server memory after the run"
awk '/VmRSS|VmHWM/ {print $1, $2, $3}' "/proc/$server_pid/status"
kill -TERM "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""
if grep -qiE 'warn|error' "$data_dir/server.log"; then
  echo "== server warnings"
  grep -iE 'warn|error' "$data_dir/server.log" | sed -E 's/\x1b\[[0-9;]*m//g; s/^[0-9T:.Z-]+ +//' |
    sort | uniq -c | sort -rn | head -n 20
fi
exit "$rc"
