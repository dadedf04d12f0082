#!/usr/bin/env bash
# Runs each cargo-fuzz target (fuzz/fuzz_targets) for a fixed time on its corpus in
# fuzz/corpus/<target>, then minimizes the corpus (cargo fuzz cmin) so that the repository keeps
# only inputs that add coverage. Needs the nightly toolchain and cargo-fuzz
# (`rustup toolchain install nightly`, `cargo install cargo-fuzz`). Any crash stops the script
# with the reproducer in fuzz/artifacts/<target>/; turn it into a corpus file and a test in
# tests/api/stress_regressions.rs. Results: docs/reliability.md, "Fuzz targets".
#
#   bash scripts/fuzz-targets.sh [seconds-per-target]     (default 60)
#
# Builds without a sanitizer and with debug assertions (`--dev -s none`): the server forbids
# unsafe code, so what is looked for is panics, overflows and broken properties, not memory errors.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds=${1:-60}
flags=(--dev -s none)
targets=(signed_request money json_body settings_patch provider_webhook)
cargo +nightly fuzz build "${flags[@]}"
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  echo "== $t: ${seconds}s"
  cargo +nightly fuzz run "${flags[@]}" "$t" "corpus/$t" -- -max_total_time="$seconds" -max_len=4096 \
    -print_final_stats=1 2>&1 | grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done|#[0-9]+.*DONE)|SUMMARY|panicked|ERROR" || true
  if [ -n "$(ls -A "artifacts/$t" 2>/dev/null)" ]; then
    echo "$t: crash artifacts in fuzz/artifacts/$t" >&2
    exit 1
  fi
  # Named inputs (regressions, hand-written seeds) stay whatever cmin thinks of their coverage.
  keep=$(mktemp -d)
  find "corpus/$t" -type f ! -regex '.*/[0-9a-f]\{40\}' -exec cp {} "$keep/" \;
  cargo +nightly fuzz cmin "${flags[@]}" "$t" "corpus/$t" -- -max_len=4096 >/dev/null 2>&1
  cp "$keep"/* "corpus/$t/" 2>/dev/null || true
  rm -rf "$keep"
  echo "$t corpus: $(ls "corpus/$t" | wc -l) files, $(du -sk "corpus/$t" | cut -f1) KB"
done
