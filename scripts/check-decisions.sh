#!/usr/bin/env bash
# Checks that the repository explains its own decision numbers and points nowhere outside itself.
#
#   1. Every decision number cited (D<n> or D<n>.<m>) in crates/, docs/ (except docs/decisions.md),
#      README.md, config/ and scripts/ is defined in docs/decisions.md by a heading
#      `## D<n> …` (a section) or `### D<n>.<m> …` (an item).
#   2. No file in those places names the location of the specification outside the repository
#      (the two patterns below), except this script, which has to spell them.
#
# Usage: bash scripts/check-decisions.sh   (from any directory). Exit 0 when both hold, else 1.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

decisions=docs/decisions.md
self=scripts/check-decisions.sh
places=(crates docs README.md config scripts)
status=0

if [[ ! -f $decisions ]]; then
    echo "check-decisions: $decisions is missing" >&2
    exit 1
fi

# Text files (grep -I skips binaries) in those places, build output excluded.
files=()
while IFS= read -r f; do
    [[ $f == "$decisions" ]] || files+=("$f")
done < <(grep -rIl --exclude-dir=target --exclude-dir=.git '' "${places[@]}" | sort)

# A citation is D, digits, optionally .digits, standing alone: not preceded by a letter, digit,
# underscore, dot, hyphen, slash or # (hex strings, D2D-like words, identifiers, colours, paths)
# and not followed by a letter, digit or underscore. Prints "number<TAB>file:line" per citation.
citations=$(perl -ne '
    while (/(?<![A-Za-z0-9_.\/#-])(D[0-9]+(?:\.[0-9]+)?)(?![A-Za-z0-9_])/g) {
        print "$1\t$ARGV:$.\n";
    }
    close ARGV if eof;
' "${files[@]}")

cited=$(cut -f1 <<<"$citations" | sed '/^$/d' | sort -u)
defined=$(grep -oE '^(## D[0-9]+ |### D[0-9]+\.[0-9]+ )' "$decisions" \
    | sed -E 's/^#+ //; s/ $//' | sort -u)
missing=$(comm -23 <(printf '%s\n' "$cited") <(printf '%s\n' "$defined") | sed '/^$/d' | sort -V)
count=$(sed '/^$/d' <<<"$cited" | wc -l | tr -d ' ')

if [[ -n $missing ]]; then
    echo "check-decisions: cited but not defined by a heading in $decisions:"
    while IFS= read -r d; do
        first=$(awk -F'\t' -v d="$d" '$1 == d { print $2; exit }' <<<"$citations")
        echo "  $d  (e.g. $first)"
    done <<<"$missing"
    status=1
fi

# References outside the repository. Each pattern is written in two parts so that this script
# does not spell it on one line (it is excluded from the search anyway).
outside_spec='shared''/spec'
outside_parent='\.\./''shared'
pointers=$(grep -nE "$outside_spec|$outside_parent" "${files[@]}" "$decisions" /dev/null \
    | grep -v "^$self:" || true)
if [[ -n $pointers ]]; then
    echo "check-decisions: references outside the repository" \
        "(state the rule, or point at $decisions):"
    sed 's/^/  /' <<<"$pointers"
    status=1
fi

if [[ $status -eq 0 ]]; then
    echo "check-decisions: OK, all $count cited decision numbers are defined in $decisions;" \
        "no references outside the repository"
fi
exit "$status"
