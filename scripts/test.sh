#!/usr/bin/env bash
# Runs every test: unit tests, the signing vectors against openssl/Python/Node, and the HTTP
# integration suite on SQLite and on PostgreSQL, then the suite once more with every server's
# guards in Redis (issue 23, D17.1; with the two-instance tests, which need Redis).
#
# PostgreSQL: if TESSERA_TEST_DATABASE_URL is set it is used as is. Otherwise, when a local
# server answers on 127.0.0.1:5432 (started here if it is installed but down), a throwaway
# database is created for this run and dropped afterwards. With CI=true a missing PostgreSQL
# is an error; elsewhere the PostgreSQL half is skipped with a warning.
set -euo pipefail
cd "$(dirname "$0")/.."

PGHOST_ADDR=${TESSERA_TEST_PG_HOST:-127.0.0.1}
created_db=""

pg_up() { pg_isready -h "$PGHOST_ADDR" -p 5432 -q 2>/dev/null; }

cleanup() {
  if [ -n "$created_db" ]; then
    psql -h "$PGHOST_ADDR" -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $created_db WITH (FORCE)" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

if [ -z "${TESSERA_TEST_DATABASE_URL:-}" ]; then
  if ! pg_up && command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
    for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  fi
  if pg_up; then
    created_db="tessera_test_$(date +%s)_$$"
    psql -h "$PGHOST_ADDR" -U postgres -d postgres -qc "CREATE DATABASE $created_db"
    export TESSERA_TEST_DATABASE_URL="postgres://postgres@$PGHOST_ADDR:5432/$created_db"
    echo "PostgreSQL suite: throwaway database $created_db"
  elif [ "${CI:-}" = "true" ]; then
    echo "PostgreSQL is required in CI but is not reachable on $PGHOST_ADDR:5432" >&2
    exit 1
  else
    echo "WARNING: no PostgreSQL on $PGHOST_ADDR:5432; only the SQLite half of the suite runs" >&2
  fi
fi

# Redis: TESSERA_TEST_REDIS_URL if set; otherwise the local server on 127.0.0.1:6379 (started
# here if it is installed but down). Each test server writes under its own key prefix, and the
# outage tests run a redis-server of their own. With CI=true a missing Redis is an error.
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; }
if [ -z "${TESSERA_TEST_REDIS_URL:-}" ]; then
  if ! redis_up && command -v redis-server >/dev/null 2>&1; then
    echo "starting Redis"
    mkdir -p /tmp/tessera-test-redis
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir /tmp/tessera-test-redis --logfile /tmp/tessera-test-redis/redis.log || true
    for _ in $(seq 1 30); do redis_up && break; sleep 0.2; done
  fi
  if redis_up; then
    redis_url="redis://127.0.0.1:6379"
  elif [ "${CI:-}" = "true" ]; then
    echo "Redis is required in CI but is not reachable on 127.0.0.1:6379" >&2
    exit 1
  else
    echo "WARNING: no Redis on 127.0.0.1:6379; the run with shared guards is skipped" >&2
    redis_url=""
  fi
else
  redis_url=$TESSERA_TEST_REDIS_URL
fi

# Doc examples first, so that the suite's own summary is the last thing printed.
cargo test --workspace --doc --quiet
suite() {
  if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-fail-fast "$@"
  else
    cargo test --workspace --no-fail-fast --all-targets
  fi
}
echo "== the suite, guards in memory"
TESSERA_TEST_REDIS_URL="" suite
if [ -n "$redis_url" ]; then
  # The integration tests only: the unit tests do not read TESSERA_TEST_REDIS_URL.
  echo "== the suite again, guards in Redis ($redis_url)"
  TESSERA_TEST_REDIS_URL=$redis_url suite -E 'binary(api)'
fi
