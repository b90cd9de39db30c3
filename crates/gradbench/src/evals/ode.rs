//! `ode`: s steps of classic RK4 with h = 2/s from y = 0 on y′ = f(y), f(y)₀ = x₀ and
//! f(y)ᵢ = xᵢ·yᵢ₋₁; `primal` is the final state, `gradient` the gradient of its last entry
//! with respect to x (what the reference's program computes; `manual` writes it in closed form).
//!
//! A step is local: the new yᵢ depends on yᵢ₋₄ … yᵢ and xᵢ₋₃ … xᵢ only. So one kernel per
//! chunk length C is traced once, y′[c..c+C] from the C + 4 entries y[c−4..c+C] and
//! x[c−4..c+C] and the data input h, in the reference's arithmetic (h·k/2, then the sum
//! (k₁ + 2k₂ + 2k₃ + k₄)·h/6). The state is stored after a fixed halo [0, 0, 0, 1] (and x after
//! [0, 0, 0, 0]): y₋₁ = 1 and x₋₁ = 0 make f(y)₀ = x₀·1 = x₀ exactly, so the first chunk needs
//! no kernel of its own, and n is padded to whole chunks with xᵢ = 0 (nothing reads the padding
//! back: information only flows to higher i).
//!
//! The primal runs the chunk kernel over the chunks, s times, between two buffers. The
//! gradient keeps the s states (a tape), then goes back through the steps, last first, with
//! the chunk kernel's compiled VJP: each chunk's adjoints of its C + 4 inputs add into the
//! previous state's adjoint and into x̄. Compile time depends on C only, not on n or s.
//!
//! The gradient only visits the chunks the last entry depends on: step k's output matters from
//! entry n−1 − 4·(s−1−k) on (each step reads 4 entries back), so earlier chunks are dead code
//! for it, skipped as adjit's dead-code elimination would drop them from the unrolled program.
//! Entries below that cone keep the zeros they start with; they only feed outputs whose
//! adjoint is 0, so the cone's numbers are those of the full sweep (zero signs aside) and every
//! entry of x̄ outside it is 0, as it is for the RK4 program. With n > 4s (every default size)
//! this turns O(n·s) work into O(n + s²).
//!
//! (An [`adjit::steps::IteratedStep`] over the whole n-entry RK4 step gives the same numbers
//! but compiles a program of ~30·n operations, too slow at n = 10⁵; see README.md.)

use std::cell::RefCell;
use std::rc::Rc;

use adjit::ir::trace::{Tracer, Var};
use adjit::ir::Type;
use adjit::{Compiled, Mode};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{unknown_function, Cache, Eval};
use crate::error::Result;
use crate::input::Source;
use crate::measure::{evaluate, Evaluation, Runs};

/// Entries per chunk (fewer when n is smaller).
const CHUNK: usize = 256;
/// Entries of the previous chunk one step reads: one per RK4 stage.
const HALO: usize = 4;
/// The largest s·(n + HALO) the gradient's tape may hold (8 bytes each: 1.6 GB).
const MAX_TAPE: usize = 200_000_000;

/// The first chunk (of `c` entries) of the state after step `k` (of `s`) that the last of `n`
/// entries depends on.
fn first_live_chunk(n: usize, s: usize, c: usize, k: usize) -> usize {
    (n - 1).saturating_sub(HALO.saturating_mul(s - 1 - k)) / c
}

#[derive(Deserialize)]
struct Input {
    x: Vec<f64>,
    s: usize,
}

/// f(y) on the entries where it is known: zᵢ = xᵢ·yᵢ₋₁ where yᵢ₋₁ is (never at i = 0).
fn ode_fun<'t>(x: &[Var<'t>], y: &[Option<Var<'t>>]) -> Vec<Option<Var<'t>>> {
    (0..x.len())
        .map(|i| match i {
            0 => None,
            _ => y[i - 1].map(|y| x[i] * y),
        })
        .collect()
}

/// y + (h·k)/d where both are known.
fn axpy<'t>(
    y: &[Var<'t>],
    h: Var<'t>,
    k: &[Option<Var<'t>>],
    d: Option<f64>,
) -> Vec<Option<Var<'t>>> {
    y.iter()
        .zip(k)
        .map(|(&y, k)| {
            k.map(|k| match d {
                Some(d) => y + h * k / d,
                None => y + h * k,
            })
        })
        .collect()
}

/// One RK4 step of the entries `HALO..` of `y` (entries before them are the halo), as the
/// reference computes it.
fn rk4_step<'t>(y: &[Var<'t>], x: &[Var<'t>], h: Var<'t>) -> Vec<Var<'t>> {
    let known: Vec<Option<Var<'t>>> = y.iter().copied().map(Some).collect();
    let k1 = ode_fun(x, &known);
    let k2 = ode_fun(x, &axpy(y, h, &k1, Some(2.0)));
    let k3 = ode_fun(x, &axpy(y, h, &k2, Some(2.0)));
    let k4 = ode_fun(x, &axpy(y, h, &k3, None));
    (HALO..y.len())
        .filter_map(|i| {
            let (k1, k2, k3, k4) = (k1[i]?, k2[i]?, k3[i]?, k4[i]?);
            Some(y[i] + h * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0)
        })
        .collect()
}

/// The step of one chunk of `len` entries: (y[c−4..c+len], x[c−4..c+len], data h) → y′[c..c+len].
fn chunk_step(len: usize) -> adjit::Function {
    let t = Tracer::new("ode_chunk");
    let y: Vec<Var<'_>> = (0..len + HALO).map(|_| t.input(Type::F64)).collect();
    let x: Vec<Var<'_>> = (0..len + HALO).map(|_| t.input(Type::F64)).collect();
    let h = t.data_input(Type::F64);
    t.finish(&rk4_step(&y, &x, h))
}

/// The chunk step of one length, compiled: primal and VJP.
struct ChunkKernel {
    len: usize,
    primal: Compiled,
    vjp: Compiled,
}

impl ChunkKernel {
    fn new(len: usize) -> Result<ChunkKernel> {
        let f = chunk_step(len);
        Ok(ChunkKernel {
            len,
            primal: Compiled::new(&f, Mode::Primal)?,
            vjp: Compiled::new(&f, Mode::Vjp)?,
        })
    }
}

/// Buffers of one input size, allocated in `prepare`: x and the states with their halo.
struct Work {
    n: usize,
    s: usize,
    h: f64,
    /// [0; HALO] ++ x ++ padding zeros.
    x: Vec<f64>,
    /// The states before each step (the tape), each HALO + padded n long.
    states: Vec<Vec<f64>>,
    /// The state after the last step (primal) or a spare state adjoint (gradient).
    last: Vec<f64>,
    /// x̄ with the halo.
    xbar: Vec<f64>,
    /// One chunk's inputs: y, x, h (and ȳ for the VJP).
    input: Vec<f64>,
    /// One chunk's VJP outputs: y′, then the adjoints of y and x.
    output: Vec<f64>,
}

impl Work {
    fn new(kernel: &ChunkKernel, x: &[f64], s: usize, tape: bool) -> Work {
        let n = x.len();
        let padded = HALO + n.div_ceil(kernel.len) * kernel.len;
        let mut xs = vec![0.0; padded];
        xs[HALO..HALO + n].copy_from_slice(x);
        let state = || {
            let mut y = vec![0.0; padded];
            y[HALO - 1] = 1.0;
            y
        };
        Work {
            n,
            s,
            h: 2.0 / s as f64,
            x: xs,
            states: (0..if tape { s } else { 1 }).map(|_| state()).collect(),
            last: state(),
            xbar: vec![0.0; padded],
            input: Vec::with_capacity(3 * kernel.len + 2 * HALO + 1),
            output: vec![0.0; kernel.len + 2 * (kernel.len + HALO)],
        }
    }

    /// `to` = one RK4 step of `from`, chunk by chunk from chunk `first` on; `input` holds one
    /// chunk's inputs.
    fn step(
        kernel: &ChunkKernel,
        x: &[f64],
        h: f64,
        (from, to): (&[f64], &mut [f64]),
        first: usize,
        input: &mut Vec<f64>,
    ) -> Result<()> {
        let c = kernel.len;
        let out = to[HALO..].chunks_exact_mut(c).skip(first);
        for (start, out) in (first * c..).step_by(c).zip(out) {
            let span = start..start + c + HALO;
            input.clear();
            input.extend_from_slice(&from[span.clone()]);
            input.extend_from_slice(&x[span]);
            input.push(h);
            kernel.primal.call(input, out)?;
        }
        Ok(())
    }

    /// The final state, in `last`.
    fn primal(&mut self, kernel: &ChunkKernel) -> Result<&[f64]> {
        let Work {
            x,
            h,
            states,
            last,
            input,
            ..
        } = self;
        let state = &mut states[0];
        state[HALO..].fill(0.0);
        for _ in 0..self.s {
            Work::step(kernel, x, *h, (state, last), 0, input)?;
            std::mem::swap(state, last);
        }
        std::mem::swap(state, last);
        Ok(&last[HALO..HALO + self.n])
    }

    /// ∂y_f[n−1]/∂x, in `xbar`.
    fn gradient(&mut self, kernel: &ChunkKernel) -> Result<&[f64]> {
        let Work {
            n,
            s,
            h,
            x,
            states,
            last,
            xbar,
            input,
            output,
        } = self;
        let (n, s, h, c) = (*n, *s, *h, kernel.len);
        // states[0] is the initial state y = 0 (with its halo) from `Work::new`; nothing
        // writes it in a gradient `Work`.
        let live = |k: usize| first_live_chunk(n, s, c, k);
        for k in 1..s {
            let (before, after) = states.split_at_mut(k);
            let first = live(k - 1);
            Work::step(kernel, x, h, (&before[k - 1], &mut after[0]), first, input)?;
        }
        // ȳ of the final state, then of the state before each step, last step first.
        let mut ybar = std::mem::take(last);
        ybar.fill(0.0);
        ybar[HALO + n - 1] = 1.0;
        let mut prev = vec![0.0; ybar.len()];
        xbar.fill(0.0);
        for (k, state) in states.iter().enumerate().rev() {
            let first = live(k) * c;
            // Adjoints below the cone are never written: clear from where this step writes.
            prev[first..].fill(0.0);
            for start in (first..ybar.len() - HALO).step_by(c) {
                let span = start..start + c + HALO;
                input.clear();
                input.extend_from_slice(&state[span.clone()]);
                input.extend_from_slice(&x[span.clone()]);
                input.push(h);
                input.extend_from_slice(&ybar[HALO + start..HALO + start + c]);
                kernel.vjp.call(input, output)?;
                // The VJP's outputs: y′ (c), then the adjoints of y and x (c + HALO each).
                let (gy, gx) = output[c..].split_at(c + HALO);
                for (p, g) in prev[span.clone()].iter_mut().zip(gy) {
                    *p += g;
                }
                for (p, g) in xbar[span].iter_mut().zip(gx) {
                    *p += g;
                }
            }
            std::mem::swap(&mut ybar, &mut prev);
        }
        *last = ybar;
        Ok(&xbar[HALO..HALO + n])
    }
}

/// Chunk kernels by length.
#[derive(Default)]
pub struct Ode {
    kernels: Cache<usize, ChunkKernel>,
}

impl Ode {
    fn kernel(&mut self, len: usize) -> Result<Rc<ChunkKernel>> {
        self.kernels.get(len, ChunkKernel::new)
    }
}

impl Eval for Ode {
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation> {
        let source = Source {
            module: "ode",
            function,
        };
        let runs = Runs::of(input, source)?;
        let Input { x, s } = source.decode(input)?;
        if x.is_empty() {
            return Err(source.error("x is empty"));
        }
        if s == 0 {
            return Err(source.error("s is 0, expected at least one step (h = 2/s)"));
        }
        let len = x.len().min(CHUNK);
        let mut prepare = |tape: bool| -> Result<(Rc<ChunkKernel>, RefCell<Work>)> {
            if tape && s.saturating_mul(x.len() + HALO) > MAX_TAPE {
                return Err(source.error(format!(
                    "s·n = {s}·{} is too large for the gradient's tape ({MAX_TAPE} numbers)",
                    x.len()
                )));
            }
            let k = self.kernel(len)?;
            let work = RefCell::new(Work::new(&k, &x, s, tape));
            Ok((k, work))
        };
        match function {
            "primal" => evaluate(
                runs,
                || prepare(false),
                |(k, work)| Ok(work.borrow_mut().primal(k)?.to_vec()),
                |y| json!(y),
            ),
            "gradient" => evaluate(
                runs,
                || prepare(true),
                |(k, work)| Ok(work.borrow_mut().gradient(k)?.to_vec()),
                |g| json!(g),
            ),
            _ => Err(unknown_function("ode", function, "primal, gradient")),
        }
    }
}
