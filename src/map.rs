//! Mapped kernels: one compiled kernel `k(θ, xᵢ)` run over the n rows of a data buffer.
//!
//! The kernel is an ordinary function whose differentiated parameters are θ (shared by every
//! row) and whose `data` parameters ([`adjit_ir::ParamKind::Data`]) are one row `xᵢ`, in
//! signature order either way (they may interleave). The data buffer is row-major: row `i` is
//! `data[i·r .. (i+1)·r]` with `r` the number of data parameters. Each derived program of the
//! kernel (primal, JVP, VJP, gradient, HVP) is compiled once, the first time a call needs it, so
//! compile time and code size do not depend on n; a call runs it once per row.
//!
//! **Fixed summation order.** Sums over rows (`*_sum`, [`MappedKernel::gradient`]) cut the
//! rows into blocks of [`MapOptions::block_rows`]; each block is summed row by row, and the
//! block partials are added to the total in block order. Threads only decide which thread
//! computes which block, so results are bitwise the same for every thread count. Partials start
//! at −0.0 (the IEEE additive identity), so a one-row sum is that row's value bit for bit.
//!
//! With [`MapOptions::lanes`] = 2, pairs of rows run through two-lane kernels, one row per
//! lane, bitwise as one at a time; θ stays laid out for the kernels between pairs
//! ([`adjit_jit::PairBatch`]), so a pair writes only its rows' entries.
//!
//! Memory beyond the caller's buffers: per thread two input and two output buffers of the
//! program (θ, a row and the outputs), plus the partials of one wave of blocks (4 blocks per
//! thread, each the size of the outputs): O(θ + threads × (row + outputs)).

use std::sync::OnceLock;

use adjit_diff::layout::{Layout, Part};
use adjit_diff::Mode;
use adjit_ir::Function;
use adjit_jit::PairBatch;

use crate::error::{Error, Expected, Result};
use crate::options::Options;
use crate::prepared::signature_of;
use crate::rows::{self, put_pair, RowProgram};

/// How a [`MappedKernel`] splits its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapOptions {
    /// Worker threads (0 = every thread of rayon's pool, one per core unless configured, or only
    /// the caller's thread for a call too short to pay for handing work out). Results do not
    /// depend on it.
    pub threads: usize,
    /// Rows per block of a sum (at least 1; 0 is read as 1). Results *do* depend on it: it
    /// fixes the summation order.
    pub block_rows: usize,
    /// Rows per native call: 2 also compiles two-lane kernels
    /// ([`adjit_jit::JitOptions::batch_lanes`]) and runs pairs of rows through them, one row
    /// per lane; 1 (the default) runs rows one at a time. Results do not depend on it (the
    /// lanes are exact and each row is still added in row order); only the JIT engine uses it.
    /// It pays when a row is mostly arithmetic: math-library calls (`exp`, `tanh`, …) still run
    /// once per lane, and values live across them are saved and restored around both calls
    /// (GradBench, one run: llsq's gradient 1.6× faster, ba's Jacobian 1.15×; kmeans unchanged;
    /// gmm at d = 20, k = 25, where `exp` is 31 % of the profile, 1.2× slower).
    pub lanes: usize,
}

impl Default for MapOptions {
    fn default() -> MapOptions {
        MapOptions {
            threads: 0,
            block_rows: 1024,
            lanes: 1,
        }
    }
}

/// The derived programs a mapped kernel may run, in the order of its lazily compiled slots.
const MODES: [Mode; 5] = [
    Mode::Primal,
    Mode::Jvp,
    Mode::Vjp,
    Mode::Gradient,
    Mode::Hvp,
];

/// A compiled program of the kernel.
type Program = RowProgram;

/// A kernel `k(θ, xᵢ)` compiled once and run over the rows of a data buffer, in parallel, with
/// sums over rows in a fixed order (see the [module docs](self)).
///
/// A least-squares loss `(θ₀·t + θ₁ − y)²` per data row `(t, y)`:
///
/// ```
/// use adjit::map::MappedKernel;
/// let k = adjit::ir::trace::trace_with_data(2, 2, |p, d| (p[0] * d[0] + p[1] - d[1]).square());
/// let loss = MappedKernel::new(&k).unwrap();
/// let data = [0.0, 1.0, /* row 2: */ 1.0, 3.0, /* row 3: */ 2.0, 5.0]; // y = 2t + 1
/// let mut grad = [0.0; 2];
/// let total = loss.gradient(&[2.0, 1.0], &data, &mut grad).unwrap();
/// assert_eq!((total, grad), (0.0, [0.0, 0.0]));
/// let mut per_row = [0.0; 3];
/// loss.eval(&[1.0, 1.0], &data, &mut per_row).unwrap();
/// assert_eq!(per_row, [0.0, 1.0, 4.0]);
/// ```
pub struct MappedKernel {
    /// The kernel itself, kept to compile its derived programs on first use.
    kernel: Function,
    /// The kernel's signature, for messages.
    sig: Function,
    opts: Options,
    map: MapOptions,
    /// Positions of θ (the differentiated parameters) among the kernel's parameters.
    theta_at: Vec<usize>,
    /// Positions of a row's entries (the data parameters) among the kernel's parameters.
    row_at: Vec<usize>,
    programs: [OnceLock<Program>; MODES.len()],
}

impl std::fmt::Debug for MappedKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedKernel")
            .field("kernel", &self.sig.name)
            .field("theta", &self.theta_at.len())
            .field("row", &self.row_at.len())
            .field("map", &self.map)
            .finish_non_exhaustive()
    }
}

impl MappedKernel {
    /// Map `kernel` (which must verify, have float parameters only and at least one `data`
    /// parameter) with the default options.
    pub fn new(kernel: &Function) -> Result<MappedKernel> {
        MappedKernel::with_options(kernel, MapOptions::default(), &Options::default())
    }

    /// [`MappedKernel::new`] with the threads and block size of `map`, on the engine and with
    /// the code-generation options of `opts`.
    pub fn with_options(
        kernel: &Function,
        map: MapOptions,
        opts: &Options,
    ) -> Result<MappedKernel> {
        adjit_ir::verify(kernel)?;
        if let Some(p) = kernel.params().find(|&p| !kernel.ty(p).is_float()) {
            return Err(Error::BoolInput {
                what: "a mapped kernel",
                func: kernel.name.clone(),
                index: p.index(),
            });
        }
        let theta_at: Vec<usize> = kernel.differentiated_params().map(|p| p.index()).collect();
        let row_at: Vec<usize> = kernel.data_params().map(|p| p.index()).collect();
        if row_at.is_empty() {
            return Err(Error::Signature {
                func: kernel.name.clone(),
                needs: "a mapped kernel needs `data` inputs (one row); this one has none".into(),
            });
        }
        let mut opts = opts.clone();
        if map.lanes >= 2 {
            opts.jit.batch_lanes = opts.jit.batch_lanes.max(2);
        }
        Ok(MappedKernel {
            kernel: kernel.clone(),
            sig: signature_of(kernel),
            opts,
            map: MapOptions {
                block_rows: map.block_rows.max(1),
                ..map
            },
            theta_at,
            row_at,
            programs: Default::default(),
        })
    }

    /// Compile the programs of `modes` now instead of on first use (e.g. to time compilation
    /// apart from calls). Modes other than primal, jvp, vjp, gradient and hvp are ignored.
    pub fn prepare(&self, modes: &[Mode]) -> Result<()> {
        for &mode in modes {
            if MODES.contains(&mode) {
                self.program(mode)?;
            }
        }
        Ok(())
    }

    /// Number of θ entries (the kernel's differentiated parameters).
    pub fn n_theta(&self) -> usize {
        self.theta_at.len()
    }

    /// Number of entries of one data row (the kernel's `data` parameters).
    pub fn row_len(&self) -> usize {
        self.row_at.len()
    }

    /// Number of kernel outputs per row.
    pub fn n_outputs(&self) -> usize {
        self.kernel.n_outputs()
    }

    /// Number of float outputs per row (the length of a cotangent).
    pub fn n_float_outputs(&self) -> usize {
        self.kernel
            .ret_types
            .iter()
            .filter(|t| t.is_float())
            .count()
    }

    /// The number of rows in `data`, checking it holds whole rows.
    pub fn n_rows(&self, data: &[f64]) -> Result<usize> {
        rows::n_rows(&self.sig.name, self.row_len(), data)
    }

    /// `y` = k(θ, xᵢ) for every row, row-major (`n_rows × n_outputs`).
    pub fn eval(&self, theta: &[f64], data: &[f64], y: &mut [f64]) -> Result<()> {
        self.per_row(Mode::Primal, theta, data, &[], &mut [y])
    }

    /// `y` = Σᵢ k(θ, xᵢ) (one per output), summed in the fixed order.
    pub fn eval_sum(&self, theta: &[f64], data: &[f64], y: &mut [f64]) -> Result<()> {
        self.sum(Mode::Primal, theta, data, &[], &mut [y])
    }

    /// Per row: `y` = k(θ, xᵢ) and `ydot` = ∂k/∂θ(θ, xᵢ)·v, row-major (`v`: one per θ entry;
    /// `ydot`: `n_rows ×` float outputs).
    pub fn jvp(
        &self,
        theta: &[f64],
        data: &[f64],
        v: &[f64],
        y: &mut [f64],
        ydot: &mut [f64],
    ) -> Result<()> {
        self.check_vector("the tangent v", v, self.n_theta())?;
        self.per_row(Mode::Jvp, theta, data, v, &mut [y, ydot])
    }

    /// `y` = Σᵢ k(θ, xᵢ) and `ydot` = Σᵢ ∂k/∂θ(θ, xᵢ)·v, summed in the fixed order.
    pub fn jvp_sum(
        &self,
        theta: &[f64],
        data: &[f64],
        v: &[f64],
        y: &mut [f64],
        ydot: &mut [f64],
    ) -> Result<()> {
        self.check_vector("the tangent v", v, self.n_theta())?;
        self.sum(Mode::Jvp, theta, data, v, &mut [y, ydot])
    }

    /// Per row: `y` = k(θ, xᵢ) and `grad` = (∂k/∂θ(θ, xᵢ))ᵀ·w, row-major (`w`: one per float
    /// output, the same for every row; `grad`: `n_rows × n_theta`).
    pub fn vjp(
        &self,
        theta: &[f64],
        data: &[f64],
        w: &[f64],
        y: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        self.check_vector("the cotangent w", w, self.n_float_outputs())?;
        self.per_row(Mode::Vjp, theta, data, w, &mut [y, grad])
    }

    /// `y` = Σᵢ k(θ, xᵢ) and `grad` = Σᵢ (∂k/∂θ(θ, xᵢ))ᵀ·w, summed in the fixed order.
    pub fn vjp_sum(
        &self,
        theta: &[f64],
        data: &[f64],
        w: &[f64],
        y: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        self.check_vector("the cotangent w", w, self.n_float_outputs())?;
        self.sum(Mode::Vjp, theta, data, w, &mut [y, grad])
    }

    /// For a kernel with one float output: writes ∇θ Σᵢ k(θ, xᵢ) to `grad` and returns the
    /// sum, both in the fixed order.
    pub fn gradient(&self, theta: &[f64], data: &[f64], grad: &mut [f64]) -> Result<f64> {
        let mut y = [0.0];
        self.sum(Mode::Gradient, theta, data, &[], &mut [&mut y, grad])?;
        Ok(y[0])
    }

    /// For a kernel with one float output: the sum Σᵢ k (returned), its gradient `grad` and
    /// its Hessian-vector product `hv` = Σᵢ ∇²θ k(θ, xᵢ)·v, in the fixed order.
    pub fn hvp_sum(
        &self,
        theta: &[f64],
        data: &[f64],
        v: &[f64],
        grad: &mut [f64],
        hv: &mut [f64],
    ) -> Result<f64> {
        self.check_vector("the vector v", v, self.n_theta())?;
        let mut y = [0.0];
        self.sum(Mode::Hvp, theta, data, v, &mut [&mut y, grad, hv])?;
        Ok(y[0])
    }

    /// The compiled program of `mode`, compiling it on first use.
    fn program(&self, mode: Mode) -> Result<&Program> {
        let slot = MODES.iter().position(|&m| m == mode).unwrap_or(0);
        rows::on_first_use(&self.programs[slot], || {
            Program::compile(&self.kernel, mode, &self.opts)
        })
    }

    fn length_error(&self, what: &str, expected: Expected, got: usize) -> Error {
        rows::length_error(&self.sig.name, what, expected, got)
    }

    fn check_vector(&self, what: &str, v: &[f64], expected: usize) -> Result<()> {
        if v.len() != expected {
            return Err(self.length_error(what, Expected::Count(expected), v.len()));
        }
        Ok(())
    }

    /// Check θ and the data, returning the number of rows.
    fn check_inputs(&self, theta: &[f64], data: &[f64]) -> Result<usize> {
        let expected = Expected::CountOf {
            count: self.n_theta(),
            each: "one per differentiated input of the kernel",
        };
        rows::check_inputs(&self.sig.name, theta, expected, self.row_len(), data)
    }

    /// Check that `outs` match the output parts of `layout`, once per row with `Some(rows)`,
    /// once with `None` (sums).
    fn check_outputs(
        &self,
        layout: &Layout,
        outs: &[&mut [f64]],
        rows: Option<usize>,
    ) -> Result<()> {
        for (&(part, len), out) in layout.output_parts().iter().zip(outs) {
            let (n, expected) = match rows {
                Some(rows) => (
                    len * rows,
                    Expected::Grid {
                        rows,
                        len,
                        rows_are: "rows",
                    },
                ),
                None => (len, Expected::Count(len)),
            };
            if out.len() != n {
                let what = format!("the output {}", part_name(part));
                return Err(self.length_error(&what, expected, out.len()));
            }
        }
        Ok(())
    }

    /// A worker's buffers: the program's inputs with θ and `extra` in place, and its outputs.
    fn worker(&self, program: &Program, theta: &[f64], extra: &[f64]) -> Worker {
        let layout = &program.layout;
        let mut inputs = vec![0.0; layout.n_inputs()];
        for (&at, &t) in self.theta_at.iter().zip(theta) {
            inputs[at] = t;
        }
        let rest = layout.input(Part::Inputs).end;
        inputs[rest..].copy_from_slice(extra);
        // Two rows in the two-lane kernels' layout, only for a program that has them: θ and
        // `extra` written once into both lanes, the rows' entries per pair of rows.
        let pairs = program.runner.code().and_then(|code| code.pair_batch(2));
        let pairs = pairs.map(|mut batch| {
            batch.set_all_run(0, &inputs);
            batch
        });
        let pair_outputs = match pairs {
            Some(_) => vec![0.0; 2 * layout.n_outputs()],
            None => Vec::new(),
        };
        Worker {
            inputs,
            outputs: vec![0.0; layout.n_outputs()],
            pairs,
            pair_outputs,
        }
    }

    /// Run `program` on the rows `rows` of `data` and hand each row's outputs to `visit`, in
    /// row order: pairs of rows through the two-lane kernels when the program has them, one
    /// row at a time otherwise (and for an odd last row).
    fn run_rows(
        &self,
        program: &Program,
        worker: &mut Worker,
        data: &[f64],
        rows: std::ops::Range<usize>,
        mut visit: impl FnMut(usize, &[f64]),
    ) -> Result<()> {
        let r = self.row_len();
        let n_out = worker.outputs.len();
        let mut i = rows.start;
        if let (Some(code), Some(batch)) = (program.runner.code(), worker.pairs.as_mut()) {
            while i + 1 < rows.end {
                for (lane, row) in [i, i + 1].into_iter().enumerate() {
                    put_pair(batch, lane, &self.row_at, &data[row * r..(row + 1) * r]);
                }
                code.run_pair_batch(batch)?;
                let (first, second) = worker.pair_outputs.split_at_mut(n_out);
                for (lane, out) in [first, second].into_iter().enumerate() {
                    for (y, value) in out.iter_mut().zip(batch.outputs(lane, 0..n_out)) {
                        *y = value;
                    }
                }
                visit(i, &worker.pair_outputs[..n_out]);
                visit(i + 1, &worker.pair_outputs[n_out..]);
                i += 2;
            }
        }
        for i in i..rows.end {
            for (&at, &x) in self.row_at.iter().zip(&data[i * r..(i + 1) * r]) {
                worker.inputs[at] = x;
            }
            program.runner.run(&worker.inputs, &mut worker.outputs)?;
            visit(i, &worker.outputs);
        }
        Ok(())
    }

    /// How many threads share `work_items` (rows or blocks) of `rows` rows of `program`. With
    /// the default (`threads: 0`), a call whose work is below [`PARALLEL_WORK`] runs on the
    /// caller's thread alone: handing work to the pool costs microseconds, which a short call
    /// would pay several times over.
    fn threads(&self, work_items: usize, rows: usize, program: &Program) -> usize {
        let pays = rows.saturating_mul(program.cost) >= PARALLEL_WORK;
        adjit_jit::threads_for(self.map.threads, work_items, pays)
    }

    /// Every row's outputs of `mode`, scattered part by part into `outs` (row-major).
    fn per_row(
        &self,
        mode: Mode,
        theta: &[f64],
        data: &[f64],
        extra: &[f64],
        outs: &mut [&mut [f64]],
    ) -> Result<()> {
        let n_rows = self.check_inputs(theta, data)?;
        let program = self.program(mode)?;
        self.check_outputs(&program.layout, outs, Some(n_rows))?;
        let parts: Vec<usize> = program
            .layout
            .output_parts()
            .iter()
            .map(|&(_, len)| len)
            .collect();
        let threads = self.threads(n_rows, n_rows, program);
        let rows_per_thread = n_rows.div_ceil(threads).max(1);
        // Per thread, its rows' slice of every output part.
        let mut shares: Vec<Vec<&mut [f64]>> = (0..threads).map(|_| Vec::new()).collect();
        for (out, &len) in outs.iter_mut().zip(&parts) {
            let mut chunks = out.chunks_mut((rows_per_thread * len).max(1));
            for share in shares.iter_mut() {
                share.push(chunks.next().unwrap_or(&mut []));
            }
        }
        let run = |t: usize, share: &mut Vec<&mut [f64]>| -> Result<()> {
            let mut worker = self.worker(program, theta, extra);
            let first = t * rows_per_thread;
            let rows = first..(first + rows_per_thread).min(n_rows);
            self.run_rows(program, &mut worker, data, rows, |i, outputs| {
                let mut at = 0;
                for (out, &len) in share.iter_mut().zip(&parts) {
                    let k = i - first;
                    out[k * len..(k + 1) * len].copy_from_slice(&outputs[at..at + len]);
                    at += len;
                }
            })
        };
        run_on_threads(shares, run)
    }

    /// The sums over rows of `mode`'s outputs, in the fixed block order, into `outs`.
    fn sum(
        &self,
        mode: Mode,
        theta: &[f64],
        data: &[f64],
        extra: &[f64],
        outs: &mut [&mut [f64]],
    ) -> Result<()> {
        let n_rows = self.check_inputs(theta, data)?;
        let program = self.program(mode)?;
        self.check_outputs(&program.layout, outs, None)?;
        let acc = program.layout.n_outputs();
        let block = self.map.block_rows;
        let n_blocks = n_rows.div_ceil(block);
        let threads = self.threads(n_blocks, n_rows, program);
        let mut total = vec![-0.0; acc];
        let mut workers: Vec<Worker> = (0..threads)
            .map(|_| self.worker(program, theta, extra))
            .collect();
        let blocks = Blocks {
            n_rows,
            block,
            min_wave: 4 * threads,
        };
        sum_blocks(blocks, &mut total, &mut workers, |worker, rows, partial| {
            self.run_rows(program, worker, data, rows, |_, outputs| {
                for (p, &y) in partial.iter_mut().zip(outputs) {
                    *p += y;
                }
            })
        })?;
        let mut at = 0;
        for out in outs.iter_mut() {
            let len = out.len();
            out.copy_from_slice(&total[at..at + len]);
            at += len;
        }
        Ok(())
    }
}

/// Below this many instruction-rows (rows × instructions of the row program, ≈ 50–100 µs of
/// work), default options run a call on the caller's thread alone.
pub(crate) const PARALLEL_WORK: usize = 200_000;

/// At most this many partial sums (f64s) are buffered per hand-out to the pool.
const PARTIALS_BUDGET: usize = 1 << 18;

/// The program buffers of one thread.
struct Worker {
    inputs: Vec<f64>,
    outputs: Vec<f64>,
    /// Two rows in the two-lane kernels' layout (`None` without them).
    pairs: Option<PairBatch>,
    /// The two rows' outputs, row-major, as `visit` reads them (empty without pairs).
    pair_outputs: Vec<f64>,
}

/// How a sum over rows is cut: `n_rows` rows in blocks of `block`, handed to the pool in waves
/// of at least `min_wave` blocks (more, as far as [`PARTIALS_BUDGET`] allows).
pub(crate) struct Blocks {
    pub n_rows: usize,
    pub block: usize,
    pub min_wave: usize,
}

/// The fixed-order sum of mapped kernels: `per_block(worker, rows, partial)` adds the
/// contributions of `rows` (one block) to `partial`, which starts at −0.0; the blocks' partials
/// are added to `total` (set to −0.0 first) in block order, whichever worker computed them, so
/// the result is bitwise independent of the number of workers (threads).
pub(crate) fn sum_blocks<W: Send>(
    blocks: Blocks,
    total: &mut [f64],
    workers: &mut [W],
    per_block: impl Fn(&mut W, std::ops::Range<usize>, &mut [f64]) -> Result<()> + Sync,
) -> Result<()> {
    let Blocks {
        n_rows,
        block,
        min_wave,
    } = blocks;
    let acc = total.len();
    let n_blocks = n_rows.div_ceil(block);
    let threads = workers.len().max(1);
    let min_wave = min_wave.max(1);
    // Blocks per hand-out to the pool: as many as fit a bounded partials buffer, so a long
    // call is a few hand-outs, not one per `min_wave` blocks.
    let wave = (PARTIALS_BUDGET / acc.max(1)).clamp(min_wave, n_blocks.max(min_wave));
    total.fill(-0.0);
    let mut partials = vec![0.0; wave.min(n_blocks.max(1)) * acc];
    let mut first_block = 0;
    while first_block < n_blocks {
        let blocks = (n_blocks - first_block).min(wave);
        let per_thread = blocks.div_ceil(threads);
        let partials = &mut partials[..blocks * acc];
        let shares: Vec<_> = partials
            .chunks_mut(per_thread * acc)
            .zip(workers.iter_mut())
            .collect();
        let run = |t: usize, (chunk, worker): &mut (&mut [f64], &mut W)| {
            for (b, partial) in chunk.chunks_mut(acc).enumerate() {
                partial.fill(-0.0);
                let start = (first_block + t * per_thread + b) * block;
                per_block(worker, start..(start + block).min(n_rows), partial)?;
            }
            Ok(())
        };
        run_on_threads(shares, run)?;
        for partial in partials.chunks(acc) {
            for (t, &p) in total.iter_mut().zip(partial) {
                *t += p;
            }
        }
        first_block += blocks;
    }
    Ok(())
}

/// Run `f(t, share)` for every share, on the caller's thread when there is one share and on
/// the persistent rayon pool otherwise (threads are started once per process, not per call);
/// the first error (in share order) is returned.
pub(crate) fn run_on_threads<S: Send>(
    mut shares: Vec<S>,
    f: impl Fn(usize, &mut S) -> Result<()> + Sync,
) -> Result<()> {
    use rayon::prelude::*;
    if shares.len() <= 1 {
        return shares.iter_mut().try_for_each(|s| f(0, s));
    }
    let results: Vec<Result<()>> = shares
        .par_iter_mut()
        .enumerate()
        .map(|(t, share)| f(t, share))
        .collect();
    results.into_iter().collect()
}

/// A part's name in driver messages (`y`, `ẏ`, `x̄`, `H·v`).
fn part_name(part: Part) -> String {
    part.symbol(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_ir::random::Rng;
    use adjit_ir::trace::trace_with_data;

    /// A small MLP-ish loss: θ = 2 hidden units × (2 weights + bias) + 2 output weights.
    fn mlp_loss() -> Function {
        trace_with_data(8, 3, |p, d| {
            let h0 = (p[0] * d[0] + p[1] * d[1] + p[2]).tanh();
            let h1 = (p[3] * d[0] + p[4] * d[1] + p[5]).tanh();
            (p[6] * h0 + p[7] * h1 - d[2]).square()
        })
    }

    fn bits(xs: &[f64]) -> Vec<u64> {
        xs.iter().map(|x| x.to_bits()).collect()
    }

    fn data(n_rows: usize, seed: u64) -> Vec<f64> {
        Rng::new(seed).vector(3 * n_rows, -1.0, 1.0)
    }

    fn kernel(threads: usize, block_rows: usize) -> MappedKernel {
        let map = MapOptions {
            threads,
            block_rows,
            lanes: 2,
        };
        MappedKernel::with_options(&mlp_loss(), map, &Options::default()).unwrap()
    }

    #[test]
    fn two_lane_rows_give_the_bits_of_one_row_at_a_time() {
        // 1003 rows in blocks of 7: odd blocks, so pairs and single last rows both run.
        let data = data(1003, 4);
        let theta = Rng::new(5).vector(8, -1.0, 1.0);
        let v = Rng::new(6).vector(8, -1.0, 1.0);
        let run = |lanes, threads| {
            let map = MapOptions {
                threads,
                block_rows: 7,
                lanes,
            };
            let k = MappedKernel::with_options(&mlp_loss(), map, &Options::default()).unwrap();
            let mut g = vec![0.0; 8];
            let y = k.gradient(&theta, &data, &mut g).unwrap();
            let (mut g2, mut hv) = (vec![0.0; 8], vec![0.0; 8]);
            let y2 = k.hvp_sum(&theta, &data, &v, &mut g2, &mut hv).unwrap();
            let mut rows = vec![0.0; 1003];
            k.eval(&theta, &data, &mut rows).unwrap();
            let (mut ys, mut grads) = (vec![0.0; 1003], vec![0.0; 1003 * 8]);
            k.vjp(&theta, &data, &[1.5], &mut ys, &mut grads).unwrap();
            let paired = k
                .program(Mode::Gradient)
                .unwrap()
                .runner
                .code()
                .map(|c| c.batch_lanes());
            let mut all = vec![y, y2];
            all.extend(
                g.iter()
                    .chain(&g2)
                    .chain(&hv)
                    .chain(&rows)
                    .chain(&ys)
                    .chain(&grads),
            );
            (bits(&all), paired)
        };
        let (one, paired) = run(1, 1);
        assert_eq!(paired, Some(1));
        let (two, paired) = run(2, 1);
        assert_eq!(
            paired,
            Some(2),
            "the two-lane kernels were compiled and used"
        );
        assert_eq!(one, two);
        assert_eq!(one, run(2, 2).0);
    }

    #[test]
    fn sums_are_bitwise_independent_of_the_thread_count() {
        let data = data(1003, 1);
        let theta = Rng::new(2).vector(8, -1.0, 1.0);
        let v = Rng::new(3).vector(8, -1.0, 1.0);
        let run = |threads| {
            let k = kernel(threads, 16);
            let mut g = vec![0.0; 8];
            let y = k.gradient(&theta, &data, &mut g).unwrap();
            let (mut g2, mut hv) = (vec![0.0; 8], vec![0.0; 8]);
            let y2 = k.hvp_sum(&theta, &data, &v, &mut g2, &mut hv).unwrap();
            let (mut y3, mut ydot) = ([0.0], [0.0]);
            k.jvp_sum(&theta, &data, &v, &mut y3, &mut ydot).unwrap();
            let mut rows = vec![0.0; 1003];
            k.eval(&theta, &data, &mut rows).unwrap();
            let mut all = vec![y, y2, y3[0], ydot[0]];
            all.extend(g.iter().chain(&g2).chain(&hv).chain(&rows));
            bits(&all)
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(3));
    }

    #[test]
    fn sums_equal_the_sequential_block_sums_of_single_rows() {
        let data = data(37, 4);
        let theta = Rng::new(5).vector(8, -1.0, 1.0);
        let k = kernel(2, 5);
        let (mut y, mut grads) = (vec![0.0; 37], vec![0.0; 37 * 8]);
        k.vjp(&theta, &data, &[1.0], &mut y, &mut grads).unwrap();
        // The documented order: blocks of 5 rows from −0.0, blocks added in order.
        let mut expected = [-0.0; 9];
        for block in 0..37usize.div_ceil(5) {
            let mut partial = [-0.0; 9];
            for i in block * 5..(block * 5 + 5).min(37) {
                partial[0] += y[i];
                for j in 0..8 {
                    partial[1 + j] += grads[i * 8 + j];
                }
            }
            for (e, p) in expected.iter_mut().zip(&partial) {
                *e += p;
            }
        }
        let mut g = vec![0.0; 8];
        let total = k.gradient(&theta, &data, &mut g).unwrap();
        let (mut ys, mut gs) = ([0.0], vec![0.0; 8]);
        k.vjp_sum(&theta, &data, &[1.0], &mut ys, &mut gs).unwrap();
        assert_eq!(bits(&[total]), bits(&expected[..1]));
        assert_eq!(bits(&g), bits(&expected[1..]));
        assert_eq!(bits(&ys), bits(&expected[..1]));
        assert_eq!(bits(&gs), bits(&expected[1..]));
        // Per-row values are the kernel's own.
        let grad = crate::Gradient::new(&mlp_loss()).unwrap();
        let mut x = theta.clone();
        x.extend_from_slice(&data[3 * 7..3 * 8]);
        let mut g7 = vec![0.0; 8];
        let y7 = grad.call(&x, &mut g7).unwrap();
        assert_eq!(bits(&[y7]), bits(&y[7..8]));
        assert_eq!(bits(&g7), bits(&grads[56..64]));
    }

    #[test]
    fn interleaved_theta_and_rows_and_the_interpreter_agree() {
        use adjit_ir::{trace::Tracer, Type};
        let t = Tracer::new("interleaved");
        let (x0, a, x1, b) = (
            t.data_input(Type::F64),
            t.input(Type::F64),
            t.data_input(Type::F64),
            t.input(Type::F64),
        );
        let f = t.finish(&[a * x0.sin() + b * x1, a * b]);
        let data = [0.5, 2.0, -1.0, 3.0];
        let mut out = Vec::new();
        for engine in [crate::Engine::Jit, crate::Engine::Interp] {
            let k = MappedKernel::with_options(&f, MapOptions::default(), &Options::on(engine))
                .unwrap();
            let (mut y, mut ydot) = ([0.0; 4], [0.0; 4]);
            k.jvp(&[1.5, -2.0], &data, &[1.0, 0.0], &mut y, &mut ydot)
                .unwrap();
            assert_eq!(y[0], 1.5 * 0.5f64.sin() - 4.0);
            assert_eq!(ydot, [0.5f64.sin(), -2.0, (-1.0f64).sin(), -2.0]);
            out.push(bits(&y));
        }
        assert_eq!(out[0], out[1]);
    }

    #[test]
    fn wrong_lengths_name_the_argument() {
        let k = kernel(1, 4);
        let mut g = vec![0.0; 8];
        let err = k.gradient(&[0.0; 7], &[0.0; 6], &mut g).unwrap_err();
        assert!(
            err.to_string().contains("θ has 7 numbers, expected 8"),
            "{err}"
        );
        let err = k.gradient(&[0.0; 8], &[0.0; 5], &mut g).unwrap_err();
        assert!(
            err.to_string()
                .contains("data has 5 numbers, expected a multiple of the row length 3"),
            "{err}"
        );
        let err = k.gradient(&[0.0; 8], &[0.0; 6], &mut g[..2]).unwrap_err();
        assert!(err.to_string().contains("output x̄ has 2 numbers"), "{err}");
        let mut y = [0.0; 3];
        let err = k.eval(&[0.0; 8], &[0.0; 6], &mut y).unwrap_err();
        assert!(err.to_string().contains("expected 2 (2 rows × 1)"), "{err}");
        let no_data = adjit_ir::trace::trace(2, |x| x[0] * x[1]);
        assert!(matches!(
            MappedKernel::new(&no_data),
            Err(Error::Signature { .. })
        ));
        let two =
            adjit_ir::trace::trace_multi("two", &[adjit_ir::Type::F64; 2], |x| vec![x[0], x[1]]);
        let mut f = two.clone();
        f.set_param_kind(adjit_ir::Value::new(1), adjit_ir::ParamKind::Data);
        let k = MappedKernel::new(&f).unwrap();
        let err = k.gradient(&[1.0], &[1.0], &mut [0.0]).unwrap_err();
        assert!(matches!(err, Error::Derive(_)), "{err}");
    }
}
