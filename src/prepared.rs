//! What every compile-once object keeps of the function it was prepared from, and the one
//! check of a call against it: each slice's length against its part of the layout, then the
//! `bool` inputs (0 or 1). `Compiled`, `Gradient`, `Jacobian`, `Hessian`, the sparse objects,
//! `CheckpointedGradient`, `CompiledInverse` and `IteratedStep` all check through here, so the
//! rule and its messages are written once. Nothing here allocates on a call.

use adjit_diff::layout::{Layout, Part};
use adjit_ir::{Function, Type};

use crate::error::{Error, Expected, Result};

/// The signature of a prepared function: its name and parameters without its body (enough to
/// name inputs in messages, without keeping a large program alive) and where its `bool`
/// inputs are.
#[derive(Clone, Debug)]
pub(crate) struct Signature {
    pub func: Function,
    /// Positions of the `bool` parameters: empty for most programs, so their check is one
    /// branch.
    pub bools: Vec<usize>,
}

impl Signature {
    pub fn of(func: &Function) -> Signature {
        Signature {
            func: signature_of(func),
            bools: bool_params(func),
        }
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.func.name
    }

    /// Its number of parameters.
    pub fn n_params(&self) -> usize {
        self.func.n_params
    }

    /// Every `bool` input of the flat input `x` holds 0 or 1.
    #[inline]
    pub fn check_bools(&self, x: &[f64]) -> Result<()> {
        check_bools(&self.func, &self.bools, x)
    }

    /// The one check of a call: [`check_lengths`], then the `bool` inputs of the flat input
    /// `x`.
    #[inline]
    pub fn check(
        &self,
        name: &str,
        layout: &Layout,
        inputs: impl ExactSizeIterator<Item = usize>,
        output_parts: &[(Part, usize)],
        outputs: impl ExactSizeIterator<Item = usize>,
        x: &[f64],
    ) -> Result<()> {
        check_lengths(name, layout, inputs, output_parts, outputs)?;
        self.check_bools(x)
    }
}

/// The lengths of a call's slices: `inputs` against the input parts of `layout`, `outputs`
/// against `output_parts` (the layout's output parts the call takes: all of them, or fewer
/// when the object returns one, like `Hessian::call`'s `f(x)`). A wrong length is an
/// [`Error::Length`] naming the part (`x`, `ẋ`, `J`, …) and the whole layout (`name` is the
/// program's name in it).
#[inline]
pub(crate) fn check_lengths(
    name: &str,
    layout: &Layout,
    inputs: impl ExactSizeIterator<Item = usize>,
    output_parts: &[(Part, usize)],
    outputs: impl ExactSizeIterator<Item = usize>,
) -> Result<()> {
    check_parts(name, layout, layout.input_parts(), inputs)?;
    check_parts(name, layout, output_parts, outputs)
}

/// Check that every `bool` input of `func` in `x` holds 0 or 1 (NaN and 0.5 are not booleans).
#[inline]
pub(crate) fn check_bools(func: &Function, bools: &[usize], x: &[f64]) -> Result<()> {
    if bools.is_empty() {
        Ok(())
    } else {
        check_bool_values(func, bools, x)
    }
}

#[cold]
fn check_bool_values(func: &Function, bools: &[usize], x: &[f64]) -> Result<()> {
    for &i in bools {
        let value = x[i];
        if value != 0.0 && value != 1.0 {
            return Err(Error::NotBool {
                func: func.name.clone(),
                index: i,
                name: adjit_ir::text::printed_names(func)[i].clone(),
                value,
            });
        }
    }
    Ok(())
}

/// Positions of the `bool` parameters of `func`.
pub(crate) fn bool_params(func: &Function) -> Vec<usize> {
    func.param_types()
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == Type::Bool)
        .map(|(i, _)| i)
        .collect()
}

/// Check the lengths of a call's slices against the parts of `layout` (`parts`, in order).
pub(crate) fn check_parts(
    func: &str,
    layout: &Layout,
    parts: &[(Part, usize)],
    lens: impl ExactSizeIterator<Item = usize>,
) -> Result<()> {
    if parts.len() != lens.len() {
        return Err(parts_mismatch(func, layout, parts.len(), lens.len()));
    }
    for (&(part, expected), got) in parts.iter().zip(lens) {
        check_length(func, layout, part, expected, got)?;
    }
    Ok(())
}

/// One buffer of `part` (`x`, `J`, `H`, …): `got` numbers where `expected` belong. The one
/// place a [`Error::Length`] is built, for the parts of a call and for the buffers an object
/// fills beside its layout (a dense matrix from a sparse object, the full symmetric pattern).
#[inline]
pub(crate) fn check_length(
    func: &str,
    layout: &Layout,
    part: Part,
    expected: usize,
    got: usize,
) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(length_error(func, layout, part, expected, got))
    }
}

#[cold]
pub(crate) fn length_error(
    func: &str,
    layout: &Layout,
    part: Part,
    expected: usize,
    got: usize,
) -> Error {
    Error::Length {
        func: func.to_string(),
        part,
        expected,
        got,
        layout: layout.to_string(),
    }
}

/// The parameters and return types of `func` without its body.
pub(crate) fn signature_of(func: &Function) -> Function {
    let mut sig = Function::new(func.name.clone());
    for p in func.params() {
        let q = sig.add_param(func.ty(p), func.name(p).cloned());
        sig.set_param_kind(q, func.param_kind(p));
    }
    sig
}

/// What every compile-once object is: a program of fixed [`Layout`], called on one point
/// (one slice per part, or every part flat) or on a batch of points over threads.
///
/// [`Compiled`](crate::Compiled), [`Gradient`](crate::Gradient),
/// [`Jacobian`](crate::Jacobian), [`Hessian`](crate::Hessian),
/// [`SparseJacobian`](crate::SparseJacobian), [`SparseHessian`](crate::SparseHessian),
/// [`CheckpointedGradient`](crate::checkpoint::CheckpointedGradient),
/// [`CompiledInverse`](crate::inverse::CompiledInverse),
/// [`IteratedStep`](crate::steps::IteratedStep) and [`SummedLoss`](crate::steps::SummedLoss)
/// implement it, so a caller that holds any of them (the CLI's `bench`, the Python
/// transforms) drives them the same way. The row drivers ([`crate::map::MappedKernel`],
/// [`crate::compose::ComposedKernel`]) take a number of rows chosen per call, so their
/// lengths are not a layout: they are not `Prepared` (`tests/objects.rs` lists every public
/// object and which it is).
///
/// The layout is the object's: the parts its own call takes and fills, e.g. `(x) -> (y ++ J)`
/// for a Jacobian, `(x ++ v) -> (y ++ product)` for an inverse.
///
/// ```
/// use adjit::{Jacobian, Prepared};
/// let f = adjit::trace_multi("polar", &[adjit::Type::F64; 2], |x| {
///     vec![x[0] * x[1].cos(), x[0] * x[1].sin()]
/// });
/// let jac = Jacobian::new(&f).unwrap();
/// // Three points, each its inputs flat; each result `y (2) ++ J (4)` flat.
/// let x = [1.0, 0.0, 2.0, 0.0, 3.0, 0.0];
/// let mut out = [0.0; 3 * 6];
/// jac.call_batch(&x, &mut out, 0).unwrap();
/// assert_eq!(&out[12..], &[3.0, 0.0, 1.0, 0.0, 0.0, 3.0]);
/// assert_eq!(jac.n_outputs(), 6);
/// ```
pub trait Prepared: std::fmt::Debug + Send + Sync {
    /// The name of the function the object was prepared from (as in its messages).
    fn name(&self) -> &str;

    /// The parts of one point's inputs and outputs, in order.
    fn layout(&self) -> &Layout;

    /// One point: `inputs` one slice per input part of [`Prepared::layout`], `outputs` one per
    /// output part. A wrong length is an [`Error::Length`] naming the part.
    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()>;

    /// One point with its input parts concatenated in `inputs` and its output parts in
    /// `outputs`.
    fn call_flat(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        call_flat_by_parts(self, inputs, outputs)
    }

    /// `points` points, each [`Prepared::call_flat`]'s inputs and outputs one after another
    /// (`inputs`: `points × n_inputs()`, `outputs`: `points × n_outputs()`), split over
    /// `threads` threads (`0`: automatic, [`adjit_jit::threads_for`]). Points are
    /// independent, so the numbers do not depend on `threads`.
    fn call_batch(&self, inputs: &[f64], outputs: &mut [f64], threads: usize) -> Result<()> {
        batch_by_points(self, inputs, outputs, threads)
    }

    /// [`Prepared::call_batch`] into a new vector of `points × n_outputs()` numbers (a
    /// program without inputs has no way to count its points here: an error).
    fn call_batch_vec(&self, inputs: &[f64], threads: usize) -> Result<Vec<f64>> {
        let (n_in, n_out) = (self.n_inputs(), self.n_outputs());
        let points = match n_in {
            0 => 0,
            n => inputs.len() / n,
        };
        batch_points(
            self.name(),
            n_in.max(1),
            n_out,
            inputs.len(),
            points.saturating_mul(n_out),
        )?;
        let mut outputs = crate::memory::zeros(
            self.name(),
            "the batch's outputs",
            points.saturating_mul(n_out),
            "pass fewer points per call",
        )?;
        self.call_batch(inputs, &mut outputs, threads)?;
        Ok(outputs)
    }

    /// [`Prepared::call_batch`] keeping only the ranges `picks` of each point's flat outputs,
    /// in order: `out` holds `points × Σ picks[i].len()` numbers (e.g. only `H` of a
    /// Hessian's `y ++ x̄ ++ H`). Each thread evaluates its points into a buffer of one
    /// point's outputs and copies the picked ranges, so nothing of the size of the whole
    /// batch is written twice.
    fn call_batch_picked(
        &self,
        inputs: &[f64],
        picks: &[std::ops::Range<usize>],
        out: &mut [f64],
        threads: usize,
    ) -> Result<()> {
        batch_picked_by_points(self, inputs, picks, out, threads)
    }

    /// Numbers one point reads: the sum of the input parts.
    fn n_inputs(&self) -> usize {
        self.layout().n_inputs()
    }

    /// Numbers one point writes: the sum of the output parts.
    fn n_outputs(&self) -> usize {
        self.layout().n_outputs()
    }
}

/// [`Prepared::call_flat`] through [`Prepared::call_parts`]: the flat slices checked as a
/// whole, then cut at the parts' lengths.
pub(crate) fn call_flat_by_parts<P: Prepared + ?Sized>(
    object: &P,
    inputs: &[f64],
    outputs: &mut [f64],
) -> Result<()> {
    let layout = object.layout();
    let (n_in, n_out) = (layout.n_inputs(), layout.n_outputs());
    if inputs.len() != n_in || outputs.len() != n_out {
        return Err(arity_error(
            object.name(),
            layout,
            inputs.len(),
            outputs.len(),
        ));
    }
    let (in_parts, out_parts) = (layout.input_parts(), layout.output_parts());
    const PARTS: usize = 8;
    if in_parts.len() <= PARTS && out_parts.len() <= PARTS {
        // Every object's layout but a many-direction JVP's: no allocation.
        let mut ins: [&[f64]; PARTS] = Default::default();
        let mut outs: [&mut [f64]; PARTS] = Default::default();
        cut(in_parts, inputs, &mut ins);
        cut_mut(out_parts, outputs, &mut outs);
        return object.call_parts(&ins[..in_parts.len()], &mut outs[..out_parts.len()]);
    }
    let mut ins: Vec<&[f64]> = vec![&[]; in_parts.len()];
    let mut outs: Vec<&mut [f64]> = (0..out_parts.len()).map(|_| Default::default()).collect();
    cut(in_parts, inputs, &mut ins);
    cut_mut(out_parts, outputs, &mut outs);
    object.call_parts(&ins, &mut outs)
}

/// `flat` cut at the lengths of `parts` into `into` (lengths already checked).
fn cut<'a>(parts: &[(Part, usize)], mut flat: &'a [f64], into: &mut [&'a [f64]]) {
    for (&(_, len), slot) in parts.iter().zip(into) {
        let (part, rest) = flat.split_at(len);
        *slot = part;
        flat = rest;
    }
}

/// [`cut`] for outputs.
fn cut_mut<'a>(parts: &[(Part, usize)], mut flat: &'a mut [f64], into: &mut [&'a mut [f64]]) {
    for (&(_, len), slot) in parts.iter().zip(into) {
        let (part, rest) = std::mem::take(&mut flat).split_at_mut(len);
        *slot = part;
        flat = rest;
    }
}

/// Flat slices whose lengths are not one point's of `layout` (`func` names the program in
/// the message).
#[cold]
#[inline(never)]
pub(crate) fn arity_error(func: &str, layout: &Layout, inputs: usize, outputs: usize) -> Error {
    Error::Arity {
        func: func.to_string(),
        expected_inputs: layout.n_inputs(),
        expected_outputs: layout.n_outputs(),
        inputs,
        outputs,
        layout: layout.to_string(),
    }
}

/// The number of points in a batch of `inputs` and `outputs` numbers, checked against one
/// point's `n_in` and `n_out` (a program without inputs counts its points by its outputs).
pub(crate) fn batch_points(
    func: &str,
    n_in: usize,
    n_out: usize,
    inputs: usize,
    outputs: usize,
) -> Result<usize> {
    let points = match (n_in, n_out) {
        (0, 0) => 0,
        (0, n) => outputs / n,
        (n, _) => inputs / n,
    };
    if n_in > 0 && !inputs.is_multiple_of(n_in) {
        return Err(Error::ArgumentLength {
            func: func.to_string(),
            what: "the batch's inputs".into(),
            expected: Expected::MultipleOf(n_in),
            got: inputs,
        });
    }
    let expected = Expected::Grid {
        rows: points,
        len: n_out,
        rows_are: "points",
    };
    if !expected.accepts(outputs) {
        return Err(Error::ArgumentLength {
            func: func.to_string(),
            what: "the batch's outputs".into(),
            expected,
            got: outputs,
        });
    }
    Ok(points)
}

/// [`Prepared::call_batch`] point by point: the points split into one share per thread
/// (each point is a whole matrix, sweep or solve, so automatic threads always pay).
pub(crate) fn batch_by_points<P: Prepared + ?Sized>(
    object: &P,
    inputs: &[f64],
    outputs: &mut [f64],
    threads: usize,
) -> Result<()> {
    use rayon::prelude::*;
    let (n_in, n_out) = (object.n_inputs(), object.n_outputs());
    let points = batch_points(object.name(), n_in, n_out, inputs.len(), outputs.len())?;
    let threads = adjit_jit::threads_for(threads, points, true);
    let per_thread = points.div_ceil(threads).max(1);
    let share = |t: usize, outs: &mut [f64]| -> Result<()> {
        let first = t * per_thread;
        for (i, out) in outs.chunks_mut(n_out.max(1)).enumerate() {
            let p = first + i;
            object.call_flat(&inputs[p * n_in..(p + 1) * n_in], out)?;
        }
        Ok(())
    };
    if n_out == 0 {
        // Nothing to split the work by: every point on the caller's thread.
        for p in 0..points {
            object.call_flat(&inputs[p * n_in..(p + 1) * n_in], &mut [])?;
        }
        return Ok(());
    }
    if threads == 1 {
        return share(0, outputs);
    }
    outputs
        .par_chunks_mut(per_thread * n_out)
        .enumerate()
        .with_max_len(1)
        .try_for_each(|(t, outs)| share(t, outs))
}

/// A call with the wrong number of slices: reported against the inputs when they are wrong,
/// else against the outputs.
#[cold]
pub(crate) fn parts_error<P: Prepared + ?Sized>(
    object: &P,
    inputs: usize,
    outputs: usize,
) -> Error {
    let layout = object.layout();
    let (expected, got) = if inputs != layout.input_parts().len() {
        (layout.input_parts().len(), inputs)
    } else {
        (layout.output_parts().len(), outputs)
    };
    parts_mismatch(object.name(), layout, expected, got)
}

/// `got` slices where one per part, `expected`, belong.
#[cold]
fn parts_mismatch(func: &str, layout: &Layout, expected: usize, got: usize) -> Error {
    Error::Parts {
        func: func.to_string(),
        expected,
        got,
        layout: layout.to_string(),
    }
}

/// [`Prepared::call_batch_picked`] point by point, the points split into one share per thread.
pub(crate) fn batch_picked_by_points<P: Prepared + ?Sized>(
    object: &P,
    inputs: &[f64],
    picks: &[std::ops::Range<usize>],
    out: &mut [f64],
    threads: usize,
) -> Result<()> {
    use rayon::prelude::*;
    let (n_in, n_out) = (object.n_inputs(), object.n_outputs());
    let len: usize = picks.iter().map(|r| r.len()).sum();
    if let Some(r) = picks.iter().find(|r| r.end > n_out || r.start > r.end) {
        return Err(Error::ArgumentLength {
            func: object.name().to_string(),
            what: format!("the picked outputs {r:?}"),
            expected: Expected::Count(n_out),
            got: r.end,
        });
    }
    let points = batch_points(object.name(), n_in, len, inputs.len(), out.len())?;
    let threads = adjit_jit::threads_for(threads, points, true);
    let per_thread = points.div_ceil(threads).max(1);
    let share = |t: usize, outs: &mut [f64]| -> Result<()> {
        let mut flat = vec![0.0; n_out];
        let first = t * per_thread;
        let rows = outs.len() / len.max(1);
        for i in 0..rows {
            let p = first + i;
            object.call_flat(&inputs[p * n_in..(p + 1) * n_in], &mut flat)?;
            copy_picks(&flat, picks, &mut outs[i * len..(i + 1) * len]);
        }
        Ok(())
    };
    if len == 0 || threads == 1 {
        // Without picked outputs there is nothing to split by: every point here.
        let mut flat = vec![0.0; n_out];
        if len == 0 {
            for p in 0..points {
                object.call_flat(&inputs[p * n_in..(p + 1) * n_in], &mut flat)?;
            }
            return Ok(());
        }
        return share(0, out);
    }
    out.par_chunks_mut(per_thread * len)
        .enumerate()
        .with_max_len(1)
        .try_for_each(|(t, outs)| share(t, outs))
}

/// The ranges `picks` of one point's flat outputs `flat`, one after another, into `dst`.
pub(crate) fn copy_picks(flat: &[f64], picks: &[std::ops::Range<usize>], dst: &mut [f64]) {
    let mut at = 0;
    for r in picks {
        dst[at..at + r.len()].copy_from_slice(&flat[r.clone()]);
        at += r.len();
    }
}
