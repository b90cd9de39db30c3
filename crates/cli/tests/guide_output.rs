//! Every command the guide quotes (`$ adjit …` in a ```text block of `docs/guide.md`) prints what
//! the guide says it prints: the lines after it, up to the next `$` line or the end of the
//! block, are compared with the binary's standard output and error. A `…` in an expected line
//! stands for any text (`wrote f.o (… bytes)`), for figures that change with code generation.
//! `UPDATE_EXPECT=1` rewrites the quoted output from the binary (lines with `…` that still match
//! are kept).
//!
//! File arguments ending in `.ir` are looked up from the repository root, then in
//! `ir/examples/` (the guide writes `rosenbrock.ir` for `ir/examples/rosenbrock.ir`); commands
//! run in a scratch directory, so files they write stay out of the tree. `$ printf …` lines
//! (`printf '1,0\n' > dirs.txt`) run there with `sh` to set up files; other `$` lines (a C
//! compiler, say) are not run, and no output but that of `adjit` lines is compared.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `actual` matches `expected`, where `…` in `expected` stands for any text.
fn matches(expected: &str, actual: &str) -> bool {
    let pieces: Vec<&str> = expected.split('…').collect();
    if pieces.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if !actual.starts_with(first) || !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// Run one quoted command line (after `$ adjit `) and return its output lines.
fn run(command: &str, scratch: &Path) -> Vec<String> {
    let command = command.split(" #").next().unwrap_or(command);
    let args: Vec<String> = command
        .split_whitespace()
        .map(|arg| {
            if !arg.ends_with(".ir") {
                return arg.to_string();
            }
            let direct = root().join(arg);
            let example = root().join("ir/examples").join(arg);
            let path = if direct.exists() { direct } else { example };
            path.to_string_lossy().into_owned()
        })
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_adjit"))
        .args(&args)
        .current_dir(scratch)
        .output()
        .expect("run adjit");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines().map(|l| l.trim_end().to_string()).collect()
}

#[test]
fn every_quoted_command_prints_what_the_guide_says() {
    let guide_path = root().join("docs/guide.md");
    let guide = std::fs::read_to_string(&guide_path).expect("docs/guide.md");
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guide-output");
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v != "0" && !v.is_empty());

    let lines: Vec<&str> = guide.lines().collect();
    let mut rewritten: Vec<String> = Vec::with_capacity(lines.len());
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut in_text = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        rewritten.push(line.to_string());
        i += 1;
        if line.starts_with("```") {
            in_text = !in_text && line.trim() == "```text";
            continue;
        }
        if !in_text {
            continue;
        }
        if let Some(shell) = line.strip_prefix("$ ").filter(|l| l.starts_with("printf ")) {
            // A setup line (`printf … > dirs.txt`): run it where the commands run.
            let status = Command::new("sh")
                .args(["-c", shell])
                .current_dir(&scratch)
                .status()
                .expect("run sh");
            assert!(status.success(), "docs/guide.md:{i}: `{shell}` failed");
            continue;
        }
        let Some(command) = line.strip_prefix("$ adjit ") else {
            continue;
        };
        let start = i;
        while i < lines.len() && !lines[i].starts_with("$ ") && !lines[i].starts_with("```") {
            i += 1;
        }
        let expected: Vec<&str> = lines[start..i].to_vec();
        let actual = run(command, &scratch);
        checked += 1;
        let same = expected.len() == actual.len()
            && expected.iter().zip(&actual).all(|(e, a)| matches(e, a));
        if same {
            rewritten.extend(expected.iter().map(|l| l.to_string()));
        } else if update {
            rewritten.extend(actual.iter().cloned());
        } else {
            rewritten.extend(expected.iter().map(|l| l.to_string()));
            failures.push(format!(
                "docs/guide.md:{start}: $ adjit {command}\n--- guide\n{}\n--- binary\n{}",
                expected.join("\n"),
                actual.join("\n")
            ));
        }
    }
    assert!(checked >= 5, "only {checked} quoted commands found");
    if update {
        let mut text = rewritten.join("\n");
        text.push('\n');
        if text != guide {
            std::fs::write(&guide_path, text).expect("rewrite docs/guide.md");
        }
        return;
    }
    assert!(
        failures.is_empty(),
        "{} quoted command(s) differ (UPDATE_EXPECT=1 rewrites them):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn ellipsis_matches_any_text() {
    assert!(matches(
        "wrote f.o (… bytes) and f.h",
        "wrote f.o (952 bytes) and f.h"
    ));
    assert!(!matches(
        "wrote f.o (… bytes) and f.h",
        "wrote g.o (952 bytes) and f.h"
    ));
    assert!(matches("a … c … e", "a b c d e"));
    assert!(!matches("a … c … e", "a b d e"));
    assert!(matches("exact", "exact") && !matches("exact", "exact!"));
}
