//! Common-subexpression elimination by hash-consing: an instruction identical to an earlier
//! one (same result type, opcode and operands after remapping; literals compared bit for bit)
//! is replaced by the earlier value. Operands of `add` and `mul` (those
//! [`adjit_ir::BinaryOp::is_commutative`] says may be swapped) and the two factors of `fma`
//! are compared as unordered pairs; `min`, `max` and `fcmp` are not (ties and predicates make
//! order matter). The emitted instructions keep their operand order. O(size) expected time.

use std::collections::HashMap;

use adjit_ir::{Function, InstData, Type, Value};

use super::{copy_params, finish, operand_key};

/// Eliminate common subexpressions; see the module docs.
pub fn cse(func: &Function) -> Function {
    let (mut out, mut map) = copy_params(func);
    let mut seen: HashMap<(Type, InstData), Value> = HashMap::with_capacity(func.n_insts());
    for (v, inst) in func.insts() {
        let data = func.data(v);
        let inst = inst.map_values(|u| map[u.index()]);
        let key = (data.ty, canonical(&inst));
        if let Some(&earlier) = seen.get(&key) {
            map.push(earlier);
            continue;
        }
        let new = out.push_inst(data.ty, inst, data.name.clone());
        seen.insert(key, new);
        map.push(new);
    }
    finish(out, func, &map)
}

/// `inst` with commutative operands in a canonical order.
fn canonical(inst: &InstData) -> InstData {
    match *inst {
        InstData::Binary { op, args: [a, b] }
            if op.is_commutative() && operand_key(b) < operand_key(a) =>
        {
            InstData::Binary { op, args: [b, a] }
        }
        InstData::Fma { args: [a, b, c] } if operand_key(b) < operand_key(a) => {
            InstData::Fma { args: [b, a, c] }
        }
        ref other => other.clone(),
    }
}
