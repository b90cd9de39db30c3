//! `kmeans`: cost Σᵢ minⱼ ‖aᵢ − cⱼ‖² over points aᵢ and centroids cⱼ, and the Newton
//! direction dir = ∇cost / diag(∇²cost), computed as the JAX tool does: the gradient and the
//! Hessian-vector product with a vector of ones (the Hessian is block diagonal per centroid
//! with 2·|cluster j|·I blocks, so H·1 is its diagonal).
//!
//! `cost`: one kernel per (k, d), θ = the k·d centroid coordinates, one data row = a point,
//! value minⱼ ‖a − cⱼ‖² (distances in the reference's order), mapped over the points.
//!
//! `dir`: the same function as a composition (`adjit::compose`): the distance ‖a − c‖² (d
//! inputs) as the inner kernel over the k centroids, the minimum over the k distances as the
//! outer one, and its Hessian-vector product. The minimum is piecewise linear, so its HVP
//! program does not read the distances' tangents, and its cotangent is zero for every centroid
//! but the nearest: each point runs k primal distances and one distance HVP
//! (`ComposeOptions::skip_zero_cotangents`), where the HVP of the whole kernel ran the
//! reverse sweep through all k·d coordinates.

use std::collections::HashMap;
use std::rc::Rc;

use adjit::compose::{ComposeOptions, ComposedKernel, Composition, Gather};
use adjit::ir::trace::trace_with_data;
use adjit::map::MappedKernel;
use adjit::Mode;
use adjit::Options;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{unknown_function, Config, Eval};
use crate::error::Result;
use crate::input::Source;
use crate::measure::{evaluate, Evaluation, Runs};

#[derive(Deserialize)]
struct Input {
    points: Vec<Vec<f64>>,
    centroids: Vec<Vec<f64>>,
}

/// Kernels by (k, d).
pub struct Kmeans {
    config: Config,
    kernels: HashMap<(usize, usize), Rc<MappedKernel>>,
    compositions: HashMap<(usize, usize), Rc<ComposedKernel>>,
}

/// ‖a − c‖² summed in coordinate order, for one point a (the data row) and one centroid c.
fn distance<'t>(c: &[adjit::Var<'t>], a: &[adjit::Var<'t>]) -> adjit::Var<'t> {
    let terms = c.iter().zip(a).map(|(&c, &a)| {
        let diff = a - c;
        diff * diff
    });
    terms.reduce(|s, t| s + t).unwrap_or_else(|| a[0] * 0.0)
}

/// minⱼ ‖a − cⱼ‖² for one point a (the data row), θ = c (k rows of d).
fn kernel(k: usize, d: usize) -> adjit::Function {
    trace_with_data(k * d, d, |c, a| {
        let dist = |j: usize| distance(&c[j * d..(j + 1) * d], a);
        (1..k).fold(dist(0), |closest, j| closest.min(dist(j)))
    })
}

/// The same function as a composition: [`distance`] over the k centroids, then their minimum.
fn composition(k: usize, d: usize, config: Config) -> Result<ComposedKernel> {
    let inner = trace_with_data(d, d, distance);
    let outer = adjit::trace(k, |y| y[1..].iter().fold(y[0], |m, &v| m.min(v)));
    let gather: Vec<Gather> = (0..d).map(|l| Gather { base: l, stride: d }).collect();
    let spec = Composition {
        transform: None,
        inner: &inner,
        outer: &outer,
        components: k,
        gather: &gather,
        shared: &[],
        n_theta: k * d,
    };
    // Two points per native call of the fused program (k distances and the minimum's HVP),
    // in vector lanes, the centroids laid out once per call: at k = 100, 0.71–0.74× the
    // one-lane time (`cargo bench --bench map -- kmeans`); at k = 10 the same.
    let compose = ComposeOptions {
        threads: config.threads,
        lanes: 2,
        skip_zero_cotangents: true,
        ..ComposeOptions::default()
    };
    Ok(ComposedKernel::with_options(
        &spec,
        compose,
        &Options::default(),
    )?)
}

impl Kmeans {
    pub fn new(config: Config) -> Kmeans {
        Kmeans {
            config,
            kernels: HashMap::new(),
            compositions: HashMap::new(),
        }
    }
}

impl Eval for Kmeans {
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation> {
        let source = Source {
            module: "kmeans",
            function,
        };
        let runs = Runs::of(input, source)?;
        let Input { points, centroids } = source.decode(input)?;
        let (Some(p0), false) = (points.first(), centroids.is_empty()) else {
            return Err(source.error("points and centroids must not be empty"));
        };
        let (k, d) = (centroids.len(), p0.len());
        if d == 0 {
            return Err(source.error("points have no coordinates"));
        }
        let mode = match function {
            "cost" => Mode::Primal,
            "dir" => Mode::Hvp,
            _ => return Err(unknown_function("kmeans", function, "cost, dir")),
        };
        let data = source.rows("points", &points, d)?;
        let theta = source.rows("centroids", &centroids, d)?;
        if mode == Mode::Primal {
            let prepare = || -> Result<(Rc<MappedKernel>, Vec<f64>, Vec<f64>)> {
                let kernel = match self.kernels.get(&(k, d)) {
                    Some(kernel) => kernel.clone(),
                    None => Rc::new(MappedKernel::with_options(
                        &kernel(k, d),
                        self.config.map(),
                        &Options::default(),
                    )?),
                };
                kernel.prepare(&[mode])?;
                self.kernels.insert((k, d), kernel.clone());
                Ok((kernel, theta, data))
            };
            return evaluate(
                runs,
                prepare,
                |(kernel, theta, data)| {
                    let mut y = [0.0];
                    kernel.eval_sum(theta, data, &mut y)?;
                    Ok(y[0])
                },
                |y| json!(y),
            );
        }
        let prepare = || -> Result<(Rc<ComposedKernel>, Vec<f64>, Vec<f64>)> {
            let kernel = match self.compositions.get(&(k, d)) {
                Some(kernel) => kernel.clone(),
                None => Rc::new(composition(k, d, self.config)?),
            };
            kernel.prepare_hvp()?;
            self.compositions.insert((k, d), kernel.clone());
            Ok((kernel, theta, data))
        };
        evaluate(
            runs,
            prepare,
            |(kernel, theta, data)| {
                let ones = vec![1.0; k * d];
                let (mut grad, mut hv) = (vec![0.0; k * d], vec![0.0; k * d]);
                kernel.hvp(theta, data, &ones, &mut grad, &mut hv)?;
                for (g, h) in grad.iter_mut().zip(&hv) {
                    *g /= h;
                }
                Ok(grad)
            },
            |dir| json!(dir.chunks(d).collect::<Vec<_>>()),
        )
    }
}
