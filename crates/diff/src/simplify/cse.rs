//! Common-subexpression elimination by hash-consing: an instruction identical to an earlier
//! one (same result type, opcode and operands after remapping; literals compared bit for bit)
//! is replaced by the earlier value. Operands of `add` and `mul` (those
//! [`adjit_ir::BinaryOp::is_commutative`] says may be swapped) and the two factors of `fma`
//! are compared as unordered pairs; `min`, `max` and `fcmp` are not (ties and predicates make
//! order matter). The emitted instructions keep their operand order. O(size) expected time.

use std::hash::BuildHasher;

use adjit_ir::{Function, InstData, Type, Value};
use hashbrown::{hash_table, HashTable};
use rustc_hash::FxBuildHasher;

use super::{copy_params, finish, operand_key};

/// Eliminate common subexpressions; see the module docs.
///
/// The table holds only the index of each kept instruction (4 bytes an entry, so that a
/// program of millions of instructions keeps it in the cache: one probe per instruction is
/// the pass's cost); keys are compared against the kept instruction itself.
pub fn cse(func: &Function) -> Function {
    let (mut out, mut map) = copy_params(func);
    let hasher = FxBuildHasher;
    let key_of = |out: &Function, v: u32| -> (Type, InstData) {
        let data = &out.values[v as usize];
        let adjit_ir::ValueDef::Inst(inst) = &data.def else {
            unreachable!("the table holds instructions")
        };
        (data.ty, canonical(inst))
    };
    let mut seen: HashTable<u32> = HashTable::with_capacity(func.n_insts());
    for (v, inst) in func.insts() {
        let data = func.data(v);
        let inst = inst.map_values(|u| map[u.index()]);
        let key = (data.ty, canonical(&inst));
        let hash = hasher.hash_one(&key);
        // One probe: the slot found vacant receives the index the instruction is about to get.
        let entry = seen.entry(
            hash,
            |&w| key_of(&out, w) == key,
            |&w| hasher.hash_one(key_of(&out, w)),
        );
        match entry {
            hash_table::Entry::Occupied(e) => map.push(Value::new(*e.get() as usize)),
            hash_table::Entry::Vacant(e) => {
                e.insert(out.n_values() as u32);
                map.push(out.push_inst(data.ty, inst, data.name.clone()));
            }
        }
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
