//! Loop rolling: finds runs of repeated instruction groups in a straight-line program, so that
//! the lowering can emit each run as one counted loop instead of `trips` copies of its body.
//!
//! A *run* starts at value `start` and is `trips` consecutive *iterations* of `period`
//! instructions each; iteration `j` is the values `start + j·period .. start + (j+1)·period`.
//! Instruction `t` of every iteration has the same shape (opcode, type, which operands are
//! literals) as instruction `t` of iteration 0, its *template*; a float literal that changes
//! from iteration to iteration (data traced in) is read from a table ([`LiteralTable`]), one
//! entry per iteration. Each value operand follows one rule for every `j` (a [`Source`]):
//!
//! - the value of template position `t'` of the same iteration (`t' < t`),
//! - the value of template position `t'` of the previous iteration (a carried value: running
//!   sums, recurrent state), with a value before the run for iteration 0,
//! - a value before the run at index `base + step·j` (`step` = 0: loop-invariant), which is a
//!   parameter (read from `inputs` at that index) or lies in an earlier run at one template
//!   position (read from that run's array in `work`).
//!
//! Each returned value of the run is returned at output indices that are affine in `j` too
//! (the lowering stores it there from inside the loop). Because every iteration evaluates the
//! same operations on the same values in the same order, the loop computes exactly what the
//! straight-line program computes, bit for bit: rolling never re-associates.
//!
//! Detection is greedy and linear in practice: at each position, candidate periods are the
//! distances to the next few occurrences of the same window of four instruction shapes; each
//! candidate grows iteration by iteration while every rule holds, and the candidate covering
//! the most instructions wins (at least [`MIN_TRIPS`] iterations and [`MIN_INSTS`]
//! instructions). Irregular iterations (a first term that starts a sum from a literal, a
//! differing term every k terms) end a run; the next run starts after them, or the period
//! grows to take the exception in (every 7th term differs: period 7 terms).
//!
//! The rows of a 2-D grid then form a *nest* ([`Outer`]): runs of one form a row apart, with
//! the straight instructions between them (a row's boundary cells) repeating too, and every
//! operand affine in the row index as well ([`Across`]), checked on every row; the lowering
//! emits one outer loop around the row's loop. A run whose period is a whole row (short rows:
//! the search found the row distance) is split into the nest of the run inside its rows. A
//! row that differs ends a nest and rolls on its own.

use std::ops::Range;

use crate::function::{Function, InstData, Operand, Value};
use crate::types::Type;
use rustc_hash::FxHashMap;

/// Fewest iterations a run is rolled with.
pub const MIN_TRIPS: usize = 4;
/// Fewest instructions (period × trips) a run is rolled with.
pub const MIN_INSTS: usize = 32;
/// Longest period tried.
const MAX_PERIOD: usize = 4096;
/// Longest period whose starts [`Finder::rotated`] weighs (its cost is the square of the
/// period).
const MAX_ROTATED_PERIOD: usize = 512;
/// Candidate periods tried at each position.
const CANDIDATES: usize = 16;
/// Shapes per window of the candidate search.
const WINDOW: usize = 4;
/// Trips from which multiples of a run's period are not tried as periods.
const LONG_RUN: usize = 64;

/// Where a value operand of a template instruction comes from, for every iteration `j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The value of template position `pos` in the same iteration.
    Same { pos: u32 },
    /// The value of template position `pos` in the previous iteration; in iteration 0, the
    /// value `init` (defined before the run).
    Carried { pos: u32, init: u32 },
    /// The value `base + step·j`, defined before the run.
    Affine { base: u32, step: i64 },
}

/// One output store of a template position: output `first + step·j` in iteration `j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputStore {
    pub first: u32,
    pub step: i64,
}

/// Consecutive instructions of the program that hold template positions `first_pos ..
/// first_pos + period` of every iteration: iteration `j`'s are `start + j·period ..`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub start: usize,
    pub period: usize,
    pub first_pos: usize,
}

/// A run of `trips` iterations of a `period`-instruction template (see the module docs). A
/// run found in the program is one segment; runs of equal trips whose later one reads the
/// earlier only in the same iteration are fused into one loop of several segments (a
/// vectorised trace: each elementwise operation over the whole array is a run of period 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub start: usize,
    pub period: usize,
    pub trips: usize,
    /// Where the template positions lie in the program, in template order.
    pub segments: Vec<Segment>,
    /// Per template position, the source of each value operand (in text order).
    pub sources: Vec<Vec<Source>>,
    /// Per template position, the outputs it is stored to.
    pub outputs: Vec<Vec<OutputStore>>,
    /// The rows when the run is the inner loop of a nest (its first row), else `None`.
    pub outer: Option<Box<Outer>>,
    /// The literal operands whose value changes from iteration to iteration (data traced
    /// into the program: a least-squares fit's points, a grid's coordinates), read from a
    /// table by the loop; every other literal is the same in every iteration.
    pub tables: Vec<LiteralTable>,
}

/// A literal operand of a template instruction with its value in every iteration: the loop
/// loads iteration `j`'s from entry `j` of a table, so it uses exactly the literal the
/// straight-line program has there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiteralTable {
    /// The template position.
    pub pos: u32,
    /// Which literal of the instruction, counted in text order (a `const`'s value is 0).
    pub slot: u8,
    /// The literal's type.
    pub ty: Type,
    /// The bits of its `f64` carrier, per iteration.
    pub bits: Vec<u64>,
}

/// How an operand of a nest's row `k` moves from row to row (see [`Outer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Across {
    /// Row position `pos` of the same row (of the inner run: its last iteration's value).
    Row { pos: u32 },
    /// Row position `pos` of the previous row (carried across rows); row 0 reads `init`,
    /// defined before the nest.
    PrevRow { pos: u32, init: u32 },
    /// The value `base + step·k`, defined before the nest.
    Affine { base: u32, step: i64 },
}

/// The rows of a nest: the run repeated `trips` times, one row every `period` values, with
/// the straight instructions between one row's run and the next (the *gap*: row positions
/// `len .. period`, `len` the run's length) the same in every row. Row `k` is the values
/// `start + k·period ..`; the last row ends with its run (the gap after it is not part of the
/// nest). Every operand follows one rule for every row: the inner run's sources as in row 0
/// with their carried values' first values and their bases moving by an [`Across`] rule, the
/// gap's operands by an [`Across`] rule each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outer {
    pub period: usize,
    pub trips: usize,
    /// Per template position, per value operand: for a `Carried` source, how its first value
    /// moves; for an `Affine` one, how its base moves; `None` for `Same`.
    pub inner: Vec<Vec<Option<Across>>>,
    /// Per template position, per output store: how far its first output moves per row.
    pub inner_outputs: Vec<Vec<i64>>,
    /// Per gap instruction, per value operand.
    pub gap: Vec<Vec<Across>>,
    /// Per gap instruction, its output stores (`step`: per row).
    pub gap_outputs: Vec<Vec<OutputStore>>,
    /// The gap's literals that change from row to row (`pos`: the gap instruction), one entry
    /// per gap (`trips − 1`). The inner run's tables ([`Run::tables`]) hold every row's
    /// iterations, row `k`'s from entry `k·trips`.
    pub gap_tables: Vec<LiteralTable>,
}

impl Run {
    /// The value indices of the whole run (of a nest: from its first row's run to its last
    /// row's run).
    pub fn range(&self) -> Range<usize> {
        let rows = self.outer.as_ref().map_or(0, |o| (o.trips - 1) * o.period);
        self.start..self.start + rows + self.row_len()
    }

    /// Values of one row's run (the run's own range when it is not nested).
    pub fn row_len(&self) -> usize {
        let last = self.segments[self.segments.len() - 1];
        last.start + last.period * self.trips - self.start
    }

    /// Instructions of a nest's gap (0 when not nested).
    pub fn gap_len(&self) -> usize {
        self.outer.as_ref().map_or(0, |o| o.period - self.row_len())
    }

    /// The instructions the lowering emits for the run: its template and a nest's gap.
    pub fn lowered(&self) -> usize {
        self.period + self.gap_len()
    }

    /// The values the lowering emits code for, in order: the template (iteration 0), then a
    /// nest's gap of row 0.
    pub fn lowered_values(&self) -> Vec<usize> {
        let gap = self.start + self.row_len()..self.start + self.row_len() + self.gap_len();
        (0..self.period)
            .map(|t| self.value(t, 0))
            .chain(gap)
            .collect()
    }

    /// The template position whose last iteration (of row 0) is value `v`, if one is.
    pub fn last_of(&self, v: usize) -> Option<usize> {
        let (seg, t) = self.locate(v)?;
        ((v - seg.start) / seg.period == self.trips - 1).then_some(t)
    }

    /// The value of template position `t` in iteration `j`.
    pub fn value(&self, t: usize, j: usize) -> usize {
        let k = self.segments.partition_point(|s| s.first_pos <= t) - 1;
        let seg = self.segments[k];
        seg.start + (t - seg.first_pos) + j * seg.period
    }

    /// The iteration holding value `v` (of row 0), if the run holds it, and the period of
    /// its segment: an operand that moves with the iteration reads `v + period·j` in
    /// iteration `j`.
    pub fn iteration_of(&self, v: usize) -> Option<(usize, usize)> {
        let (seg, _) = self.locate(v)?;
        Some(((v - seg.start) / seg.period, seg.period))
    }

    /// The segment holding value `v` (inside the run) and its template position.
    fn locate(&self, v: usize) -> Option<(Segment, usize)> {
        let k = self
            .segments
            .partition_point(|s| s.start <= v)
            .checked_sub(1)?;
        let seg = self.segments[k];
        let off = v - seg.start;
        (off < seg.period * self.trips).then_some((seg, seg.first_pos + off % seg.period))
    }

    /// Number of instructions the run covers (a nest: every row's run and the gaps between).
    pub fn insts(&self) -> usize {
        match &self.outer {
            Some(o) => o.trips * self.row_len() + (o.trips - 1) * self.gap_len(),
            None => self.period * self.trips,
        }
    }
}

/// An instruction's shape: the instruction with every value operand replaced by `v0` and
/// every float literal by 0 (which operands are literals stays), and its type. Literals that
/// differ between iterations become tables ([`LiteralTable`]).
fn shape(func: &Function, v: usize) -> Option<(InstData, Type)> {
    let inst = func.inst(Value::new(v))?;
    let ty = func.values[v].ty;
    if !func.literal_type(inst, ty).is_float() {
        // Literals of `bool` type (a `select` of `bool`s) stay in the shape.
        return Some((inst.map_values(|_| Value::new(0)), ty));
    }
    Some((inst.shape(), ty))
}

/// The literals of instruction `v` that its shape leaves out, in text order (a float
/// `const`'s value first): their `f64` carriers' bits and how many there are.
fn literals(func: &Function, v: usize) -> ([u64; 3], usize) {
    let mut bits = [0u64; 3];
    let mut n = 0;
    let Some(inst) = func.inst(Value::new(v)) else {
        return (bits, n);
    };
    if !func.literal_type(inst, func.values[v].ty).is_float() {
        return (bits, n);
    }
    match *inst {
        InstData::Const { ty, bits: b } if ty.is_float() => {
            bits[0] = b;
            n = 1;
        }
        _ => inst.for_each_operand(|o| {
            if let Operand::Const(c) = o {
                bits[n] = c.to_bits();
                n += 1;
            }
        }),
    }
    (bits, n)
}

/// The type of the literals [`literals`] gives for instruction `v`.
fn literal_table_type(func: &Function, v: usize) -> Type {
    let ty = func.values[v].ty;
    func.inst(Value::new(v))
        .map_or(ty, |inst| func.literal_type(inst, ty))
}

/// The [`shape`] of instruction `v` packed into one number, when its literals are floats (all
/// but `bool` constants, whose literals stay in their shape): two such
/// instructions have equal numbers exactly when their shapes are equal (the variant, its
/// operator, which operands are literals, the type). Hashing it costs a multiply, where the
/// shape itself was a third of the run search.
fn packed_shape(func: &Function, v: usize) -> Option<u64> {
    let inst = func.inst(Value::new(v))?;
    let ty = func.values[v].ty;
    if !func.literal_type(inst, ty).is_float() {
        return None;
    }
    let mut lits = 0u64;
    let mut k = 0;
    inst.for_each_operand(|o| {
        lits |= u64::from(matches!(o, Operand::Const(_))) << k;
        k += 1;
    });
    let (tag, sub): (u64, u64) = match *inst {
        InstData::Const { ty, .. } => (0, ty as u64),
        InstData::Unary { op, .. } => (1, op as u64),
        InstData::Binary { op, .. } => (2, op as u64),
        InstData::Fma { .. } => (3, 0),
        InstData::Powi { exp, .. } => (4, u64::from(exp as u32)),
        InstData::Fcmp { pred, .. } => (5, pred as u64),
        InstData::Select { .. } => (6, 0),
        InstData::Fpromote { .. } => (7, 0),
        InstData::Fdemote { .. } => (8, 0),
    };
    Some(tag | lits << 4 | (ty as u64) << 8 | sub << 16)
}

/// A number per instruction from value `from` on, equal for two instructions exactly when
/// their shapes are.
fn shape_ids(func: &Function, from: usize) -> Vec<u32> {
    let mut packed: FxHashMap<u64, u32> = FxHashMap::default();
    let mut full: FxHashMap<(InstData, Type), u32> = FxHashMap::default();
    let mut next = 0u32;
    let mut fresh = || {
        next += 1;
        next - 1
    };
    (from..func.n_values())
        .map(|v| match packed_shape(func, v) {
            Some(key) => *packed.entry(key).or_insert_with(&mut fresh),
            None => {
                let key = shape(func, v).expect("values after the parameters are instructions");
                *full.entry(key).or_insert_with(&mut fresh)
            }
        })
        .collect()
}

/// The value operands of every instruction from value `from` on, in text order (`u32::MAX`
/// pads).
struct Operands {
    ops: Vec<[u32; 3]>,
    from: usize,
}

impl Operands {
    /// Those of the instructions from value `from` on.
    fn new(func: &Function, from: usize) -> Operands {
        let ops = (from..func.n_values())
            .map(|v| {
                let mut ops = [u32::MAX; 3];
                let mut k = 0;
                if let Some(inst) = func.inst(Value::new(v)) {
                    inst.for_each_value(|a| {
                        ops[k] = a.index() as u32;
                        k += 1;
                    });
                }
                ops
            })
            .collect();
        Operands { ops, from }
    }

    fn of(&self, v: usize) -> impl Iterator<Item = u32> + '_ {
        self.ops[v - self.from]
            .iter()
            .copied()
            .take_while(|&a| a != u32::MAX)
    }
}

/// The output indices of every returned value from value `from` on, sorted by value, and
/// where each value's start in that list (one lookup per instruction: the run search asks for
/// every instruction it compares, and a binary search over 10⁵ outputs was most of its time).
struct Outputs {
    outs: Vec<(u32, u32)>,
    /// Per value from `from` on, and one past the last: its first entry in `outs`.
    starts: Vec<u32>,
    from: usize,
}

impl Outputs {
    fn new(func: &Function, from: usize) -> Outputs {
        let mut outs: Vec<(u32, u32)> = func
            .rets
            .iter()
            .enumerate()
            .filter(|(_, r)| r.index() >= from)
            .map(|(o, r)| (r.index() as u32, o as u32))
            .collect();
        outs.sort_unstable();
        let mut starts = vec![0u32; func.n_values() - from + 1];
        for &(v, _) in &outs {
            starts[v as usize - from + 1] += 1;
        }
        for k in 1..starts.len() {
            starts[k] += starts[k - 1];
        }
        Outputs { outs, starts, from }
    }

    fn of(&self, v: usize) -> &[(u32, u32)] {
        let k = v - self.from;
        &self.outs[self.starts[k] as usize..self.starts[k + 1] as usize]
    }
}

struct Finder<'a> {
    func: &'a Function,
    /// The first value searched: the first instruction, or where a search that keeps the
    /// runs before it starts ([`find_runs_after`]). `ids`, `ops` and `next_same` start there.
    base: usize,
    /// Shape ids by instruction index (value − `base`).
    ids: Vec<u32>,
    ops: Operands,
    outs: Outputs,
    runs: Vec<Run>,
    /// Per instruction, the next instruction starting the same window of shapes.
    next_same: Vec<u32>,
    /// The value ranges (sorted) where a run's carried values may start from any value
    /// before it; elsewhere, from the value a period before their template position, as in a
    /// program written or traced term by term (the first term, peeled, just before the
    /// loop). A regrouped program (the JIT's `regroup`) keeps the first terms of several sums
    /// in front of all their runs.
    any_first_value: &'a [Range<usize>],
}

impl Finder<'_> {
    /// The run starting at instruction `k` (value `n_params + k`) that covers the most
    /// instructions and ends by value `end` (it is grown no further), among the candidate
    /// periods (see the module docs).
    fn best_at(&self, k: usize, end: usize) -> Option<Run> {
        let first = self.base;
        let mut best: Option<Run> = None;
        let mut cand = k;
        for _ in 0..CANDIDATES {
            let next = self.next_same[cand];
            if next == u32::MAX || next as usize - k > MAX_PERIOD {
                break;
            }
            cand = next as usize;
            let p = cand - k;
            if best
                .as_ref()
                .is_some_and(|b| p.is_multiple_of(b.period) && b.trips >= LONG_RUN)
            {
                // A multiple of a period that already rolls a long run would repeat its whole
                // walk for nothing. After a short run (a term that differs every few terms),
                // a multiple may take the exception in and cover more.
                continue;
            }
            if let Some(run) = self.grow(first + k, p, end) {
                if run.trips >= MIN_TRIPS
                    && run.insts() >= MIN_INSTS
                    && best.as_ref().is_none_or(|b| run.insts() > b.insts())
                {
                    best = Some(run);
                }
            }
        }
        best
    }

    /// `run`, or the same loop started up to a period later where that carries fewer values
    /// from one iteration to the next. The search takes the first start where a run holds,
    /// which in a recurrence (RK4 steps: each reads the state the last one finished) can be a
    /// few instructions before the end of a step: the template then carries the step's
    /// intermediate values across its end beside the state, and the loop holds them all in
    /// registers (or spills them). A later start that holds as long, but for one iteration at
    /// most, is taken when it carries fewer positions; the instructions before it stay
    /// straight.
    fn rotated(&self, run: Run, end: usize) -> Run {
        let p = run.period;
        if !(2..=MAX_ROTATED_PERIOD).contains(&p) || run.trips <= MIN_TRIPS || run.outer.is_some() {
            return run;
        }
        // Per read, the reader's position and the position it reads (one period back for a
        // carried value), both in iteration 0's offsets.
        let mut reads: Vec<(i64, i64)> = Vec::new();
        for (t, srcs) in run.sources.iter().enumerate() {
            for src in srcs {
                match *src {
                    Source::Same { pos } => reads.push((t as i64, i64::from(pos))),
                    Source::Carried { pos, .. } => {
                        reads.push((t as i64, i64::from(pos) - p as i64))
                    }
                    Source::Affine { .. } => {}
                }
            }
        }
        // The positions read across an iteration's end when iterations start at offset `r`.
        let mut crossing = vec![false; p];
        let mut carried = |r: i64| -> usize {
            crossing.fill(false);
            let iteration = |o: i64| (o - r).div_euclid(p as i64);
            for &(t, q) in &reads {
                if iteration(t) != iteration(q) {
                    crossing[q.rem_euclid(p as i64) as usize] = true;
                }
            }
            crossing.iter().filter(|&&c| c).count()
        };
        let now = carried(0);
        let Some((fewest, r)) = (1..p as i64).map(|r| (carried(r), r)).min() else {
            return run;
        };
        if fewest >= now {
            return run;
        }
        match self.grow(run.start + r as usize, p, end) {
            Some(later) if later.trips >= MIN_TRIPS && later.insts() + p >= run.insts() => later,
            _ => run,
        }
    }

    /// Whether a run starting at `s` may start its carried values from any earlier value.
    fn any_first_value_at(&self, s: usize) -> bool {
        let k = self.any_first_value.partition_point(|r| r.start <= s);
        k > 0 && self.any_first_value[k - 1].contains(&s)
    }

    /// The earlier run holding value `v`.
    fn run_of(&self, v: usize) -> Option<&Run> {
        let k = self.runs.partition_point(|r| r.start <= v);
        let run = self.runs.get(k.checked_sub(1)?)?;
        run.range().contains(&v).then_some(run)
    }

    /// Whether operand value `a` of iteration `j` is where `source` says (for `Affine`: also
    /// that it is readable: a parameter, or in an earlier run at one template position).
    fn affine_ok(&self, start: usize, base: u32, step: i64, j: usize, a: u32) -> bool {
        let want = i64::from(base) + step * j as i64;
        if want != i64::from(a) || a as usize >= start {
            return false;
        }
        if step == 0 || self.func.is_param(Value::new(a as usize)) {
            return true;
        }
        // A varying value that is not a parameter must come from one template position
        // of an earlier run (its array in `work`).
        let (Some(r0), Some(rj)) = (self.run_of(base as usize), self.run_of(a as usize)) else {
            return false;
        };
        r0.start == rj.start && step % r0.period as i64 == 0
    }

    /// The run of period `p` starting at `s`, as long as it holds and ends by value `end`
    /// (`None` if shorter than two iterations or not rollable).
    fn grow(&self, s: usize, p: usize, end: usize) -> Option<Run> {
        let func = self.func;
        let n = func.n_values().min(end);
        if s + 2 * p > n {
            return None;
        }
        // Shapes first: most candidates fail here, before anything is allocated.
        let first = self.base;
        if (s..s + p).any(|a| self.ids[a - first] != self.ids[a + p - first]) {
            return None;
        }
        let mut sources = Vec::with_capacity(p);
        let mut outputs = Vec::with_capacity(p);
        for t in 0..p {
            let (a, b) = (s + t, s + p + t);
            let mut srcs: Vec<Source> = Vec::with_capacity(3);
            for (a0, a1) in self.ops.of(a).zip(self.ops.of(b)) {
                let step = i64::from(a1) - i64::from(a0);
                let src = if a0 as usize >= s {
                    if step != p as i64 {
                        return None;
                    }
                    Source::Same {
                        pos: (a0 as usize - s) as u32,
                    }
                } else if a1 as usize >= s
                    && (step == p as i64 || (a1 as usize) < s + p && self.any_first_value_at(s))
                {
                    Source::Carried {
                        pos: (a1 as usize - s) as u32,
                        init: a0,
                    }
                } else if self.affine_ok(s, a0, step, 1, a1) {
                    Source::Affine { base: a0, step }
                } else {
                    return None;
                };
                // One value read twice by an instruction must come from one place.
                let repeats_differently = self
                    .ops
                    .of(a)
                    .zip(&srcs)
                    .any(|(other, &prev)| other == a0 && prev != src);
                if repeats_differently {
                    return None;
                }
                srcs.push(src);
            }
            let (oa, ob) = (self.outs.of(a), self.outs.of(b));
            if oa.len() != ob.len() {
                return None;
            }
            let stores: Vec<OutputStore> = oa
                .iter()
                .zip(ob)
                .map(|(&(_, o0), &(_, o1))| OutputStore {
                    first: o0,
                    step: i64::from(o1) - i64::from(o0),
                })
                .collect();
            sources.push(srcs);
            outputs.push(stores);
        }
        // The literals of the template, and which of them differ in a later iteration.
        let lits_at = |v: usize| literals(func, v);
        let lits: Vec<(usize, [u64; 3], usize)> = (0..p)
            .filter_map(|t| {
                let (bits, n) = lits_at(s + t);
                (n > 0).then_some((t, bits, n))
            })
            .collect();
        let mut varies = vec![[false; 3]; lits.len()];
        let mut compare_literals = |j: usize| {
            for ((t, bits, n), varies) in lits.iter().zip(varies.iter_mut()) {
                let (now, _) = lits_at(s + j * p + t);
                for k in 0..*n {
                    varies[k] |= now[k] != bits[k];
                }
            }
        };
        compare_literals(1);
        let mut trips = 2;
        'iterations: while s + (trips + 1) * p <= n {
            let j = trips;
            for t in 0..p {
                let v = s + j * p + t;
                if self.ids[s + t - self.base] != self.ids[v - self.base] {
                    break 'iterations;
                }
                for (src, a) in sources[t].iter().zip(self.ops.of(v)) {
                    let ok = match *src {
                        Source::Same { pos } => a as usize == s + j * p + pos as usize,
                        Source::Carried { pos, .. } => a as usize == s + (j - 1) * p + pos as usize,
                        Source::Affine { base, step } => self.affine_ok(s, base, step, j, a),
                    };
                    if !ok {
                        break 'iterations;
                    }
                }
                let outs = self.outs.of(v);
                if outs.len() != outputs[t].len()
                    || outs.iter().zip(&outputs[t]).any(|(&(_, o), st)| {
                        i64::from(o) != i64::from(st.first) + st.step * j as i64
                    })
                {
                    break 'iterations;
                }
            }
            compare_literals(j);
            trips += 1;
        }
        let mut tables = Vec::new();
        for (&(t, _, n), varies) in lits.iter().zip(&varies) {
            let v0 = s + t;
            let ty = literal_table_type(func, v0);
            for slot in (0..n).filter(|&k| varies[k]) {
                tables.push(LiteralTable {
                    pos: t as u32,
                    slot: slot as u8,
                    ty,
                    bits: (0..trips).map(|j| lits_at(v0 + j * p).0[slot]).collect(),
                });
            }
        }
        Some(Run {
            start: s,
            period: p,
            trips,
            segments: vec![Segment {
                start: s,
                period: p,
                first_pos: 0,
            }],
            sources,
            outputs,
            outer: None,
            tables,
        })
    }
}

/// The runs of `func` (verified) worth rolling, in program order, not overlapping.
pub fn find_runs(func: &Function) -> Found {
    find_runs_after(func, &[], func.n_params, &Found::default())
}

/// The runs a search found: those to roll, and the runs as first found (before fusing and
/// the nests), which a later search that keeps them needs ([`find_runs_after`]).
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub runs: Vec<Run>,
    pub raw: Vec<Run>,
}

/// [`find_runs`] from value `from` on, keeping `before`: the runs of an earlier search that
/// end by `from`, in a program whose values before `from` have not changed since (they read
/// nothing after them, so the runs hold as they were). Searching from the first value a pass
/// changed costs what it changed, not the whole program. Runs starting in `any_first_value`
/// (sorted ranges) may start their carried values from any value before them.
pub fn find_runs_after(
    func: &Function,
    any_first_value: &[Range<usize>],
    from: usize,
    before: &Found,
) -> Found {
    let kept = |runs: &[Run]| -> Vec<Run> {
        runs.iter()
            .take_while(|r| r.range().end <= from)
            .cloned()
            .collect()
    };
    let (kept_runs, kept_raw) = (kept(&before.runs), kept(&before.raw));
    let n = func.n_values();
    if n.saturating_sub(from) < MIN_INSTS {
        return Found {
            runs: kept_runs,
            raw: kept_raw,
        };
    }
    let ids = shape_ids(func, from);
    // Per instruction, the next instruction starting the same window of shapes.
    let n_windows = ids.len().saturating_sub(WINDOW - 1);
    let mut next_same = vec![u32::MAX; n_windows];
    let mut last: FxHashMap<[u32; WINDOW], u32> = FxHashMap::default();
    for k in (0..n_windows).rev() {
        let mut w = [0u32; WINDOW];
        w.copy_from_slice(&ids[k..k + WINDOW]);
        if let Some(&next) = last.get(&w) {
            next_same[k] = next;
        }
        last.insert(w, k as u32);
    }
    drop(last);
    let n_kept = kept_raw.len();
    let mut finder = Finder {
        func,
        base: from,
        ids,
        ops: Operands::new(func, from),
        outs: Outputs::new(func, from),
        runs: kept_raw,
        next_same,
        any_first_value,
    };
    let mut k = 0usize; // instruction index (value `from + k`)
    while k < n_windows {
        match finder.best_at(k, n).map(|run| finder.rotated(run, n)) {
            Some(run) => {
                k = run.range().end - from;
                finder.runs.push(run);
            }
            None => k += 1,
        }
    }
    let runs = fuse(finder.runs[n_kept..].to_vec());
    let runs = finder.nest(kept_runs, runs);
    Found {
        runs,
        raw: finder.runs,
    }
}

/// Fuse each run with the next when they are adjacent, have equal trips, and the later reads
/// the earlier only in the same iteration (and not through its carried values' first
/// inputs): one loop then computes both, iteration by iteration. Each iteration still
/// evaluates exactly its instructions, and every value it reads is computed before it.
fn fuse(runs: Vec<Run>) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::with_capacity(runs.len());
    for b in runs {
        let fused = out.last().and_then(|a| fused(a, &b));
        match fused {
            Some(f) => {
                let last = out.len() - 1;
                out[last] = f;
            }
            None => out.push(b),
        }
    }
    out
}

/// `a` and `b` as one run, if they can be (see [`fuse`]).
fn fused(a: &Run, b: &Run) -> Option<Run> {
    if b.start != a.range().end || b.trips != a.trips {
        return None;
    }
    let shift = a.period as u32;
    let mut sources = a.sources.clone();
    for srcs in &b.sources {
        let mut moved = Vec::with_capacity(srcs.len());
        for &src in srcs {
            moved.push(match src {
                Source::Same { pos } => Source::Same { pos: pos + shift },
                Source::Carried { pos, init } if (init as usize) < a.start => Source::Carried {
                    pos: pos + shift,
                    init,
                },
                Source::Carried { .. } => return None,
                Source::Affine { base, .. } if (base as usize) < a.start => src,
                Source::Affine { base, step } => {
                    // In `a`: only its value of the same iteration.
                    let (seg, pos) = a.locate(base as usize)?;
                    if base as usize >= seg.start + seg.period || step != seg.period as i64 {
                        return None;
                    }
                    Source::Same { pos: pos as u32 }
                }
            });
        }
        sources.push(moved);
    }
    let mut segments = a.segments.clone();
    segments.extend(b.segments.iter().map(|s| Segment {
        first_pos: s.first_pos + a.period,
        ..*s
    }));
    let mut outputs = a.outputs.clone();
    outputs.extend(b.outputs.iter().cloned());
    let mut tables = a.tables.clone();
    tables.extend(b.tables.iter().map(|table| LiteralTable {
        pos: table.pos + shift,
        ..table.clone()
    }));
    Some(Run {
        start: a.start,
        period: a.period + b.period,
        trips: a.trips,
        segments,
        sources,
        outputs,
        outer: None,
        tables,
    })
}

/// Fewest rows a nest is formed with (two samples of the gap fix its rules, a third checks).
pub const MIN_ROWS: usize = 3;
/// Fewest inner trips of a nest. A 1-D program whose every k-th term differs is rows of
/// k − 1 regular terms too; for small k its loop of k-term iterations (or its loops between
/// the exceptions) are kept: a loop of a few trips inside a loop gains little.
const MIN_INNER_TRIPS: usize = 8;

/// Whether `b` is `a` in another row: the same template, trips and segment layout, sources of
/// the same kinds (equal in-iteration positions, equal strides), as many outputs, at equal
/// strides, and literal tables at the same places.
fn same_form(a: &Run, b: &Run) -> bool {
    let segs = |r: &Run| -> Vec<(usize, usize, usize)> {
        r.segments
            .iter()
            .map(|s| (s.start - r.start, s.period, s.first_pos))
            .collect()
    };
    let kind = |s: &Source| match *s {
        Source::Same { pos } => (0, i64::from(pos)),
        Source::Carried { pos, .. } => (1, i64::from(pos)),
        Source::Affine { step, .. } => (2, step),
    };
    a.period == b.period
        && a.trips == b.trips
        && a.outer.is_none()
        && b.outer.is_none()
        && a.tables.len() == b.tables.len()
        && a.tables
            .iter()
            .zip(&b.tables)
            .all(|(x, y)| (x.pos, x.slot, x.ty) == (y.pos, y.slot, y.ty))
        && segs(a) == segs(b)
        && a.sources
            .iter()
            .zip(&b.sources)
            .all(|(x, y)| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| kind(p) == kind(q)))
        && a.outputs
            .iter()
            .zip(&b.outputs)
            .all(|(x, y)| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.step == q.step))
}

/// Whether `run`'s iterations may be whole rows of a nest: one segment, enough iterations,
/// and a period long enough to hold an inner run and a gap.
fn could_hold_rows(run: &Run) -> bool {
    run.outer.is_none()
        && run.segments.len() == 1
        && run.trips >= MIN_ROWS
        && run.period >= MIN_INNER_TRIPS * 2
}

/// The value a source reads before its run, if any: a carried value's first value, an affine
/// operand's base.
fn before(src: Source) -> Option<u32> {
    match src {
        Source::Same { .. } => None,
        Source::Carried { init, .. } => Some(init),
        Source::Affine { base, .. } => Some(base),
    }
}

/// A nest being checked: its first row's run, where rows start and how far apart they are.
struct Rows<'r> {
    run: &'r Run,
    start: usize,
    period: usize,
}

impl Rows<'_> {
    /// The rule taking operand `a0` of row 0 to `a1` of row 1 (`None`: no rule does, or the
    /// rule reads an inner value other than a last iteration's).
    fn classify(&self, a0: u32, a1: u32) -> Option<Across> {
        let (s, p) = (self.start, self.period);
        let (x0, x1) = (a0 as usize, a1 as usize);
        let rule = if x1 >= s + p {
            (x0 + p == x1).then_some(Across::Row {
                pos: (x1 - s - p) as u32,
            })?
        } else if x1 >= s {
            (x0 < s).then_some(Across::PrevRow {
                pos: (x1 - s) as u32,
                init: a0,
            })?
        } else {
            (x0 < s).then_some(Across::Affine {
                base: a0,
                step: i64::from(a1) - i64::from(a0),
            })?
        };
        match rule {
            Across::Row { pos } | Across::PrevRow { pos, .. }
                if (pos as usize) < self.run.row_len() =>
            {
                self.run.last_of(s + pos as usize).map(|_| rule)
            }
            _ => Some(rule),
        }
    }

    /// The value `rule` names in row `k`.
    fn expected(&self, rule: Across, k: usize) -> Option<u32> {
        let v = match rule {
            Across::Row { pos } => (self.start + k * self.period + pos as usize) as i64,
            Across::PrevRow { init, .. } if k == 0 => i64::from(init),
            Across::PrevRow { pos, .. } => {
                (self.start + (k - 1) * self.period + pos as usize) as i64
            }
            Across::Affine { base, step } => {
                let v = i64::from(base) + step * k as i64;
                if v < 0 || v as usize >= self.start {
                    return None;
                }
                v
            }
        };
        u32::try_from(v).ok()
    }
}

impl Finder<'_> {
    /// Whether `w` can be read where `base` is (both before the nest): both parameters, or
    /// both in one earlier, not nested run at one template position (its array in `work`).
    fn same_home(&self, done: &[Run], base: usize, w: usize) -> bool {
        if self.func.is_param(Value::new(base)) || self.func.is_param(Value::new(w)) {
            return self.func.is_param(Value::new(base)) && self.func.is_param(Value::new(w));
        }
        let k = done.partition_point(|r| r.start <= base);
        let Some(run) = k.checked_sub(1).map(|k| &done[k]) else {
            return false;
        };
        let (Some((sa, ta)), Some((sb, tb))) = (run.locate(base), run.locate(w)) else {
            return false;
        };
        run.outer.is_none()
            && run.range().contains(&base)
            && run.range().contains(&w)
            && sa.start == sb.start
            && ta == tb
    }

    /// Runs of equal form one row apart, with the straight instructions between them
    /// repeating too, grouped into nests (see [`Outer`]); every other run as it is. `before`
    /// are the runs kept in front of them, as an earlier call returned them.
    fn nest(&self, before: Vec<Run>, runs: Vec<Run>) -> Vec<Run> {
        let mut out: Vec<Run> = before;
        out.reserve(runs.len());
        let mut i = 0;
        while i < runs.len() {
            match self.nest_at(&runs, i, &out) {
                Some(nest) => {
                    i += nest.outer.as_ref().map_or(1, |o| o.trips);
                    out.push(nest);
                }
                None => {
                    let run = &runs[i];
                    // A later run reading this one's values as an array reads them by the
                    // whole-row template: keep it.
                    let range = run.range();
                    let keep_whole_rows = !could_hold_rows(run)
                        || runs[i + 1..].iter().any(|r| {
                            r.sources.iter().flatten().any(|src| {
                                matches!(*src, Source::Affine { base, step }
                                if step != 0 && range.contains(&(base as usize)))
                            })
                        });
                    let nest = if keep_whole_rows {
                        None
                    } else {
                        self.nest_inside(run, &out)
                    };
                    out.push(nest.unwrap_or_else(|| run.clone()));
                    i += 1;
                }
            }
        }
        out
    }

    /// A run whose iterations are whole rows (its period is a row: the search found the
    /// distance from one row's boundary code to the next) as a nest, when each row's template
    /// holds an inner run and the nest holds for every row: the inner run's template and the
    /// gap are lowered instead of the whole row. The part of the first row before its inner
    /// run and of the last row after it become straight code.
    fn nest_inside(&self, run: &Run, done: &[Run]) -> Option<Run> {
        let first = self.base;
        let (start, period, rows) = (run.start, run.period, run.trips);
        if !could_hold_rows(run) {
            return None;
        }
        // The inner run covering most of row 0.
        let mut best: Option<Run> = None;
        let mut k = start - first;
        while k < (start + period - first).min(self.next_same.len()) {
            match self.best_at(k, start + period) {
                Some(r) => {
                    k = r.range().end - first;
                    if best.as_ref().is_none_or(|b| r.insts() > b.insts()) {
                        best = Some(r);
                    }
                }
                None => k += 1,
            }
        }
        let inner = best?;
        // The same run in every row (a row may run on into its gap: cut it to the trips of
        // row 0; every cut iteration's rules hold).
        let mut row_runs = Vec::with_capacity(rows);
        let (at, trips) = (inner.start, inner.trips);
        row_runs.push(inner);
        for r in 1..rows {
            let row_end = start + (r + 1) * period;
            let mut rk = self.grow(at + r * period, row_runs[0].period, row_end)?;
            if rk.trips < trips {
                return None;
            }
            rk.trips = trips;
            for table in &mut rk.tables {
                table.bits.truncate(trips);
            }
            row_runs.push(rk);
        }
        let nest = self.nest_at(&row_runs, 0, done)?;
        (nest.outer.as_ref().map(|o| o.trips) == Some(rows)).then_some(nest)
    }

    /// The nest whose first row is `runs[i]`, if at least [`MIN_ROWS`] rows hold (`done`:
    /// the runs before it, as returned).
    fn nest_at(&self, runs: &[Run], i: usize, done: &[Run]) -> Option<Run> {
        let first = self.base;
        let r0 = &runs[i];
        let (r1, r2) = (runs.get(i + 1)?, runs.get(i + 2)?);
        if r0.trips < MIN_INNER_TRIPS {
            return None;
        }
        let len = r0.row_len();
        let period = r1.start.checked_sub(r0.start)?;
        if period < len || r2.start != r1.start + period {
            return None;
        }
        if !same_form(r0, r1) {
            return None;
        }
        let rows = Rows {
            run: r0,
            start: r0.start,
            period,
        };
        let gap_at = |k: usize, u: usize| r0.start + k * period + len + u;
        let gap_len = period - len;
        // The rules, from rows 0 and 1.
        let mut inner = Vec::with_capacity(r0.period);
        for (s0, s1) in r0.sources.iter().zip(&r1.sources) {
            let mut rules = Vec::with_capacity(s0.len());
            for (&a, &b) in s0.iter().zip(s1) {
                rules.push(match (before(a), before(b)) {
                    (Some(x), Some(y)) => {
                        let rule = rows.classify(x, y)?;
                        let moving_array = matches!(a, Source::Affine { step, .. } if step != 0);
                        if moving_array && !matches!(rule, Across::Affine { .. }) {
                            return None;
                        }
                        Some(rule)
                    }
                    _ => None,
                });
            }
            // One value read twice must come from one place in every row.
            for (c, &src) in s0.iter().enumerate() {
                if s0[..c]
                    .iter()
                    .zip(&rules)
                    .any(|(&o, &r)| o == src && r != rules[c])
                {
                    return None;
                }
            }
            inner.push(rules);
        }
        let inner_outputs: Vec<Vec<i64>> = r0
            .outputs
            .iter()
            .zip(&r1.outputs)
            .map(|(x, y)| {
                x.iter()
                    .zip(y)
                    .map(|(p, q)| i64::from(q.first) - i64::from(p.first))
                    .collect()
            })
            .collect();
        let mut gap = Vec::with_capacity(gap_len);
        let mut gap_outputs: Vec<Vec<OutputStore>> = Vec::with_capacity(gap_len);
        for u in 0..gap_len {
            let (v0, v1) = (gap_at(0, u), gap_at(1, u));
            if self.ids[v0 - first] != self.ids[v1 - first] {
                return None;
            }
            let mut rules: Vec<Across> = Vec::with_capacity(3);
            for (k, (a0, a1)) in self.ops.of(v0).zip(self.ops.of(v1)).enumerate() {
                let rule = rows.classify(a0, a1)?;
                // One value read twice must come from one place.
                if self
                    .ops
                    .of(v0)
                    .take(k)
                    .zip(&rules)
                    .any(|(o, &r)| o == a0 && r != rule)
                {
                    return None;
                }
                rules.push(rule);
            }
            gap.push(rules);
            let (o0, o1) = (self.outs.of(v0), self.outs.of(v1));
            if o0.len() != o1.len() {
                return None;
            }
            gap_outputs.push(
                o0.iter()
                    .zip(o1)
                    .map(|(&(_, x), &(_, y))| OutputStore {
                        first: x,
                        step: i64::from(y) - i64::from(x),
                    })
                    .collect(),
            );
        }
        // One first value per position carried across rows.
        let mut carried: Vec<(u32, u32)> = inner
            .iter()
            .flatten()
            .flatten()
            .chain(gap.iter().flatten())
            .filter_map(|r| match *r {
                Across::PrevRow { pos, init } => Some((pos, init)),
                _ => None,
            })
            .collect();
        carried.sort_unstable();
        carried.dedup();
        if carried.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        // Check every row: row k's run, and the gap before it (after row k − 1's run).
        let row_holds = |k: usize| -> bool {
            let Some(rk) = runs.get(i + k) else {
                return false;
            };
            if rk.start != r0.start + k * period || !same_form(r0, rk) {
                return false;
            }
            // The literals a row's run has in every iteration (not in tables) are row 0's.
            let template_literals = (0..r0.period).all(|t| {
                let (a, n) = literals(self.func, r0.value(t, 0));
                let (b, _) = literals(self.func, rk.value(t, 0));
                (0..n).all(|slot| {
                    a[slot] == b[slot]
                        || r0
                            .tables
                            .iter()
                            .any(|x| x.pos as usize == t && x.slot as usize == slot)
                })
            });
            if !template_literals {
                return false;
            }
            for (t, rules) in inner.iter().enumerate() {
                for (c, rule) in rules.iter().enumerate() {
                    let Some(rule) = *rule else { continue };
                    let src = rk.sources[t][c];
                    if before(src) != rows.expected(rule, k) {
                        return false;
                    }
                    if let (Across::Affine { base, step: ostep }, Source::Affine { step, .. }) =
                        (rule, src)
                    {
                        if ostep != 0 || step != 0 {
                            let at = i64::from(base) + ostep * k as i64;
                            let last = at + step * (r0.trips as i64 - 1);
                            let ok = [at, last].iter().all(|&w| {
                                w >= 0 && self.same_home(done, base as usize, w as usize)
                            });
                            if !ok {
                                return false;
                            }
                        }
                    }
                }
                for ((s0, sk), &ostep) in r0.outputs[t]
                    .iter()
                    .zip(&rk.outputs[t])
                    .zip(&inner_outputs[t])
                {
                    if i64::from(sk.first) != i64::from(s0.first) + ostep * k as i64 {
                        return false;
                    }
                }
            }
            let g = k - 1;
            for (u, rules) in gap.iter().enumerate() {
                let v = gap_at(g, u);
                if self.ids[v - first] != self.ids[gap_at(0, u) - first] {
                    return false;
                }
                for (a, &rule) in self.ops.of(v).zip(rules) {
                    if Some(a) != rows.expected(rule, g) {
                        return false;
                    }
                    if let Across::Affine { base, step } = rule {
                        if step != 0 && !self.same_home(done, base as usize, a as usize) {
                            return false;
                        }
                    }
                }
                let outs = self.outs.of(v);
                if outs.len() != gap_outputs[u].len()
                    || outs.iter().zip(&gap_outputs[u]).any(|(&(_, o), st)| {
                        i64::from(o) != i64::from(st.first) + st.step * g as i64
                    })
                {
                    return false;
                }
            }
            true
        };
        let mut trips = 1;
        while row_holds(trips) {
            trips += 1;
        }
        if trips < MIN_ROWS {
            return None;
        }
        let mut run = r0.clone();
        // Every row's iterations in the inner tables, row after row.
        for (x, table) in run.tables.iter_mut().enumerate() {
            table.bits = runs[i..i + trips]
                .iter()
                .flat_map(|r| r.tables[x].bits.iter().copied())
                .collect();
        }
        // The gap's literals that differ between rows (gaps 0 .. trips − 2) become tables.
        let mut gap_tables = Vec::new();
        for u in 0..gap_len {
            let v0 = gap_at(0, u);
            let (bits0, n) = literals(self.func, v0);
            let per_gap: Vec<[u64; 3]> = (0..trips - 1)
                .map(|g| literals(self.func, gap_at(g, u)).0)
                .collect();
            for slot in (0..n).filter(|&x| per_gap.iter().any(|b| b[x] != bits0[x])) {
                gap_tables.push(LiteralTable {
                    pos: u as u32,
                    slot: slot as u8,
                    ty: literal_table_type(self.func, v0),
                    bits: per_gap.iter().map(|b| b[slot]).collect(),
                });
            }
        }
        run.outer = Some(Box::new(Outer {
            period,
            trips,
            inner,
            inner_outputs,
            gap,
            gap_outputs,
            gap_tables,
        }));
        Some(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Builder;

    /// Shape ids are equal exactly when shapes are: on random programs of every operation
    /// (non-smooth ones give `fcmp`, `select`, `floor`), of both float types, and on `bool`
    /// constants, whose literals stay in the shape.
    #[test]
    fn shape_ids_are_equal_exactly_when_shapes_are() {
        use crate::random::{random_function, RandomOptions};
        let mut b = Builder::new("bools");
        let x = b.param(Type::F64, "x");
        let c = b.fcmp(crate::CmpPred::Lt, x, 1.0);
        let t = b.constant(Type::Bool, 1.0);
        let f = b.constant(Type::Bool, 0.0);
        let t2 = b.constant(Type::Bool, 1.0);
        let y = b.select(t, x, 2.0);
        let z = b.select(f, 3.0, y);
        let u = b.select(c, z, 2.0);
        let w = b.select(t2, u, x);
        let mut funcs = vec![b.finish(&[w])];
        for ty in [Type::F64, Type::F32] {
            for seed in 0..6 {
                let opts = RandomOptions {
                    ty,
                    non_smooth: true,
                    n_insts: 150,
                    ..RandomOptions::default()
                };
                funcs.push(random_function(seed, &opts));
            }
        }
        for func in &funcs {
            let from = func.n_params;
            let ids = shape_ids(func, from);
            for i in 0..ids.len() {
                for j in 0..ids.len() {
                    let same = shape(func, from + i) == shape(func, from + j);
                    assert_eq!(
                        ids[i] == ids[j],
                        same,
                        "{func}\nvalues {} {}",
                        from + i,
                        from + j
                    );
                }
            }
        }
    }

    /// A later run reading the earlier one in the same iteration fuses; reading it one
    /// iteration ahead (not yet computed in a fused loop), or through a loop invariant, does not.
    #[test]
    fn runs_fuse_only_on_same_iteration_reads() {
        let run = |start: usize, src: Source| Run {
            start,
            period: 1,
            trips: 5,
            segments: vec![Segment {
                start,
                period: 1,
                first_pos: 0,
            }],
            sources: vec![vec![src]],
            outputs: vec![Vec::new()],
            outer: None,
            tables: Vec::new(),
        };
        let a = run(10, Source::Affine { base: 0, step: 1 });
        let same = fused(&a, &run(15, Source::Affine { base: 10, step: 1 })).expect("fuses");
        assert_eq!(same.period, 2);
        assert_eq!(same.sources[1], vec![Source::Same { pos: 0 }]);
        assert_eq!(same.value(1, 3), 18);
        assert_eq!(same.range(), 10..20);
        assert!(fused(&a, &run(15, Source::Affine { base: 11, step: 1 })).is_none());
        assert!(fused(&a, &run(15, Source::Affine { base: 12, step: 0 })).is_none());
        assert!(fused(&a, &run(16, Source::Affine { base: 10, step: 1 })).is_none());
    }
}
