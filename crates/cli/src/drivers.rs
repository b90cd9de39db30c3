//! `eval`, `jvp` and `vjp` over drivers: `--rows FILE` maps the function over the rows of a
//! data file ([`adjit::map::MappedKernel`]), `--steps N` iterates it as a step
//! ([`adjit::steps::IteratedStep`]). The facade does the numerics; this file reads the rows and
//! renders one output row per input row.

use std::path::Path;

use adjit::map::{MapOptions, MappedKernel};
use adjit::steps::IteratedStep;
use std::time::Instant;

use adjit::{Function, Mode, Options, Strategy};

use crate::bench_report::BenchRow;
use crate::measure::{BenchMeasurement, BenchMode};

use crate::args::{DriverArgs, PointArgs};
use crate::output::{human_line, json_vectors, render_vectors};
use crate::vectors::{parse_numbers, read_vector};
use crate::CliError;

/// Which derivative a driver command computes, with its vector (`--tangent`, `--cotangent`).
pub enum DriverMode {
    Eval,
    Jvp(Vec<f64>),
    Vjp(Option<Vec<f64>>, Strategy),
}

/// Run `mode` of `func` under the driver chosen by `driver`; `None` when no driver flag is
/// given (the caller runs the plain command).
pub fn run(
    func: &Function,
    file: &Path,
    point: &PointArgs,
    driver: &DriverArgs,
    mode: DriverMode,
    json: bool,
) -> Result<Option<String>, CliError> {
    let options = Options::on(point.engine);
    if let Some(path) = &driver.rows {
        if let DriverMode::Vjp(_, strategy) = &mode {
            if *strategy != Strategy::Tape {
                return Err(CliError::input(format!(
                    "--rows takes each row's VJP on its own, so there are no steps to \
                     checkpoint: --strategy {strategy} applies to --steps (drop it here)"
                )));
            }
        }
        if !func.has_data_params() {
            return whole_rows(func, path, mode, &options, json).map(Some);
        }
        let kernel = MappedKernel::with_options(func, MapOptions::default(), &options)?;
        let theta = read_vector("--at", point.at()?)?;
        let data = read_rows(path, kernel.row_len())?;
        let n = kernel.n_rows(&data)?;
        let (names, parts): (Vec<&str>, Vec<Vec<f64>>) = match mode {
            DriverMode::Eval => {
                let mut y = vec![0.0; n * kernel.n_outputs()];
                kernel.eval(&theta, &data, &mut y)?;
                (vec!["outputs"], vec![y])
            }
            DriverMode::Jvp(v) => {
                let mut y = vec![0.0; n * kernel.n_outputs()];
                let mut ydot = vec![0.0; n * kernel.n_float_outputs()];
                kernel.jvp(&theta, &data, &v, &mut y, &mut ydot)?;
                (vec!["outputs", "tangents"], vec![y, ydot])
            }
            DriverMode::Vjp(w, _) => {
                let w = cotangent(func, w, kernel.n_float_outputs())?;
                let mut y = vec![0.0; n * kernel.n_outputs()];
                let mut grad = vec![0.0; n * kernel.n_theta()];
                kernel.vjp(&theta, &data, &w, &mut y, &mut grad)?;
                (vec!["outputs", "gradient"], vec![y, grad])
            }
        };
        return Ok(Some(render_rows(&names, &parts, n, json)));
    }
    let Some(n_steps) = driver.steps else {
        return Ok(None);
    };
    let strategy = match mode {
        DriverMode::Vjp(_, strategy) => strategy,
        _ => Strategy::Tape,
    };
    if let Some(name) = &driver.sum_loss {
        let funcs = adjit::load(file)
            .map_err(|e| CliError::input(crate::load::describe_load_error(file, &e)))?;
        let loss = crate::load::select_function(funcs, Some(name), file)?;
        let sum = adjit::steps::SummedLoss::with_options(func, &loss, n_steps, strategy, &options)?;
        let x = read_vector("--at", point.at()?)?;
        return Ok(Some(match mode {
            DriverMode::Eval => render_vectors(&[("loss", &[sum.eval(&x)?])], json),
            DriverMode::Vjp(w, _) => {
                let scale = match w.as_deref() {
                    None => 1.0,
                    Some([w]) => *w,
                    Some(w) => {
                        return Err(CliError::input(format!(
                            "--cotangent has {} numbers; the summed loss is one number",
                            w.len()
                        )))
                    }
                };
                let mut grad = vec![0.0; func.differentiated_params().count()];
                let l = sum.gradient(&x, &mut grad)?;
                grad.iter_mut().for_each(|g| *g *= scale);
                render_vectors(&[("loss", &[l]), ("gradient", &grad)], json)
            }
            DriverMode::Jvp(_) => {
                return Err(CliError::input(
                    "--sum-loss goes with eval and vjp (a summed loss is one number: its \
                     gradient is the vjp)",
                ))
            }
        }));
    }
    let it = IteratedStep::with_options(func, None, n_steps, strategy, &options)?;
    if driver.trajectory {
        if !matches!(mode, DriverMode::Eval) {
            return Err(CliError::input("--trajectory goes with eval"));
        }
        let x = read_vector("--at", point.at()?)?;
        let n = it.n_state();
        let len = n_steps.checked_mul(n).ok_or_else(|| {
            CliError::input(format!(
                "--trajectory of {n_steps} steps does not fit in memory"
            ))
        })?;
        let mut states = Vec::new();
        states.try_reserve_exact(len).map_err(|_| {
            CliError::input(format!(
                "--trajectory of {n_steps} steps × {n} numbers does not fit in memory"
            ))
        })?;
        states.resize(len, 0.0);
        it.trajectory(&x, &mut states)?;
        return Ok(Some(render_rows(&["state"], &[states], n_steps, json)));
    }
    let x = read_vector("--at", point.at()?)?;
    let n = it.n_state();
    Ok(Some(match mode {
        DriverMode::Eval => {
            let mut y = vec![0.0; n];
            it.eval(&x, &mut y)?;
            render_vectors(&[("outputs", &y)], json)
        }
        DriverMode::Jvp(v) => {
            let (mut y, mut ydot) = (vec![0.0; n], vec![0.0; n]);
            it.jvp(&x, &v, &mut y, &mut ydot)?;
            render_vectors(&[("outputs", &y), ("tangents", &ydot)], json)
        }
        DriverMode::Vjp(w, _) => {
            let w = cotangent(func, w, n)?;
            let mut y = vec![0.0; n];
            let mut grad = vec![0.0; it.layout().output(adjit::Part::Gradient).len()];
            it.vjp(&x, &w, &mut y, &mut grad)?;
            render_vectors(&[("outputs", &y), ("gradient", &grad)], json)
        }
    }))
}

/// `adjit bench` rows for a driver (`None` without `--rows`/`--steps`): per mode, the time of
/// one whole call — the summed value, JVP or gradient over every row, or N steps (one vjp row
/// per strategy, with its snapshot bytes and re-advanced steps). Inverse modes are not driver
/// rows.
pub fn bench(
    func: &Function,
    point: &PointArgs,
    driver: &DriverArgs,
    modes: &[BenchMode],
    strategies: &[Strategy],
) -> Result<Option<Vec<BenchRow>>, CliError> {
    if driver.rows.is_none() && driver.steps.is_none() {
        return Ok(None);
    }
    let options = Options::on(point.engine);
    let x = read_vector("--at", point.at()?)?;
    let mut rows = Vec::new();
    let row = |mode: BenchMode, strategy: Option<String>, m: BenchMeasurement| BenchRow {
        mode: mode.name().to_string(),
        strategy,
        measurement: m,
    };
    if let Some(path) = &driver.rows {
        let kernel = MappedKernel::with_options(func, MapOptions::default(), &options)?;
        let data = read_rows(path, kernel.row_len())?;
        let v = vec![1.0; kernel.n_theta()];
        let w = vec![1.0; kernel.n_float_outputs()];
        let mut y = vec![0.0; kernel.n_outputs()];
        let mut ydot = vec![0.0; kernel.n_float_outputs()];
        let mut grad = vec![0.0; kernel.n_theta()];
        for &mode in modes {
            let program = match mode {
                BenchMode::Primal => Mode::Primal,
                BenchMode::Jvp => Mode::Jvp,
                BenchMode::Vjp => Mode::Vjp,
                other => {
                    return Err(CliError::input(format!(
                        "bench --rows measures primal, jvp and vjp, not {}",
                        other.name()
                    )))
                }
            };
            // The kernel's program is compiled once, whatever the number of rows.
            let start = Instant::now();
            kernel.prepare(&[program])?;
            let compile_ms = start.elapsed().as_secs_f64() * 1e3;
            let ns = match mode {
                BenchMode::Primal => measured(Box::new(|| kernel.eval_sum(&x, &data, &mut y)))?,
                BenchMode::Jvp => measured(Box::new(|| {
                    kernel.jvp_sum(&x, &data, &v, &mut y, &mut ydot)
                }))?,
                _ => measured(Box::new(|| {
                    kernel.vjp_sum(&x, &data, &w, &mut y, &mut grad)
                }))?,
            };
            rows.push(row(
                mode,
                None,
                BenchMeasurement {
                    compile_ms,
                    ns_per_call: ns,
                    peak_bytes: 0,
                    recomputed_ops: 0,
                    sparse: None,
                    batch: None,
                    code: None,
                },
            ));
        }
        return Ok(Some(rows));
    }
    let n_steps = driver.steps.unwrap_or(1);
    for &mode in modes {
        let plan: Vec<Strategy> = match mode {
            BenchMode::Vjp => strategies.to_vec(),
            BenchMode::Primal | BenchMode::Jvp => vec![Strategy::Tape],
            other => {
                return Err(CliError::input(format!(
                    "bench --steps measures primal, jvp and vjp, not {}",
                    other.name()
                )))
            }
        };
        for strategy in plan {
            let start = Instant::now();
            let it = IteratedStep::with_options(func, None, n_steps, strategy, &options)?;
            let compile_ms = start.elapsed().as_secs_f64() * 1e3;
            let n = it.n_state();
            let (mut y, mut out) = (vec![0.0; n], vec![0.0; n]);
            let w = vec![1.0; n];
            let mut grad = vec![0.0; it.layout().output(adjit::Part::Gradient).len()];
            // ẋ covers the differentiated inputs only: a data input of the step has no tangent.
            let xdot = vec![1.0; func.differentiated_params().count()];
            let ns = match mode {
                BenchMode::Primal => measured(Box::new(|| it.eval(&x, &mut y)))?,
                BenchMode::Jvp => measured(Box::new(|| it.jvp(&x, &xdot, &mut y, &mut out)))?,
                _ => measured(Box::new(|| it.vjp(&x, &w, &mut y, &mut grad)))?,
            };
            let stats = it.stats();
            let vjp = mode == BenchMode::Vjp;
            rows.push(row(
                mode,
                vjp.then(|| strategy.to_string()),
                BenchMeasurement {
                    compile_ms,
                    ns_per_call: ns,
                    peak_bytes: if vjp { stats.peak_bytes } else { 0 },
                    recomputed_ops: if vjp { stats.forward_steps } else { 0 },
                    sparse: None,
                    batch: None,
                    code: None,
                },
            ));
        }
    }
    Ok(Some(rows))
}

/// Median nanoseconds per call of `run`.
fn measured(run: Box<dyn FnMut() -> adjit::Result<()> + '_>) -> Result<f64, CliError> {
    Ok(adjit::time_per_call(run)?)
}

/// `--cotangent`, or 1 for a function with one float output.
fn cotangent(func: &Function, w: Option<Vec<f64>>, n: usize) -> Result<Vec<f64>, CliError> {
    match w {
        Some(w) => Ok(w),
        None if n == 1 => Ok(vec![1.0]),
        None => Err(CliError::input(format!(
            "--cotangent is required: @{} returns {n} float outputs",
            func.name
        ))),
    }
}

/// `--rows` on a function without data inputs: every row is a whole input point, run through
/// the compiled primal, JVP (the same --tangent for every row) or VJP.
fn whole_rows(
    func: &Function,
    path: &Path,
    mode: DriverMode,
    options: &Options,
    json: bool,
) -> Result<String, CliError> {
    let data = read_rows(path, func.n_params)?;
    let n = data.len() / func.n_params.max(1);
    let (derived, names): (adjit::Mode, Vec<&str>) = match &mode {
        DriverMode::Eval => (adjit::Mode::Primal, vec!["outputs"]),
        DriverMode::Jvp(_) => (adjit::Mode::Jvp, vec!["outputs", "tangents"]),
        DriverMode::Vjp(..) => (adjit::Mode::Vjp, vec!["outputs", "gradient"]),
    };
    let compiled = adjit::Compiled::with_options(func, derived, options)?;
    let seed: Vec<f64> = match mode {
        DriverMode::Eval => Vec::new(),
        DriverMode::Jvp(v) => v,
        DriverMode::Vjp(w, _) => cotangent(
            func,
            w,
            func.ret_types.iter().filter(|t| t.is_float()).count(),
        )?,
    };
    let layout = compiled.layout();
    let parts_len: Vec<usize> = layout.output_parts().iter().map(|&(_, l)| l).collect();
    let mut parts: Vec<Vec<f64>> = parts_len
        .iter()
        .map(|&l| Vec::with_capacity(n * l))
        .collect();
    let mut input = vec![0.0; layout.n_inputs()];
    let mut output = vec![0.0; layout.n_outputs()];
    for row in data.chunks(func.n_params.max(1)) {
        input[..row.len()].copy_from_slice(row);
        input[row.len()..].copy_from_slice(&seed);
        compiled.call(&input, &mut output)?;
        let mut at = 0;
        for (part, &len) in parts.iter_mut().zip(&parts_len) {
            part.extend_from_slice(&output[at..at + len]);
            at += len;
        }
    }
    Ok(render_rows(&names, &parts, n, json))
}

/// The rows of `path` (`-` or `@-`: standard input; `@FILE`: FILE): one row per non-blank line,
/// numbers separated by commas and/or whitespace (`#` comments), `row_len` numbers each;
/// flattened row-major. A file without rows is an error.
pub fn read_rows(path: &Path, row_len: usize) -> Result<Vec<f64>, CliError> {
    let file = path.display();
    let spelled = path.to_string_lossy();
    let source = match spelled.strip_prefix('@') {
        Some(rest) => rest.to_string(),
        None => spelled.to_string(),
    };
    let bytes = crate::vectors::read_bytes("--rows", &source)?;
    let text = adjit::ir::text::decode_source(&bytes).map_err(|e| {
        CliError::input(format!(
            "--rows {file}: line {}, column {}: {}",
            e.line, e.col, e.message
        ))
    })?;
    let mut data = Vec::new();
    for (i, line) in adjit::ir::text::source_lines(text).enumerate() {
        let row = parse_numbers(line).map_err(|e| {
            CliError::input(format!(
                "--rows {file}: line {}, column {}: {}",
                i + 1,
                e.col,
                e.message
            ))
        })?;
        if row.is_empty() {
            continue;
        }
        if row.len() != row_len {
            return Err(CliError::input(format!(
                "--rows {file}: line {} has {} numbers, expected {row_len} (one per data input)",
                i + 1,
                row.len()
            )));
        }
        data.extend_from_slice(&row);
    }
    if data.is_empty() {
        return Err(CliError::input(format!(
            "--rows {file}: no rows (every line is blank or a comment)"
        )));
    }
    Ok(data)
}

/// One line (or JSON object) per row: each part's slice of that row.
fn render_rows(names: &[&str], parts: &[Vec<f64>], n_rows: usize, json: bool) -> String {
    let row = |i: usize| -> Vec<(&str, &[f64])> {
        names
            .iter()
            .zip(parts)
            .map(|(&name, part)| {
                let len = part.len() / n_rows.max(1);
                (name, &part[i * len..(i + 1) * len])
            })
            .collect()
    };
    if json {
        let rows: Vec<String> = (0..n_rows).map(|i| json_vectors(&row(i))).collect();
        format!("[{}]\n", rows.join(",\n "))
    } else {
        (0..n_rows)
            .map(|i| {
                let fields: Vec<String> = row(i)
                    .iter()
                    .map(|(name, xs)| human_line(name, xs))
                    .collect();
                format!("{}\n", fields.join("; "))
            })
            .collect()
    }
}
