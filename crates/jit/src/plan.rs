//! Chunk and storage planning: decides, before any code is generated, which instructions go
//! into which chunk function, which values the lowering keeps in registers, and which live in
//! the workspace (`work`).
//!
//! Within a chunk the plan simulates a register file of [`JitOptions::registers`] values in
//! program order (the order [`crate::schedule`] chose). An operand not in a register is
//! reloaded from its home; a result or reload that finds the file full evicts the value whose
//! next use is furthest away (Belady's rule). Homes: parameters live in `inputs`; any other
//! value that is ever evicted, or used in a later chunk, gets a workspace slot and is stored
//! there once, at its definition, so an eviction never stores. A call to a math routine
//! clobbers every register (the SysV ABI has no callee-saved float registers), so after it
//! every value is reloaded from its home. The lowering follows the plan exactly (it drops a
//! register copy at each [`Plan::evictions`] entry and reloads whatever is not cached), so
//! Cranelift never has more than the budget of planned values live and rarely spills.
//!
//! Returned values are stored to `outputs` right at their definition, so `ret` is not a use.
//! Slots are reused once the last use of their value has passed (interval colouring in
//! program order), so the workspace holds at most the number of simultaneously long-lived
//! values. Assumes a verified function.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

use adjit_ir::{BinaryOp, Function, InstData, UnaryOp, Value};

use crate::options::JitOptions;
use crate::roll::Run;

/// Marks a value without a workspace slot.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// The storage and chunking decisions for one function.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Value-index ranges of the instructions of each chunk, in order; never empty (a
    /// function without instructions has one empty chunk, which writes returned parameters).
    pub chunks: Vec<Range<usize>>,
    /// Per value: its workspace slot (in units of 8 bytes), or [`NO_SLOT`].
    pub slots: Vec<u32>,
    /// Number of 8-byte workspace slots one call needs.
    pub n_slots: usize,
    /// `(value index, output index)` for every returned value, sorted by value.
    pub outputs: Vec<(usize, usize)>,
    /// Per value: whether some returned value depends on it. Dead instructions are not
    /// lowered (the IR has no side effects).
    pub live: Vec<bool>,
    /// `(position, value)`, sorted by position: before lowering the instruction at
    /// `position`, the register copy of `value` is dropped (a later use reloads it).
    pub evictions: Vec<(u32, u32)>,
    /// The register budget the plan was made for (read by the plan checker in tests).
    #[cfg_attr(not(test), allow(dead_code))]
    pub registers: usize,
    /// Per chunk: the index of the run (see [`crate::roll`]) it lowers as a loop, or `None`
    /// for straight-line code.
    pub chunk_runs: Vec<Option<usize>>,
    /// Per run, per template position (then per gap instruction of a nest): where its values
    /// live in `work`.
    pub homes: Vec<Vec<Home>>,
    /// Constants returned many times, written by a loop over their outputs' span before
    /// anything else (their pairs are not in [`Plan::outputs`]); see [`Fill`].
    pub fills: Vec<Fill>,
}

/// The outputs `first..=last` filled with one constant, at the start of the first chunk,
/// before any other output is stored. The constant's own outputs are those in the span
/// (dense: at least three quarters of it); every other output in the span is stored later, by
/// its own definition, over the fill. A sparse Jacobian of a 5-point stencil returns −1/h² for
/// four of every five nonzeros: 3.6·10⁵ single stores (2.9 MB of code at 300 × 300) become a
/// loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fill {
    /// The value as the outputs hold it (`f64`: an `f32` constant widened exactly).
    pub value: f64,
    pub first: usize,
    pub last: usize,
}

/// A constant is filled when it is returned at least this many times.
const FILL_MIN_OUTPUTS: usize = 64;

/// Where the values of one template position of a run live in `work`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Home {
    /// Nowhere: used only inside their iteration, by the next one, or stored to outputs.
    None,
    /// One slot, overwritten by every iteration: only the last iteration's value is read
    /// after the loop.
    Last(u32),
    /// `trips` consecutive slots from this one: iteration `j`'s value in slot `first + j`.
    /// In a nest, row `k`'s iteration `j` is in slot `first + k·trips + j`, and a gap
    /// instruction's value of row `k` in slot `first + k`.
    Array(u32),
}

impl Plan {
    /// A plan of one empty chunk, no slots and no outputs: the plan of a lowering that places
    /// its values itself (a rolled program, see [`crate::rolled_plan`]).
    pub fn empty() -> Plan {
        Plan {
            chunks: std::iter::once(0..0).collect(),
            slots: Vec::new(),
            n_slots: 0,
            outputs: Vec::new(),
            live: Vec::new(),
            evictions: Vec::new(),
            registers: 0,
            chunk_runs: vec![None],
            homes: Vec::new(),
            fills: Vec::new(),
        }
    }

    /// The instructions lowered for chunk `c`: its range, or the first iteration of its run
    /// (and a nest's gap).
    pub fn lowered_values(&self, c: usize, runs: &[Run]) -> Vec<usize> {
        match self.chunk_runs[c] {
            Some(r) => runs[r].lowered_values(),
            None => self.chunks[c].clone().collect(),
        }
    }

    /// The output indices `value` is stored to.
    pub fn outputs_of(&self, value: usize) -> impl Iterator<Item = usize> + '_ {
        let start = self.outputs.partition_point(|&(v, _)| v < value);
        self.outputs[start..]
            .iter()
            .take_while(move |&&(v, _)| v == value)
            .map(|&(_, out)| out)
    }
}

/// Whether the lowering of `inst` calls a math routine (clobbering every float register).
pub(crate) fn is_call(inst: &InstData) -> bool {
    match inst {
        InstData::Unary { op, .. } => {
            op.is_transcendental() && !matches!(op, UnaryOp::Floor | UnaryOp::Ceil)
        }
        InstData::Binary { op, .. } => matches!(op, BinaryOp::Pow | BinaryOp::Atan2),
        _ => false,
    }
}

/// The distinct value operands of an instruction, in text order (at most three, without
/// allocating: the plan reads them three times per instruction).
fn distinct_operands(inst: &InstData) -> DistinctOperands {
    let mut out = DistinctOperands {
        ops: [0; 3],
        len: 0,
    };
    inst.for_each_value(|v| {
        let v = v.index() as u32;
        if !out.ops[..out.len].contains(&v) {
            out.ops[out.len] = v;
            out.len += 1;
        }
    });
    out
}

/// What [`distinct_operands`] returns.
struct DistinctOperands {
    ops: [u32; 3],
    len: usize,
}

impl std::ops::Deref for DistinctOperands {
    type Target = [u32];

    fn deref(&self) -> &[u32] {
        &self.ops[..self.len]
    }
}

/// The register file of the Belady simulation.
struct Simulation<'a> {
    /// Uses of every value (each using instruction once), in program order, by value.
    uses: &'a [u32],
    use_start: &'a [u32],
    /// Per value: index into `uses` of its next use not yet reached.
    next: Vec<u32>,
    in_reg: Vec<bool>,
    needs_slot: Vec<bool>,
    evictions: Vec<(u32, u32)>,
    /// Values made resident in this chunk since the last flush (a superset of `in_reg`).
    resident: Vec<u32>,
    /// `(next use, value)` of resident values; entries go stale when the value is evicted
    /// or used (a fresh entry is pushed then).
    heap: BinaryHeap<(u32, u32)>,
    count: usize,
    registers: usize,
    first_inst: usize,
}

impl Simulation<'_> {
    fn next_use(&self, v: usize) -> u32 {
        if self.next[v] < self.use_start[v + 1] {
            self.uses[self.next[v] as usize]
        } else {
            u32::MAX
        }
    }

    fn needs_home(&mut self, v: usize) {
        if v >= self.first_inst {
            self.needs_slot[v] = true;
        }
    }

    fn insert(&mut self, v: usize) {
        self.in_reg[v] = true;
        self.count += 1;
        self.resident.push(v as u32);
        self.heap.push((self.next_use(v), v as u32));
        if self.resident.len() > 4 * self.registers + 64 {
            let in_reg = &self.in_reg;
            self.resident.retain(|&w| in_reg[w as usize]);
        }
    }

    /// Free one register for the instruction at `pos` if the file is full, evicting the
    /// value used furthest in the future; the lowering drops it before the instruction at
    /// `event`. Operands of `pos` not yet read are never chosen: their next use is `pos`
    /// itself, the nearest possible.
    fn make_room(&mut self, pos: usize, event: usize) {
        while self.count >= self.registers {
            let Some((at, w)) = self.heap.pop() else {
                break;
            };
            let wi = w as usize;
            if !self.in_reg[wi] || self.next_use(wi) != at || at == pos as u32 {
                continue; // stale, or an operand of `pos` (its entry is pushed again after)
            }
            self.in_reg[wi] = false;
            self.count -= 1;
            self.evictions.push((event as u32, w));
            self.needs_home(wi);
        }
    }

    /// Empty the register file: at a chunk start (`at` = None: the chunk function starts
    /// with nothing cached) or after a call (evictions recorded at `at`).
    fn flush(&mut self, at: Option<u32>) {
        for k in 0..self.resident.len() {
            let w = self.resident[k] as usize;
            if self.in_reg[w] {
                self.in_reg[w] = false;
                if let Some(pos) = at {
                    self.evictions.push((pos, w as u32));
                    self.needs_home(w);
                }
            }
        }
        self.resident.clear();
        self.heap.clear();
        self.count = 0;
    }
}

/// Roughly how many Cranelift instructions `inst` becomes: 1, or the size of an inline math
/// routine (85–276 instructions, measured with `clif_text`; `weights_follow_the_emitted_code`
/// checks each within a factor of two).
fn weight(inst: &InstData, opts: &JitOptions) -> usize {
    match *inst {
        InstData::Unary { op, .. } if opts.math.inlines_unary(op) => match op {
            UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Tan => 270,
            UnaryOp::Asin | UnaryOp::Acos | UnaryOp::Sinh => 160,
            UnaryOp::Expm1 | UnaryOp::Cosh | UnaryOp::Tanh => 135,
            _ => 100,
        },
        InstData::Binary { op, .. } if opts.math.inlines_binary(op) => match op {
            BinaryOp::Pow => 250,
            _ => 170,
        },
        _ => 1,
    }
}

/// The chunk functions' instruction ranges: balanced by [`weight`], at most about
/// `chunk_insts` Cranelift instructions each, so that inline math routines (a hundred
/// instructions or more each) do not make one chunk's frame and compile time grow without
/// bound. With unit weights, sizes differ by at most one instruction.
fn chunks(func: &Function, opts: &JitOptions) -> Vec<Range<usize>> {
    chunks_of(func, opts, func.n_params..func.n_values())
}

/// [`chunks`] of the instructions `insts` (value indices).
fn chunks_of(func: &Function, opts: &JitOptions, insts: Range<usize>) -> Vec<Range<usize>> {
    let first_inst = insts.start;
    let n_values = insts.end;
    let n_insts = n_values - first_inst;
    // prefix[k]: the weight of the first k instructions.
    let mut prefix = Vec::with_capacity(n_insts + 1);
    prefix.push(0usize);
    for v in first_inst..n_values {
        let w = func
            .inst(Value::new(v))
            .map_or(1, |inst| weight(inst, opts));
        prefix.push(prefix[prefix.len() - 1] + w);
    }
    let total = prefix[n_insts];
    let n_chunks = total
        .div_ceil(opts.chunk_insts.max(1))
        .clamp(1, n_insts.max(1));
    // Chunk c starts at the first instruction whose prefix reaches c·total/n_chunks.
    let starts: Vec<usize> = (0..n_chunks)
        .map(|c| prefix.partition_point(|&p| p < c * total / n_chunks))
        .chain([n_insts])
        .collect();
    starts
        .windows(2)
        .filter(|w| w[0] < w[1] || n_insts == 0)
        .map(|w| first_inst + w[0]..first_inst + w[1])
        .collect()
}

/// The chunks of a program with `runs`: each run one chunk, the straight-line code between
/// them chunked by [`chunks_of`]; with the run index of each chunk.
fn chunks_with_runs(
    func: &Function,
    opts: &JitOptions,
    runs: &[Run],
) -> (Vec<Range<usize>>, Vec<Option<usize>>) {
    if runs.is_empty() {
        let chunks = chunks(func, opts);
        let kinds = vec![None; chunks.len()];
        return (chunks, kinds);
    }
    let mut chunks = Vec::new();
    let mut kinds = Vec::new();
    let mut at = func.n_params;
    for (r, run) in runs.iter().enumerate() {
        if at < run.start {
            for c in chunks_of(func, opts, at..run.start) {
                chunks.push(c);
                kinds.push(None);
            }
        }
        chunks.push(run.range());
        kinds.push(Some(r));
        at = run.range().end;
    }
    if at < func.n_values() {
        for c in chunks_of(func, opts, at..func.n_values()) {
            chunks.push(c);
            kinds.push(None);
        }
    }
    (chunks, kinds)
}

/// Plan `func` (verified) under `opts`, lowering each of `runs` (from
/// [`crate::roll::find_runs`] on this `func`) as a loop.
pub(crate) fn plan(func: &Function, opts: &JitOptions, runs: &[Run]) -> Plan {
    let n_values = func.n_values();
    let first_inst = func.n_params;
    let registers = opts.registers.max(4);

    let (chunks, chunk_runs) = chunks_with_runs(func, opts, runs);

    let mut live = vec![false; n_values];
    for r in &func.rets {
        live[r.index()] = true;
    }
    for v in (first_inst..n_values).rev() {
        if live[v] {
            if let Some(inst) = func.inst(Value::new(v)) {
                inst.for_each_value(|a| live[a.index()] = true);
            }
        }
    }

    // Uses of every value (each using instruction once), in program order.
    let mut use_start = vec![0u32; n_values + 1];
    for (v, inst) in func.insts().filter(|(v, _)| live[v.index()]) {
        let _ = v;
        let ops = distinct_operands(inst);
        for &a in ops.iter() {
            use_start[a as usize + 1] += 1;
        }
    }
    for v in 0..n_values {
        use_start[v + 1] += use_start[v];
    }
    let mut uses = vec![0u32; use_start[n_values] as usize];
    let mut fill_at: Vec<u32> = use_start[..n_values].to_vec();
    for (v, inst) in func.insts().filter(|(v, _)| live[v.index()]) {
        let ops = distinct_operands(inst);
        for &a in ops.iter() {
            uses[fill_at[a as usize] as usize] = v.index() as u32;
            fill_at[a as usize] += 1;
        }
    }
    let last_use = |v: usize| -> Option<usize> {
        (use_start[v + 1] > use_start[v]).then(|| uses[use_start[v + 1] as usize - 1] as usize)
    };

    // Belady simulation, chunk by chunk.
    let mut sim = Simulation {
        uses: &uses,
        use_start: &use_start,
        next: use_start[..n_values].to_vec(),
        in_reg: vec![false; n_values],
        needs_slot: vec![false; n_values],
        evictions: Vec::new(),
        resident: Vec::new(),
        heap: BinaryHeap::new(),
        count: 0,
        registers,
        first_inst,
    };
    for (range, run) in chunks.iter().zip(&chunk_runs) {
        sim.flush(None);
        if run.is_some() {
            // A loop: every value it reads from before the run needs a home (the loop's
            // own values pass in registers or in the run's homes, decided below).
            for v in range.clone() {
                let Some(inst) = func.inst(Value::new(v)) else {
                    continue;
                };
                let ops = distinct_operands(inst);
                for &a in ops.iter() {
                    if (a as usize) < range.start {
                        sim.needs_home(a as usize);
                    }
                    if live[v] {
                        sim.next[a as usize] += 1;
                    }
                }
            }
            continue;
        }
        for v in range.clone().filter(|&v| live[v]) {
            let Some(inst) = func.inst(Value::new(v)) else {
                continue;
            };
            let ops = distinct_operands(inst);
            for &a in ops.iter() {
                if !sim.in_reg[a as usize] {
                    // Reloaded: evicted earlier, or defined in an earlier chunk.
                    sim.make_room(v, v);
                    sim.needs_home(a as usize);
                    sim.insert(a as usize);
                }
            }
            for &a in ops.iter() {
                let a = a as usize;
                sim.next[a] += 1;
                match sim.next_use(a) {
                    u32::MAX => {
                        sim.in_reg[a] = false;
                        sim.count -= 1;
                    }
                    at => sim.heap.push((at, a as u32)),
                }
            }
            if is_call(inst) {
                // Every register is clobbered; the result arrives in a fresh one.
                sim.flush(Some(v as u32 + 1));
            }
            if sim.next_use(v) != u32::MAX {
                // The victim may be an operand just read: drop it after `v`, not before.
                sim.make_room(v, v + 1);
                sim.insert(v);
            }
        }
    }
    let Simulation {
        needs_slot,
        mut evictions,
        ..
    } = sim;
    evictions.sort_unstable();

    // Values used in a later chunk than their definition need a slot too (covered above: a
    // use in a later chunk always reloads). Colour the slots by interval.
    let mut slots = vec![NO_SLOT; n_values];
    let mut n_slots = 0usize;
    let mut busy: BinaryHeap<Reverse<(usize, u32)>> = BinaryHeap::new();
    let mut free: Vec<u32> = Vec::new();
    let mut next_run = 0usize;
    for v in first_inst..n_values {
        while next_run < runs.len() && runs[next_run].range().end <= v {
            next_run += 1;
        }
        if !needs_slot[v] || runs.get(next_run).is_some_and(|r| r.range().contains(&v)) {
            continue;
        }
        while let Some(&Reverse((end, slot))) = busy.peek() {
            if end >= v {
                break;
            }
            busy.pop();
            free.push(slot);
        }
        let slot = free.pop().unwrap_or_else(|| {
            n_slots += 1;
            (n_slots - 1) as u32
        });
        slots[v] = slot;
        busy.push(Reverse((last_use(v).unwrap_or(v), slot)));
    }

    // Homes of run values read after their iteration (by later code or a later run): one
    // slot if only the last iteration's value is read, else an array of one slot per trip
    // (in a nest: per row and trip, row-major; a gap instruction: one per row but the last).
    let mut homes = Vec::with_capacity(runs.len());
    for run in runs {
        let (rows, row_period) = run.outer.as_ref().map_or((1, 0), |o| (o.trips, o.period));
        let mut run_homes = Vec::with_capacity(run.lowered());
        let mut place = |at: &dyn Fn(usize) -> usize, count: usize| {
            let last = count - 1;
            if !(0..count).any(|i| needs_slot[at(i)]) {
                Home::None
            } else if !(0..last).any(|i| needs_slot[at(i)]) {
                let slot = n_slots as u32;
                n_slots += 1;
                slots[at(last)] = slot;
                Home::Last(slot)
            } else {
                let first = n_slots as u32;
                n_slots += count;
                for i in 0..count {
                    slots[at(i)] = first + i as u32;
                }
                Home::Array(first)
            }
        };
        for t in 0..run.period {
            let at = |i: usize| run.value(t, i % run.trips) + (i / run.trips) * row_period;
            run_homes.push(place(&at, rows * run.trips));
        }
        for u in 0..run.gap_len() {
            let at = |k: usize| run.start + run.row_len() + u + k * row_period;
            run_homes.push(place(&at, rows - 1));
        }
        homes.push(run_homes);
    }

    let mut outputs: Vec<(usize, usize)> = func
        .rets
        .iter()
        .enumerate()
        .map(|(out, r)| (r.index(), out))
        .collect();
    outputs.sort_unstable();
    let fills = fills(func, runs, &mut outputs);

    Plan {
        chunks,
        slots,
        n_slots,
        outputs,
        live,
        evictions,
        registers,
        chunk_runs,
        homes,
        fills,
    }
}

/// The [`Fill`]s of `func`, removed from `outputs` (sorted by value): float constants returned
/// at least [`FILL_MIN_OUTPUTS`] times, outside every run (a run stores its own outputs), on
/// at least three quarters of their span, spans disjoint (a later fill would overwrite an
/// earlier one's outputs; the constant with more outputs is kept).
fn fills(func: &Function, runs: &[Run], outputs: &mut Vec<(usize, usize)>) -> Vec<Fill> {
    let in_run = |v: usize| runs.iter().any(|r| r.range().contains(&v));
    // (outputs, value, first, last) of every candidate.
    let mut candidates: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut at = 0;
    while at < outputs.len() {
        let v = outputs[at].0;
        let end = at + outputs[at..].partition_point(|&(w, _)| w == v);
        let count = end - at;
        let (first, last) = (outputs[at].1, outputs[end - 1].1);
        let is_float_const = v >= func.n_params
            && matches!(
                func.values[v].def,
                adjit_ir::ValueDef::Inst(InstData::Const { ty, .. }) if ty.is_float()
            );
        if count >= FILL_MIN_OUTPUTS
            && 4 * count >= 3 * (last - first + 1)
            && is_float_const
            && !in_run(v)
        {
            candidates.push((count, v, first, last));
        }
        at = end;
    }
    candidates.sort_unstable_by_key(|&(count, v, _, _)| (Reverse(count), v));
    let mut fills: Vec<(usize, Fill)> = Vec::new();
    for (_, v, first, last) in candidates {
        if fills.iter().all(|(_, f)| last < f.first || f.last < first) {
            let adjit_ir::ValueDef::Inst(InstData::Const { bits, .. }) = func.values[v].def else {
                continue;
            };
            fills.push((
                v,
                Fill {
                    value: f64::from_bits(bits),
                    first,
                    last,
                },
            ));
        }
    }
    outputs.retain(|(v, _)| fills.iter().all(|(w, _)| w != v));
    fills.sort_unstable_by_key(|(_, f)| f.first);
    fills.into_iter().map(|(_, f)| f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::MathImpl;
    use adjit_ir::random::{random_function, RandomOptions};
    use adjit_ir::{Builder, Type};

    /// Each inline routine's weight is within a factor of two of the Cranelift instructions it
    /// becomes, so chunks stay near `chunk_insts` instructions whatever the math.
    #[test]
    fn weights_follow_the_emitted_code() {
        let opts = JitOptions {
            math: MathImpl::Inline,
            ..JitOptions::default()
        };
        let lines = |f: &Function| {
            crate::clif_text(f, &opts)
                .expect("compiles")
                .lines()
                .count()
        };
        let program = |op: Option<InstData>| {
            let mut b = Builder::new("f");
            let x = b.param(Type::F64, "x");
            let y = match op {
                Some(InstData::Unary { op, .. }) => b.unary(op, x),
                Some(InstData::Binary { op, .. }) => b.binary(op, x, x),
                _ => b.unary(UnaryOp::Sqrt, x),
            };
            b.finish(&[y])
        };
        let base = lines(&program(None));
        let x = Value::new(0);
        let unary = UnaryOp::ALL
            .iter()
            .filter(|&&op| adjit_ir::mathlib::has_unary(op))
            .map(|&op| InstData::Unary { op, arg: x });
        let binary = [BinaryOp::Pow, BinaryOp::Atan2].map(|op| InstData::Binary {
            op,
            args: [x.into(), x.into()],
        });
        for inst in unary.chain(binary) {
            let emitted = lines(&program(Some(inst.clone()))) - base;
            let w = weight(&inst, &opts);
            assert!(
                emitted <= 2 * w && w <= 2 * emitted,
                "{inst:?}: weight {w}, {emitted} instructions emitted"
            );
        }
    }

    /// A program of inline routines splits into chunks of about `chunk_insts` instructions
    /// (by weight), where counting IR instructions would put all of it in one.
    #[test]
    fn inline_math_makes_more_chunks() {
        let mut b = Builder::new("f");
        let x = b.param(Type::F64, "x");
        let mut acc = x;
        for _ in 0..1000 {
            let t = b.unary(UnaryOp::Tanh, acc);
            acc = b.add(acc, t);
        }
        let func = b.finish(&[acc]);
        let libm = JitOptions {
            math: MathImpl::Libm,
            ..JitOptions::default()
        };
        let inline = JitOptions {
            math: MathImpl::Inline,
            ..JitOptions::default()
        };
        assert_eq!(chunks(&func, &libm).len(), 1);
        let split = chunks(&func, &inline);
        assert_eq!(split.len(), (1000 * 136usize).div_ceil(10_000));
        assert_eq!(split.first().map(|r| r.start), Some(1));
        assert_eq!(split.last().map(|r| r.end), Some(func.n_values()));
        assert!(split
            .windows(2)
            .all(|w| w[0].end == w[1].start && !w[0].is_empty()));
    }

    /// Replay the plan the way the lowering does and check its promises: a reloaded value
    /// has a home whose slot still holds it, and no more than `registers` planned values
    /// are in registers at once.
    fn replay(func: &Function, plan: &Plan) -> usize {
        let n = func.n_values();
        let mut last_use = vec![0usize; n];
        for (v, inst) in func.insts().filter(|(v, _)| plan.live[v.index()]) {
            inst.for_each_value(|a| last_use[a.index()] = v.index());
        }
        let mut owner = vec![usize::MAX; plan.n_slots];
        let mut cached = vec![usize::MAX; n]; // chunk index of the register copy
        let mut in_regs: Vec<usize> = Vec::new();
        let mut ev = 0usize;
        let mut max_live = 0usize;
        for (c, range) in plan.chunks.iter().enumerate() {
            for v in range.clone().filter(|&v| plan.live[v]) {
                while ev < plan.evictions.len() && plan.evictions[ev].0 as usize <= v {
                    cached[plan.evictions[ev].1 as usize] = usize::MAX;
                    ev += 1;
                }
                let Some(inst) = func.inst(Value::new(v)) else {
                    continue;
                };
                let ops = distinct_operands(inst);
                for &a in ops.iter() {
                    let a = a as usize;
                    if cached[a] != c {
                        if a >= func.n_params {
                            let s = plan.slots[a];
                            assert_ne!(s, NO_SLOT, "value {a} reloaded without a home");
                            assert_eq!(owner[s as usize], a, "slot {s} clobbered before use");
                        }
                        cached[a] = c;
                        in_regs.push(a);
                    }
                }
                cached[v] = c;
                in_regs.push(v);
                let s = plan.slots[v];
                if s != NO_SLOT {
                    owner[s as usize] = v;
                }
                // Copies dropped right after `v` (victims of its result) are dead after it.
                while ev < plan.evictions.len() && plan.evictions[ev].0 as usize <= v + 1 {
                    cached[plan.evictions[ev].1 as usize] = usize::MAX;
                    ev += 1;
                }
                // Registers in use after `v`: cached values with a later use.
                in_regs.retain(|&w| cached[w] == c && last_use[w] > v);
                in_regs.sort_unstable();
                in_regs.dedup();
                assert!(
                    in_regs.len() <= plan.registers,
                    "{} values in registers after value {v}, budget {}",
                    in_regs.len(),
                    plan.registers
                );
                max_live = max_live.max(in_regs.len());
            }
            in_regs.clear();
        }
        max_live
    }

    #[test]
    fn plans_keep_their_register_budget_and_homes() {
        for seed in 0..60u64 {
            let func = random_function(
                seed,
                &RandomOptions {
                    n_params: 1 + seed as usize % 5,
                    n_insts: 200 + seed as usize * 41,
                    window: [3, 20, 200][seed as usize % 3],
                    non_smooth: seed % 2 == 0,
                    ..RandomOptions::default()
                },
            );
            let func = crate::schedule::schedule(&func);
            for registers in [4, 7, 12] {
                let opts = JitOptions {
                    registers,
                    chunk_insts: [100_000, 300, 57][seed as usize % 3],
                    ..JitOptions::default()
                };
                let plan = plan(&func, &opts, &[]);
                let max = replay(&func, &plan);
                assert!(max <= registers);
            }
        }
    }

    #[test]
    fn slots_are_reused() {
        let func = random_function(
            7,
            &RandomOptions {
                n_insts: 3000,
                window: 400,
                ..RandomOptions::default()
            },
        );
        // Library calls: every instruction weighs one, so 3000 instructions make 5 chunks.
        let opts = JitOptions {
            registers: 6,
            chunk_insts: 700,
            math: MathImpl::Libm,
            ..JitOptions::default()
        };
        let plan = plan(&func, &opts, &[]);
        assert!(plan.chunks.len() == 5 && plan.n_slots > 0);
        replay(&func, &plan);
        assert!(plan.n_slots < func.n_values() / 2, "slots are reused");
    }
}
