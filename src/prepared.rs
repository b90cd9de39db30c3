//! What every compile-once object keeps of the function it was prepared from, and the one
//! check of a call against it: each slice's length against its part of the layout, then the
//! `bool` inputs (0 or 1). `Compiled`, `Gradient`, `Jacobian`, `Hessian`, the sparse objects,
//! `CheckpointedGradient`, `CompiledInverse` and `IteratedStep` all check through here, so the
//! rule and its messages are written once. Nothing here allocates on a call.

use adjit_diff::layout::{Layout, Part};
use adjit_ir::{Function, Type};

use crate::error::{Error, Result};

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
        return Err(Error::Parts {
            func: func.to_string(),
            expected: parts.len(),
            got: lens.len(),
            layout: layout.to_string(),
        });
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
        let q = sig.add_param(func.ty(p), func.name_of(p).map(str::to_string));
        sig.set_param_kind(q, func.param_kind(p));
    }
    sig
}
