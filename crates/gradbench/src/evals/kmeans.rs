//! `kmeans`: cost Σᵢ minⱼ ‖aᵢ − cⱼ‖² over points aᵢ and centroids cⱼ, and the Newton
//! direction dir = ∇cost / diag(∇²cost), computed as the JAX tool does: the gradient and the
//! Hessian-vector product with a vector of ones (the Hessian is block diagonal per centroid
//! with 2·|cluster j|·I blocks, so H·1 is its diagonal).
//!
//! One kernel per (k, d): θ = the k·d centroid coordinates, one data row = a point, value
//! minⱼ ‖a − cⱼ‖² (distances in the reference's order), mapped over the points.

use std::collections::HashMap;
use std::rc::Rc;

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
}

/// minⱼ ‖a − cⱼ‖² for one point a (the data row), θ = c (k rows of d).
fn kernel(k: usize, d: usize) -> adjit::Function {
    trace_with_data(k * d, d, |c, a| {
        let dist = |j: usize| {
            let terms = (0..d).map(|l| {
                let diff = a[l] - c[j * d + l];
                diff * diff
            });
            terms.reduce(|s, t| s + t).unwrap_or_else(|| a[0] * 0.0)
        };
        (1..k).fold(dist(0), |closest, j| closest.min(dist(j)))
    })
}

impl Kmeans {
    pub fn new(config: Config) -> Kmeans {
        Kmeans {
            config,
            kernels: HashMap::new(),
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
        let prepare = || -> Result<(Rc<MappedKernel>, Vec<f64>, Vec<f64>)> {
            let data = source.rows("points", &points, d)?;
            let theta = source.rows("centroids", &centroids, d)?;
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
        if mode == Mode::Primal {
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
        evaluate(
            runs,
            prepare,
            |(kernel, theta, data)| {
                let ones = vec![1.0; k * d];
                let (mut grad, mut hv) = (vec![0.0; k * d], vec![0.0; k * d]);
                kernel.hvp_sum(theta, data, &ones, &mut grad, &mut hv)?;
                for (g, h) in grad.iter_mut().zip(&hv) {
                    *g /= h;
                }
                Ok(grad)
            },
            |dir| json!(dir.chunks(d).collect::<Vec<_>>()),
        )
    }
}
