//! docs/cli.md is the verbatim `--help` output of `adjit` and of every subcommand, each under a
//! fixed one-line intro. This test regenerates the whole file from the binary and the template
//! below and fails when the checked-in file differs (a help text changed without the docs, or a
//! subcommand was added without an intro). `UPDATE_EXPECT=1` rewrites docs/cli.md instead.
//!
//! It also keeps the library snippets of docs/guide.md honest: each `guide_snippet_N_runs` test
//! below runs one ```` ```rust ```` block of the guide, and `guide_snippets_are_verbatim` checks
//! that the guide holds exactly these bodies, in order (so neither can drift from the other).

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
        "hvp",
        "Hessian-vector product of a one-output function: the outputs, the gradient and `H·v`.",
    ),
    (
        "jacobian",
        "The dense Jacobian, by vector JVPs (columns) or VJPs (rows), printed as aligned rows.",
    ),
    (
        "hessian",
        "The dense Hessian of a one-output function, one Hessian-vector product per column.",
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

/// The bodies between the snippet markers of this file, dedented by four spaces (rustfmt's indent).
fn snippets_in_this_file() -> Vec<String> {
    let source = include_str!("help_reference.rs");
    let mut snippets = Vec::new();
    let mut current: Option<String> = None;
    for line in source.lines() {
        match line.trim() {
            "// guide-snippet-begin" => current = Some(String::new()),
            "// guide-snippet-end" => snippets.extend(current.take()),
            _ => {
                if let Some(s) = current.as_mut() {
                    s.push_str(line.strip_prefix("    ").unwrap_or(line));
                    s.push('\n');
                }
            }
        }
    }
    snippets
}

#[test]
fn guide_snippets_are_verbatim() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide.md");
    let guide = std::fs::read_to_string(&path).expect("docs/guide.md exists");
    let in_guide: Vec<String> = guide
        .split("```rust\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or_default().to_string())
        .collect();
    let here = snippets_in_this_file();
    assert!(!here.is_empty(), "no snippet markers found");
    assert_eq!(
        in_guide, here,
        "the ```rust blocks of docs/guide.md differ from the guide_snippet tests"
    );
}

#[test]
fn guide_snippet_1_runs() {
    // guide-snippet-begin
    // Trace once, compile the gradient once, call many times (from many threads).
    let f = adjit::trace(2, |x| {
        let a = 1.0 - x[0];
        let d = x[1] - x[0] * x[0];
        a * a + 100.0 * d * d
    });
    let grad = adjit::Gradient::new(&f).unwrap();
    let mut g = [0.0; 2];
    let y = grad.call(&[0.0, 0.0], &mut g).unwrap();
    assert_eq!((y, g), (1.0, [-2.0, 0.0]));
    // guide-snippet-end
}

#[test]
fn guide_snippet_2_runs() {
    // guide-snippet-begin
    // Any mode: Compiled checks buffer lengths against the layout of section 2.
    let f = adjit::trace(2, |x| x[0] * x[1].sin());
    let jvp = adjit::Compiled::new(&f, adjit::Mode::Jvp).unwrap();
    let mut out = [0.0; 2];
    jvp.call(&[2.0, 0.5, 1.0, 0.0], &mut out).unwrap(); // x = (2, 0.5), ẋ = (1, 0)
    assert_eq!(out[1], 0.5f64.sin());
    // guide-snippet-end
}

#[test]
fn guide_snippet_3_runs() {
    // guide-snippet-begin
    // A checkpointed gradient: same answer as the tape, bounded memory; call() allocates nothing.
    use adjit::checkpoint::CheckpointedGradient;
    let f = adjit::trace(2, |x| (x[0] * x[1]).sin() * x[0]);
    let g = CheckpointedGradient::new(&f, adjit::Strategy::Checkpoint { snapshots: 2 }).unwrap();
    let (mut y, mut grad) = ([0.0], [0.0; 2]);
    g.call(&[0.5, 2.0], &[1.0], &mut y, &mut grad).unwrap(); // (x, w, y, Jᵀw)
    println!("{:?}", g.stats()); // peak_bytes, recomputed_ops, stages, snapshots, …
                                 // guide-snippet-end
}

#[test]
fn guide_snippet_4_runs() {
    // guide-snippet-begin
    // Whole Jacobians and Hessians, compiled once; results row-major in your buffers.
    use adjit::{Hessian, Jacobian, JacobianMode, Options, Type};
    let polar = adjit::trace_multi("polar", &[Type::F64; 2], |x| {
        vec![x[0] * x[1].cos(), x[0] * x[1].sin()]
    });
    let jac = Jacobian::with_mode(&polar, JacobianMode::Reverse, &Options::default()).unwrap();
    let (mut y, mut j) = ([0.0; 2], [0.0; 4]);
    jac.call(&[2.0, 0.0], &mut y, &mut j).unwrap();
    assert_eq!(j, [1.0, 0.0, 0.0, 2.0]); // [[cos t, −r sin t], [sin t, r cos t]]
    let rosen = adjit::trace(2, |x| {
        (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2)
    });
    let hess = Hessian::new(&rosen).unwrap();
    let (mut g, mut h) = ([0.0; 2], [0.0; 4]);
    let f = hess.call(&[1.0, 1.0], &mut g, &mut h).unwrap(); // f, ∇f and H in one call
    assert_eq!((f, h), (0.0, [802.0, -400.0, -400.0, 200.0]));
    // guide-snippet-end
}

#[test]
fn guide_snippet_5_runs() {
    // guide-snippet-begin
    // Inverse products of a square program (polar → Cartesian, 2 → 2), compiled once.
    use adjit::inverse::CompiledInverse;
    use adjit::{InverseMode, Type};
    let f = adjit::trace_multi("polar", &[Type::F64; 2], |x| {
        vec![x[0] * x[1].cos(), x[0] * x[1].sin()]
    });
    let inv = CompiledInverse::new(&f, InverseMode::Reverse).unwrap();
    let (mut y, mut xdot) = ([0.0; 2], [0.0; 2]);
    inv.call(&[2.0, 0.0], &[1.0, 1.0], &mut y, &mut xdot)
        .unwrap();
    assert_eq!(xdot, [1.0, 0.5]); // J⁻¹·v
                                  // guide-snippet-end
}

#[test]
fn guide_snippet_6_runs() {
    // guide-snippet-begin
    // Any object of fixed layout through one trait: one point flat, or a batch over threads.
    use adjit::{Jacobian, Prepared};
    let f = adjit::trace_multi("polar", &[adjit::Type::F64; 2], |x| {
        vec![x[0] * x[1].cos(), x[0] * x[1].sin()]
    });
    let jac = Jacobian::new(&f).unwrap();
    let x = [1.0, 0.0, 2.0, 0.0, 3.0, 0.0]; // three points
    let mut out = [0.0; 3 * 6]; // each point's y (2) ++ J (4)
    jac.call_batch(&x, &mut out, 0).unwrap(); // 0 threads: automatic
    assert_eq!(&out[12..], &[3.0, 0.0, 1.0, 0.0, 0.0, 3.0]);
    // guide-snippet-end
}

#[test]
fn guide_snippet_7_runs() -> Result<(), adjit::Error> {
    // guide-snippet-begin
    use adjit::compose::{ComposeOptions, ComposedKernel, Composition, Gather};
    // k-means with d = 1, k = 2: the squared distance to the nearest centroid.
    let dist = adjit::trace_with_data(1, 1, |c, a| (a[0] - c[0]).square());
    let nearest = adjit::trace(2, |y| y[0].min(y[1]));
    let spec = Composition {
        transform: None,
        inner: &dist,
        outer: &nearest,
        components: 2,
        gather: &[Gather { base: 0, stride: 1 }], // centroid j is θ[j]
        shared: &[],
        n_theta: 2,
    };
    let compose = ComposeOptions {
        skip_zero_cotangents: true,
        ..ComposeOptions::default()
    };
    let kmeans = ComposedKernel::with_options(&spec, compose, &adjit::Options::default())?;
    let (mut grad, mut hv) = ([0.0; 2], [0.0; 2]);
    kmeans.hvp(
        &[0.0, 10.0],
        &[1.0, 2.0, 9.0],
        &[1.0, 1.0],
        &mut grad,
        &mut hv,
    )?;
    assert_eq!((grad, hv), ([-6.0, 2.0], [4.0, 2.0])); // H = diag(2·|cluster j|)
                                                       // guide-snippet-end
    Ok(())
}
