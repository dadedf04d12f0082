#!/usr/bin/env bash
# The house's rooms, checked (docs/architecture.md): layers import only downward, handlers stay
# thin. Fails (exit 1) naming the file and line of every breach:
#   1. only app.rs, main.rs and cli/ import `workers` (workers are started, never called into);
#   2. only http/ itself, app.rs, main.rs and cli/ import `http`;
#   3. flows/, store/, domain/, providers/, auth/, workers/ and views/ use no axum;
#   4. domain/ imports no store, flows, providers, state, http or sqlx (types and rules, no I/O),
#      except the provider identifiers `providers::payments::ProviderId` (the provider list is
#      kept beside the adapters so that adding a provider is one file and one line; the settings
#      rules read its names);
#   5. no SQL under http/ (no sqlx, no SELECT/INSERT/UPDATE/DELETE statement text);
#   5b. providers/ (payment adapters, messaging transports) import only domain and each other:
#      no state, config, store, flows, views, auth, http or workers (the flow decides, the
#      transport carries);
#   5c. views/ (what the API returns, and a notification's message) does no I/O: no state,
#      providers, flows, http, workers or sqlx;
#   6. no route handler (a `pub async fn` under http/v1, http/portal, http/console, http/callbacks.rs) is longer
#      than 60 lines, from `pub async fn` to its closing brace.
set -euo pipefail
cd "$(dirname "$0")/../crates/tessera-server/src"

status=0
breach() {
  echo "check-layers: $1" >&2
  status=1
}

hits() { grep -rnE --include='*.rs' "$@" || true; }

while IFS= read -r line; do
  [ -n "$line" ] && breach "workers imported outside app.rs, main.rs and cli/: $line"
done < <(hits 'crate::workers|super::workers' . | grep -vE '^\./(app\.rs|main\.rs|cli/)')

while IFS= read -r line; do
  [ -n "$line" ] && breach "http imported outside http/, app.rs, main.rs and cli/: $line"
done < <(hits 'crate::http\b' . | grep -vE '^\./(http/|app\.rs|main\.rs|cli/)')

while IFS= read -r line; do
  [ -n "$line" ] && breach "axum below http: $line"
done < <(hits '(^|[^a-z_])axum::|use axum' flows store domain providers auth workers views)

while IFS= read -r line; do
  [ -n "$line" ] && breach "domain/ depends on I/O layers: $line"
done < <(hits 'crate::(store|flows|providers|state|http)\b|sqlx::' domain | grep -v 'use crate::providers::payments::ProviderId;')

while IFS= read -r line; do
  [ -n "$line" ] && breach "SQL under http/: $line"
done < <(hits 'sqlx|"(SELECT|INSERT|UPDATE|DELETE) ' http)

code() { grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true; }

while IFS= read -r line; do
  [ -n "$line" ] && breach "providers/ depends on a layer above it: $line"
done < <(hits 'crate::(state|config|store|flows|views|auth|http|workers)\b' providers | code)

while IFS= read -r line; do
  [ -n "$line" ] && breach "views/ does I/O: $line"
done < <(hits 'crate::(state|providers|flows|http|workers)\b|sqlx::' views | code)

while IFS= read -r line; do
  [ -n "$line" ] && breach "handler over 60 lines: $line"
done < <(python3 - <<'EOF'
import os, re
files = [os.path.join(d, f) for base in ("http/v1", "http/portal", "http/console") for d, _, fs in os.walk(base) for f in fs if f.endswith(".rs")]
files.append("http/callbacks.rs")
for path in sorted(files):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^pub async fn (\w+)", line)
        if not m:
            continue
        j = i
        while j < len(lines) and lines[j] != "}":
            j += 1
        if j - i + 1 > 60:
            print(f"{path}:{i + 1}: {m.group(1)} is {j - i + 1} lines")
EOF
)

if [ "$status" -eq 0 ]; then
  echo "check-layers: OK (imports go downward, no SQL in http/, every handler within 60 lines)"
fi
exit "$status"
