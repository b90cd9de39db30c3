//! `lse`: log Σᵢ exp(xᵢ) by the max trick, A = maxᵢ xᵢ and log Σᵢ exp(xᵢ − A) + A.
//!
//! x is cut into chunks of [`CHUNK`] entries (the last one shorter). One kernel per chunk
//! length, traced once: S(x_c; A) = Σ exp(xⱼ − A) with A a `data` input, whose adjit
//! gradient gives S and ∂S/∂xⱼ = exp(xⱼ − A) in one call. The chunks' S add up (in chunk order,
//! whatever the threads) to S = Σᵢ exp(xᵢ − A), and the chain rule through the outer
//! log S + A, a scalar, gives ∂/∂xⱼ = (∂S/∂xⱼ)/S. A itself is not differentiated: it cancels
//! (∂/∂A of log S(A) + A is 0), exactly as in the reference.
//!
//! Chunks keep the compiled code small and the same for every n, and let threads share x.

use std::rc::Rc;

use adjit::ir::trace::trace_with_data;
use adjit::{Compiled, Gradient, Mode};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{unknown_function, Cache, Config, Eval};
use crate::error::Result;
use crate::input::Source;
use crate::measure::{evaluate, Evaluation, Runs};

/// Entries per chunk.
const CHUNK: usize = 1024;

#[derive(Deserialize)]
struct Input {
    x: Vec<f64>,
}

/// S(x_c; A) = Σ exp(xⱼ − A) of one chunk length: its value and its gradient.
struct ChunkKernel {
    primal: Compiled,
    gradient: Gradient,
}

impl ChunkKernel {
    fn new(len: usize) -> Result<ChunkKernel> {
        let f = trace_with_data(len, 1, |x, a| {
            let terms = x.iter().map(|&xj| (xj - a[0]).exp());
            terms.reduce(|s, t| s + t).unwrap_or_else(|| a[0] * 0.0)
        });
        Ok(ChunkKernel {
            primal: Compiled::new(&f, Mode::Primal)?,
            gradient: Gradient::new(&f)?,
        })
    }
}

/// Chunk kernels by length.
pub struct Lse {
    config: Config,
    kernels: Cache<usize, ChunkKernel>,
}

impl Lse {
    pub fn new(config: Config) -> Lse {
        Lse {
            config,
            kernels: Cache::default(),
        }
    }

    /// The kernels of the full chunks and of the last, shorter one (if any).
    fn kernels(&mut self, n: usize) -> Result<[Option<Rc<ChunkKernel>>; 2]> {
        let mut get = |len: usize| -> Result<Option<Rc<ChunkKernel>>> {
            if len == 0 {
                return Ok(None);
            }
            self.kernels.get(len, ChunkKernel::new).map(Some)
        };
        Ok([get(if n >= CHUNK { CHUNK } else { 0 })?, get(n % CHUNK)?])
    }
}

/// The per-chunk sums S_c of x (and, with `grad`, ∂S_c/∂xⱼ into it), chunks spread over
/// threads; the sums come back in chunk order.
fn chunk_sums(
    config: Config,
    kernels: &[Option<Rc<ChunkKernel>>; 2],
    x: &[f64],
    a: f64,
    grad: Option<&mut [f64]>,
) -> Result<Vec<f64>> {
    let [full, tail] = kernels;
    let (full, tail) = (full.as_deref(), tail.as_deref());
    let n_chunks = x.len().div_ceil(CHUNK);
    let per_thread = n_chunks.div_ceil(config.threads(n_chunks)).max(1) * CHUNK;
    let mut grads: Vec<Option<&mut [f64]>> = match grad {
        Some(g) => g.chunks_mut(per_thread).map(Some).collect(),
        None => x.chunks(per_thread).map(|_| None).collect(),
    };
    let work = |part: &[f64], grad: &mut Option<&mut [f64]>| -> Result<Vec<f64>> {
        let mut sums = Vec::with_capacity(part.len().div_ceil(CHUNK));
        let mut buf = Vec::with_capacity(CHUNK + 1);
        for (c, chunk) in part.chunks(CHUNK).enumerate() {
            let kernel = if chunk.len() == CHUNK { full } else { tail };
            let Some(kernel) = kernel else {
                continue; // Unreachable: every chunk length has its kernel.
            };
            buf.clear();
            buf.extend_from_slice(chunk);
            buf.push(a);
            let s = match grad {
                Some(g) => {
                    let g = &mut g[c * CHUNK..c * CHUNK + chunk.len()];
                    kernel.gradient.call(&buf, g)?
                }
                None => {
                    let mut s = [0.0];
                    kernel.primal.call(&buf, &mut s)?;
                    s[0]
                }
            };
            sums.push(s);
        }
        Ok(sums)
    };
    let work = &work;
    let parts: Vec<&[f64]> = x.chunks(per_thread).collect();
    let results: Vec<Result<Vec<f64>>> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut mine = None;
        for (i, (part, grad)) in parts.iter().zip(grads.iter_mut()).enumerate() {
            if i == 0 {
                mine = Some((part, grad));
            } else {
                handles.push(scope.spawn(move || work(part, grad)));
            }
        }
        let first = mine.map_or(Ok(Vec::new()), |(part, grad)| work(part, grad));
        std::iter::once(first)
            .chain(handles.into_iter().map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }))
            .collect()
    });
    let mut sums = Vec::with_capacity(n_chunks);
    for r in results {
        sums.extend(r?);
    }
    Ok(sums)
}

/// A = max xᵢ (the first entry wins ties, as in the reference).
fn max(x: &[f64]) -> f64 {
    x.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

impl Eval for Lse {
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation> {
        let source = Source {
            module: "lse",
            function,
        };
        let runs = Runs::of(input, source)?;
        let Input { x } = source.decode(input)?;
        if x.is_empty() {
            return Err(source.error("x is empty"));
        }
        let n = x.len();
        let config = self.config;
        match function {
            "primal" => evaluate(
                runs,
                || self.kernels(n),
                |kernels| {
                    let a = max(&x);
                    let s: f64 = chunk_sums(config, kernels, &x, a, None)?.iter().sum();
                    Ok(s.ln() + a)
                },
                |y| json!(y),
            ),
            "gradient" => evaluate(
                runs,
                || self.kernels(n),
                |kernels| {
                    let a = max(&x);
                    let mut grad = vec![0.0; x.len()];
                    let s: f64 = chunk_sums(config, kernels, &x, a, Some(&mut grad))?
                        .iter()
                        .sum();
                    for g in &mut grad {
                        *g /= s;
                    }
                    Ok(grad)
                },
                |g| json!(g),
            ),
            _ => Err(unknown_function("lse", function, "primal, gradient")),
        }
    }
}
