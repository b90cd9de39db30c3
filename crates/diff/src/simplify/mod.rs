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

use adjit_ir::{Function, InstData, Operand, Value};

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
    // Each intermediate program is dropped once the next pass has read it (a nested call
    // would hold all four until the end of the statement: the peak memory of a large program).
    let folded = fold::fold_changed(func);
    let rewritten = identities::identities_changed(folded.as_ref().unwrap_or(func)).or(folded);
    let unique = cse(rewritten.as_ref().unwrap_or(func));
    drop(rewritten);
    let mut current = dce(&unique);
    drop(unique);
    for _ in 1..MAX_ROUNDS {
        // The usual last round changes nothing: the passes then only scan `current` and build
        // no copy of it (`None`), which is most of that round's cost on large programs.
        let folded = fold::fold_changed(&current);
        let rewritten = identities::identities_changed(folded.as_ref().unwrap_or(&current));
        let Some(rewritten) = rewritten.or(folded) else {
            break;
        };
        if rewritten == current {
            // `current` is the output of `cse` then `dce`: it has no two equal instructions
            // and no dead one, so `cse` and `dce` would return it unchanged. Skipping them
            // saves most of a round (each would copy the whole program).
            break;
        }
        let unique = cse(&rewritten);
        drop(rewritten);
        let next = dce(&unique);
        drop(unique);
        if next == current {
            break;
        }
        current = next;
    }
    current
}

/// Copy the parameters of `func` (with their kinds) into a new function with the same name; returns it with the
/// identity map of the parameters (with room for every value).
fn copy_params(func: &Function) -> (Function, Vec<Value>) {
    let mut out = Function::new(func.name.clone());
    out.values.reserve_exact(func.n_values());
    out.values
        .extend(func.values[..func.n_params].iter().cloned());
    out.n_params = func.n_params;
    for p in func.data_params() {
        out.set_param_kind(p, adjit_ir::ParamKind::Data);
    }
    let mut map = Vec::with_capacity(func.n_values());
    map.extend(func.params());
    (out, map)
}

/// The output of a pass that keeps most instructions in place (`fold`, `identities`), built
/// only from the first instruction that differs from the input: before it, the output is the
/// input's prefix and the map the identity. A pass that changes nothing (the last round of
/// [`simplify`]) then scans its input without copying it, and [`Rebuild::finish`] says so.
struct Rebuild<'a> {
    func: &'a Function,
    /// `None` while every instruction so far was kept unchanged in its place.
    out: Option<Function>,
    /// Each value of `func` to its image in the output.
    map: Vec<Value>,
}

impl<'a> Rebuild<'a> {
    fn new(func: &'a Function) -> Rebuild<'a> {
        let mut map = Vec::with_capacity(func.n_values());
        map.extend(func.params());
        Rebuild {
            func,
            out: None,
            map,
        }
    }

    /// The image of `u` in the output.
    fn map(&self, u: Value) -> Value {
        self.map[u.index()]
    }

    /// The instruction defining `u` in the output (`None` for a parameter).
    fn inst(&self, u: Value) -> Option<&InstData> {
        self.out.as_ref().unwrap_or(self.func).inst(u)
    }

    /// The output, materialised from the input's prefix before `v` if not built yet.
    fn out(&mut self, v: Value) -> &mut Function {
        let func = self.func;
        self.out.get_or_insert_with(|| {
            let (mut out, _) = copy_params(func);
            out.values
                .extend_from_slice(&func.values[func.n_params..v.index()]);
            out
        })
    }

    /// Emit `inst` as the image of `v` (with `v`'s type and name).
    fn push(&mut self, v: Value, inst: InstData) {
        if self.out.is_none() && self.func.inst(v) == Some(&inst) {
            self.map.push(v);
            return;
        }
        let data = self.func.data(v);
        let new = self.out(v).push_inst(data.ty, inst, data.name.clone());
        self.map.push(new);
    }

    /// Make `u` (a value of the output) the image of `v`, which gets no instruction.
    fn alias(&mut self, v: Value, u: Value) {
        self.out(v);
        self.map.push(u);
    }

    /// The finished output, or `None` if it equals the input.
    fn finish(self) -> Option<Function> {
        let func = self.func;
        let map = self.map;
        self.out.map(|out| finish(out, func, &map))
    }
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
