#!/usr/bin/env bash
# Keeps docs/architecture.md true to the code: every flow, worker, view and handler file of
# crates/tessera-server/src must be named there (by its path below src/, e.g. `flows/checkout.rs`,
# `http/v1/campaigns.rs`), and every such path the page names must exist. A new file that no
# one wrote into the map fails CI, as a cited decision without a definition does
# (check-decisions.sh).
#
# Checked folders: flows/, workers/, views/, http/v1/, http/portal/, http/console/, http/ussd/,
# and the inbound callback handler(s) directly under http/. `mod.rs` files are covered by their
# folder and are not required by name.
#
# Usage: bash scripts/check-architecture.sh   (from any directory). Exit 0 when both hold, else 1.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

doc=docs/architecture.md
src=crates/tessera-server/src
status=0

if [[ ! -f $doc ]]; then
    echo "check-architecture: $doc is missing" >&2
    exit 1
fi

required=()
for dir in flows workers views http/v1 http/portal http/console http/ussd; do
    [[ -d $src/$dir ]] || continue
    while IFS= read -r f; do
        required+=("${f#"$src"/}")
    done < <(find "$src/$dir" -maxdepth 1 -name '*.rs' ! -name mod.rs | sort)
done
# The route handlers that sit directly under http/ (the inbound provider callbacks).
for f in "$src"/http/callbacks.rs; do
    [[ -f $f ]] && required+=("${f#"$src"/}")
done

missing=()
for path in "${required[@]}"; do
    grep -qF "\`$path\`" "$doc" || missing+=("$path")
done
if ((${#missing[@]})); then
    echo "check-architecture: files not described in $doc (name each as \`path\` in its room's table):"
    printf '  %s\n' "${missing[@]}"
    status=1
fi

# The other way round: a path of those folders that the page names must exist.
stale=()
while IFS= read -r path; do
    [[ -f $src/$path ]] || stale+=("$path")
done < <(grep -oE '`(flows|workers|views|http/(v1|portal|console|ussd))/[a-z0-9_]+\.rs`' "$doc" | tr -d '`' | sort -u)
if ((${#stale[@]})); then
    echo "check-architecture: $doc names files that do not exist:"
    printf '  %s\n' "${stale[@]}"
    status=1
fi

if [[ $status -eq 0 ]]; then
    echo "check-architecture: OK, all ${#required[@]} flow, worker, view and handler files are in $doc, and it names none that is gone"
fi
exit "$status"
