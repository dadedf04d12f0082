//! Regression tests from issue 13's stress work: the fuzz corpus replayed on the stable
//! toolchain, and one test per finding of the schema-driven fuzzing, the fuzz targets and the
//! chaos run (docs/reliability.md, "Proof under stress").

/// The checks of the cargo-fuzz targets, the very file `fuzz/` builds them from.
#[path = "../../../../fuzz/src/lib.rs"]
mod checks;

/// Every file of `fuzz/corpus/<target>` goes through its target's checks (which panic on a
/// violated property), so the corpus the fuzzer grew is a regression suite in the normal run.
#[test]
fn the_fuzz_corpus_replays_through_every_target_without_a_failure() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    for target in checks::TARGETS {
        let dir = root.join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no corpus for {target}");
        for file in files {
            let data = std::fs::read(&file).expect("read corpus file");
            let outcome = std::panic::catch_unwind(|| checks::run(target, &data));
            assert!(outcome.is_ok(), "{target}: {} fails its checks", file.display());
        }
    }
}
