//! Constant folding: an instruction whose operands are all known constants becomes a
//! `const`, computed with [`adjit_ir::math`] (the interpreter's semantics), unless the result
//! is NaN (never folded, so that NaN-producing code stays visible). A `select` with a constant
//! condition becomes its chosen operand. Known constants are written inline as literals into
//! the instructions that use them (where a value operand remains), which leaves the `const`
//! dead for [`super::dce`]. Names of folded values are kept.

use adjit_ir::{identities, math, Function, InstData, Operand, ValueDef};

use super::{copied, InPlace};

/// Fold constants; see the module docs.
pub fn fold(func: &Function) -> Function {
    copied(func, fold_in_place)
}

/// [`fold`] in place; whether anything changed.
pub(super) fn fold_in_place(func: &mut Function) -> bool {
    // A value is known only through an instruction without a value operand (a `const`, or
    // one folded from such): until the first of them, nothing is known, and each
    // instruction, having a value operand, stays as it is (the fast path below). The
    // rewrite starts there; a program without one (a gradient whose literals are all
    // inline) is only read.
    let n = func.n_values();
    let start = (func.n_params..n)
        .find(|&v| {
            let mut any_value = false;
            if let ValueDef::Inst(inst) = &func.values[v].def {
                inst.for_each_value(|_| any_value = true);
            }
            !any_value
        })
        .unwrap_or(n);
    if start == n {
        return false;
    }
    let mut known: Vec<Option<f64>> = Vec::with_capacity(n);
    known.resize(start, None);
    let mut out = InPlace::new_at(func, start);
    for v in start..out.n_values() {
        let (inst, ty) = out.mapped_input(v);
        // An instruction with a value operand and no known one stays as it is (nothing to
        // fold, choose or inline; not a `const`): kept without the general path's operand
        // lists and comparison, a third of this pass on a Rosenbrock gradient (callgrind).
        let (mut any_value, mut any_known) = (false, false);
        inst.for_each_value(|u| {
            any_value = true;
            any_known |= known[u.index()].is_some();
        });
        if any_value && !any_known {
            out.keep(v, inst);
            known.push(None);
            continue;
        }
        let value_of = |o: Operand| match o {
            Operand::Const(c) => Some(c),
            Operand::Value(u) => known[u.index()],
        };
        if let InstData::Select { cond, args } = inst {
            if let Some(c) = known[cond.index()] {
                let chosen = args[if c != 0.0 { 0 } else { 1 }];
                if let Operand::Value(u) = chosen {
                    out.alias(u);
                    continue;
                }
            }
        }
        let all_known = !matches!(inst, InstData::Const { .. })
            && inst.operands().into_iter().all(|o| value_of(o).is_some());
        let folded = if all_known {
            let r = math::eval_inst(&inst, ty, |o| value_of(o).unwrap_or(f64::NAN));
            (!r.is_nan()).then(|| InstData::constant(ty, r))
        } else {
            None
        };
        let new_inst = match folded {
            Some(c) => c,
            None => {
                identities::inline_literals(inst, |o| o.as_value().and_then(|u| known[u.index()]))
            }
        };
        let k = match new_inst {
            InstData::Const { bits, .. } => Some(f64::from_bits(bits)),
            _ => None,
        };
        out.push(v, new_inst);
        known.push(k);
    }
    out.finish()
}
