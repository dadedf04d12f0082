#!/usr/bin/env bash
# Schema-driven fuzzing of the API exactly as served: starts a real `tessera serve` on a fresh
# database, seeds an account, keys and campaigns, and runs Schemathesis against the served
# /api/white-label/v1/openapi.json with a signing hook (scripts/fuzz_hooks.py).
#
#   bash scripts/fuzz-api.sh [sqlite|postgres] [max-examples per operation]   (default: sqlite 100)
#
# Checks: no 5xx, and every status code, body schema, content type and documented header
# conforms to the document. PostgreSQL: TESSERA_FUZZ_DATABASE_URL, or a throwaway database on
# the local server (as scripts/test.sh makes one). Rate limits and the failed-auth block are off
# so that the run measures conformance, not throttling. Results: docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."

backend=${1:-sqlite}
examples=${2:-100}
tools=(schemathesis==4.32.5)
venv=target/fuzz-tools
stamp="$venv/.installed"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${tools[*]}" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${tools[@]}"
  echo "${tools[*]}" > "$stamp"
fi

cargo build --quiet
bin=target/debug/tessera
data=$(mktemp -d)
server_pid=""
created_db=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$created_db" ]; then
    psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $created_db WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT

db_args=(--data-dir "$data")
if [ "$backend" = postgres ]; then
  url=${TESSERA_FUZZ_DATABASE_URL:-}
  if [ -z "$url" ]; then
    created_db="tessera_fuzz_$(date +%s)_$$"
    psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE $created_db"
    url="postgres://postgres@127.0.0.1:5432/$created_db"
  fi
  db_args+=(--database-url "$url")
fi

json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
admin() { "$bin" admin "${db_args[@]}" "$@" --json; }
admin account create --slug fuzz --name "Fuzz Events" >/dev/null
admin domain add --account fuzz --hostname fuzz.example.com --primary --verified >/dev/null
scopes=settings:read,settings:write,campaigns:read,campaigns:write,tickets:read,tickets:write,payments:write,withdrawals:write,my-tickets:read,submissions:write,notifications:write
private=$(admin key create --account fuzz --kind private --scopes "$scopes")
public=$(admin key create --account fuzz --kind public --scopes settings:read,campaigns:read,tickets:read)
export TESSERA_FUZZ_KEY_ID=$(echo "$private" | json '["keyId"]')
export TESSERA_FUZZ_KEY_SECRET=$(echo "$private" | json '["secret"]')
export TESSERA_FUZZ_PUBLIC_KEY=$(echo "$public" | json '["key"]')
export TESSERA_FUZZ_DOMAIN=fuzz.example.com
# The reseller portal: the account is a reseller and the run holds its owner's session (the
# `portalSession` scheme in scripts/fuzz_hooks.py). A generated logout or a profile move to
# `disabled` ends or narrows what the session can do; the documented 401/403 are then checked.
admin reseller create --account fuzz --owner-email owner@fuzz.example.com >/dev/null
export TESSERA_FUZZ_PORTAL_TOKEN=$(admin session create --email owner@fuzz.example.com | json '["token"]')
spares=()
for _ in 1 2 3 4 5; do spares+=("$(admin session create --email owner@fuzz.example.com | json '["token"]')"); done
TESSERA_FUZZ_PORTAL_SPARE_TOKENS=$(IFS=,; echo "${spares[*]}")
export TESSERA_FUZZ_PORTAL_SPARE_TOKENS

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
TESSERA_RATE_LIMIT_PER_ACCOUNT=0 TESSERA_RATE_LIMIT_PER_IP=0 TESSERA_AUTH_FAILURE_LIMIT=0 \
  "$bin" serve "${db_args[@]}" --listen "127.0.0.1:$port" > "$data/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do curl -fs "$base/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
sleep 1 # signed timestamps must be later than the server's start (D2.6)

export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
TESSERA_FUZZ_CAMPAIGNS=$("$venv/bin/python" -c "import fuzz_hooks; fuzz_hooks.seed('$base')")
export TESSERA_FUZZ_CAMPAIGNS

status=0
# From the temp dir: Schemathesis keeps its caches in the current directory.
(cd "$data" && SCHEMATHESIS_HOOKS=fuzz_hooks "$OLDPWD/$venv/bin/schemathesis" run "$base/api/white-label/v1/openapi.json" \
  --url "$base" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,unsupported_method,allow_header_conformance \
  --phases examples,coverage,fuzzing \
  --max-examples "$examples" \
  --workers 2 \
  --generation-with-security-parameters false \
  --generation-database none \
  --no-color) || status=$?
if grep -qi "panic\|internal error" "$data/server.log"; then
  echo "server log shows internal errors:" >&2
  grep -i "panic\|internal error" "$data/server.log" | head -20 >&2
  status=1
fi
exit $status
