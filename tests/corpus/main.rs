//! The corpus harness: every `ir/**/*.ir` file is one named trial (`cargo test --test corpus
//! rosenbrock` filters by path).
//!
//! A file carries its expectations in comment directives (see `directives.rs`):
//! `; run: @f(1, 2.5) == 3, 4.5` evaluates on the interpreter (bit-exact), checks the JIT
//! against the interpreter when the JIT is available, then hands the point to
//! `derivs::check`; `; dump: STAGE [@f]` plus `; | TEXT` lines compares [`adjit::dump`];
//! `; error: MESSAGE` lines are the exact messages [`adjit::load_str`] must fail with, and a
//! file without them must load cleanly. `UPDATE_EXPECT=1` rewrites the expectations in place
//! from the actual results and passes.

mod derivs;
mod directives;

use std::path::{Path, PathBuf};

use adjit::ir::text::format_literal;
use adjit::{Engine, Error, Function, Type};
use directives::{Directive, DirectiveKind};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let trials = ir_files(&root.join("ir"))
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            Trial::test(rel.clone(), move || run_file(&path, &rel))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// Every `.ir` file under `dir`, recursively, sorted.
fn ir_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "ir") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn updating() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v != "0" && !v.is_empty())
}

/// Check one file, or with `UPDATE_EXPECT` rewrite it until its expectations hold (inserting
/// error lines moves the lines the errors point at, hence the second round).
fn run_file(path: &Path, rel: &str) -> Result<(), Failed> {
    if !updating() {
        return check_file(path, rel, false);
    }
    for _ in 0..3 {
        check_file(path, rel, true)?;
        if check_file(path, rel, false).is_ok() {
            return Ok(());
        }
    }
    check_file(path, rel, false)
}

fn check_file(path: &Path, rel: &str, update: bool) -> Result<(), Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{rel}: {e}"))?;
    let directives = directives::scan(&text).map_err(|e| format!("{rel}:{e}"))?;
    let mut failures = Vec::new();
    // Replacement lines, by 0-based line index, for UPDATE_EXPECT.
    let mut edits = directives::Edits::default();

    let expected_errors: Vec<&Directive> = directives
        .iter()
        .filter(|d| matches!(d.kind, DirectiveKind::Error(_)))
        .collect();
    let loaded = adjit::load_str(&text, rel);
    let funcs = match loaded {
        Ok(funcs) => {
            if !expected_errors.is_empty() {
                if update {
                    edits.replace_errors(&text, &directives, &[]);
                } else {
                    failures.push(format!(
                        "{rel}:{}: expected load errors, but the file loads cleanly",
                        expected_errors[0].line + 1
                    ));
                }
            }
            funcs
        }
        Err(e) => {
            let actual = error_lines(&e);
            let expected: Vec<&str> = expected_errors
                .iter()
                .filter_map(|d| match &d.kind {
                    DirectiveKind::Error(m) => Some(m.as_str()),
                    _ => None,
                })
                .collect();
            if actual != expected {
                if update {
                    edits.replace_errors(&text, &directives, &actual);
                } else if expected.is_empty() {
                    failures.push(format!("{rel}: failed to load:\n{}", actual.join("\n")));
                } else {
                    failures.push(format!(
                        "{rel}:{}: load errors differ\n--- expected\n{}\n--- actual\n{}",
                        expected_errors[0].line + 1,
                        expected.join("\n"),
                        actual.join("\n")
                    ));
                }
            }
            Vec::new()
        }
    };

    // A file that does not load has no functions to run or dump: its load failure (reported
    // above) is the one message worth reading.
    let runnable = if funcs.is_empty() {
        &[][..]
    } else {
        &directives[..]
    };
    for d in runnable {
        let at = format!("{rel}:{}", d.line + 1);
        match &d.kind {
            DirectiveKind::Run(run) => {
                if let Err(msg) = check_run(&funcs, run, update, &mut edits, d.line) {
                    failures.push(format!("{at}: {msg}"));
                }
            }
            DirectiveKind::Dump(dump) => {
                if let Err(msg) = check_dump(&funcs, dump, update, &mut edits) {
                    failures.push(format!("{at}: {msg}"));
                }
            }
            DirectiveKind::Error(_) => {}
        }
    }

    if update && !edits.is_empty() {
        let new_text = edits.apply(&text);
        if new_text != text {
            std::fs::write(path, new_text).map_err(|e| format!("{rel}: {e}"))?;
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n\n").into())
    }
}

/// The messages of a load failure, one per line, as `; error:` lines hold them (trimmed).
fn error_lines(e: &Error) -> Vec<String> {
    e.to_string()
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn find<'a>(funcs: &'a [Function], name: Option<&str>) -> Result<&'a Function, String> {
    match name {
        Some(n) => funcs
            .iter()
            .find(|f| f.name == n)
            .ok_or_else(|| format!("no function @{n} in the file")),
        None if funcs.len() == 1 => Ok(&funcs[0]),
        None => Err("name the function (@NAME): the file holds several".into()),
    }
}

fn show_outputs(func: &Function, ys: &[f64]) -> String {
    ys.iter()
        .enumerate()
        .map(|(k, &y)| format_literal(func.ret_types.get(k).copied().unwrap_or(Type::F64), y))
        .collect::<Vec<_>>()
        .join(", ")
}

fn same_bits(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Distance in units in the last place of `ty` between two finite values of that type.
fn ulps(ty: Type, a: f64, b: f64) -> u64 {
    if same_bits(a, b) || a == b {
        return 0;
    }
    if !a.is_finite() || !b.is_finite() {
        return u64::MAX;
    }
    // Map the float's bits to a monotone integer line.
    fn line32(x: f32) -> i64 {
        let b = x.to_bits() as i32;
        i64::from(if b < 0 { i32::MIN - b } else { b })
    }
    fn line64(x: f64) -> i128 {
        let b = x.to_bits() as i64;
        i128::from(if b < 0 { i64::MIN - b } else { b })
    }
    match ty {
        Type::F32 => (line32(a as f32) - line32(b as f32)).unsigned_abs(),
        _ => u64::try_from((line64(a) - line64(b)).unsigned_abs()).unwrap_or(u64::MAX),
    }
}

/// Whether any instruction calls a math-library routine (results may differ by an ulp between
/// the interpreter's `libm` and the JIT's).
fn uses_transcendental(func: &Function) -> bool {
    use adjit::ir::{BinaryOp, InstData};
    func.insts().any(|(_, inst)| match inst {
        InstData::Unary { op, .. } => op.is_transcendental(),
        InstData::Binary { op, .. } => matches!(op, BinaryOp::Pow | BinaryOp::Atan2),
        _ => false,
    })
}

fn check_run(
    funcs: &[Function],
    run: &directives::Run,
    update: bool,
    edits: &mut directives::Edits,
    line: usize,
) -> Result<(), String> {
    let func = find(funcs, run.func.as_deref())?;
    let x = run.inputs(func)?;
    let shown = format!("@{}({})", func.name, run.args.join(", "));
    let y = adjit::eval(func, Engine::Interp, &x).map_err(|e| format!("{shown}: {e}"))?;
    if update {
        edits.set_run_outputs(line, run, &show_outputs(func, &y));
    } else {
        let expected = run.outputs(func)?;
        let matches =
            expected.len() == y.len() && expected.iter().zip(&y).all(|(a, b)| same_bits(*a, *b));
        if !matches {
            return Err(format!(
                "{shown}: interpreter gives {}, expected {}",
                show_outputs(func, &y),
                show_outputs(func, &expected)
            ));
        }
    }
    match adjit::eval(func, Engine::Jit, &x) {
        Err(e) => return Err(format!("{shown}: JIT failed: {e}")),
        Ok(jit) => {
            let tolerance = if uses_transcendental(func) { 1 } else { 0 };
            let bad = jit.len() != y.len()
                || jit.iter().zip(&y).enumerate().any(|(k, (&a, &b))| {
                    let ty = func.ret_types.get(k).copied().unwrap_or(Type::F64);
                    ulps(ty, a, b) > tolerance
                });
            if bad {
                return Err(format!(
                    "{shown}: JIT gives {}, interpreter {} (tolerance {tolerance} ulp)",
                    show_outputs(func, &jit),
                    show_outputs(func, &y)
                ));
            }
        }
    }
    derivs::check(func, &x).map_err(|e| format!("{shown}: derivatives: {e}"))?;
    Ok(())
}

fn check_dump(
    funcs: &[Function],
    dump: &directives::Dump,
    update: bool,
    edits: &mut directives::Edits,
) -> Result<(), String> {
    let func = find(funcs, dump.func.as_deref())?;
    let stage: adjit::Stage = dump.stage.parse().map_err(|e| format!("dump: {e}"))?;
    let actual = adjit::dump(func, stage, &adjit::DumpOptions::default())
        .map_err(|e| format!("dump {}: {e}", dump.stage))?;
    let actual: Vec<String> = actual.lines().map(|l| l.trim_end().to_string()).collect();
    if actual == dump.expected {
        return Ok(());
    }
    if update {
        edits.set_dump_block(dump, &actual);
        return Ok(());
    }
    Err(format!(
        "dump {} of @{} differs\n--- expected\n{}\n--- actual\n{}",
        dump.stage,
        func.name,
        dump.expected.join("\n"),
        actual.join("\n")
    ))
}
