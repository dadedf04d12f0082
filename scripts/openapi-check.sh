#!/usr/bin/env bash
# Checks the OpenAPI document as `tessera openapi` prints it (the same document the server serves
# at /api/white-label/v1/openapi.json) with two independent, well-kept tools:
#   1. openapi-spec-validator: the document is valid OpenAPI 3.1;
#   2. openapi-python-client: a mainstream generator builds a client from it with no warning,
#      and the generated package imports.
# The tools are installed from PyPI at pinned versions into a venv under target/ (reused by
# later runs). Used by .ci/run; see docs/openapi.md.
set -euo pipefail
cd "$(dirname "$0")/.."

tools=(openapi-spec-validator==0.9.0 openapi-python-client==0.29.1)
venv=target/openapi-tools
stamp="$venv/.installed"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${tools[*]}" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${tools[@]}"
  echo "${tools[*]}" > "$stamp"
fi

out=target/openapi-check
rm -rf "$out"
mkdir -p "$out"
cargo run --quiet -- openapi > "$out/openapi.json"

"$venv/bin/openapi-spec-validator" "$out/openapi.json"

# No post hooks: formatting the generated code (ruff) is not what is being checked.
printf 'post_hooks: []\n' > "$out/generator.yml"
"$venv/bin/openapi-python-client" generate --path "$out/openapi.json" --config "$out/generator.yml" \
  --meta none --output-path "$out/tessera_client_py" --fail-on-warning
(cd "$out" && ../openapi-tools/bin/python -c 'import tessera_client_py.api.campaigns.campaigns_list, tessera_client_py.models')
echo "OpenAPI document valid; Python client generated in $out/tessera_client_py"
