//! Paired loops: a run of one-lane code lowered two iterations per trip.
//!
//! A template position is *serial* when it reads a value carried from the previous iteration,
//! or a serial position of its own iteration; every other position is *parallel*: iterations
//! `j` and `j + 1` of it are independent. Each trip computes the parallel positions once, on
//! two-lane vectors (iteration `j` in lane 0, `j + 1` in lane 1, the representation of
//! two-lane batches, see [`crate::lanes`]), then the serial positions of iteration `j` and
//! then of `j + 1` in scalar registers, reading parallel values out of their lanes. A last
//! odd iteration runs after the loop in scalar code. The operations are those of the scalar
//! loop, each applied to the same operands (two-lane code is bitwise the scalar code in every
//! lane), and carried values still pass through every iteration in order, so the results
//! are bitwise those of the straight-line program.
//!
//! Pairing pays where the parallel part holds work a vector does at the price of a scalar
//! (inline `tanh`, `sqrt`, divisions) and costs where values cross between the parts (a lane
//! extracted for each serial use) or memory is not contiguous (two loads and an insert).
//! [`serial_positions`] weighs both per iteration and pairs only runs that gain clearly.

use std::collections::HashMap;

use adjit_ir::{BinaryOp, Function, InstData, Type, UnaryOp, Value, ValueDef};
use cranelift_codegen::ir::{self, condcodes::IntCC, types, InstBuilder, MemFlagsData};
use cranelift_module::Module;

use super::{offset, Lowerer, RowValues, FLAGS, READONLY};
use crate::abi::clif_type;
use crate::error::JitError;
use crate::lanes::{lane_type, Lanes};
use crate::options::{MathImpl, Pairing};
use crate::plan::{Home, NO_SLOT};
use crate::roll::{Across, Run, Source};

/// Vector accesses to `outputs` and `work`: two 8-byte slots, 8-aligned only.
pub(super) const PAIR: MemFlagsData = MemFlagsData::new().with_notrap();
/// Vector loads from `inputs` and the constant table (see [`super::READONLY`]).
pub(super) const PAIR_READONLY: MemFlagsData = MemFlagsData::new()
    .with_notrap()
    .with_readonly()
    .with_can_move();

/// Estimated cycles a trip spends on the loop itself: the counter's add, its compare and the
/// branch. Pairing pays them once for two iterations.
pub(super) const LOOP_OVERHEAD: i64 = 3;
/// Fewest estimated cycles per trip (two iterations) that pairing must save to be used…
pub(super) const MIN_GAIN: i64 = 4;
/// …and the least share of the unpaired loop's estimated cost it must save: one fifth.
pub(super) const MIN_SHARE: i64 = 5;

/// The serial positions of `run` (see the module docs) if `pairing` pairs it (under
/// [`Pairing::Auto`], if that pays), else `None`. A nest's inner loop is paired in every row
/// alike.
pub(crate) fn serial_positions(
    func: &Function,
    runs: &[Run],
    run: &Run,
    pairing: Pairing,
    math: MathImpl,
) -> Option<Vec<bool>> {
    if pairing == Pairing::Off {
        return None;
    }
    let period = run.period;
    let mut serial = vec![false; period];
    for t in 0..period {
        serial[t] = run.sources[t].iter().any(|&src| match src {
            Source::Carried { .. } => true,
            Source::Same { pos } => serial[pos as usize],
            Source::Affine { .. } => false,
        });
    }
    if pairing == Pairing::Always {
        return Some(serial);
    }
    // Estimated cycles per iteration unpaired (`cost`), and saved per trip paired (`gain`):
    // a parallel instruction is paid once for two iterations; memory is one vector access
    // for two where it is contiguous, else an insert or an extract more.
    let mut cost = LOOP_OVERHEAD;
    let mut gain = LOOP_OVERHEAD;
    let mut crossing = vec![false; period];
    for t in 0..period {
        let (_, inst, operands) = template(func, run, t);
        let (cycles, paired) = inst_cost(inst, math);
        let tables = run.tables.iter().filter(|table| table.pos as usize == t);
        let moving = run.sources[t]
            .iter()
            .filter(|src| matches!(src, Source::Affine { step, .. } if *step != 0))
            .count();
        cost += cycles + moving as i64 + tables.clone().count() as i64;
        cost += run.outputs[t].len() as i64;
        if serial[t] {
            // Each parallel value a serial position reads is extracted from its lanes: lane 1
            // by a shuffle (lane 0 is the register itself), 1 per trip.
            for &src in &run.sources[t] {
                if let Source::Same { pos } = src {
                    crossing[pos as usize] |= !serial[pos as usize];
                }
            }
            continue;
        }
        gain += paired;
        for (&src, a) in run.sources[t].iter().zip(operands) {
            if let Source::Affine { step, .. } = src {
                if step != 0 {
                    let adjacent = func.is_param(a) || func.values[a.index()].ty == Type::F64;
                    // Backwards, the one load's lanes are swapped.
                    gain += match memory_stride(func, runs, a, step) {
                        Some(1) if adjacent => 1,
                        Some(-1) if adjacent => 0,
                        _ => -2,
                    };
                }
            }
        }
        gain += tables
            .map(|table| if table.ty == Type::F64 { 1 } else { -2 })
            .sum::<i64>();
        gain += run.outputs[t]
            .iter()
            .map(|store| match store.step {
                1 => 1,
                -1 => 0,
                _ => -1,
            })
            .sum::<i64>();
    }
    gain -= crossing.iter().filter(|&&c| c).count() as i64;
    (gain >= MIN_GAIN && gain * MIN_SHARE >= 2 * cost).then_some(serial)
}

/// The distance in memory (in slots) from iteration `j`'s read of operand `a` (iteration 0's)
/// to iteration `j + 1`'s, which lie `step` values apart: a parameter's inputs lie in value
/// order; an earlier run's array holds one slot per iteration of its template position, so
/// reading it at a multiple of its period is a unit stride (a reverse sweep reads the forward
/// sweep's arrays backwards: −1). `None` when unknown.
fn memory_stride(func: &Function, runs: &[Run], a: Value, step: i64) -> Option<i64> {
    if func.is_param(a) {
        return Some(step);
    }
    let v = a.index();
    let k = runs.partition_point(|r| r.start <= v).checked_sub(1)?;
    let (_, period) = runs[k].iteration_of(v)?;
    (step % period as i64 == 0).then(|| step / period as i64)
}

/// Estimated cycles of one instruction in scalar code, and what a vector saves by paying
/// them once for two iterations: the same, except for a routine called from the C library,
/// which runs once per lane with its lanes extracted and rebuilt (a loss).
pub(super) fn inst_cost(inst: &InstData, math: MathImpl) -> (i64, i64) {
    const CALLED: (i64, i64) = (20, -3);
    let cycles = match *inst {
        InstData::Const { .. } => 0,
        InstData::Unary { op, .. } => match op {
            UnaryOp::Neg | UnaryOp::Abs => 1,
            UnaryOp::Floor | UnaryOp::Ceil => 2,
            UnaryOp::Sqrt => 12,
            _ if math.inlines_unary(op) => 40,
            _ => return CALLED,
        },
        InstData::Binary { op, .. } => match op {
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul => 1,
            BinaryOp::Div => 10,
            BinaryOp::Min | BinaryOp::Max => 4,
            BinaryOp::Pow | BinaryOp::Atan2 if math.inlines_binary(op) => 60,
            BinaryOp::Pow | BinaryOp::Atan2 => return CALLED,
        },
        InstData::Fma { .. } | InstData::Fcmp { .. } => 1,
        InstData::Fpromote { .. } | InstData::Fdemote { .. } => 1,
        InstData::Powi { exp, .. } => i64::from(exp.unsigned_abs().max(1).ilog2()) + 1,
        InstData::Select { .. } => 2,
    };
    (cycles, cycles)
}

/// Template position `t` of `run`: its value (in iteration 0), instruction and value
/// operands (in text order).
fn template<'f>(func: &'f Function, run: &Run, t: usize) -> (usize, &'f InstData, Vec<Value>) {
    let v = run.value(t, 0);
    let ValueDef::Inst(inst) = &func.values[v].def else {
        unreachable!("a run holds instructions only")
    };
    let mut operands = Vec::with_capacity(3);
    inst.for_each_value(|a| operands.push(a));
    (v, inst, operands)
}

/// Byte offset of 8-byte slot `index` (which may be computed from a negative stride).
fn slot_bytes(index: i64) -> Result<i32, JitError> {
    usize::try_from(index)
        .map_err(|_| JitError::TooLarge(format!("buffer index {index}")))
        .and_then(offset)
}

/// The loop being lowered: its run, where its values live, its carried positions, and in a
/// nest the current row's registers.
struct Paired<'r> {
    run: &'r Run,
    homes: &'r [Home],
    /// The first entry of each of the run's literal tables.
    tables: &'r [u32],
    /// The carried positions, each with its value before the run, by position.
    carried: Vec<(u32, u32)>,
    row: &'r RowValues,
}

impl Paired<'_> {
    /// The index of carried position `pos` in [`Paired::carried`].
    fn carried_index(&self, pos: u32) -> usize {
        self.carried.partition_point(|&(p, _)| p < pos)
    }

    /// How far operand `c` of template position `t` moves per row (0 outside nests).
    fn row_step(&self, t: usize, c: usize) -> i64 {
        match self.run.outer.as_deref().and_then(|o| o.inner[t][c]) {
            Some(Across::Affine { step, .. }) => step,
            _ => 0,
        }
    }

    /// `buffer` advanced to the current row, `bytes` per row.
    fn row_base(&self, buffer: ir::Value, bytes: i64) -> ir::Value {
        if bytes == 0 {
            buffer
        } else {
            self.row.bases[&(buffer, bytes)]
        }
    }

    /// Bytes per row of the run's arrays in `work` (0 outside nests).
    fn array_rows(&self) -> i64 {
        self.run
            .outer
            .as_ref()
            .map_or(0, |_| 8 * self.run.trips as i64)
    }
}

/// Addresses within one block: the iteration counter (the trip's first iteration), buffers
/// advanced by it, and the values loaded (by IR value, row step, step and lane, [`BOTH`]
/// for a vector).
struct Cursor {
    j: ir::Value,
    advanced: HashMap<(ir::Value, i64), ir::Value>,
    loaded: HashMap<(usize, i64, i64, usize), ir::Value>,
}

/// The lane key of a two-lane value in [`Cursor::loaded`].
const BOTH: usize = 2;

impl Cursor {
    fn new(j: ir::Value) -> Cursor {
        Cursor {
            j,
            advanced: HashMap::new(),
            loaded: HashMap::new(),
        }
    }
}

/// The values of one trip, by template position.
struct Trip {
    /// Parallel positions' two-lane values.
    vector: Vec<Option<ir::Value>>,
    /// Serial positions' values of iterations `j` and `j + 1`.
    scalar: [Vec<Option<ir::Value>>; 2],
    /// Lanes extracted from `vector`, by (position, lane).
    lanes: HashMap<(usize, usize), ir::Value>,
}

/// One iteration's scalar code being lowered: iteration `j + lane` of the trip.
struct Iteration {
    lane: usize,
    /// The positions lowered so far.
    own: Vec<Option<ir::Value>>,
    /// The carried positions' values in the iteration before.
    prev: Vec<ir::Value>,
}

impl<M: Module> Lowerer<'_, '_, M> {
    /// `run` as a paired loop (see the module docs; in a nest, the current row's, with
    /// `row` its registers); `serial` from [`serial_positions`]. Ends with the builder after
    /// the loop and returns the last iteration's values by template position, which a
    /// nest's gap reads (empty for a single loop: nothing reads them).
    pub(super) fn paired_loop(
        &mut self,
        run: &Run,
        homes: &[Home],
        row: &RowValues,
        tables: &[u32],
        serial: &[bool],
    ) -> Result<Vec<ir::Value>, JitError> {
        let func = self.input.func;
        let ptr = self.module.target_config().pointer_type();
        let period = run.period;
        // Loop invariants before the loop (in a nest, the row's): scalars for serial readers,
        // splats for parallel ones, by operand.
        let mut invariants: HashMap<(usize, usize), ir::Value> = HashMap::new();
        let mut splats: HashMap<(usize, usize), ir::Value> = HashMap::new();
        let mut splatted: HashMap<ir::Value, ir::Value> = HashMap::new();
        for (t, srcs) in run.sources.iter().enumerate() {
            let (_, _, operands) = template(func, run, t);
            for (c, (&src, a)) in srcs.iter().zip(operands).enumerate() {
                if let Source::Affine { step: 0, .. } = src {
                    let x = match row.operands.get(&(t, c)) {
                        Some(&x) => x,
                        None => self.use_value(a)?,
                    };
                    invariants.insert((t, c), x);
                    if !serial[t] {
                        let ty = func.values[a.index()].ty;
                        let v = match splatted.get(&x) {
                            Some(&v) => v,
                            None => {
                                let v = self.pack(ty, [x, x]);
                                splatted.insert(x, v);
                                v
                            }
                        };
                        splats.insert((t, c), v);
                    }
                }
            }
        }
        let (carried, firsts) = self.carried_positions(run, row)?;
        let mut inits = vec![ir::BlockArg::Value(self.b.ins().iconst(ptr, 0))];
        inits.extend(firsts.into_iter().map(ir::BlockArg::Value));
        let p = Paired {
            run,
            homes,
            tables,
            carried,
            row,
        };
        let header = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, ptr);
        for &(pos, _) in &p.carried {
            let ty = func.values[run.value(pos as usize, 0)].ty;
            self.b.append_block_param(header, clif_type(ty));
        }
        self.b.ins().jump(header, &inits);
        self.b.switch_to_block(header);
        let params = self.b.block_params(header).to_vec();
        let mut at = Cursor::new(params[0]);
        let mut trip = Trip {
            vector: vec![None; period],
            scalar: [vec![None; period], vec![None; period]],
            lanes: HashMap::new(),
        };
        self.body_literals = Some(HashMap::new());
        // The parallel part, both iterations at once.
        for t in (0..period).filter(|&t| !serial[t]) {
            let x = self.pair_position(&p, &mut at, &trip, &splats, t)?;
            trip.vector[t] = Some(x);
            self.pair_stores(&p, &mut at, t, x)?;
        }
        // The serial part: iteration j, then j + 1.
        for lane in 0..2 {
            let prev = match lane {
                0 => params[1..].to_vec(),
                _ => self.carried_values(&p, &mut trip, 0)?,
            };
            let own = std::mem::take(&mut trip.scalar[lane]);
            let mut it = Iteration { lane, own, prev };
            for t in (0..period).filter(|&t| serial[t]) {
                let x = self.scalar_position(&p, &mut at, &mut trip, &mut it, &invariants, t)?;
                it.own[t] = Some(x);
                self.scalar_stores(&p, &mut at, t, lane, x)?;
            }
            trip.scalar[lane] = it.own;
        }
        self.body_literals = None;
        let pairs = i64::try_from(run.trips / 2)
            .map_err(|_| JitError::TooLarge(format!("a loop of {} trips", run.trips)))?;
        let next = self.b.ins().iadd_imm_s(at.j, 2);
        let more = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, next, 2 * pairs);
        let last = self.carried_values(&p, &mut trip, 1)?;
        let mut args = vec![ir::BlockArg::Value(next)];
        args.extend(last.iter().map(|&x| ir::BlockArg::Value(x)));
        self.b.ins().brif(more, header, &args, exit, &[]);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        // The header, which defines the trip's values, is the exit's only predecessor.
        let nested = run.outer.is_some();
        if run.trips.is_multiple_of(2) {
            let mut body = Vec::with_capacity(if nested { period } else { 0 });
            for (t, &home) in homes.iter().enumerate().take(period) {
                if !nested && !matches!(home, Home::Last(_)) {
                    continue;
                }
                let x = self.value_in_lane(&p, &mut trip, t, 1)?;
                if nested {
                    body.push(x);
                }
                if let Home::Last(slot) = home {
                    let off = self.slot_offset(slot)?;
                    self.b.ins().store(FLAGS, x, self.work, off);
                }
            }
            Ok(body)
        } else {
            // The odd last iteration, every position in scalar code.
            let j = self.b.ins().iconst(ptr, run.trips as i64 - 1);
            let mut at = Cursor::new(j);
            let mut it = Iteration {
                lane: 0,
                own: vec![None; period],
                prev: last,
            };
            self.body_literals = Some(HashMap::new());
            for (t, &home) in homes.iter().enumerate().take(period) {
                let x = self.scalar_position(&p, &mut at, &mut trip, &mut it, &invariants, t)?;
                it.own[t] = Some(x);
                self.scalar_stores(&p, &mut at, t, 0, x)?;
                if let Home::Last(slot) = home {
                    let off = self.slot_offset(slot)?;
                    self.b.ins().store(FLAGS, x, self.work, off);
                }
            }
            self.body_literals = None;
            Ok(it.own.into_iter().flatten().collect())
        }
    }

    /// The carried positions' values in iteration `j + lane` of the trip.
    fn carried_values(
        &mut self,
        p: &Paired,
        trip: &mut Trip,
        lane: usize,
    ) -> Result<Vec<ir::Value>, JitError> {
        let positions: Vec<usize> = p.carried.iter().map(|&(pos, _)| pos as usize).collect();
        positions
            .into_iter()
            .map(|pos| self.value_in_lane(p, trip, pos, lane))
            .collect()
    }

    /// Parallel position `t` of iterations `j` and `j + 1`, lowered on two-lane vectors.
    fn pair_position(
        &mut self,
        p: &Paired,
        at: &mut Cursor,
        trip: &Trip,
        splats: &HashMap<(usize, usize), ir::Value>,
        t: usize,
    ) -> Result<ir::Value, JitError> {
        let func = self.input.func;
        let (v, inst, operands) = template(func, p.run, t);
        let mut overrides = Vec::with_capacity(3);
        for (c, (a, &src)) in operands.into_iter().zip(&p.run.sources[t]).enumerate() {
            let ty = func.values[a.index()].ty;
            let row_step = p.row_step(t, c);
            let key = (a.index(), row_step, 0, BOTH);
            let x = match src {
                Source::Same { pos } => trip.vector[pos as usize].expect("parallel operand"),
                Source::Carried { .. } => {
                    unreachable!("a parallel position reads no carried value")
                }
                Source::Affine { step: 0, .. } => splats[&(t, c)],
                Source::Affine { base, step } => match at.loaded.get(&(key.0, key.1, step, BOTH)) {
                    Some(&x) => x,
                    None => {
                        let x = if func.is_param(a) {
                            let rows = p.row_base(self.inputs, 8 * row_step);
                            let first = i64::from(base);
                            let raw =
                                self.load_pair(at, rows, Type::F64, first, step, PAIR_READONLY)?;
                            self.lanes = Lanes::Two;
                            let x = self.boundary_to_value(raw, ty);
                            self.lanes = Lanes::One;
                            x
                        } else {
                            let (s0, stride) = self.array_of(base, step);
                            let rows = p.row_base(self.work, self.row_stride(base, row_step, 8)?);
                            self.load_pair(at, rows, ty, i64::from(s0), stride, PAIR)?
                        };
                        at.loaded.insert((key.0, key.1, step, BOTH), x);
                        x
                    }
                },
            };
            overrides.push((a.index(), x));
        }
        for (table, &entry) in p.run.tables.iter().zip(p.tables) {
            if table.pos as usize == t {
                let base = self.table_rows(p);
                let x = self.load_pair(at, base, table.ty, i64::from(entry), 1, PAIR_READONLY)?;
                self.tabled[table.slot as usize] = Some(x);
            }
        }
        self.overrides = overrides;
        self.lanes = Lanes::Two;
        let x = self.lower_inst(v, inst);
        self.lanes = Lanes::One;
        self.overrides.clear();
        self.tabled = [None; 3];
        x
    }

    /// Slots `first + stride·j` and `first + stride·(j + 1)` of `buffer` (8-byte slots
    /// holding values of type `ty`) as a two-lane value: one vector load (with `flags`) where
    /// they are adjacent `f64`s (its lanes swapped where the stride is −1), else two loads
    /// and an insert.
    fn load_pair(
        &mut self,
        at: &mut Cursor,
        buffer: ir::Value,
        ty: Type,
        first: i64,
        stride: i64,
        flags: MemFlagsData,
    ) -> Result<ir::Value, JitError> {
        let base = self.advance(&mut at.advanced, buffer, at.j, 8 * stride);
        if stride.abs() == 1 && ty == Type::F64 {
            let low = first.min(first + stride);
            let x = self
                .b
                .ins()
                .load(types::F64X2, flags, base, slot_bytes(low)?);
            return Ok(if stride == 1 { x } else { self.swap_lanes(x) });
        }
        let mut lanes = [base; 2];
        for (k, x) in lanes.iter_mut().enumerate() {
            let off = slot_bytes(first + k as i64 * stride)?;
            *x = self.b.ins().load(clif_type(ty), FLAGS, base, off);
        }
        Ok(self.pack(ty, lanes))
    }

    /// Serial position `t` of iteration `it` in scalar code (operands of parallel positions
    /// read from `trip`'s lanes).
    fn scalar_position(
        &mut self,
        p: &Paired,
        at: &mut Cursor,
        trip: &mut Trip,
        it: &mut Iteration,
        invariants: &HashMap<(usize, usize), ir::Value>,
        t: usize,
    ) -> Result<ir::Value, JitError> {
        let func = self.input.func;
        let (v, inst, operands) = template(func, p.run, t);
        let mut overrides = Vec::with_capacity(3);
        let lane = it.lane as i64;
        for (c, (a, &src)) in operands.into_iter().zip(&p.run.sources[t]).enumerate() {
            let ty = func.values[a.index()].ty;
            let row_step = p.row_step(t, c);
            let key = (a.index(), row_step, 0, it.lane);
            let x = match src {
                Source::Same { pos } => match it.own[pos as usize] {
                    Some(x) => x,
                    None => self.value_in_lane(p, trip, pos as usize, it.lane)?,
                },
                Source::Carried { pos, .. } => it.prev[p.carried_index(pos)],
                Source::Affine { step: 0, .. } => invariants[&(t, c)],
                Source::Affine { base, step } => {
                    match at.loaded.get(&(key.0, key.1, step, key.3)) {
                        Some(&x) => x,
                        None => {
                            let x = if func.is_param(a) {
                                let rows = p.row_base(self.inputs, 8 * row_step);
                                let base_at = self.advance(&mut at.advanced, rows, at.j, 8 * step);
                                let off = slot_bytes(i64::from(base) + lane * step)?;
                                let raw = self.b.ins().load(types::F64, READONLY, base_at, off);
                                self.boundary_to_value(raw, ty)
                            } else {
                                let (s0, stride) = self.array_of(base, step);
                                let rows =
                                    p.row_base(self.work, self.row_stride(base, row_step, 8)?);
                                let base_at =
                                    self.advance(&mut at.advanced, rows, at.j, 8 * stride);
                                let off = slot_bytes(i64::from(s0) + lane * stride)?;
                                self.b.ins().load(clif_type(ty), FLAGS, base_at, off)
                            };
                            at.loaded.insert((key.0, key.1, step, key.3), x);
                            x
                        }
                    }
                }
            };
            overrides.push((a.index(), x));
        }
        for (table, &entry) in p.run.tables.iter().zip(p.tables) {
            if table.pos as usize == t {
                let base = self.table_rows(p);
                let base_at = self.advance(&mut at.advanced, base, at.j, 8);
                let off = slot_bytes(i64::from(entry) + lane)?;
                let x = self
                    .b
                    .ins()
                    .load(clif_type(table.ty), READONLY, base_at, off);
                self.tabled[table.slot as usize] = Some(x);
            }
        }
        self.overrides = overrides;
        let x = self.lower_inst(v, inst);
        self.overrides.clear();
        self.tabled = [None; 3];
        x
    }

    /// The constant table advanced to the current row's entries (row k's iterations start at
    /// entry k·trips of each inner table).
    fn table_rows(&self, p: &Paired) -> ir::Value {
        let per_row = p.run.outer.as_ref().map_or(0, |_| {
            p.run.trips as i64 * self.input.consts.entry_bytes as i64
        });
        p.row_base(self.table_base(), per_row)
    }

    /// The work slot of an earlier run's value `base` (iteration 0 of this run's read) and
    /// the slot stride from one iteration's read to the next.
    fn array_of(&self, base: u32, step: i64) -> (u32, i64) {
        let slots = &self.input.plan.slots;
        let s0 = slots[base as usize];
        let s1 = slots[(i64::from(base) + step) as usize];
        assert!(
            s0 != NO_SLOT && s1 != NO_SLOT,
            "plan: run operand v{base} without an array home"
        );
        (s0, i64::from(s1) - i64::from(s0))
    }

    /// Stores of parallel position `t`'s vector `x` (iterations `j`, `j + 1`): its array
    /// home and its outputs.
    fn pair_stores(
        &mut self,
        p: &Paired,
        at: &mut Cursor,
        t: usize,
        x: ir::Value,
    ) -> Result<(), JitError> {
        let ty = self.input.func.values[p.run.value(t, 0)].ty;
        if let Home::Array(first) = p.homes[t] {
            let base = self.array_base(p, at);
            let off = self.slot_offset(first)?;
            if ty == Type::F64 {
                self.b.ins().store(PAIR, x, base, off);
            } else {
                for k in 0..2 {
                    let y = self.unpack(ty, x, k);
                    self.b.ins().store(FLAGS, y, base, off + 8 * k as i32);
                }
            }
        }
        if p.run.outputs[t].is_empty() {
            return Ok(());
        }
        self.lanes = Lanes::Two;
        let y = self.value_to_boundary(x, ty);
        self.lanes = Lanes::One;
        for (s, store) in p.run.outputs[t].iter().enumerate() {
            let base = self.output_base(p, at, t, s);
            if store.step.abs() == 1 {
                let first = i64::from(store.first);
                let (y, off) = match store.step {
                    1 => (y, slot_bytes(first)?),
                    _ => (self.swap_lanes(y), slot_bytes(first - 1)?),
                };
                self.b.ins().store(PAIR, y, base, off);
            } else {
                for k in 0..2 {
                    let lane = self.unpack(Type::F64, y, k);
                    let off = slot_bytes(i64::from(store.first) + k as i64 * store.step)?;
                    self.b.ins().store(FLAGS, lane, base, off);
                }
            }
        }
        Ok(())
    }

    /// Stores of serial position `t`'s value `x` of iteration `j + lane`: its array home and
    /// its outputs.
    fn scalar_stores(
        &mut self,
        p: &Paired,
        at: &mut Cursor,
        t: usize,
        lane: usize,
        x: ir::Value,
    ) -> Result<(), JitError> {
        let ty = self.input.func.values[p.run.value(t, 0)].ty;
        if let Home::Array(first) = p.homes[t] {
            let base = self.array_base(p, at);
            let off = slot_bytes(i64::from(first) + lane as i64)?;
            self.b.ins().store(FLAGS, x, base, off);
        }
        if p.run.outputs[t].is_empty() {
            return Ok(());
        }
        let y = self.value_to_boundary(x, ty);
        for (s, store) in p.run.outputs[t].iter().enumerate() {
            let base = self.output_base(p, at, t, s);
            let off = slot_bytes(i64::from(store.first) + lane as i64 * store.step)?;
            self.b.ins().store(FLAGS, y, base, off);
        }
        Ok(())
    }

    /// `work` advanced to iteration `j`'s slot of the run's arrays (in the current row).
    fn array_base(&mut self, p: &Paired, at: &mut Cursor) -> ir::Value {
        let rows = p.row_base(self.work, p.array_rows());
        self.advance(&mut at.advanced, rows, at.j, 8)
    }

    /// `outputs` advanced to iteration `j`'s output of store `s` of position `t` (in the
    /// current row).
    fn output_base(&mut self, p: &Paired, at: &mut Cursor, t: usize, s: usize) -> ir::Value {
        let per_row = p.run.outer.as_ref().map_or(0, |o| o.inner_outputs[t][s]);
        let rows = p.row_base(self.outputs, 8 * per_row);
        let step = p.run.outputs[t][s].step;
        self.advance(&mut at.advanced, rows, at.j, 8 * step)
    }

    /// Position `t`'s value in iteration `j + lane` of the current trip, as a scalar.
    fn value_in_lane(
        &mut self,
        p: &Paired,
        trip: &mut Trip,
        t: usize,
        lane: usize,
    ) -> Result<ir::Value, JitError> {
        // (While a lane's serial part is lowered, its values are the caller's.)
        if let Some(x) = trip.scalar[lane].get(t).copied().flatten() {
            return Ok(x);
        }
        if let Some(&x) = trip.lanes.get(&(t, lane)) {
            return Ok(x);
        }
        let v = trip.vector[t].expect("a position is serial or parallel");
        let ty = self.input.func.values[p.run.value(t, 0)].ty;
        let x = self.unpack(ty, v, lane);
        trip.lanes.insert((t, lane), x);
        Ok(x)
    }

    /// Scalars of type `ty` (one-lane registers) as lanes 0 and 1 of a two-lane value.
    pub(super) fn pack(&mut self, ty: Type, lanes: [ir::Value; 2]) -> ir::Value {
        let [x0, x1] = match ty {
            // An `i8` 0/1 as a 64-bit mask of all ones or all zeros.
            Type::Bool => lanes.map(|x| {
                let wide = self.b.ins().uextend(types::I64, x);
                self.b.ins().ineg(wide)
            }),
            _ => lanes,
        };
        let v = self.b.ins().scalar_to_vector(lane_type(ty), x0);
        self.b.ins().insertlane(v, x1, 1)
    }

    /// The `F64X2` `x` with its lanes swapped (iterations `j`, `j + 1` read or written
    /// backwards).
    pub(super) fn swap_lanes(&mut self, x: ir::Value) -> ir::Value {
        let order = [8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7];
        self.shuffle_bytes(x, order, types::F64X2)
    }

    /// Lane `lane` of the two-lane value `v` of type `ty`, as a one-lane register.
    pub(super) fn unpack(&mut self, ty: Type, v: ir::Value, lane: usize) -> ir::Value {
        let x = self.b.ins().extractlane(v, lane as u8);
        match ty {
            Type::Bool => self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
            _ => x,
        }
    }
}
