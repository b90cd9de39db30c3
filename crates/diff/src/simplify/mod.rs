//! Simplification of derived (or any) programs: constant folding, IEEE-exact identities,
//! common-subexpression elimination and dead-code elimination, each a `&Function -> Function`
//! pass in its own file, run by [`simplify`] to a fixpoint.
//!
//! Every pass preserves the value of every output **bit for bit** for every input (up to NaN
//! payloads), and none increases the instruction count. The passes assume a verified function
//! and produce one; parameters and the signature are never changed.

mod cse;
mod dce;
mod fold;
mod identities;

pub use cse::cse;
pub use dce::dce;
pub use fold::fold;
pub use identities::identities;

use adjit_ir::{Function, Operand, Value};

/// Upper bound on fixpoint rounds; each round is O(size), and in practice two or three
/// suffice.
const MAX_ROUNDS: usize = 8;

/// `fold`, `identities`, `cse`, `dce`, repeated until nothing changes (at most a few rounds).
///
/// ```
/// use adjit_ir::{Builder, Type};
/// let mut b = Builder::new("f");
/// let x = b.param(Type::F64, "x");
/// let one = b.constant(Type::F64, 1.0);
/// let y = b.mul(x, one); // x·1 = x
/// let z = b.add(y, y);
/// let w = b.add(x, x); // same as z
/// let r = b.mul(z, w);
/// let f = b.finish(&[r]);
/// let s = adjit_diff::simplify(&f);
/// assert_eq!(s.n_insts(), 2); // add x, x; mul
/// ```
pub fn simplify(func: &Function) -> Function {
    let mut current = dce(&cse(&identities(&fold(func))));
    for _ in 1..MAX_ROUNDS {
        let rewritten = identities(&fold(&current));
        if rewritten == current {
            // `current` is the output of `cse` then `dce`: it has no two equal instructions
            // and no dead one, so `cse` and `dce` would return it unchanged. Skipping them
            // saves most of a round (CSE is the costly pass: one hash-table probe, a cache
            // miss on large programs, per instruction).
            break;
        }
        let next = dce(&cse(&rewritten));
        if next == current {
            break;
        }
        current = next;
    }
    current
}

/// Copy the parameters of `func` (with their kinds) into a new function with the same name; returns it with the
/// identity map of the parameters.
fn copy_params(func: &Function) -> (Function, Vec<Value>) {
    let mut out = Function::new(func.name.clone());
    out.values.reserve_exact(func.n_values());
    out.values
        .extend(func.values[..func.n_params].iter().cloned());
    out.n_params = func.n_params;
    for p in func.data_params() {
        out.set_param_kind(p, adjit_ir::ParamKind::Data);
    }
    (out, func.params().collect())
}

/// Set the returns of `out` to the images of `func`'s returns under `map`.
fn finish(mut out: Function, func: &Function, map: &[Value]) -> Function {
    for &r in &func.rets {
        out.push_ret(map[r.index()]);
    }
    out
}

/// Order used to normalise commutative operands: values by index, then literals by bits.
fn operand_key(o: Operand) -> (u8, u64) {
    match o {
        Operand::Value(v) => (0, v.index() as u64),
        Operand::Const(c) => (1, c.to_bits()),
    }
}
