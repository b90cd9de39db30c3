//! What the rolled transforms ([`crate::forward_rolled`], [`crate::reverse_rolled`]) share:
//! how a segment's reads from outside its template become [`Source`] rules, and how its
//! literals that change with the data are found.
//!
//! A segment is iterations of one loop of the primal that get the same derivative lines; its
//! `i`-th iteration is primal iteration `j0 + i` (forward) or `j0 − i` (reverse). Each read
//! of the segment's template from outside it is an index of the derived program per
//! iteration; the first two iterations fix its rule (the segment's own previous iteration: a
//! carried value; else an affine index before the segment), and the segment ends where a
//! read stops following it.

use adjit_ir::roll::{LiteralTable, Source};
use adjit_ir::{
    BinaryOp, Function, InstData, Loop, Operand, ParamKind, Rolled, Type, Value, ValueData,
    ValueDef,
};

/// The rules of the outside reads of a segment starting at `start` with `period` lines,
/// from where they read in its first two iterations; `None` when one follows neither rule.
pub(crate) fn rules(
    first: &[usize],
    second: &[usize],
    start: usize,
    period: usize,
) -> Option<Vec<Source>> {
    let own = start..start + period;
    first
        .iter()
        .zip(second)
        .map(|(&a, &b)| {
            if own.contains(&b) {
                Some(Source::Carried {
                    pos: (b - start) as u32,
                    init: a as u32,
                })
            } else if b < start {
                Some(Source::Affine {
                    base: a as u32,
                    step: b as i64 - a as i64,
                })
            } else {
                None
            }
        })
        .collect()
}

/// The rules of a one-trip segment: every outside read at its index.
pub(crate) fn fixed(first: &[usize]) -> Vec<Source> {
    first
        .iter()
        .map(|&base| Source::Affine {
            base: base as u32,
            step: 0,
        })
        .collect()
}

/// Whether the reads `here` of the segment's iteration `i` (≥ 2) follow `rules` (an affine
/// read stays before the segment).
pub(crate) fn hold(
    rules: &[Source],
    here: &[usize],
    start: usize,
    period: usize,
    i: usize,
) -> bool {
    rules.iter().zip(here).all(|(&rule, &x)| match rule {
        Source::Carried { pos, .. } => x == start + (i - 1) * period + pos as usize,
        Source::Affine { base, step } => x < start && x as i64 == base as i64 + step * i as i64,
        Source::Same { .. } => unreachable!("outside reads"),
    })
}

/// Instruction `t` of iteration `j` of `l`, with its tables' literals replaced by `probe` (per
/// table) when given ([`markers`]).
pub(crate) fn instance(l: &Loop, t: usize, j: usize, probe: Option<&[u64]>) -> InstData {
    match probe {
        Some(bits) => l.instance_with(t, j, |k| bits[k]),
        None => l.instance(t, j),
    }
}

/// Iteration `j` of `l` as a function of what it reads from outside: parameter `p` is the
/// value `params[p]` (of kind `data` where `carries(value)` is false), the instructions are
/// the iteration's (tables' literals replaced by `probe` when given), and its `n`-th outside
/// read (operands not of the same iteration, in order) reads parameter `param_of[n]`. No
/// returns: the caller says which values the derivative is wanted of.
pub(crate) fn iteration(
    r: &Rolled,
    l: &Loop,
    j: usize,
    probe: Option<&[u64]>,
    params: &[usize],
    carries: impl Fn(usize) -> bool,
    param_of: &[u32],
) -> Function {
    let mut tf = Function::new(format!("{}_iteration", r.header().name));
    for &v in params {
        let p = tf.add_param(r.ty(v), None);
        if !carries(v) {
            tf.set_param_kind(p, ParamKind::Data);
        }
    }
    let m = params.len();
    let mut outside = param_of.iter();
    for t in 0..l.period() {
        let mut sources = l.sources[t].iter();
        let inst = instance(l, t, j, probe).map_values(|_| {
            match sources.next().expect("one rule per value operand") {
                Source::Same { pos } => Value::new(m + *pos as usize),
                _ => Value::new(*outside.next().expect("one parameter per outside read") as usize),
            }
        });
        tf.push_inst(l.template[t].ty, inst, l.name(t, j).cloned());
    }
    tf
}

/// Whether iteration `j` of `l` names any value (a segment over named iterations keeps the
/// names of its later iterations beside its template).
pub(crate) fn named(l: &Loop, j: usize) -> bool {
    (0..l.period()).any(|t| l.name(t, j).is_some())
}

/// The literals of an instruction in slot order (as `LiteralTable::slot` counts them).
fn literals(inst: &InstData) -> Vec<u64> {
    match *inst {
        InstData::Const { bits, .. } => vec![bits],
        _ => {
            let mut out = Vec::new();
            inst.for_each_operand(|o| {
                if let Operand::Const(c) = o {
                    out.push(c.to_bits());
                }
            });
            out
        }
    }
}

/// Literals to try a loop's template with in place of its tables' (one per table): unlike
/// iteration `j0`'s own and negative, so that a rule which folds a literal (`pow`'s
/// exponent minus one, an absolute value) gives another literal at the two, and only a copy
/// gives the marker back. `pow` branches on whether a literal base is zero, which no probe
/// can see: a table there gives no markers (every iteration its own segment).
pub(crate) fn markers(l: &Loop, j0: usize) -> Option<Vec<u64>> {
    l.tables
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let in_pow = matches!(
                l.template[t.pos as usize].def,
                ValueDef::Inst(InstData::Binary {
                    op: BinaryOp::Pow,
                    ..
                })
            );
            if in_pow {
                return None;
            }
            let mut m = -1.718_281_828_459 - 0.037_1 * k as f64;
            while t.ty.round(m).to_bits() == t.bits[j0] {
                m -= 0.5;
            }
            Some(t.ty.round(m).to_bits())
        })
        .collect()
}

/// The literal tables of a segment from iteration `j0` whose lines are `a`, `b` being the
/// same iteration derived with every table's literal replaced by `markers`: a literal of the
/// lines that changes with the data must be a copy of one table's (its two values are that
/// table's entry `j0` and its marker). `(line, slot, table)` per such literal; `None` when
/// one is not a copy.
pub(crate) fn table_slots(
    l: &Loop,
    j0: usize,
    a: &[ValueData],
    b: &[ValueData],
    markers: &[u64],
) -> Option<Vec<(u32, u8, usize)>> {
    if a.len() != b.len() {
        return None;
    }
    let mut found = Vec::new();
    for (pos, (x, y)) in a.iter().zip(b).enumerate() {
        let (ValueDef::Inst(x), ValueDef::Inst(y)) = (&x.def, &y.def) else {
            continue;
        };
        let (lx, ly) = (literals(x), literals(y));
        if lx.len() != ly.len() || x.shape() != y.shape() {
            return None;
        }
        for (slot, (&p, &q)) in lx.iter().zip(&ly).enumerate() {
            if p == q {
                continue;
            }
            let k = l
                .tables
                .iter()
                .zip(markers)
                .position(|(t, &m)| t.bits[j0] == p && m == q)?;
            found.push((pos as u32, slot as u8, k));
        }
    }
    Some(found)
}

/// A segment's operand rules, per line and value operand: `line(read)` is the position of a
/// read of the segment's own lines (the same iteration), and every other read takes the next
/// of `rules` (in the order the reads were listed).
pub(crate) fn sources<R: Copy>(
    reads: &[Vec<R>],
    line: impl Fn(R) -> Option<u32>,
    rules: Vec<Source>,
) -> Vec<Vec<Source>> {
    let mut rule = rules.into_iter();
    reads
        .iter()
        .map(|reads| {
            reads
                .iter()
                .map(|&rd| match line(rd) {
                    Some(pos) => Source::Same { pos },
                    None => rule.next().expect("one rule per outside read"),
                })
                .collect()
        })
        .collect()
}

/// A segment's literal tables from `slots` ([`table_slots`]): iteration `i` of the segment
/// reads entry `iteration(i)` of the primal table, for its `trips` iterations.
pub(crate) fn tables(
    l: &Loop,
    slots: Vec<(u32, u8, usize)>,
    trips: usize,
    iteration: impl Fn(usize) -> usize,
) -> Vec<LiteralTable> {
    slots
        .into_iter()
        .map(|(pos, slot, k)| LiteralTable {
            pos,
            slot,
            ty: l.tables[k].ty,
            bits: (0..trips).map(|i| l.tables[k].bits[iteration(i)]).collect(),
        })
        .collect()
}

/// The `const 0.0`s a derived program returns for zero derivatives: one per type, made when
/// first asked for, after everything else.
pub(crate) struct Zeros {
    start: usize,
    insts: Vec<ValueData>,
    of: Vec<(Type, usize)>,
}

impl Zeros {
    /// Zeros to be appended at value `start`.
    pub(crate) fn new(start: usize) -> Zeros {
        Zeros {
            start,
            insts: Vec::new(),
            of: Vec::new(),
        }
    }

    /// The zero of type `ty`.
    pub(crate) fn get(&mut self, ty: Type) -> usize {
        if let Some(&(_, z)) = self.of.iter().find(|(t, _)| *t == ty) {
            return z;
        }
        let z = self.start + self.insts.len();
        self.insts.push(ValueData {
            ty,
            def: ValueDef::Inst(InstData::constant(ty, 0.0)),
            name: None,
        });
        self.of.push((ty, z));
        z
    }

    /// Appends the zeros asked for to `out`.
    pub(crate) fn finish(self, out: &mut Rolled) {
        if !self.insts.is_empty() {
            out.push(Loop::straight(self.start, &self.insts));
        }
    }
}
