//! `llsq`: ½ Σᵢ (s(tᵢ) − Σⱼ xⱼ tᵢʲ)² over n points tᵢ = −1 + 2i/(n−1), s the sign function.
//!
//! One kernel per m = |x|: θ = x, one data row (tᵢ, s(tᵢ)), value ½·rᵢ² with rᵢ computed in
//! the reference's order (powers of tᵢ by running products). The rows are built once per n;
//! the primal is the mapped kernel's sum, the gradient its summed gradient.

use std::rc::Rc;

use adjit::ir::trace::{trace_with_data, Var};
use adjit::map::MappedKernel;
use adjit::Options;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{unknown_function, Cache, Config, Eval};
use crate::error::Result;
use crate::input::Source;
use crate::measure::{evaluate, Evaluation, Runs};

#[derive(Deserialize)]
struct Input {
    x: Vec<f64>,
    n: usize,
}

/// Kernels by m, data rows by n.
pub struct Llsq {
    config: Config,
    kernels: Cache<usize, MappedKernel>,
    rows: Cache<usize, Vec<f64>>,
}

/// ½ (s − Σⱼ xⱼ tʲ)² for one point (t, s), θ = x.
fn kernel(m: usize) -> adjit::Function {
    trace_with_data(m, 2, |x, row| {
        let (t, s) = (row[0], row[1]);
        let mut inner = s;
        let mut power: Option<Var<'_>> = None; // None stands for t⁰ = 1.
        for &xj in x {
            inner = match power {
                None => inner - xj,
                Some(p) => inner - xj * p,
            };
            power = Some(power.map_or(t, |p| p * t));
        }
        0.5 * (inner * inner)
    })
}

/// The rows (tᵢ, s(tᵢ)) of n points, as the reference computes them.
fn rows(n: usize) -> Vec<f64> {
    let mut rows = Vec::with_capacity(2 * n);
    for i in 0..n {
        let t = -1.0 + i as f64 * 2.0 / (n as f64 - 1.0);
        let s = f64::from(u8::from(0.0 < t)) - f64::from(u8::from(t < 0.0));
        rows.extend_from_slice(&[t, s]);
    }
    rows
}

impl Llsq {
    pub fn new(config: Config) -> Llsq {
        Llsq {
            config,
            kernels: Cache::default(),
            rows: Cache::default(),
        }
    }
}

impl Eval for Llsq {
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation> {
        let source = Source {
            module: "llsq",
            function,
        };
        let runs = Runs::of(input, source)?;
        let Input { x, n } = source.decode(input)?;
        if x.is_empty() {
            return Err(source.error("x is empty"));
        }
        let prepare = || -> Result<(Rc<MappedKernel>, Rc<Vec<f64>>)> {
            let config = self.config;
            let k = self.kernels.get(x.len(), |m| {
                // Two rows per native call: llsq's kernel is all arithmetic on a small θ,
                // where two lanes pay (gradient 1.6× faster, one GradBench run).
                let map = adjit::map::MapOptions {
                    lanes: 2,
                    ..config.map()
                };
                let k = MappedKernel::with_options(&kernel(m), map, &Options::default())?;
                k.prepare(&[adjit::Mode::Primal, adjit::Mode::Gradient])?;
                Ok(k)
            })?;
            Ok((k, self.rows.get(n, |n| Ok(rows(n)))?))
        };
        match function {
            "primal" => evaluate(
                runs,
                prepare,
                |(k, rows)| {
                    let mut y = [0.0];
                    k.eval_sum(&x, rows, &mut y)?;
                    Ok(y[0])
                },
                |y| json!(y),
            ),
            "gradient" => evaluate(
                runs,
                prepare,
                |(k, rows)| {
                    let mut g = vec![0.0; x.len()];
                    k.gradient(&x, rows, &mut g)?;
                    Ok(g)
                },
                |g| json!(g),
            ),
            _ => Err(unknown_function("llsq", function, "primal, gradient")),
        }
    }
}
