//! Common-subexpression elimination by hash-consing: an instruction identical to an earlier
//! one (same result type, opcode and operands after remapping; literals compared bit for bit)
//! is replaced by the earlier value. Operands of `add` and `mul` (those
//! [`adjit_ir::BinaryOp::is_commutative`] says may be swapped) and the two factors of `fma`
//! are compared as unordered pairs; `min`, `max` and `fcmp` are not (ties and predicates make
//! order matter). The emitted instructions keep their operand order. O(size) expected time.
//! An instruction of a data block is never replaced by an earlier one (see [`super`]).

use std::hash::BuildHasher;

use adjit_ir::{Function, InstData, Operand, Type, Value};
use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::{copied, data_blocks, operand_key, InPlace};

/// A value with fewer kept users (by [`anchor`]) than this is searched through its user list;
/// from this many on, its users go to the hash table (a list walk would grow with them).
const SHORT_LIST: u32 = 16;
/// The end of a user list.
const NIL: u32 = u32::MAX;

/// Eliminate common subexpressions; see the module docs.
///
/// An instruction equal to an earlier kept one has the same anchor (its latest value
/// operand), so it is searched among the kept users of that value: a short list, of recent
/// instructions as a rule, whose walk stays in the cache where a hash probe per instruction
/// (a miss, on programs of millions of instructions) was the pass's cost. A value with many
/// users, and instructions without a value operand (`const`), go through a hash table holding
/// only the index of each kept instruction; keys are compared against the kept instruction
/// itself. Either way the one kept instruction equal to the key is found, so the result is
/// that of a plain hash-consing.
pub fn cse(func: &Function) -> Function {
    copied(func, cse_in_place)
}

/// [`cse`] in place; whether anything changed.
pub(super) fn cse_in_place(func: &mut Function) -> bool {
    let data = data_blocks(func);
    cse_with(func, &data).changed
}

/// What [`cse_with`] did.
pub(super) struct Cse {
    /// Whether anything changed.
    pub changed: bool,
    /// Whether an instruction equal to an earlier one was kept because it is data: a later
    /// round, whose data blocks may differ (its folds turned a stage's varying literals into
    /// one constant), must run `cse` again.
    pub held_back: bool,
}

/// [`cse`] in place, given the data blocks of `func` (per value); whether anything changed.
pub(super) fn cse_with(func: &mut Function, data: &[bool]) -> Cse {
    let hasher = FxBuildHasher;
    let key_of = |out: &InPlace, v: u32| -> (Type, InstData) {
        let value = Value::new(v as usize);
        let inst = out
            .inst(value)
            .expect("the lists and the table hold instructions");
        (out.ty(value), canonical(inst))
    };
    let n = func.n_values();
    // Per value of the output: the latest kept instruction anchored at it, and how many
    // there are; per kept instruction: the previous one with the same anchor.
    let mut head: Vec<u32> = vec![NIL; n];
    let mut n_users: Vec<u32> = vec![0; n];
    let mut next: Vec<u32> = vec![NIL; n];
    let mut table: HashTable<u32> = HashTable::new();
    let insert = |table: &mut HashTable<u32>, out: &InPlace, w: u32| {
        let hash = hasher.hash_one(key_of(out, w));
        table.insert_unique(hash, w, |&x| hasher.hash_one(key_of(out, x)));
    };
    // Whether kept instruction `w` is `key`, without building its canonical form (the copy
    // per list entry walked was a fifth of this pass on a Rosenbrock gradient, callgrind).
    let is_key = |out: &InPlace, w: u32, key: &(Type, InstData)| -> bool {
        let value = Value::new(w as usize);
        let inst = out
            .inst(value)
            .expect("the lists and the table hold instructions");
        out.ty(value) == key.0 && is_canonical_of(inst, &key.1)
    };
    let mut out = InPlace::new(func);
    let mut held_back = false;
    for v in out.first_inst()..out.n_values() {
        let in_data = data.get(v).copied().unwrap_or(false);
        let (inst, ty) = out.mapped_input(v);
        let key = (ty, canonical(&inst));
        let anchor = anchor(&key.1);
        let earlier = match anchor {
            Some(a) if n_users[a.index()] < SHORT_LIST => {
                let mut w = head[a.index()];
                while w != NIL && !is_key(&out, w, &key) {
                    w = next[w as usize];
                }
                (w != NIL).then_some(w)
            }
            _ => table
                .find(hasher.hash_one(&key), |&w| is_key(&out, w, &key))
                .copied(),
        };
        if let Some(earlier) = earlier {
            if !in_data {
                out.alias(Value::new(earlier as usize));
            } else {
                // An instruction of a data block is kept (see `super`), but not registered:
                // the earlier one answers for both, and a table of many equal keys (a
                // label's few values times one adjoint) would probe past all of them.
                out.keep(v, inst);
                held_back = true;
            }
            continue;
        }
        let w = out.keep(v, inst).index() as u32;
        match anchor {
            None => insert(&mut table, &out, w),
            Some(a) => {
                let a = a.index();
                next[w as usize] = head[a];
                head[a] = w;
                n_users[a] += 1;
                if n_users[a] == SHORT_LIST {
                    // The list moves to the table (its new users will be searched there).
                    let mut x = w;
                    while x != NIL {
                        insert(&mut table, &out, x);
                        x = next[x as usize];
                    }
                } else if n_users[a] > SHORT_LIST {
                    insert(&mut table, &out, w);
                }
            }
        }
    }
    Cse {
        changed: out.finish(),
        held_back,
    }
}

/// The latest value operand of `inst` (`None` if it has none): equal instructions share it.
/// (A match on the opcode: the operand visitor was an eighth of this pass, callgrind.)
fn anchor(inst: &InstData) -> Option<Value> {
    let latest = |args: &[Operand]| args.iter().filter_map(|o| o.as_value()).max();
    match inst {
        InstData::Const { .. } => None,
        InstData::Unary { arg, .. }
        | InstData::Powi { arg, .. }
        | InstData::Fpromote { arg }
        | InstData::Fdemote { arg } => Some(*arg),
        InstData::Binary { args, .. } | InstData::Fcmp { args, .. } => latest(args),
        InstData::Fma { args } => latest(args),
        InstData::Select { cond, args } => latest(args).max(Some(*cond)),
    }
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

/// Whether [`canonical`] of `inst` is `key`.
fn is_canonical_of(inst: &InstData, key: &InstData) -> bool {
    match (inst, key) {
        (InstData::Binary { op, args: [a, b] }, InstData::Binary { op: k, args: ka })
            if op.is_commutative() && operand_key(*b) < operand_key(*a) =>
        {
            op == k && [*b, *a] == *ka
        }
        (InstData::Fma { args: [a, b, c] }, InstData::Fma { args: ka })
            if operand_key(*b) < operand_key(*a) =>
        {
            [*b, *a, *c] == *ka
        }
        _ => inst == key,
    }
}
