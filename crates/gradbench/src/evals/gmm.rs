//! `gmm`: the log-posterior of a Gaussian mixture (ADBench's objective, as GradBench's
//! reference computes it) and its gradient with respect to (α, μ, q, l).
//!
//! Split into two compositions ([`adjit::compose`]) over the k components of θ = (α [k],
//! μ [k·d], q [k·d], l [k·d(d−1)/2]), so that code size and trace + compile time grow with d²,
//! not k·d² (a fully unrolled per-point kernel took 8.7 s to prepare at d = 64, k = 100):
//! * the per-point term logsumexpⱼ(αⱼ + Σqⱼ − ½‖Qⱼ(xᵢ − μⱼ)‖²) summed over the n points (data
//!   row = xᵢ): a per-component transform (α, μ, q, l) ↦ (α + Σq, μ, exp q, l) run once per
//!   call, the component kernel a − ½‖Q(x − μ)‖² (a d×d triangular product) run for every
//!   point and component, and the logsumexp over the k terms (the max trick by a traced `max`);
//! * the rest, once: −n·logsumexp(α) + the Wishart prior + the constants, with one
//!   component's prior term as the inner kernel and a single (empty) row.
//!
//! The objective is the sum of both; the gradient too. Qⱼ = diag(exp qⱼ) + the strictly lower
//! triangle lⱼ, multiplied in the reference's order.

use std::collections::HashMap;
use std::rc::Rc;

use adjit::compose::{ComposeOptions, ComposedKernel, Composition, Gather};
use adjit::ir::trace::{trace_with_data, Var};
use adjit::{Options, Tracer, Type};
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

/// Q·v with Q = diag(e) + the strictly lower triangle l, in the reference's column order,
/// each product added with one rounding (`fma`: at d = 64 the primal 8–12 % faster than a
/// multiply and an add, the derivative 3–10 %).
fn q_times<'t>(e: &[Var<'t>], l: &[Var<'t>], v: &[Var<'t>]) -> Vec<Var<'t>> {
    let mut qv: Vec<Var<'t>> = e.iter().zip(v).map(|(&ei, &vi)| ei * vi).collect();
    let mut at = 0;
    for (i, &c) in v.iter().enumerate() {
        for out in &mut qv[i + 1..] {
            *out = l[at].mul_add(c, *out);
            at += 1;
        }
    }
    qv
}

/// Per component, once per call: (α, μ, q, l) ↦ (α + Σq, exp q, l, Qμ), the parameters of
/// [`component_kernel`] (Q = diag(exp q) + l).
fn component_transform(d: usize) -> adjit::Function {
    let l_size = d * (d - 1) / 2;
    adjit::trace_multi(
        "transform",
        &vec![adjit::Type::F64; 1 + 2 * d + l_size],
        |psi| {
            let (alpha, rest) = psi.split_at(1);
            let (mu, rest) = rest.split_at(d);
            let (q, l) = rest.split_at(d);
            let e: Vec<Var<'_>> = q.iter().map(|qi| qi.exp()).collect();
            let mut phi = vec![alpha[0] + sum(q.iter().copied(), alpha[0])];
            phi.extend_from_slice(&e);
            phi.extend_from_slice(l);
            phi.extend(q_times(&e, l, mu));
            phi
        },
    )
}

/// One component's term a − ½‖Qx − b‖² of φ = (a, e [d], l [d(d−1)/2], b [d]) (the
/// transformed parameters: a = α + Σq, Q = diag(e) + l, b = Qμ) and the point x: the inner
/// kernel of the composed per-point term. Qx − Qμ is Q(x − μ) by the distributive law; Qμ
/// once per call leaves x, a `data` input, as the only vector Q multiplies per point, so the
/// reverse sweep has no Qᵀ·v product (μ's cotangent goes through b in the transform's VJP).
fn component_kernel(d: usize) -> adjit::Function {
    let l_size = d * (d - 1) / 2;
    trace_with_data(1 + 2 * d + l_size, d, |phi, x| {
        let (a, rest) = phi.split_at(1);
        let (e, rest) = rest.split_at(d);
        let (l, b) = rest.split_at(l_size);
        let qx = q_times(e, l, x);
        let norm = sum(
            qx.iter().zip(b).map(|(&v, &bi)| {
                let z = v - bi;
                z * z
            }),
            a[0],
        );
        a[0] - 0.5 * norm
    })
}

/// logsumexp of the k component terms: the outer kernel of the composed per-point term.
fn reduction_kernel(k: usize) -> adjit::Function {
    adjit::trace(k, logsumexp)
}

/// Where component j's (α, μ, q, l) live in θ: the inner kernel's gather map.
fn gather(shape: Shape) -> Vec<Gather> {
    let Shape { d, k } = shape;
    let l_size = shape.l_size();
    let mut gather = vec![Gather { base: 0, stride: 1 }];
    gather.extend((0..d).map(|i| Gather {
        base: k + i,
        stride: d,
    }));
    gather.extend((0..d).map(|i| Gather {
        base: k + k * d + i,
        stride: d,
    }));
    gather.extend((0..l_size).map(|i| Gather {
        base: k + 2 * k * d + i,
        stride: l_size,
    }));
    gather
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

/// One component's Wishart term ½γ²‖Qⱼ‖²_F − m·Σqⱼ, and αⱼ, of ψ = (αⱼ, qⱼ, lⱼ): the inner
/// kernel of the rest. Its one `data` input (the rest has a single, empty row) is unused.
fn prior_kernel(d: usize, gamma: f64, m: u32) -> adjit::Function {
    let l_size = d * (d - 1) / 2;
    let t = Tracer::new("prior");
    let psi: Vec<Var<'_>> = (0..1 + d + l_size).map(|_| t.input(Type::F64)).collect();
    t.data_input(Type::F64);
    let (alpha, rest) = psi.split_at(1);
    let (q, l) = rest.split_at(d);
    let zero = alpha[0] * 0.0;
    let frobenius =
        sum(q.iter().map(|&qi| qi.exp() * qi.exp()), zero) + sum(l.iter().map(|&li| li * li), zero);
    let term = 0.5 * gamma * gamma * frobenius - f64::from(m) * sum(q.iter().copied(), zero);
    t.finish(&[term, alpha[0]])
}

/// −n·logsumexp(α) + the Wishart prior (−Σⱼ termⱼ + k·c) + the constants, of the k components'
/// (termⱼ, αⱼ): the outer kernel of the rest.
fn rest_reduction(shape: Shape, n: usize, gamma: f64, m: u32) -> adjit::Function {
    let Shape { d, k } = shape;
    let constant = -(n as f64) * d as f64 * 0.5 * (2.0 * std::f64::consts::PI).ln();
    let dof = d + m as usize + 1;
    let c =
        (dof * d) as f64 * (gamma.ln() - 0.5 * 2f64.ln()) - log_gamma_distrib(0.5 * dof as f64, d);
    adjit::trace(2 * k, |y| {
        let terms = y.iter().step_by(2).copied();
        let alpha: Vec<Var<'_>> = y.iter().skip(1).step_by(2).copied().collect();
        let wishart = -sum(terms, y[0]) + k as f64 * c;
        constant - n as f64 * logsumexp(&alpha) + wishart
    })
}

/// −n·logsumexp(α) + the Wishart prior + the constants: everything but the per-point terms,
/// composed over the components as the points are (one empty row), so its code grows with d²,
/// not k·d².
fn rest(shape: Shape, n: usize, gamma: f64, m: u32) -> Result<ComposedKernel> {
    let Shape { d, k } = shape;
    let l_size = shape.l_size();
    let mut gather = vec![Gather { base: 0, stride: 1 }];
    gather.extend((0..d).map(|i| Gather {
        base: k + k * d + i,
        stride: d,
    }));
    gather.extend((0..l_size).map(|i| Gather {
        base: k + 2 * k * d + i,
        stride: l_size,
    }));
    let (inner, outer) = (
        prior_kernel(d, gamma, m),
        rest_reduction(shape, n, gamma, m),
    );
    let spec = Composition {
        transform: None,
        inner: &inner,
        outer: &outer,
        components: k,
        gather: &gather,
        shared: &[],
        n_theta: shape.n_theta(),
    };
    let compose = ComposeOptions {
        threads: 1,
        ..ComposeOptions::default()
    };
    let rest = ComposedKernel::with_options(&spec, compose, &Options::default())?;
    rest.prepare()?;
    Ok(rest)
}

/// The per-point term logsumexpⱼ(αⱼ + Σqⱼ − ½‖Qⱼ(xᵢ − μⱼ)‖²) as a composition: the
/// transform, the component kernel over the k components and the logsumexp over their terms.
fn points(shape: Shape, config: Config) -> Result<ComposedKernel> {
    let (transform, inner, outer, gather) = (
        component_transform(shape.d),
        component_kernel(shape.d),
        reduction_kernel(shape.k),
        gather(shape),
    );
    let spec = Composition {
        transform: Some(&transform),
        inner: &inner,
        outer: &outer,
        components: shape.k,
        gather: &gather,
        shared: &[],
        n_theta: shape.n_theta(),
    };
    let compose = ComposeOptions {
        threads: config.threads,
        lanes: points_lanes(shape.d),
        ..ComposeOptions::default()
    };
    let points = ComposedKernel::with_options(&spec, compose, &Options::default())?;
    points.prepare()?;
    Ok(points)
}

/// Components per native call of the per-point composition: two (pairs of components in
/// vector lanes, their parameters laid out once per call) from d = 10, where the component
/// kernel's work outweighs writing the point into each pair. One run each against one lane
/// (primal, gradient): d = 64, k = 5: 0.62×, 0.77×; d = 10, k = 25: 0.79×, 0.80×; d = 10,
/// k = 5 and 100: 0.7–0.95×; d = 2: 1.1–1.4× (slower).
fn points_lanes(d: usize) -> usize {
    if d >= 10 {
        2
    } else {
        1
    }
}

/// The rest's one row (its inner kernel's unused `data` input).
const EMPTY_ROW: [f64; 1] = [0.0];

/// The compiled pieces of one problem.
struct Kernels {
    points: Rc<ComposedKernel>,
    rest: ComposedKernel,
}

pub struct Gmm {
    config: Config,
    /// Per-point kernels by shape.
    points: HashMap<Shape, Rc<ComposedKernel>>,
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
            None => Rc::new(points(shape, self.config)?),
        };
        self.points.insert(shape, points.clone());
        let rest = rest(shape, input.n, input.gamma, input.m)?;
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
                    let y = kernels.points.eval_sum(&theta, &data)?;
                    Ok(y + kernels.rest.eval_sum(&theta, &EMPTY_ROW)?)
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
                kernels.rest.gradient(&theta, &EMPTY_ROW, &mut g_rest)?;
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
