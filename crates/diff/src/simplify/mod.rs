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

use adjit_ir::{Function, InstData, Operand, Type, Value, ValueData, ValueDef};

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
    simplify_owned(func.clone())
}

/// [`simplify`] of a program the caller gives up: the passes rewrite its instructions in
/// place, so a large program is never copied (a derive hands its fresh derivative program
/// here; the copies each pass used to build were most of the cost at 10⁶ instructions, in
/// page faults on fresh memory).
pub fn simplify_owned(mut func: Function) -> Function {
    for round in 0..MAX_ROUNDS {
        let folded = fold::fold_in_place(&mut func);
        let rewritten = identities::identities_in_place(&mut func);
        if round > 0 && !folded && !rewritten {
            // The program is the output of `cse` then `dce` and `fold` and `identities`
            // changed nothing: `cse` and `dce` would leave it as it is.
            break;
        }
        let merged = cse::cse_in_place(&mut func);
        let removed = dce::dce_in_place(&mut func);
        if !(folded || rewritten || merged || removed) {
            break;
        }
    }
    func
}

/// Copies `func`, runs `pass` on the copy in place and returns it: the `&Function ->
/// Function` form of each pass.
fn copied(func: &Function, pass: impl FnOnce(&mut Function) -> bool) -> Function {
    let mut out = func.clone();
    pass(&mut out);
    out
}

/// A pass's rewrite of a program in place, instruction by instruction in program order. Each
/// instruction has at most one image, written at the next free position of the output
/// prefix `values[..len]` (`len` never passes the instruction being read, so nothing unread
/// is overwritten); an instruction may instead become another value of the output (an
/// alias), and then has no place of its own.
struct InPlace<'a> {
    func: &'a mut Function,
    /// The output so far is `func.values[..len]`.
    len: usize,
    /// Each value read so far to its image in the output.
    map: Vec<Value>,
    /// Whether the output differs from the input so far.
    changed: bool,
}

impl<'a> InPlace<'a> {
    fn new(func: &'a mut Function) -> InPlace<'a> {
        let mut map = Vec::with_capacity(func.n_values());
        map.extend(func.params());
        InPlace {
            len: func.n_params,
            func,
            map,
            changed: false,
        }
    }

    /// The input's instructions are `first_inst()..n_values()`: read each once, in order,
    /// then give its image by [`InPlace::push`] or [`InPlace::alias`].
    fn first_inst(&self) -> usize {
        self.func.n_params
    }

    fn n_values(&self) -> usize {
        self.func.n_values()
    }

    /// The input instruction `v` (not yet replaced) and its type.
    fn input(&self, v: usize) -> (InstData, Type) {
        let data = &self.func.values[v];
        match &data.def {
            ValueDef::Inst(inst) => (inst.clone(), data.ty),
            ValueDef::Param => unreachable!("parameters come first and are not rewritten"),
        }
    }

    /// The type of `u` of the output.
    fn ty(&self, u: Value) -> Type {
        self.func.ty(u)
    }

    /// The image of `u` in the output.
    fn map(&self, u: Value) -> Value {
        self.map[u.index()]
    }

    /// The instruction defining `u` of the output (`None` for a parameter).
    fn inst(&self, u: Value) -> Option<&InstData> {
        debug_assert!(u.index() < self.len);
        self.func.inst(u)
    }

    /// Emit `inst` as the image of input `v` (with `v`'s type and name); returns its value.
    fn push(&mut self, v: usize, inst: InstData) -> Value {
        let at = self.len;
        let values = &mut self.func.values;
        if at == v {
            if !matches!(&values[v].def, ValueDef::Inst(old) if *old == inst) {
                values[v].def = ValueDef::Inst(inst);
                self.changed = true;
            }
        } else {
            let name = values[v].name.take();
            let ty = values[v].ty;
            values[at] = ValueData {
                ty,
                def: ValueDef::Inst(inst),
                name,
            };
            self.changed = true;
        }
        self.len += 1;
        let new = Value::new(at);
        self.map.push(new);
        new
    }

    /// Make `u` (a value of the output) the image of input `v`, which gets no place.
    fn alias(&mut self, u: Value) {
        self.map.push(u);
        self.changed = true;
    }

    /// Drop what is past the output, point the returns at their images; whether anything
    /// changed.
    fn finish(self) -> bool {
        let InPlace {
            func,
            len,
            map,
            changed,
        } = self;
        func.values.truncate(len);
        for r in &mut func.rets {
            *r = map[r.index()];
        }
        changed
    }
}

/// Order used to normalise commutative operands: values by index, then literals by bits.
fn operand_key(o: Operand) -> (u8, u64) {
    match o {
        Operand::Value(v) => (0, v.index() as u64),
        Operand::Const(c) => (1, c.to_bits()),
    }
}
