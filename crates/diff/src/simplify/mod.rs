//! Simplification of derived (or any) programs: constant folding, IEEE-exact identities,
//! common-subexpression elimination and dead-code elimination, each a `&Function -> Function`
//! pass in its own file, run by [`simplify`] to a fixpoint.
//!
//! Every pass preserves the value of every output **bit for bit** for every input (up to NaN
//! payloads), and none increases the instruction count. The passes assume a verified function
//! and produce one; parameters and the signature are never changed.
//!
//! **Data keeps its shape.** A *data block* is at least [`DATA_BLOCK`] repetitions of a few
//! instruction shapes whose literals differ from one repetition to the next, as a vectorised
//! trace over data gives (`mul y_i, %t` over labels `y_i ∈ {0, 1}`, `%t` the same value
//! everywhere). `identities` would fold its 1s (`x·1 → x`) and `cse` would merge its equal
//! instructions (every `mul 1.0, %t` into one), both at the data's whims: the stage would no
//! longer be one instruction per element, and the JIT could not roll it into one loop reading
//! `y` from a table (`adjit_jit`'s `roll.rs`). So `identities` does not rewrite a data block's
//! instructions by their literals' values, and `cse` never replaces one by an earlier
//! instruction: merging a data block with an earlier one element by element would leave holes
//! wherever the data coincide (−Σ y·log p + (1 − y)·log(1 − p) multiplies one adjoint by `y_i`
//! and by `1 − y_i`, which are equal wherever they are both 0 or 1). Both are optional
//! rewrites: results are unchanged. Repetitions of up to 8 instructions are always recognised
//! (a JVP interleaves each stage with its tangents), and longer ones, up to 256 instructions
//! (a per-sample loss traced point by point, with labels 0 and 1), at the few periods the
//! distances between equal shapes suggest.

mod cse;
mod dce;
mod fold;
mod identities;

pub use cse::cse;
pub use dce::dce;
pub use fold::fold;
pub use identities::identities;

use std::collections::HashMap;
use std::hash::BuildHasher;

use adjit_ir::{Function, InstData, Operand, Type, Value, ValueData, ValueDef};
use rustc_hash::FxBuildHasher;

/// Fewest consecutive instructions of one shape with differing literals that make a data
/// block (see the module docs).
pub const DATA_BLOCK: usize = 16;

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
    let mut held_back = false;
    for round in 0..MAX_ROUNDS {
        let folded = fold::fold_in_place(&mut func);
        // The data blocks, found once a round: `identities` carries them to its output.
        let data = data_blocks(&func);
        let (rewritten, data) = identities::identities_with(&mut func, &data);
        if round > 0 && !folded && !rewritten && !held_back {
            // The program is the output of `cse` then `dce` and `fold` and `identities`
            // changed nothing: `cse` and `dce` would leave it as it is, unless the last
            // `cse` kept duplicates as data, which this round's blocks may no longer be.
            break;
        }
        let cse = cse::cse_with(&mut func, &data);
        held_back = cse.held_back;
        let removed = dce::dce_in_place(&mut func);
        if !(folded || rewritten || cse.changed || removed) {
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

    /// [`InPlace::new`] with the instructions before `start` already read, each its own image
    /// (a pass that knows they stay as they are skips them).
    fn new_at(func: &'a mut Function, start: usize) -> InPlace<'a> {
        debug_assert!(start >= func.n_params && start <= func.n_values());
        let mut map = Vec::with_capacity(func.n_values());
        map.extend((0..start).map(Value::new));
        InPlace {
            len: start,
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

    /// The input instruction `v` with its operands replaced by their images, and its type.
    /// While every instruction before `v` kept its place (`len == v`), every image is the value
    /// itself: most of a large program's instructions are read that way when a pass changes
    /// little, and building the copy was about a sixth of each pass.
    fn mapped_input(&self, v: usize) -> (InstData, Type) {
        let (inst, ty) = self.input(v);
        if self.len == v {
            debug_assert!(v == 0 || self.map[v - 1].index() == v - 1);
            (inst, ty)
        } else {
            (inst.map_values(|u| self.map(u)), ty)
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

    /// Emit `inst`, input `v` exactly as [`InPlace::mapped_input`] gave it, as its image: what
    /// [`InPlace::push`] does, without comparing it with itself where it already stands.
    fn keep(&mut self, v: usize, inst: InstData) -> Value {
        if self.len != v {
            return self.push(v, inst);
        }
        self.len += 1;
        let same = Value::new(v);
        self.map.push(same);
        same
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

/// Longest period of a data block's repetition (a stage interleaving a value and its tangent
/// repeats every 2 instructions; a small template traced point by point, every few).
const DATA_PERIOD: usize = 8;

/// Longest period of a data block: a template traced point by point (a per-sample loss of a
/// few features: 17 instructions, its reverse sweep 27).
const LONG_PERIOD: usize = 256;

/// Periods above [`DATA_PERIOD`] searched, the most frequent candidates first.
const LONG_CANDIDATES: usize = 8;

/// Earlier instructions of the same shape whose distances vote for a period: a shape that
/// occurs k ≤ this many times in a template recurs at the period on its k-th previous
/// occurrence.
const PERIOD_VOTES: usize = 4;

/// The periods above [`DATA_PERIOD`] worth a scan for data blocks, at most
/// [`LONG_CANDIDATES`] of them: the most frequent distances (up to [`LONG_PERIOD`]) from an
/// instruction back to its last [`PERIOD_VOTES`] occurrences of its shape, each seen at least
/// [`DATA_BLOCK`] times. In a block repeating every p instructions, a shape occurring k times
/// in the template is p back on its k-th previous occurrence (a reverse sweep's template may
/// have every shape twice: two `add`s, two `fma`s), so p collects a vote from nearly every
/// instruction; in an irregular program the distances scatter, and a scan of a wrong
/// candidate finds nothing. Linear, one table entry per distinct shape.
fn long_periods(codes: &[u32]) -> Vec<usize> {
    if codes.len() < DATA_BLOCK * (DATA_PERIOD + 1) {
        return Vec::new(); // too short for a block of a longer period
    }
    // The last occurrences per shape, as positions + 1 (0: none yet), in a small
    // direct-mapped table tagged by the shape (a program has a few dozen shapes); a shape
    // whose slot another holds goes to a hash map. The table is cleared in microseconds,
    // where one slot per possible shape code was a third of a megabyte per round.
    const SLOTS: usize = 1024;
    let mut table = vec![(u32::MAX, [0u32; PERIOD_VOTES]); SLOTS];
    let mut sparse: HashMap<u32, [u32; PERIOD_VOTES], FxBuildHasher> = HashMap::default();
    let mut count = vec![0u32; LONG_PERIOD + 2];
    for (i, &c) in codes.iter().enumerate() {
        let slot = &mut table[(c.wrapping_mul(0x9e37_79b9) >> 22) as usize];
        if slot.0 == u32::MAX {
            slot.0 = c;
        }
        let seen = match slot.0 == c {
            true => &mut slot.1,
            false => sparse.entry(c).or_insert([0; PERIOD_VOTES]),
        };
        let at = i as u32 + 1;
        for &j in seen.iter().take_while(|&&j| j != 0) {
            let d = (at - j) as usize;
            if d <= LONG_PERIOD {
                count[d] += 1;
            }
        }
        seen.copy_within(..PERIOD_VOTES - 1, 1);
        seen[0] = at;
    }
    // A period stands above its neighbours; the distances of an irregular program form a
    // smooth spread with no such peaks.
    let mut periods: Vec<usize> = (DATA_PERIOD + 1..=LONG_PERIOD)
        .filter(|&d| {
            let c = count[d] as usize;
            c >= DATA_BLOCK && c >= 2 * count[d - 1] as usize && c >= 2 * count[d + 1] as usize
        })
        .collect();
    periods.sort_by_key(|&d| (std::cmp::Reverse(count[d]), d));
    periods.truncate(LONG_CANDIDATES);
    periods
}

/// Repetitions of a block searched for a literal that differs.
const VARIES_WITHIN: usize = 1024;

/// A number per instruction shape: opcode, operator, type, and which operands are literals
/// (unequal shapes may share one; it only decides which instructions are data); with the
/// bits of its literals by operand position (a `const`'s value in the first), and whether it
/// has any.
fn shape_and_literals(inst: &InstData, ty: Type) -> (u32, [u64; 3], bool) {
    let mut lits = 0u32;
    let mut bits = [0u64; 3];
    // The operands by position, as `for_each_operand` gives them (a match here: the visitor,
    // not inlined, was a quarter of `data_blocks`, callgrind).
    let mut visit = |k: usize, o: Operand| {
        if let Operand::Const(c) = o {
            lits |= 1 << k;
            bits[k] = c.to_bits();
        }
    };
    match inst {
        InstData::Binary { args, .. } | InstData::Fcmp { args, .. } => {
            args.iter().enumerate().for_each(|(k, &o)| visit(k, o));
        }
        InstData::Fma { args } => args.iter().enumerate().for_each(|(k, &o)| visit(k, o)),
        // Position 0 is the condition, a value.
        InstData::Select { args, .. } => {
            args.iter().enumerate().for_each(|(k, &o)| visit(k + 1, o))
        }
        InstData::Const { .. }
        | InstData::Unary { .. }
        | InstData::Powi { .. }
        | InstData::Fpromote { .. }
        | InstData::Fdemote { .. } => {}
    }
    let mut any = lits != 0;
    if let InstData::Const { bits: b, .. } = inst {
        bits[0] = *b;
        any = true;
    }
    let (tag, op) = match *inst {
        InstData::Const { .. } => (0, 0),
        InstData::Unary { op, .. } => (1, op as u32),
        InstData::Binary { op, .. } => (2, op as u32),
        InstData::Fma { .. } => (3, 0),
        InstData::Powi { exp, .. } => (4, exp as u32),
        InstData::Fcmp { pred, .. } => (5, pred as u32),
        InstData::Select { .. } => (6, 0),
        InstData::Fpromote { .. } => (7, 0),
        InstData::Fdemote { .. } => (8, 0),
    };
    (
        (op << 9) | (lits << 6) | ((ty as u32) << 4) | tag,
        bits,
        any,
    )
}

/// Per value of `func`, whether it is an instruction of a data block (see the module docs): at
/// some period p ≤ [`DATA_PERIOD`] (or a longer one among [`long_periods`]), at least
/// [`DATA_BLOCK`]·p consecutive instructions each of the shape of the one p before, with
/// literals that differ from one repetition to the next.
/// The block's instructions with literal operands are data.
pub(super) fn data_blocks(func: &Function) -> Vec<bool> {
    let first = func.n_params;
    let n = func.n_values();
    let mut data = vec![false; n];
    // Per instruction, its shape code and its literals as one number (0: it has none), found
    // in one walk and read by every period's scan: equal literals give equal numbers; a
    // collision of unequal ones only leaves a block unprotected, which changes no result.
    // (One walk with one operand visit, where two collected walks each visited the operands:
    // a third of this function's instructions at 30,000 Rosenbrock terms, callgrind.)
    let mut codes: Vec<u32> = Vec::with_capacity(n - first);
    let mut literals: Vec<u64> = Vec::with_capacity(n - first);
    for value in &func.values[first..] {
        let ValueDef::Inst(inst) = &value.def else {
            codes.push(u32::MAX);
            literals.push(0);
            continue;
        };
        let (code, bits, any) = shape_and_literals(inst, value.ty);
        codes.push(code);
        literals.push(if any {
            FxBuildHasher.hash_one(bits) | 1
        } else {
            0
        });
    }
    // A block is data only where a literal differs from the one a period before, so only
    // the periods with such a pair somewhere are scanned (a gradient whose literals are the
    // same in every term has none, and skips every scan).
    // Such a pair has one shape (which fixes whether there are literals) and two literals,
    // so only the instructions of a shape seen with two literals are tried, and with none of
    // them there is no block and nothing to scan: a gradient's shapes each have one literal
    // (`sub 1.0, %x`, `mul 100.0, %d`), and the period search and scans were two thirds of
    // this function at 30,000 Rosenbrock terms (callgrind).
    let mut first_literal: HashMap<u32, (u64, bool), FxBuildHasher> = HashMap::default();
    for (&code, &literal) in codes.iter().zip(&literals) {
        if literal != 0 {
            let (seen, varies) = first_literal.entry(code).or_insert((literal, false));
            *varies |= *seen != literal;
        }
    }
    if !first_literal.values().any(|&(_, varies)| varies) {
        return data;
    }
    let with_literal: Vec<u32> = (0..codes.len())
        .filter(|&i| literals[i] != 0 && first_literal[&codes[i]].1)
        .map(|i| i as u32)
        .collect();
    let differs_at = |p: usize| {
        with_literal.iter().any(|&i| {
            let i = i as usize;
            i >= p && codes[i] == codes[i - p] && literals[i] != literals[i - p]
        })
    };
    let periods = (1..=DATA_PERIOD.min(codes.len()))
        .chain(long_periods(&codes))
        .filter(|&p| differs_at(p));
    for p in periods {
        // Maximal ranges `start..end` (instruction indices) whose every instruction has the
        // shape of the one p before.
        let mut start = p;
        for end in p..=codes.len() {
            if end < codes.len() && codes[end] == codes[end - p] {
                continue;
            }
            if end - start >= DATA_BLOCK * p {
                let block = start - p..end;
                // The first repetitions decide (a stage of equal literals past them is
                // simplified the same way everywhere, so it stays regular either way).
                let varies = block
                    .clone()
                    .skip(p)
                    .take(VARIES_WITHIN * p)
                    .any(|i| literals[i] != 0 && literals[i] != literals[i - p]);
                if varies {
                    for i in block {
                        data[first + i] |= literals[i] != 0;
                    }
                }
            }
            start = end + 1;
        }
    }
    data
}
