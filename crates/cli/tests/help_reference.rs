//! docs/cli.md is the verbatim `--help` output of `adjit` and of every subcommand, each under a
//! fixed one-line intro. This test regenerates the whole file from the binary and the template
//! below and fails when the checked-in file differs (a help text changed without the docs, or a
//! subcommand was added without an intro). `UPDATE_EXPECT=1` rewrites docs/cli.md instead.

use std::path::PathBuf;
use std::process::Command;

/// Every subcommand with its one-line intro, in the order `adjit --help` lists them.
const SUBCOMMANDS: &[(&str, &str)] = &[
    (
        "check",
        "Parse and verify `.ir` files without running anything; use it as a lint in CI.",
    ),
    ("eval", "Run a function on one input vector."),
    (
        "jvp",
        "Forward mode: the outputs and one directional derivative `J·v`.",
    ),
    (
        "vjp",
        "Reverse mode: the outputs and `Jᵀ·w`, taped or checkpointed (`--strategy`).",
    ),
    (
        "inverse",
        "Inverse products of a square function without forming `J` (see docs/inverse.md).",
    ),
    (
        "dump",
        "Print any intermediate stage: IR, derived IR, Cranelift IR, machine code, schedules, lumps.",
    ),
    (
        "bench",
        "Compile and time each mode and strategy on one input; reports peak memory and recomputation.",
    ),
    (
        "compile",
        "Ahead-of-time compilation to a relocatable object plus a C header (see docs/guide.md, \"AOT objects\").",
    ),
];

const HEADER: &str = "# adjit command-line reference

This file is generated: `UPDATE_EXPECT=1 cargo test -p adjit-cli --test help_reference`
rewrites it from the binary's own `--help` output, and the same test fails when the two differ.
The user guide is [guide.md](guide.md).
";

fn help_of(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_adjit"))
        .args(args)
        .arg("--help")
        .output()
        .expect("the adjit binary runs");
    assert!(
        out.status.success(),
        "adjit {args:?} --help failed: {out:?}"
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

fn fenced(text: &str) -> String {
    format!("```text\n{}\n```\n", text.trim_end())
}

/// The subcommand names `adjit --help` lists (without `help`).
fn listed_subcommands(top: &str) -> Vec<String> {
    top.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

fn generate() -> String {
    let top = help_of(&[]);
    let listed = listed_subcommands(&top);
    let documented: Vec<String> = SUBCOMMANDS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        listed, documented,
        "`adjit --help` lists other subcommands than the template in this test; add an intro"
    );
    let mut doc = String::from(HEADER);
    doc.push_str("\n## adjit\n\nThe top-level help: every subcommand with a one-line summary.\n\n");
    doc.push_str(&fenced(&top));
    for (name, intro) in SUBCOMMANDS {
        doc.push_str(&format!("\n## adjit {name}\n\n{intro}\n\n"));
        doc.push_str(&fenced(&help_of(&[name])));
    }
    doc
}

#[test]
fn cli_reference_is_the_verbatim_help_output() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md");
    let expected = generate();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &expected).expect("docs/cli.md is writable");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    // Each output must appear verbatim; comparing the whole file also catches stale intros.
    for (name, _) in SUBCOMMANDS {
        let help = fenced(&help_of(&[name]));
        assert!(
            actual.contains(&help),
            "docs/cli.md lacks the current `adjit {name} --help`; rerun with UPDATE_EXPECT=1"
        );
    }
    assert!(
        actual == expected,
        "docs/cli.md is stale; rerun with UPDATE_EXPECT=1 cargo test -p adjit-cli --test help_reference"
    );
}
