//! One function per subcommand: load the file, pick the function, read and check the vectors,
//! call the facade, and return the text to print. No numerics happen here.

use std::io::IsTerminal;
use std::path::Path;

use adjit::Function;

use crate::args::{strategy_name, Command, CompileMode, FunctionArgs, PointArgs};
use crate::bench_report::{rows_json, rows_svg, rows_table, BenchRow};
use crate::load::{describe_load_error, load_function, read_point};
use crate::measure::BenchMode;
use crate::output::{error_report, render_vectors, render_with_matrix, Matrix};
use crate::paths::{check_files, rows_file, vector_file, Named};
use crate::vectors::{expect_inputs, expect_outputs, read_vector, read_vectors};
use crate::CliError;

/// What a command produced: text for standard output and standard error, and whether the run
/// failed (for `check`, which reports failures itself and exits 1).
pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    pub failed: bool,
}

impl Outcome {
    fn ok(stdout: String) -> Outcome {
        Outcome {
            stdout,
            stderr: String::new(),
            failed: false,
        }
    }
}

pub fn run(command: Command) -> Result<Outcome, CliError> {
    match command {
        Command::Check { files } => Ok(check(&files)),
        Command::Eval {
            target,
            point,
            driver,
            output,
        } => {
            let func = load_function(&target)?;
            let mode = crate::drivers::DriverMode::Eval;
            if let Some(text) =
                crate::drivers::run(&func, &target.file, &point, &driver, mode, output.json)?
            {
                return Ok(Outcome::ok(text));
            }
            let x = read_point(&func, &point)?;
            let y = adjit::eval(&func, point.engine, &x)?;
            Ok(Outcome::ok(render_vectors(&[("outputs", &y)], output.json)))
        }
        Command::Jvp {
            target,
            point,
            driver,
            tangent,
            tangents,
            output,
        } => {
            let func = load_function(&target)?;
            if driver.rows.is_some() || driver.steps.is_some() {
                let one = tangent.as_deref().ok_or_else(|| {
                    CliError::input("--rows and --steps take one direction: give --tangent V")
                })?;
                let v = read_vector("--tangent", one)?;
                let mode = crate::drivers::DriverMode::Jvp(v);
                if let Some(text) =
                    crate::drivers::run(&func, &target.file, &point, &driver, mode, output.json)?
                {
                    return Ok(Outcome::ok(text));
                }
            }
            let x = read_point(&func, &point)?;
            if let Some(tangents) = tangents {
                let directions = read_vectors("--tangents", &tangents)?;
                for v in &directions {
                    expect_inputs(&v.place, v.numbers.len(), &func, true)?;
                }
                let vs: Vec<&[f64]> = directions.iter().map(|v| v.numbers.as_slice()).collect();
                let (y, dys) = adjit::jvp_vector(&func, point.engine, &x, &vs)?;
                let rows = dys.concat();
                let matrix = Matrix {
                    rows: dys.len(),
                    cols: n_float_outputs(&func),
                    entries: &rows,
                };
                return Ok(Outcome::ok(render_with_matrix(
                    &[("outputs", &y)],
                    ("tangents", matrix),
                    output.json,
                )));
            }
            let tangent =
                tangent.ok_or_else(|| CliError::input("give --tangent V or --tangents VS"))?;
            let v = read_vector("--tangent", &tangent)?;
            expect_inputs("--tangent", v.len(), &func, true)?;
            let (y, dy) = adjit::jvp(&func, point.engine, &x, &v)?;
            Ok(Outcome::ok(render_vectors(
                &[("outputs", &y), ("tangents", &dy)],
                output.json,
            )))
        }
        Command::Vjp {
            target,
            point,
            driver,
            cotangent,
            strategy,
            output,
        } => {
            let func = load_function(&target)?;
            if driver.rows.is_some() || driver.steps.is_some() {
                let w = cotangent
                    .as_deref()
                    .map(|arg| read_vector("--cotangent", arg))
                    .transpose()?;
                let mode = crate::drivers::DriverMode::Vjp(w, strategy);
                if let Some(text) =
                    crate::drivers::run(&func, &target.file, &point, &driver, mode, output.json)?
                {
                    return Ok(Outcome::ok(text));
                }
            }
            let x = read_point(&func, &point)?;
            let w = match cotangent {
                Some(arg) => {
                    let w = read_vector("--cotangent", &arg)?;
                    expect_outputs("--cotangent", w.len(), &func)?;
                    w
                }
                None if n_float_outputs(&func) == 1 => vec![1.0],
                None => {
                    return Err(CliError::input(format!(
                        "--cotangent is required: @{} returns {} float outputs",
                        func.name,
                        n_float_outputs(&func)
                    )))
                }
            };
            let (y, grad) = adjit::vjp(&func, point.engine, strategy, &x, &w)?;
            Ok(Outcome::ok(render_vectors(
                &[("outputs", &y), ("gradient", &grad)],
                output.json,
            )))
        }
        Command::Hvp {
            target,
            point,
            vector,
            output,
        } => {
            let func = load_function(&target)?;
            let x = read_point(&func, &point)?;
            let v = read_vector("--vector", &vector)?;
            expect_inputs("--vector", v.len(), &func, true)?;
            let (y, grad, hv) = adjit::hvp(&func, point.engine, &x, &v)?;
            Ok(Outcome::ok(render_vectors(
                &[("outputs", &y), ("gradient", &grad), ("hvp", &hv)],
                output.json,
            )))
        }
        Command::Jacobian {
            target,
            point,
            mode,
            sparse,
            output,
        } => {
            check_files(
                &inputs(&target, &point, []),
                &crate::sparse::outputs(&sparse),
            )?;
            let func = load_function(&target)?;
            let x = read_point(&func, &point)?;
            if sparse.sparse {
                let text = crate::sparse::jacobian(&func, &x, point.engine, &sparse, output.json)?;
                return Ok(Outcome::ok(text));
            }
            let (y, jac) = adjit::jacobian(&func, point.engine, mode, &x)?;
            let matrix = Matrix {
                rows: n_float_outputs(&func),
                cols: func.differentiated_params().count(),
                entries: &jac,
            };
            Ok(Outcome::ok(render_with_matrix(
                &[("outputs", &y)],
                ("jacobian", matrix),
                output.json,
            )))
        }
        Command::Hessian {
            target,
            point,
            sparse,
            output,
        } => {
            check_files(
                &inputs(&target, &point, []),
                &crate::sparse::outputs(&sparse),
            )?;
            let func = load_function(&target)?;
            let x = read_point(&func, &point)?;
            if sparse.sparse {
                let text = crate::sparse::hessian(&func, &x, point.engine, &sparse, output.json)?;
                return Ok(Outcome::ok(text));
            }
            let (y, grad, hess) = adjit::hessian(&func, point.engine, &x)?;
            let matrix = Matrix {
                rows: grad.len(),
                cols: grad.len(),
                entries: &hess,
            };
            Ok(Outcome::ok(render_with_matrix(
                &[("outputs", &[y]), ("gradient", &grad)],
                ("hessian", matrix),
                output.json,
            )))
        }
        Command::Inverse {
            target,
            point,
            vector,
            mode,
            output,
        } => {
            let func = load_function(&target)?;
            // Square, float, no data inputs, structurally nonsingular: the library's own checks
            // and messages (data inputs are named as the reason), before any vector is read.
            adjit::diff::inverse::check_dense(&func, &Default::default())
                .map_err(adjit::Error::from)?;
            let x = read_point(&func, &point)?;
            let v = read_vector("--vector", &vector)?;
            expect_inputs("--vector", v.len(), &func, true)?;
            let (y, result) = adjit::inverse(&func, point.engine, mode, &x, &v)?;
            Ok(Outcome::ok(render_vectors(
                &[("outputs", &y), ("result", &result)],
                output.json,
            )))
        }
        Command::Dump {
            target,
            stage,
            mode,
            strategy,
            lanes,
            math,
            output,
        } => {
            let outputs: Vec<Named<'_>> = output.iter().map(|p| Named::new("-o", p)).collect();
            check_files(&[Named::new("FILE", &target.file)], &outputs)?;
            let func = load_function(&target)?;
            let options = adjit::DumpOptions {
                mode: mode.unwrap_or_default(),
                strategy: strategy.unwrap_or_default(),
                lanes: usize::from(lanes),
                math,
            };
            let mut text = adjit::dump(&func, stage, &options)?;
            if !text.ends_with('\n') {
                text.push('\n');
            }
            match output {
                Some(path) => {
                    write_file(&path, text.as_bytes())?;
                    Ok(Outcome::ok(String::new()))
                }
                None => Ok(Outcome::ok(text)),
            }
        }
        Command::Bench {
            target,
            point,
            driver,
            strategies,
            modes,
            json,
            rolled,
            plot,
            batch,
            lanes,
            threads,
            math,
        } => {
            let outputs: Vec<Named<'_>> = plot.iter().map(|p| Named::new("--plot", p)).collect();
            check_files(
                &inputs(&target, &point, [rows_file(driver.rows.as_deref())]),
                &outputs,
            )?;
            let func = load_function(&target)?;
            if let Some(points) = batch {
                let x = read_point(&func, &point)?;
                let batch = crate::measure::Batch {
                    points,
                    lanes: usize::from(lanes),
                    threads,
                    math,
                };
                let mut rows = Vec::with_capacity(modes.len());
                for &mode in &modes {
                    let measurement = crate::measure::bench_batch(&func, &x, mode, batch)?;
                    rows.push(BenchRow {
                        mode: mode.name().to_string(),
                        strategy: None,
                        measurement,
                    });
                }
                return Ok(Outcome::ok(if json {
                    rows_json(&rows)
                } else {
                    rows_table(&rows)
                }));
            }
            let rows = match crate::drivers::bench(&func, &point, &driver, &modes, &strategies)? {
                Some(rows) => rows,
                None => {
                    let x = read_point(&func, &point)?;
                    bench(&func, &x, &modes, &strategies, rolled, !json)?
                }
            };
            if let Some(path) = plot {
                write_file(&path, rows_svg(&func.name, &rows).as_bytes())?;
            }
            Ok(Outcome::ok(if json {
                rows_json(&rows)
            } else {
                rows_table(&rows)
            }))
        }
        Command::Compile {
            target,
            mode,
            triple,
            output,
            symbol,
            lanes,
            math,
            force,
        } => {
            let header_path = output.with_extension("h");
            let options = adjit::JitOptions {
                batch_lanes: usize::from(lanes),
                math,
                ..adjit::JitOptions::default()
            };
            if !matches!(mode, CompileMode::Derived(_)) && options != adjit::JitOptions::default() {
                return Err(CliError::input(
                    "--lanes and --math apply to primal, jvp, vjp, gradient and hvp objects",
                ));
            }
            check_outputs(&target.file, &output, &header_path, force)?;
            let func = load_function(&target)?;
            let (triple, symbol) = (triple.as_deref(), symbol.as_deref());
            let code = match mode {
                CompileMode::Derived(mode) => {
                    adjit::compile_object_with(&func, mode, triple, symbol, &options)?
                }
                CompileMode::Inverse(mode) => {
                    adjit::compile_inverse_object_as(&func, mode, triple, symbol)?
                }
                CompileMode::Sparse(kind) => {
                    adjit::sparse::compile_object(&func, kind, triple, symbol)?
                }
            };
            write_file(&output, &code.bytes)?;
            write_file(&header_path, code.header.as_bytes())?;
            Ok(Outcome::ok(format!(
                "wrote {} ({} bytes) and {}\n",
                output.display(),
                code.bytes.len(),
                header_path.display()
            )))
        }
    }
}

/// `adjit check`: every file, in order; failures go to standard error.
fn check(files: &[std::path::PathBuf]) -> Outcome {
    let mut stdout = String::new();
    let mut stderr = String::new();
    let mut failed = false;
    for file in files {
        match adjit::load(file) {
            Ok(funcs) => {
                let n = funcs.len();
                let noun = if n == 1 { "function" } else { "functions" };
                stdout.push_str(&format!("{}: ok ({n} {noun})\n", file.display()));
            }
            Err(e) => {
                failed = true;
                stderr.push_str(&error_report(&describe_load_error(file, &e)));
            }
        }
    }
    Outcome {
        stdout,
        stderr,
        failed,
    }
}

fn n_float_outputs(func: &Function) -> usize {
    func.ret_types.iter().filter(|t| t.is_float()).count()
}

fn bench(
    func: &Function,
    x: &[f64],
    modes: &[BenchMode],
    strategies: &[adjit::Strategy],
    rolled: bool,
    may_show_progress: bool,
) -> Result<Vec<BenchRow>, CliError> {
    let progress = may_show_progress && std::io::stderr().is_terminal();
    // (mode, strategy, kept rolled through the pipeline)
    let mut plan: Vec<(BenchMode, Option<adjit::Strategy>, bool)> = Vec::new();
    for &mode in modes {
        if mode == BenchMode::Vjp {
            plan.extend(strategies.iter().map(|&s| (mode, Some(s), false)));
        } else {
            plan.push((mode, None, false));
        }
        let rolls = matches!(mode, BenchMode::Primal | BenchMode::Jvp | BenchMode::Vjp);
        if rolled && rolls {
            plan.push((mode, None, true));
        }
    }
    let mut rows = Vec::with_capacity(plan.len());
    for (i, &(mode, strategy, rolled)) in plan.iter().enumerate() {
        let strategy_label = match rolled {
            true => Some("rolled".to_string()),
            false => strategy.map(strategy_name),
        };
        if progress {
            show_progress(&format!(
                "\r[{}/{}] {} {}        ",
                i + 1,
                plan.len(),
                mode.name(),
                strategy_label.as_deref().unwrap_or("")
            ));
        }
        let measured = match rolled {
            true => crate::measure::bench_rolled(func, x, mode),
            false => crate::measure::bench(func, x, mode, strategy.unwrap_or_default()),
        };
        let measurement = match measured {
            Ok(m) => m,
            Err(e) => {
                if progress {
                    show_progress("\n");
                }
                return Err(e.into());
            }
        };
        rows.push(BenchRow {
            mode: mode.name().to_string(),
            strategy: strategy_label,
            measurement,
        });
    }
    if progress {
        show_progress(&format!("\r{:60}\r", ""));
    }
    Ok(rows)
}

/// Progress text on standard error; a failure to show it is not worth stopping for.
fn show_progress(text: &str) {
    use std::io::Write;
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

/// The files a command reads: FILE, `--at @PATH`, and `more`.
fn inputs<'a, const N: usize>(
    target: &'a FunctionArgs,
    point: &'a PointArgs,
    more: [Option<Named<'a>>; N],
) -> Vec<Named<'a>> {
    std::iter::once(Some(Named::new("FILE", &target.file)))
        .chain([vector_file("--at", point.at.as_deref())])
        .chain(more)
        .flatten()
        .collect()
}

/// The first line of every header adjit writes.
const HEADER_BANNER: &str = "/* Generated by adjit";

/// `compile` never writes over its input, never writes the object and the header to one file,
/// and replaces an existing header only when adjit wrote it (or with `--force`).
fn check_outputs(input: &Path, object: &Path, header: &Path, force: bool) -> Result<(), CliError> {
    if object.with_extension("h") == object {
        return Err(CliError::input(format!(
            "-o {}: the object and its header would be the same file; name the object \
             with another extension (e.g. {})",
            object.display(),
            object.with_extension("o").display()
        )));
    }
    check_files(
        &[Named::new("FILE", input)],
        &[Named::new("-o", object), Named::new("-o's header", header)],
    )?;
    if !force {
        if let Ok(text) = std::fs::read(header) {
            if !text.starts_with(HEADER_BANNER.as_bytes()) {
                return Err(CliError::input(format!(
                    "{} exists and was not written by adjit; remove it, choose another -o, \
                     or pass --force to replace it",
                    header.display()
                )));
            }
        }
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes)
        .map_err(|e| CliError::input(format!("cannot write {}: {e}", path.display())))
}
