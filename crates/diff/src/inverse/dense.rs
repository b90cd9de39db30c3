//! Dense inverse: `(x.., ẏ..) → (y.., J⁻¹·ẏ .., status)` by `n` forward directions through the
//! whole program and one `n × n` LU with partial pivoting: the baseline the lump modes are
//! measured against (`--mode dense`).
//!
//! The whole program is treated as a single lump (In = inputs that are not returned, Out =
//! outputs that are not inputs, P = inputs returned as they are), without block splitting and
//! without the `max_lump` limit. Structural singularity (no perfect matching) is still a
//! compile-time error; `status` is 1 when a pivot is numerically singular, −1 when the product
//! is not finite.

use std::collections::BTreeSet;

use adjit_ir::{Function, Value};

use super::blocks::LumpBlocks;
use super::lumps::{check_square, check_structure, Lump};
use super::reverse_inverse::emit_reverse;
use super::scaffold::checked_structures;
use super::{InverseError, InverseOptions};

/// `J⁻¹·ẏ` with a dense Jacobian. Same signature as [`super::reverse_inverse()`].
pub fn dense_inverse(func: &Function, opts: &InverseOptions) -> Result<Function, InverseError> {
    let (active, lumps, structures) = dense_plan(func, opts)?;
    Ok(emit_reverse(
        func,
        &active,
        &lumps,
        &structures,
        opts,
        "dense_inverse",
    ))
}

/// Whether `func` has a dense inverse: square, float inputs and outputs, no `data` inputs, and
/// structurally nonsingular (a perfect matching of outputs to inputs). The checks of
/// [`dense_inverse`] without emitting its `n × n` LU, for drivers that solve numerically.
pub fn check_dense(func: &Function, opts: &InverseOptions) -> Result<(), InverseError> {
    dense_plan(func, opts).map(|_| ())
}

/// The single lump of the whole program and its one dense block.
type DensePlan = (Vec<bool>, Vec<Lump>, Vec<LumpBlocks>);

fn dense_plan(func: &Function, opts: &InverseOptions) -> Result<DensePlan, InverseError> {
    check_square(func)?;
    let active = check_structure(func)?;
    let params: BTreeSet<Value> = func.params().collect();
    let rets: BTreeSet<Value> = func.rets.iter().copied().collect();
    let insts: Vec<Value> = func
        .insts()
        .map(|(v, _)| v)
        .filter(|v| active[v.index()])
        .collect();
    let pass: BTreeSet<Value> = params.intersection(&rets).copied().collect();
    let mut read: BTreeSet<Value> = BTreeSet::new();
    for &v in &insts {
        if let Some(inst) = func.inst(v) {
            inst.for_each_value(|o| {
                if pass.contains(&o) {
                    read.insert(o);
                }
            });
        }
    }
    let lumps = if insts.is_empty() {
        Vec::new()
    } else {
        vec![Lump {
            index: 1,
            start: 0,
            end: func.n_insts(),
            insts,
            inputs: params.difference(&rets).copied().collect(),
            outputs: rets.difference(&params).copied().collect(),
            n_pass: pass.len(),
            pass_read: read.into_iter().collect(),
        }]
    };
    let structures: Vec<LumpBlocks> = checked_structures(func, &active, &lumps, opts, false)?
        .into_iter()
        .map(|s| {
            // One dense block in natural order: the baseline does not exploit structure.
            let l = s.matched_input.len();
            LumpBlocks {
                deps: vec![(0..l).collect(); l],
                matched_input: (0..l).collect(),
                blocks: vec![(0..l).collect()],
            }
        })
        .collect();
    Ok((active, lumps, structures))
}
