//! Dead-code elimination: removes every instruction no output depends on, and renumbers the
//! survivors densely **in their original order** (so dumps before and after line up, and
//! names are kept). Parameters are never removed. One backward and one forward sweep.

use adjit_ir::{Function, Value, ValueDef};

use super::{copied, InPlace};

/// Remove dead instructions; see the module docs.
pub fn dce(func: &Function) -> Function {
    copied(func, dce_in_place)
}

/// [`dce`] in place; whether anything changed.
pub(super) fn dce_in_place(func: &mut Function) -> bool {
    let n = func.n_values();
    let mut live = vec![false; n];
    for &r in &func.rets {
        live[r.index()] = true;
    }
    for i in (func.n_params..n).rev() {
        if live[i] {
            if let ValueDef::Inst(inst) = &func.values[i].def {
                inst.for_each_value(|u| live[u.index()] = true);
            }
        }
    }
    // Every instruction before the first dead one keeps its place: the rewrite starts there,
    // and a program without dead code (the usual last round of `simplify`) is not walked
    // again (a sixth of `simplify`'s instructions on a Rosenbrock gradient, in callgrind).
    let Some(first_dead) = (func.n_params..n).find(|&i| !live[i]) else {
        return false;
    };
    let mut out = InPlace::new_at(func, first_dead);
    for (v, &live) in live.iter().enumerate().skip(first_dead) {
        if live {
            let (inst, _) = out.mapped_input(v);
            out.keep(v, inst);
        } else {
            // Never read: the value is dead (its image is never asked for).
            out.alias(Value::new(v));
        }
    }
    out.finish()
}
