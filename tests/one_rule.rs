//! One source of truth per rule, checked on the source text. How many threads a call runs on
//! is decided by `adjit_jit::threads_for` alone (re-exported as `adjit::threads_for`), which
//! the JIT's batches, `map`, `compose`, gradbench and the Python batches all call. The length
//! and `bool` checks of a call are `src/prepared.rs`'s: no other facade file builds a
//! length, parts or not-a-bool error or finds `bool` inputs itself. A second copy of a rule is
//! a second behaviour waiting to drift.

use std::path::{Path, PathBuf};

use adjit_testkit::source::code_before_tests as code;

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_thread_rule_is_written_once() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&workspace.join("src"), &mut files);
    if let Ok(crates) = std::fs::read_dir(workspace.join("crates")) {
        for krate in crates.flatten() {
            rust_files(&krate.path().join("src"), &mut files);
        }
    }
    files.sort();
    // Where a crate asks how many threads "automatic" means.
    let mut sites = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable source file");
        let code = code(&text);
        for needle in ["current_num_threads", "available_parallelism"] {
            for _ in code.matches(needle) {
                let rel = file.strip_prefix(workspace).unwrap_or(file);
                sites.push(format!("{} ({needle})", rel.display()));
            }
        }
    }
    assert_eq!(
        sites,
        vec!["crates/jit/src/compiled.rs (current_num_threads)".to_string()],
        "the thread rule must live in adjit_jit::threads_for only; call it instead"
    );
}

#[test]
fn the_call_checks_are_written_once() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&workspace.join("src"), &mut files);
    files.sort();
    let mut sites = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable source file");
        let code = code(&text);
        for needle in [
            "Error::Length {",
            "Error::Parts {",
            "Error::Arity {",
            "Error::NotBool {",
            "bool_params(",
            "fn check_parts(",
            "fn check_bools(",
        ] {
            // Whole names only: `ExecError::Length {` is another type's variant.
            let whole = code.match_indices(needle).filter(|(i, _)| {
                !code[..*i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            for _ in whole {
                let rel = file.strip_prefix(workspace).unwrap_or(file);
                sites.push(format!("{} ({needle})", rel.display()));
            }
        }
    }
    let expected: Vec<String> = [
        "Error::Length {",
        "Error::Parts {",
        "Error::Arity {",
        "Error::NotBool {",
        "bool_params(",
        "bool_params(",
        "fn check_parts(",
        "fn check_bools(",
        "fn check_bools(",
    ]
    .iter()
    .map(|needle| format!("src/prepared.rs ({needle})"))
    .collect();
    let mut sorted = sites.clone();
    sorted.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(
        sorted, want,
        "call checks belong in src/prepared.rs (Signature::check, check_lengths, check_length)"
    );
}
