//! `lse`: log Σᵢ exp(xᵢ) by the max trick, A = maxᵢ xᵢ and log Σᵢ exp(xᵢ − A) + A.
//!
//! x is cut into chunks of [`CHUNK`] entries (the last one shorter). One kernel per chunk
//! length, traced once: S(x_c; A) = Σ exp(xⱼ − A) with A a `data` input. Its VJP with the seed 1
//! gives S and ∂S/∂xⱼ = exp(xⱼ − A) in one call. The chunks' S add up (in chunk order, whatever
//! the threads) to S = Σᵢ exp(xᵢ − A), and the chain rule through the outer log S + A, a
//! scalar, gives ∂/∂xⱼ = (∂S/∂xⱼ)/S. A itself is not differentiated: it cancels (∂/∂A of
//! log S(A) + A is 0), exactly as in the reference.
//!
//! The chunks are the points of a batch: [`GROUP`] chunks at a time go through one
//! `call_batch` of kernels compiled with two lanes and adjit's own `exp` inline
//! (`MathImpl::Inline`), so two chunks are computed at once, one per vector lane, with no
//! library call. Short chunks keep the kernel's code in the instruction cache (a 1024-entry
//! kernel with inline `exp` was 256 KB of code, and slower than library calls).

use std::rc::Rc;

use adjit::ir::trace::trace_with_data;
use adjit::jit::{CompiledFunction, MathImpl};
use adjit::{Compiled, Mode, Options};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{unknown_function, Cache, Config, Eval};
use crate::error::{Error, Result};
use crate::input::Source;
use crate::measure::{evaluate, evaluate_into, Evaluation, Runs};

/// Entries per chunk.
const CHUNK: usize = 32;

/// Chunks per batched call (their points, results and the transposed pairs stay in the cache
/// between the copies).
const GROUP: usize = 64;

#[derive(Deserialize)]
struct Input {
    x: Vec<f64>,
}

/// S(x_c; A) = Σ exp(xⱼ − A) of one chunk length: its value, and its VJP (inputs x_c, A and the
/// seed; outputs S and ∂S/∂x_c).
struct ChunkKernel {
    len: usize,
    primal: Compiled,
    vjp: Compiled,
}

impl ChunkKernel {
    fn new(len: usize) -> Result<ChunkKernel> {
        let f = trace_with_data(len, 1, |x, a| {
            let terms = x.iter().map(|&xj| (xj - a[0]).exp());
            terms.reduce(|s, t| s + t).unwrap_or_else(|| a[0] * 0.0)
        });
        let mut opts = Options::default();
        opts.jit.batch_lanes = 2;
        opts.jit.math = MathImpl::Inline;
        // Points are written as (x_c, A[, seed]) and read as (S[, ∂S/∂x_c]); `call_batch`
        // checks those lengths against the compiled layouts.
        Ok(ChunkKernel {
            len,
            primal: Compiled::with_options(&f, Mode::Primal, &opts)?,
            vjp: Compiled::with_options(&f, Mode::Vjp, &opts)?,
        })
    }

    /// The native code of a mode (the kernels are compiled on the JIT engine).
    fn code(compiled: &Compiled) -> Result<&CompiledFunction> {
        compiled
            .code()
            .ok_or_else(|| Error::Internal("lse: a chunk kernel without native code".into()))
    }

    /// The sums of consecutive chunks of this kernel's length (and, with `grad`, ∂S/∂xⱼ into
    /// it), [`GROUP`] chunks per batched call; `points` and `results` are scratch.
    fn sums(
        &self,
        x: &[f64],
        a: f64,
        mut grad: Option<&mut [f64]>,
        sums: &mut Vec<f64>,
        points: &mut Vec<f64>,
        results: &mut Vec<f64>,
    ) -> Result<()> {
        let len = self.len;
        let seeded = grad.is_some();
        let (code, n_out) = if seeded {
            (Self::code(&self.vjp)?, len + 1)
        } else {
            (Self::code(&self.primal)?, 1)
        };
        for (g, group) in x.chunks(GROUP * len).enumerate() {
            points.clear();
            for chunk in group.chunks(len) {
                points.extend_from_slice(chunk);
                points.push(a);
                if seeded {
                    points.push(1.0);
                }
            }
            let n = group.len() / len;
            results.resize(n * n_out, 0.0);
            code.call_batch(points, results)
                .map_err(adjit::Error::from)?;
            for (c, out) in results.chunks(n_out).enumerate() {
                sums.push(out[0]);
                if let Some(grad) = grad.as_deref_mut() {
                    let at = (g * GROUP + c) * len;
                    grad[at..at + len].copy_from_slice(&out[1..]);
                }
            }
        }
        Ok(())
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

/// The per-chunk sums S_c of x (and, with `grad`, ∂S_c/∂xⱼ into it), whole chunks spread over
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
        let (mut points, mut results) = (Vec::new(), Vec::new());
        let whole = part.len() / CHUNK * CHUNK;
        let (head, rest) = part.split_at(whole);
        let (grad_head, grad_rest) = match grad.as_deref_mut() {
            Some(g) => {
                let (h, r) = g.split_at_mut(whole);
                (Some(h), Some(r))
            }
            None => (None, None),
        };
        if let (Some(kernel), false) = (full, head.is_empty()) {
            kernel.sums(head, a, grad_head, &mut sums, &mut points, &mut results)?;
        }
        if let (Some(kernel), false) = (tail, rest.is_empty()) {
            kernel.sums(rest, a, grad_rest, &mut sums, &mut points, &mut results)?;
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

/// A = max xᵢ, NaNs skipped as by `f64::max` (A is a shift that cancels, so which of equal
/// values wins does not matter). Eight running maxima with a plain comparison let the
/// compiler use vector `max` instructions, which `f64::max`'s NaN rule does not.
fn max(x: &[f64]) -> f64 {
    let mut m = [f64::NEG_INFINITY; 8];
    let mut blocks = x.chunks_exact(8);
    for block in &mut blocks {
        for (m, &v) in m.iter_mut().zip(block) {
            *m = if v > *m { v } else { *m };
        }
    }
    let rest = blocks.remainder().iter().copied();
    m.into_iter().chain(rest).fold(f64::NEG_INFINITY, f64::max)
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
            // One gradient vector for all runs, as `manual` resizes one output (every entry is
            // written by every run).
            "gradient" => evaluate_into(
                runs,
                || self.kernels(n),
                |kernels, grad: &mut Vec<f64>| {
                    let a = max(&x);
                    grad.resize(n, 0.0);
                    let s: f64 = chunk_sums(config, kernels, &x, a, Some(grad))?.iter().sum();
                    let inv = 1.0 / s;
                    for g in grad.iter_mut() {
                        *g *= inv;
                    }
                    Ok(())
                },
                |g| json!(g),
            ),
            _ => Err(unknown_function("lse", function, "primal, gradient")),
        }
    }
}
