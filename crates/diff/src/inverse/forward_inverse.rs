//! Forward-inverse: `(x.., x̄..) → (y.., ȳ = J⁻ᵀ·x̄ .., status)`, interleaved with the primal.
//!
//! The primal is emitted in the lump order; right after a lump's instructions come its adjoint
//! lines: `ȳ_Out = A⁻ᵀ·x̄_In` (blocks in reverse order, pivoted LU on each transposed block), then
//! `ȳ_P = x̄_P − Bᵀ·ȳ_Out` (one reverse sweep through the lump seeded with `ȳ_Out`). Only the
//! current cut's adjoints are carried from lump to lump: there is no global tape. `status` is 0,
//! the 1-based index of the first lump with a numerically singular pivot, or −1 when the product
//! is not finite.

use std::collections::HashMap;

use adjit_ir::{Function, Value};

use super::arith::{Arith, Num};
use super::lump_derivatives::{
    adjoint_sweep, jacobian_block, lump_partials, output_scales, solve_at, status_output,
};
use super::lumps::analyze;
use super::scaffold::{builder_with_params, checked_structures, copy_inst};
use super::{InverseError, InverseOptions};

/// `J⁻ᵀ·x̄` by lumps, first to last. See the module docs for the signature.
///
/// ```
/// use adjit_ir::{interpret, Builder, Type};
/// use adjit_diff::inverse::{forward_inverse, InverseOptions};
/// // y = (x0·x1, x1): Jᵀ = [[x1, 0], [x0, 1]].
/// let mut b = Builder::new("f");
/// let x0 = b.param(Type::F64, "x0");
/// let x1 = b.param(Type::F64, "x1");
/// let y0 = b.mul(x0, x1);
/// let f = b.finish(&[y0, x1]);
/// let inv = forward_inverse(&f, &InverseOptions::default()).unwrap();
/// let out = interpret(&inv, &[3.0, 2.0, 1.0, 1.0]).unwrap();
/// // J⁻ᵀ·(1, 1): ȳ0 = 1/2, ȳ1 = 1 − 3·(1/2) = −1/2.
/// assert_eq!(out, vec![6.0, 2.0, 0.5, -0.5, 0.0, 0.0, 0.0]); // y, J⁻ᵀ·x̄, status, pivot report
/// ```
pub fn forward_inverse(func: &Function, opts: &InverseOptions) -> Result<Function, InverseError> {
    let analysis = analyze(func)?;
    let structures = checked_structures(func, &analysis.active, &analysis.lumps, opts, true)?;
    let extra: Vec<(adjit_ir::Type, String)> = func
        .params()
        .enumerate()
        .map(|(i, p)| (func.ty(p), format!("xbar{i}")))
        .collect();
    let (b, mut map, xbars) = builder_with_params(func, "forward_inverse", &extra);
    map.resize(func.n_values(), Value::new(0));
    let mut ar = Arith::new(b);
    // Adjoints at the current cut, starting from the inputs.
    let mut state: HashMap<Value, Num> = HashMap::new();
    for (p, &xb) in func.params().zip(&xbars) {
        let a = ar.f64_of(xb);
        state.insert(p, Num::Val(a));
    }
    let mut emitted = 0;
    let mut flags = Vec::with_capacity(analysis.lumps.len());
    for (lump, structure) in analysis.lumps.iter().zip(&structures) {
        for &v in &analysis.order[emitted..lump.end] {
            copy_inst(&mut ar.b, func, &mut map, v);
        }
        emitted = lump.end;
        let parts = lump_partials(&mut ar, func, &analysis.active, &map, lump);
        let a = jacobian_block(&mut ar, lump, &parts);
        let s: Vec<Num> = lump.inputs.iter().map(|i| state[i]).collect();
        let scales = output_scales(&mut ar, lump, &parts, &a);
        let (z, check) = solve_at(&mut ar, &a, &scales, structure, &s, opts.pivot_tol);
        flags.push((lump.index, check));
        let seeds: HashMap<Value, Num> = lump
            .outputs
            .iter()
            .copied()
            .zip(z.iter().copied())
            .collect();
        let back = adjoint_sweep(&mut ar, lump, &parts, seeds, &lump.inputs);
        for p in &lump.pass_read {
            if let Some(&bt) = back.get(p) {
                let updated = ar.sub(state[p], bt);
                state.insert(*p, updated);
            }
        }
        for i in &lump.inputs {
            state.remove(i);
        }
        for (&o, zo) in lump.outputs.iter().zip(z) {
            state.insert(o, zo);
        }
    }
    for &v in &analysis.order[emitted..] {
        copy_inst(&mut ar.b, func, &mut map, v);
    }
    let mut rets: Vec<Value> = func.rets.iter().map(|r| map[r.index()]).collect();
    let mut product = Vec::with_capacity(func.rets.len());
    for &r in &func.rets {
        let t = ar.in_type(state[&r], func.ty(r));
        product.push(Num::Val(ar.f64_of(t)));
        rets.push(t);
    }
    // Checked in the returned type: an f32 product can overflow where its f64 did not.
    rets.extend(status_output(&mut ar, &flags, &product));
    Ok(ar.b.finish(&rets))
}
