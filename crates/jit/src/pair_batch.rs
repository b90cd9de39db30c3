//! Batches laid out for the two-point kernels once and run many times ([`PairBatch`]).
//!
//! [`CompiledFunction::call_batch`] takes points as flat rows and, for each pair of points,
//! interleaves every input into the kernels' layout (slot `i` holds input `i` of both points)
//! and every output back. A caller whose points keep most of their inputs from one run to the
//! next pays that for nothing: a composition's k components keep their parameters φⱼ (at
//! d = 64 in GradBench's gmm, 2,209 of 2,273 inputs) for a whole call, and only the data row
//! changes from row to row. A [`PairBatch`] holds its points in the kernels' layout: the
//! caller writes each input once, then only the inputs that change, runs the kernels on the
//! batch in place ([`CompiledFunction::run_pair_batch`]) and reads each output where the
//! kernels wrote it. Every lane computes what the one-point kernel computes on that point,
//! so the outputs are those of [`CompiledFunction::call_batch`] bit for bit.

use crate::compiled::{run_chunks, CompiledFunction, Kernels, PairSlot};
use crate::error::JitError;

/// The inputs, outputs and workspace of a batch of points in the layout of one function's
/// two-point kernels (see the module documentation). Made by
/// [`CompiledFunction::pair_batch`]; inputs start at 0.
///
/// ```
/// use adjit_jit::{compile, JitOptions};
/// let f = adjit_ir::trace::trace(2, |x| x[0] * x[1] + 1.0);
/// let opts = JitOptions { batch_lanes: 2, ..JitOptions::default() };
/// let code = compile(&f, &opts).unwrap();
/// let Some(mut batch) = code.pair_batch(3) else { return }; // no two-point kernels here
/// for p in 0..3 {
///     batch.set(p, 0, p as f64);
///     batch.set(p, 1, 10.0);
/// }
/// code.run_pair_batch(&mut batch).unwrap();
/// assert_eq!([batch.output(0, 0), batch.output(1, 0), batch.output(2, 0)], [1.0, 11.0, 21.0]);
/// batch.set(1, 1, 20.0); // the other inputs stay
/// code.run_pair_batch(&mut batch).unwrap();
/// assert_eq!(batch.output(1, 0), 21.0);
/// ```
pub struct PairBatch {
    n_points: usize,
    n_in: usize,
    n_out: usize,
    /// The first two-point chunk of the function that made the batch (0 for none):
    /// [`CompiledFunction::run_pair_batch`] runs only that function's kernels on it.
    owner: usize,
    /// `n_in` slots per pair of points; an odd last point's partner lane stays 0.
    inputs: Vec<PairSlot>,
    /// `n_out` slots per pair.
    outputs: Vec<PairSlot>,
    /// One pair's workspace, reused by every pair.
    work: Vec<PairSlot>,
}

impl std::fmt::Debug for PairBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairBatch")
            .field("n_points", &self.n_points)
            .field("n_inputs", &self.n_in)
            .field("n_outputs", &self.n_out)
            .finish_non_exhaustive()
    }
}

/// Pair `point / 2`'s slot `slot` of `per_pair` slots, and the lane of `point`.
#[inline]
fn locate(point: usize, slot: usize, per_pair: usize) -> (usize, usize) {
    ((point / 2) * per_pair + slot, point % 2)
}

impl PairBatch {
    /// How many points the batch holds.
    pub fn n_points(&self) -> usize {
        self.n_points
    }

    /// Set input `slot` of point `point`.
    ///
    /// # Panics
    /// If `point ≥ n_points()` or `slot` is not an input of the function.
    #[inline]
    pub fn set(&mut self, point: usize, slot: usize, value: f64) {
        self.check(point, slot, self.n_in, "input");
        let (at, lane) = locate(point, slot, self.n_in);
        self.inputs[at].0[lane] = value;
    }

    /// Set inputs `first`, `first + 1`, … of point `point` to `values`.
    ///
    /// # Panics
    /// If `point ≥ n_points()` or the inputs reach past the function's.
    #[inline]
    pub fn set_run(&mut self, point: usize, first: usize, values: &[f64]) {
        assert!(
            point < self.n_points && first.saturating_add(values.len()) <= self.n_in,
            "inputs {first}..{} of point {point} are outside a batch of {} points of {} inputs",
            first.saturating_add(values.len()),
            self.n_points,
            self.n_in
        );
        let (at, lane) = locate(point, first, self.n_in);
        for (slot, &value) in self.inputs[at..at + values.len()].iter_mut().zip(values) {
            slot.0[lane] = value;
        }
    }

    /// Set input `slot` of every point to `value` (an input the points share).
    ///
    /// # Panics
    /// If `slot` is not an input of the function.
    pub fn set_all(&mut self, slot: usize, value: f64) {
        self.set_all_run(slot, &[value]);
    }

    /// Set inputs `first`, `first + 1`, … of every point to `values` (inputs the points
    /// share), pair by pair.
    ///
    /// # Panics
    /// If the inputs reach past the function's.
    pub fn set_all_run(&mut self, first: usize, values: &[f64]) {
        assert!(
            first.saturating_add(values.len()) <= self.n_in,
            "inputs {first}..{} are outside the function's {} inputs",
            first.saturating_add(values.len()),
            self.n_in
        );
        if self.n_in == 0 {
            return;
        }
        for pair in self.inputs.chunks_exact_mut(self.n_in) {
            for (slot, &value) in pair[first..].iter_mut().zip(values) {
                *slot = PairSlot([value; 2]);
            }
        }
    }

    /// Input `slot` of point `point` (as last set).
    ///
    /// # Panics
    /// As [`PairBatch::set`].
    #[inline]
    pub fn input(&self, point: usize, slot: usize) -> f64 {
        self.check(point, slot, self.n_in, "input");
        let (at, lane) = locate(point, slot, self.n_in);
        self.inputs[at].0[lane]
    }

    /// Output `slot` of point `point` from the last run (0 before any).
    ///
    /// # Panics
    /// If `point ≥ n_points()` or `slot` is not an output of the function.
    #[inline]
    pub fn output(&self, point: usize, slot: usize) -> f64 {
        self.check(point, slot, self.n_out, "output");
        let (at, lane) = locate(point, slot, self.n_out);
        self.outputs[at].0[lane]
    }

    /// The outputs of point `point` from the last run, read in place: for a caller that reads
    /// a few of many outputs, or reads them more than once, without copying them out.
    ///
    /// # Panics
    /// If `point ≥ n_points()`.
    #[inline]
    pub fn point_outputs(&self, point: usize) -> PointOutputs<'_> {
        assert!(
            point < self.n_points,
            "point {point} is outside a batch of {} points",
            self.n_points
        );
        let (at, lane) = locate(point, 0, self.n_out);
        PointOutputs {
            slots: &self.outputs[at..at + self.n_out],
            lane,
        }
    }

    /// Outputs `slots` of point `point` from the last run, in slot order.
    ///
    /// # Panics
    /// If `point ≥ n_points()` or `slots` reaches past the function's outputs.
    #[inline]
    pub fn outputs(
        &self,
        point: usize,
        slots: std::ops::Range<usize>,
    ) -> impl ExactSizeIterator<Item = f64> + '_ {
        assert!(
            point < self.n_points && slots.start <= slots.end && slots.end <= self.n_out,
            "outputs {slots:?} of point {point} are outside a batch of {} points of {} outputs",
            self.n_points,
            self.n_out
        );
        let (at, lane) = locate(point, slots.start, self.n_out);
        self.outputs[at..at + slots.len()]
            .iter()
            .map(move |slot| slot.0[lane])
    }

    #[inline]
    fn check(&self, point: usize, slot: usize, slots: usize, what: &str) {
        assert!(
            point < self.n_points && slot < slots,
            "{what} {slot} of point {point} is outside a batch of {} points of {slots} {what}s",
            self.n_points
        );
    }
}

/// One point's outputs in a [`PairBatch`] ([`PairBatch::point_outputs`]).
#[derive(Clone, Copy)]
pub struct PointOutputs<'a> {
    slots: &'a [PairSlot],
    lane: usize,
}

impl PointOutputs<'_> {
    /// Output `slot` of the point.
    ///
    /// # Panics
    /// If `slot` is not an output of the function.
    #[inline]
    pub fn get(&self, slot: usize) -> f64 {
        self.slots[slot].0[self.lane]
    }
}

impl CompiledFunction {
    /// A batch of `n_points` points (inputs all 0) for [`CompiledFunction::run_pair_batch`],
    /// or `None` when the function has no two-point kernels
    /// ([`CompiledFunction::batch_lanes`] is 1).
    ///
    /// # Panics
    /// If the batch's size in bytes overflows `usize` (as `vec!` does).
    pub fn pair_batch(&self, n_points: usize) -> Option<PairBatch> {
        let pairs = self.pair_kernels()?;
        let n_pairs = n_points.div_ceil(2);
        let zero = PairSlot([0.0; 2]);
        Some(PairBatch {
            n_points,
            n_in: self.n_inputs(),
            n_out: self.n_outputs(),
            owner: owner(pairs),
            inputs: vec![zero; n_pairs * self.n_inputs()],
            outputs: vec![zero; n_pairs * self.n_outputs()],
            work: vec![zero; pairs.n_slots],
        })
    }

    /// Run the two-point kernels on every pair of `batch`, in place: afterwards
    /// [`PairBatch::output`] gives each point's outputs, bitwise what
    /// [`CompiledFunction::call`] gives for its inputs.
    ///
    /// # Errors
    /// [`JitError::ForeignBatch`] if `batch` was made by another function.
    pub fn run_pair_batch(&self, batch: &mut PairBatch) -> Result<(), JitError> {
        self.run_pair_batch_first(batch, batch.n_points)
    }

    /// [`CompiledFunction::run_pair_batch`] on the first `n_points` points of `batch` only
    /// (with the partner of an odd last one): the outputs of the others stay as they were.
    ///
    /// # Errors
    /// [`JitError::ForeignBatch`] if `batch` was made by another function;
    /// [`JitError::BatchLength`] if `n_points` is more than the batch holds.
    pub fn run_pair_batch_first(
        &self,
        batch: &mut PairBatch,
        n_points: usize,
    ) -> Result<(), JitError> {
        if n_points > batch.n_points {
            return Err(JitError::BatchLength {
                inputs: n_points.saturating_mul(batch.n_in),
                outputs: batch.n_points * batch.n_out,
                n_inputs: batch.n_in,
                n_outputs: batch.n_out,
            });
        }
        let pairs = self
            .pair_kernels()
            .filter(|pairs| {
                owner(pairs) == batch.owner
                    && (batch.n_in, batch.n_out) == (self.n_inputs(), self.n_outputs())
                    && batch.work.len() >= pairs.n_slots
            })
            .ok_or(JitError::ForeignBatch)?;
        let (n_in, n_out) = (batch.n_in, batch.n_out);
        let work = batch.work.as_mut_ptr().cast::<f64>();
        for p in 0..n_points.div_ceil(2) {
            // SAFETY: the batch was made by this function (checked above), so it holds
            // `n_in` input and `n_out` output slots per pair and this kernel's `n_slots` of
            // workspace, in three separate vectors of 16-byte aligned slots; pair `p` is in
            // bounds of both, and the kernels read and write only within those slots.
            unsafe {
                run_chunks(
                    &pairs.chunks,
                    batch.inputs.as_ptr().add(p * n_in).cast(),
                    batch.outputs.as_mut_ptr().add(p * n_out).cast(),
                    work,
                );
            }
        }
        Ok(())
    }
}

/// The identity of a function's two-point kernels: the address of their first chunk.
fn owner(pairs: &Kernels) -> usize {
    pairs.chunks.first().map_or(0, |&chunk| chunk as usize)
}
