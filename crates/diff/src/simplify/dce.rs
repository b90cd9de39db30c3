//! Dead-code elimination: removes every instruction no output depends on, and renumbers the
//! survivors densely **in their original order** (so dumps before and after line up, and
//! names are kept). Parameters are never removed. One backward and one forward sweep.

use adjit_ir::{Function, ValueDef};

use super::{copy_params, finish};

/// Remove dead instructions; see the module docs.
pub fn dce(func: &Function) -> Function {
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
    let (mut out, mut map) = copy_params(func);
    for (v, inst) in func.insts() {
        let data = func.data(v);
        if live[v.index()] {
            let new = out.push_inst(
                data.ty,
                inst.map_values(|u| map[u.index()]),
                data.name.clone(),
            );
            map.push(new);
        } else {
            // Never read: the value is dead.
            map.push(v);
        }
    }
    finish(out, func, &map)
}
