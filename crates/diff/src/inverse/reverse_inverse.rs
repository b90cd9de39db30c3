//! Reverse-inverse: `(x.., ẏ..) → (y.., ẋ = J⁻¹·ẏ .., status, pivot, threshold)`.
//!
//! The primal runs first, unchanged and in program order (its values are the tape). Then the
//! lumps are visited last to first: with the tangents `ẏ` of the closing cut known,
//! `r = ẏ_Out − B·ẏ_P` (one forward sweep through the lump seeded on P), `ẋ_In = A⁻¹·r` (`A` from
//! one forward direction per input, solved block by block with pivoted LU), and `ẋ_P = ẏ_P`.
//! `status` is 0, the 1-based index of the first lump with a numerically singular pivot, or −1
//! when the product is not finite; then the flagged lump's failing pivot ratio (|pivot| over its
//! row's scale, as compared) and the threshold it was judged against (0, 0 when no lump is
//! singular).
//! Assumes nothing beyond a verified function; errors for non-square or singular structure.

use std::collections::HashMap;

use adjit_ir::{Function, Value};

use super::arith::{Arith, Num};
use super::blocks::LumpBlocks;
use super::lump_derivatives::{
    jacobian_block, lump_partials, output_scales, solve_a, status_output, tangent_sweep,
};
use super::lumps::{analyze, Lump};
use super::scaffold::{builder_with_params, checked_structures, copy_inst};
use super::{InverseError, InverseOptions};

/// `J⁻¹·ẏ` by lumps, last to first. See the module docs for the signature.
///
/// ```
/// use adjit_ir::{interpret, Builder, Type};
/// use adjit_diff::inverse::{reverse_inverse, InverseOptions};
/// // y = (x0·x1, x1): J = [[x1, x0], [0, 1]].
/// let mut b = Builder::new("f");
/// let x0 = b.param(Type::F64, "x0");
/// let x1 = b.param(Type::F64, "x1");
/// let y0 = b.mul(x0, x1);
/// let f = b.finish(&[y0, x1]);
/// let inv = reverse_inverse(&f, &InverseOptions::default()).unwrap();
/// let out = interpret(&inv, &[3.0, 2.0, 1.0, 1.0]).unwrap();
/// // J⁻¹·(1, 1): ẋ1 = 1, ẋ0 = (1 − 3·1)/2 = −1.
/// assert_eq!(out, vec![6.0, 2.0, -1.0, 1.0, 0.0, 0.0, 0.0]); // y, J⁻¹·ẏ, status, pivot report
/// ```
pub fn reverse_inverse(func: &Function, opts: &InverseOptions) -> Result<Function, InverseError> {
    let analysis = analyze(func)?;
    let structures = checked_structures(func, &analysis.active, &analysis.lumps, opts, true)?;
    Ok(emit_reverse(
        func,
        &analysis.active,
        &analysis.lumps,
        &structures,
        opts,
        "reverse_inverse",
    ))
}

/// Emit the primal followed by the reverse-inverse sweep over `lumps` (shared with the dense mode,
/// which passes one lump holding the whole program).
pub(crate) fn emit_reverse(
    func: &Function,
    active: &[bool],
    lumps: &[Lump],
    structures: &[LumpBlocks],
    opts: &InverseOptions,
    suffix: &str,
) -> Function {
    let extra: Vec<(adjit_ir::Type, String)> = func
        .rets
        .iter()
        .enumerate()
        .map(|(i, &r)| (func.ty(r), format!("ydot{i}")))
        .collect();
    let (b, mut map, ydots) = builder_with_params(func, suffix, &extra);
    map.resize(func.n_values(), Value::new(0));
    let mut ar = Arith::new(b);
    for (v, _) in func.insts() {
        copy_inst(&mut ar.b, func, &mut map, v);
    }
    // Tangents at the current cut, starting from the outputs.
    let mut state: HashMap<Value, Num> = HashMap::new();
    for (&r, &yd) in func.rets.iter().zip(&ydots) {
        let t = ar.f64_of(yd);
        state.insert(r, Num::Val(t));
    }
    let mut flags = Vec::with_capacity(lumps.len());
    for (lump, structure) in lumps.iter().zip(structures).rev() {
        let parts = lump_partials(&mut ar, func, active, &map, lump);
        let a = jacobian_block(&mut ar, lump, &parts);
        let seeds: HashMap<Value, Num> = lump.pass_read.iter().map(|p| (*p, state[p])).collect();
        let through = tangent_sweep(&mut ar, lump, &parts, &seeds);
        let r: Vec<Num> = lump
            .outputs
            .iter()
            .map(|o| match through.get(o) {
                Some(&t) => ar.sub(state[o], t),
                None => state[o],
            })
            .collect();
        let scales = output_scales(&mut ar, lump, &parts, &a);
        let (x, check) = solve_a(&mut ar, &a, &scales, structure, &r, opts.pivot_tol);
        flags.push((lump.index, check));
        for o in &lump.outputs {
            state.remove(o);
        }
        for (&i, xi) in lump.inputs.iter().zip(x) {
            state.insert(i, xi);
        }
    }
    let mut rets: Vec<Value> = func.rets.iter().map(|r| map[r.index()]).collect();
    let mut product = Vec::with_capacity(func.n_params);
    for p in func.params() {
        let t = ar.in_type(state[&p], func.ty(p));
        product.push(Num::Val(ar.f64_of(t)));
        rets.push(t);
    }
    // Checked in the returned type: an f32 product can overflow where its f64 did not.
    rets.extend(status_output(&mut ar, &flags, &product));
    ar.b.finish(&rets)
}
