//! `gmm`: the log-posterior of a Gaussian mixture (ADBench's objective, as GradBench's
//! reference computes it) and its gradient with respect to (α, μ, q, l).
//!
//! Split into two traced functions of θ = (α [k], μ [k·d], q [k·d], l [k·d(d−1)/2]):
//! * a per-point kernel, mapped over the n points (data row = xᵢ):
//!   logsumexpⱼ(αⱼ + Σq_j − ½‖Qⱼ(xᵢ − μⱼ)‖²), the max trick by a traced `max`;
//! * the rest, once: −n·logsumexp(α) + the Wishart prior + the constants.
//!
//! The objective is the mapped sum plus the rest; the gradient the summed mapped gradient plus
//! the rest's gradient. Qⱼ = diag(exp qⱼ) + the strictly lower triangle lⱼ, multiplied in the
//! reference's order.

use std::collections::HashMap;
use std::rc::Rc;

use adjit::ir::trace::{trace_with_data, Var};
use adjit::map::MappedKernel;
use adjit::{Gradient, Options};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{unknown_function, Config, Eval};
use crate::error::Result;
use crate::input::Source;
use crate::measure::{evaluate, Evaluation, Runs};

#[derive(Deserialize)]
struct Input {
    d: usize,
    k: usize,
    n: usize,
    alpha: Vec<f64>,
    mu: Vec<Vec<f64>>,
    q: Vec<Vec<f64>>,
    l: Vec<Vec<f64>>,
    x: Vec<Vec<f64>>,
    gamma: f64,
    m: u32,
}

/// The sizes of one problem, and where each part of θ starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Shape {
    d: usize,
    k: usize,
}

impl Shape {
    fn l_size(self) -> usize {
        self.d * (self.d - 1) / 2
    }
    fn n_theta(self) -> usize {
        self.k * (1 + 2 * self.d + self.l_size())
    }
    /// θ split into (α, μ, q, l).
    fn split<T>(self, theta: &[T]) -> (&[T], &[T], &[T], &[T]) {
        let (alpha, rest) = theta.split_at(self.k);
        let (mu, rest) = rest.split_at(self.k * self.d);
        let (q, l) = rest.split_at(self.k * self.d);
        (alpha, mu, q, l)
    }
}

/// The sum a₀ + a₁ + … from the first term (the reference starts from 0, and 0 + a = a).
fn sum<'t>(terms: impl Iterator<Item = Var<'t>>, zero: Var<'t>) -> Var<'t> {
    terms.reduce(|s, t| s + t).unwrap_or(zero * 0.0)
}

/// log Σ exp(xⱼ) with the max trick, in the reference's order.
fn logsumexp<'t>(x: &[Var<'t>]) -> Var<'t> {
    let mx = x[1..].iter().fold(x[0], |m, &xi| m.max(xi));
    sum(x.iter().map(|&xi| (xi - mx).exp()), mx).ln() + mx
}

/// The per-point term logsumexpⱼ(αⱼ + Σqⱼ − ½‖Qⱼ(x − μⱼ)‖²).
fn point_kernel(shape: Shape) -> adjit::Function {
    let Shape { d, k } = shape;
    let l_size = shape.l_size();
    trace_with_data(shape.n_theta(), d, |theta, x| {
        let (alpha, mu, q, l) = shape.split(theta);
        let main: Vec<Var<'_>> = (0..k)
            .map(|j| {
                let centred: Vec<Var<'_>> = (0..d).map(|i| x[i] - mu[j * d + i]).collect();
                let mut qx: Vec<Var<'_>> =
                    (0..d).map(|i| q[j * d + i].exp() * centred[i]).collect();
                let mut at = j * l_size;
                for (i, &c) in centred.iter().enumerate() {
                    for out in &mut qx[i + 1..] {
                        *out += l[at] * c;
                        at += 1;
                    }
                }
                let sum_q = sum(q[j * d..(j + 1) * d].iter().copied(), alpha[j]);
                alpha[j] + sum_q - 0.5 * sum(qx.iter().map(|&v| v * v), alpha[j])
            })
            .collect();
        logsumexp(&main)
    })
}

/// ln Γ_p(a), the multivariate log-gamma function, as the reference computes it.
fn log_gamma_distrib(a: f64, p: usize) -> f64 {
    let p_f = p as f64;
    let mut out = 0.25 * p_f * (p_f - 1.0) * std::f64::consts::PI.ln();
    for j in 1..=p {
        out += libm::lgamma(a + 0.5 * (1.0 - j as f64));
    }
    out
}

/// −n·logsumexp(α) + the Wishart prior + the constants: everything but the per-point terms.
fn rest(shape: Shape, n: usize, gamma: f64, m: u32) -> adjit::Function {
    let Shape { d, k } = shape;
    let l_size = shape.l_size();
    let constant = -(n as f64) * d as f64 * 0.5 * (2.0 * std::f64::consts::PI).ln();
    let dof = d + m as usize + 1;
    let c =
        (dof * d) as f64 * (gamma.ln() - 0.5 * 2f64.ln()) - log_gamma_distrib(0.5 * dof as f64, d);
    adjit::trace(shape.n_theta(), |theta| {
        let (alpha, _, q, l) = shape.split(theta);
        let zero = alpha[0] * 0.0;
        let mut prior: Option<Var<'_>> = None;
        for j in 0..k {
            let qs = &q[j * d..(j + 1) * d];
            let ls = &l[j * l_size..(j + 1) * l_size];
            let frobenius = sum(qs.iter().map(|&qi| qi.exp() * qi.exp()), zero)
                + sum(ls.iter().map(|&li| li * li), zero);
            let term =
                0.5 * gamma * gamma * frobenius - f64::from(m) * sum(qs.iter().copied(), zero);
            prior = Some(prior.map_or(term, |p| p + term));
        }
        let wishart = -prior.unwrap_or(zero) + k as f64 * c;
        constant - n as f64 * logsumexp(alpha) + wishart
    })
}

/// The compiled pieces of one problem.
struct Kernels {
    points: Rc<MappedKernel>,
    rest: Gradient,
}

pub struct Gmm {
    config: Config,
    /// Per-point kernels by shape.
    points: HashMap<Shape, Rc<MappedKernel>>,
    /// The rest by shape, n, γ (bits) and m.
    rests: HashMap<(Shape, usize, u64, u32), Rc<Kernels>>,
}

impl Gmm {
    pub fn new(config: Config) -> Gmm {
        Gmm {
            config,
            points: HashMap::new(),
            rests: HashMap::new(),
        }
    }

    fn kernels(&mut self, shape: Shape, input: &Input) -> Result<Rc<Kernels>> {
        let key = (shape, input.n, input.gamma.to_bits(), input.m);
        if let Some(kernels) = self.rests.get(&key) {
            return Ok(kernels.clone());
        }
        let points = match self.points.get(&shape) {
            Some(p) => p.clone(),
            None => {
                let p = MappedKernel::with_options(
                    &point_kernel(shape),
                    self.config.map(),
                    &Options::default(),
                )?;
                Rc::new(p)
            }
        };
        points.prepare(&[adjit::Mode::Primal, adjit::Mode::Gradient])?;
        self.points.insert(shape, points.clone());
        let rest = Gradient::new(&rest(shape, input.n, input.gamma, input.m))?;
        let kernels = Rc::new(Kernels { points, rest });
        self.rests.insert(key, kernels.clone());
        Ok(kernels)
    }
}

impl Eval for Gmm {
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation> {
        let source = Source {
            module: "gmm",
            function,
        };
        let runs = Runs::of(input, source)?;
        let decoded: Input = source.decode(input)?;
        let shape = Shape {
            d: decoded.d,
            k: decoded.k,
        };
        let (d, k, l_size) = (shape.d, shape.k, shape.d.saturating_sub(1) * shape.d / 2);
        if d == 0 || k == 0 || decoded.n == 0 {
            return Err(source.error("d, k and n must be positive"));
        }
        if decoded.alpha.len() != k || decoded.mu.len() != k || decoded.q.len() != k {
            return Err(source.error(format!("alpha, mu and q must have k = {k} entries")));
        }
        if decoded.l.len() != k || decoded.x.len() != decoded.n {
            return Err(source.error(format!("l must have k = {k} rows and x n rows")));
        }
        let mut theta = decoded.alpha.clone();
        theta.extend(source.rows("mu", &decoded.mu, d)?);
        theta.extend(source.rows("q", &decoded.q, d)?);
        theta.extend(source.rows("l", &decoded.l, l_size)?);
        let data = source.rows("x", &decoded.x, d)?;
        let is_objective = match function {
            "objective" => true,
            "jacobian" => false,
            _ => return Err(unknown_function("gmm", function, "objective, jacobian")),
        };
        let prepare = || self.kernels(shape, &decoded);
        if is_objective {
            return evaluate(
                runs,
                prepare,
                |kernels| {
                    let mut y = [0.0];
                    kernels.points.eval_sum(&theta, &data, &mut y)?;
                    let mut g = vec![0.0; theta.len()];
                    Ok(y[0] + kernels.rest.call(&theta, &mut g)?)
                },
                |y| json!(y),
            );
        }
        evaluate(
            runs,
            prepare,
            |kernels| {
                let mut g = vec![0.0; theta.len()];
                let mut g_rest = vec![0.0; theta.len()];
                kernels.points.gradient(&theta, &data, &mut g)?;
                kernels.rest.call(&theta, &mut g_rest)?;
                for (a, b) in g.iter_mut().zip(&g_rest) {
                    *a += b;
                }
                Ok(g)
            },
            |g| {
                let (alpha, mu, q, l) = shape.split(&g);
                let rows = |v: &[f64], len: usize| -> Vec<Vec<f64>> {
                    (0..k).map(|j| v[j * len..(j + 1) * len].to_vec()).collect()
                };
                json!({"alpha": alpha, "mu": rows(mu, d), "q": rows(q, d), "l": rows(l, l_size)})
            },
        )
    }
}
