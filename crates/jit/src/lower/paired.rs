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

use super::{offset, Lowerer, FLAGS};
use crate::abi::clif_type;
use crate::error::JitError;
use crate::lanes::{lane_type, Lanes};
use crate::options::{MathImpl, Pairing};
use crate::plan::{Home, NO_SLOT};
use crate::roll::{Run, Source};

/// Vector accesses to `outputs` and `work`: two 8-byte slots, 8-aligned only.
const PAIR: MemFlagsData = MemFlagsData::new().with_notrap();
/// Vector loads from `inputs` and the constant table (see [`super::READONLY`]).
const PAIR_READONLY: MemFlagsData = MemFlagsData::new()
    .with_notrap()
    .with_readonly()
    .with_can_move();

/// Fewest estimated cycles per trip (two iterations) that pairing must save to be used.
const MIN_GAIN: i64 = 12;

/// The serial positions of `run` (see the module docs) if `pairing` pairs it (under
/// [`Pairing::Auto`], if that pays), else `None`. Nests are not paired.
pub(crate) fn serial_positions(
    func: &Function,
    run: &Run,
    pairing: Pairing,
    math: MathImpl,
) -> Option<Vec<bool>> {
    if pairing == Pairing::Off || run.outer.is_some() {
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
    // Cycles saved per trip: a parallel instruction is paid once for two iterations; memory
    // is one vector access for two where it is contiguous, else an insert or extract more.
    let mut gain = 0i64;
    let mut crossing = vec![false; period];
    for t in (0..period).filter(|&t| !serial[t]) {
        let v = run.value(t, 0);
        let ValueDef::Inst(inst) = &func.values[v].def else {
            return None;
        };
        gain += scalar_cost(inst, math);
        let ty = func.values[v].ty;
        for &src in &run.sources[t] {
            gain += match src {
                Source::Affine { step: 0, .. } | Source::Same { .. } | Source::Carried { .. } => 0,
                // One vector load for two scalar loads, or two loads and an insert.
                Source::Affine { base, step } => {
                    let contiguous = if func.is_param(Value::new(base as usize)) {
                        step == 1
                    } else {
                        step == 1 && ty == Type::F64
                    };
                    if contiguous {
                        1
                    } else {
                        -2
                    }
                }
            };
        }
        gain += run
            .tables
            .iter()
            .filter(|table| table.pos as usize == t)
            .map(|table| if table.ty == Type::F64 { 1 } else { -2 })
            .sum::<i64>();
        gain += run.outputs[t]
            .iter()
            .map(|store| if store.step == 1 { 1 } else { -1 })
            .sum::<i64>();
    }
    // Each parallel value a serial position reads is extracted from its lanes.
    for t in (0..period).filter(|&t| serial[t]) {
        for &src in &run.sources[t] {
            if let Source::Same { pos } = src {
                if !serial[pos as usize] {
                    crossing[pos as usize] = true;
                }
            }
        }
    }
    gain -= 2 * crossing.iter().filter(|&&c| c).count() as i64;
    (gain >= MIN_GAIN).then_some(serial)
}

/// Estimated cycles of one instruction in scalar code, which a vector pays once for two
/// iterations; negative where the vector form costs more (a called routine runs once per
/// lane, with its lanes extracted and rebuilt).
fn scalar_cost(inst: &InstData, math: MathImpl) -> i64 {
    match *inst {
        InstData::Const { .. } => 0,
        InstData::Unary { op, .. } => match op {
            UnaryOp::Neg | UnaryOp::Abs => 1,
            UnaryOp::Floor | UnaryOp::Ceil => 2,
            UnaryOp::Sqrt => 12,
            _ if math.inlines_unary(op) => 40,
            _ => -3,
        },
        InstData::Binary { op, .. } => match op {
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul => 1,
            BinaryOp::Div => 10,
            BinaryOp::Min | BinaryOp::Max => 4,
            BinaryOp::Pow | BinaryOp::Atan2 if math.inlines_binary(op) => 60,
            BinaryOp::Pow | BinaryOp::Atan2 => -3,
        },
        InstData::Fma { .. } | InstData::Fcmp { .. } => 1,
        InstData::Fpromote { .. } | InstData::Fdemote { .. } => 1,
        InstData::Powi { exp, .. } => i64::from(exp.unsigned_abs().max(1).ilog2()) + 1,
        InstData::Select { .. } => 2,
    }
}

/// Byte offset of 8-byte slot `index` (which may be computed from a negative stride).
fn slot_bytes(index: i64) -> Result<i32, JitError> {
    usize::try_from(index)
        .map_err(|_| JitError::TooLarge(format!("buffer index {index}")))
        .and_then(offset)
}

/// The values of one trip or iteration, by template position.
struct Trip {
    /// Parallel positions' two-lane values (this trip's).
    vector: Vec<Option<ir::Value>>,
    /// Serial positions' values of iterations `j` and `j + 1`.
    scalar: [Vec<Option<ir::Value>>; 2],
    /// Lanes extracted from `vector`, by (position, lane).
    lanes: HashMap<(usize, usize), ir::Value>,
}

impl<M: Module> Lowerer<'_, '_, M> {
    /// `run` as a paired loop (see the module docs); `serial` from [`serial_positions`].
    pub(super) fn paired_loop(
        &mut self,
        run: &Run,
        homes: &[Home],
        tables: &[u32],
        serial: &[bool],
    ) -> Result<(), JitError> {
        let func = self.input.func;
        let ptr = self.module.target_config().pointer_type();
        let period = run.period;
        // Loop invariants before the loop: scalars for serial readers, splats for parallel ones.
        let mut splats: HashMap<usize, ir::Value> = HashMap::new();
        for (t, srcs) in run.sources.iter().enumerate() {
            for &src in srcs {
                if let Source::Affine { base, step: 0 } = src {
                    let x = self.use_value(Value::new(base as usize))?;
                    if !serial[t] && !splats.contains_key(&(base as usize)) {
                        let ty = func.values[base as usize].ty;
                        let v = self.pack(ty, x, x);
                        splats.insert(base as usize, v);
                    }
                }
            }
        }
        // The carried positions, each with its value before the run.
        let mut carried: Vec<(u32, u32)> = run
            .sources
            .iter()
            .flatten()
            .filter_map(|&src| match src {
                Source::Carried { pos, init } => Some((pos, init)),
                _ => None,
            })
            .collect();
        carried.sort_unstable();
        carried.dedup_by_key(|&mut (pos, _)| pos);
        let mut inits = vec![ir::BlockArg::Value(self.b.ins().iconst(ptr, 0))];
        for &(_, init) in &carried {
            inits.push(ir::BlockArg::Value(
                self.use_value(Value::new(init as usize))?,
            ));
        }
        let header = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, ptr);
        for &(pos, _) in &carried {
            let ty = func.values[run.value(pos as usize, 0)].ty;
            self.b.append_block_param(header, clif_type(ty));
        }
        self.b.ins().jump(header, &inits);
        self.b.switch_to_block(header);
        let params = self.b.block_params(header).to_vec();
        let j = params[0];
        let mut trip = Trip {
            vector: vec![None; period],
            scalar: [vec![None; period], vec![None; period]],
            lanes: HashMap::new(),
        };
        let mut advanced = HashMap::new();
        self.body_literals = Some(HashMap::new());
        // The parallel part, both iterations at once.
        let mut loaded: HashMap<(usize, i64), ir::Value> = HashMap::new();
        for t in (0..period).filter(|&t| !serial[t]) {
            let x = self.pair_position(
                run,
                tables,
                t,
                &trip,
                &splats,
                &mut loaded,
                &mut advanced,
                j,
            )?;
            trip.vector[t] = Some(x);
            self.pair_stores(run, homes, t, x, &mut advanced, j)?;
        }
        // The serial part: iteration j, then j + 1.
        let mut loaded: HashMap<(usize, i64, usize), ir::Value> = HashMap::new();
        for k in 0..2 {
            let prev: Vec<ir::Value> = if k == 0 {
                params[1..].to_vec()
            } else {
                let mut prev = Vec::with_capacity(carried.len());
                for &(pos, _) in &carried {
                    prev.push(self.value_in_lane(run, &mut trip, pos as usize, 0)?);
                }
                prev
            };
            let mut own = std::mem::take(&mut trip.scalar[k]);
            for t in (0..period).filter(|&t| serial[t]) {
                let x = self.scalar_position(
                    run,
                    tables,
                    t,
                    k,
                    &mut own,
                    &mut trip,
                    &carried,
                    &prev,
                    &mut loaded,
                    &mut advanced,
                    j,
                )?;
                own[t] = Some(x);
                self.scalar_stores(run, homes, t, k, x, &mut advanced, j)?;
            }
            trip.scalar[k] = own;
        }
        self.body_literals = None;
        let pairs = i64::try_from(run.trips / 2)
            .map_err(|_| JitError::TooLarge(format!("a loop of {} trips", run.trips)))?;
        let next = self.b.ins().iadd_imm_s(j, 2);
        let more = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, next, 2 * pairs);
        let mut args = vec![ir::BlockArg::Value(next)];
        let mut last = Vec::with_capacity(carried.len());
        for &(pos, _) in &carried {
            let x = self.value_in_lane(run, &mut trip, pos as usize, 1)?;
            last.push(x);
            args.push(ir::BlockArg::Value(x));
        }
        self.b.ins().brif(more, header, &args, exit, &[]);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        // The header, which defines the trip's values, is the exit's only predecessor.
        if run.trips % 2 == 0 {
            for (t, &home) in homes.iter().enumerate().take(period) {
                if let Home::Last(slot) = home {
                    let x = self.value_in_lane(run, &mut trip, t, 1)?;
                    let off = self.slot_offset(slot)?;
                    self.b.ins().store(FLAGS, x, self.work, off);
                }
            }
        } else {
            // The odd last iteration, every position in scalar code.
            let j = self.b.ins().iconst(ptr, run.trips as i64 - 1);
            let mut own = vec![None; period];
            let mut advanced = HashMap::new();
            let mut loaded = HashMap::new();
            self.body_literals = Some(HashMap::new());
            for t in 0..period {
                let x = self.scalar_position(
                    run,
                    tables,
                    t,
                    0,
                    &mut own,
                    &mut trip,
                    &carried,
                    &last,
                    &mut loaded,
                    &mut advanced,
                    j,
                )?;
                own[t] = Some(x);
                self.scalar_stores(run, homes, t, 0, x, &mut advanced, j)?;
                if let Home::Last(slot) = homes[t] {
                    let off = self.slot_offset(slot)?;
                    self.b.ins().store(FLAGS, x, self.work, off);
                }
            }
            self.body_literals = None;
        }
        self.b.ins().return_(&[]);
        Ok(())
    }

    /// Parallel position `t` of iterations `j` and `j + 1`, lowered on two-lane vectors.
    #[allow(clippy::too_many_arguments)]
    fn pair_position(
        &mut self,
        run: &Run,
        tables: &[u32],
        t: usize,
        trip: &Trip,
        splats: &HashMap<usize, ir::Value>,
        loaded: &mut HashMap<(usize, i64), ir::Value>,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
        j: ir::Value,
    ) -> Result<ir::Value, JitError> {
        let func = self.input.func;
        let v = run.value(t, 0);
        let ValueDef::Inst(inst) = &func.values[v].def else {
            unreachable!("a run holds instructions only")
        };
        let mut operands = Vec::with_capacity(3);
        inst.for_each_value(|a| operands.push(a));
        let mut overrides = Vec::with_capacity(3);
        for (a, &src) in operands.into_iter().zip(&run.sources[t]) {
            let ty = func.values[a.index()].ty;
            let x = match src {
                Source::Same { pos } => trip.vector[pos as usize].expect("parallel operand"),
                Source::Carried { .. } => {
                    unreachable!("a parallel position reads no carried value")
                }
                Source::Affine { base, step: 0 } => splats[&(base as usize)],
                Source::Affine { base, step } => {
                    if let Some(&x) = loaded.get(&(a.index(), step)) {
                        x
                    } else {
                        let x = if func.is_param(a) {
                            let at = self.advance(advanced, self.inputs, j, 8 * step);
                            let raw = if step == 1 {
                                let off = slot_bytes(i64::from(base))?;
                                self.b.ins().load(types::F64X2, PAIR_READONLY, at, off)
                            } else {
                                let mut xs = [None; 2];
                                for (k, x) in xs.iter_mut().enumerate() {
                                    let off = slot_bytes(i64::from(base) + k as i64 * step)?;
                                    *x = Some(self.b.ins().load(
                                        types::F64,
                                        super::READONLY,
                                        at,
                                        off,
                                    ));
                                }
                                let [Some(x0), Some(x1)] = xs else {
                                    unreachable!()
                                };
                                self.pack(Type::F64, x0, x1)
                            };
                            self.lanes = Lanes::Two;
                            let x = self.boundary_to_value(raw, ty);
                            self.lanes = Lanes::One;
                            x
                        } else {
                            let (s0, stride) = self.array_of(base, step);
                            let at = self.advance(advanced, self.work, j, 8 * stride);
                            if stride == 1 && ty == Type::F64 {
                                let off = self.slot_offset(s0)?;
                                self.b.ins().load(types::F64X2, PAIR, at, off)
                            } else {
                                let mut xs = [None; 2];
                                for (k, x) in xs.iter_mut().enumerate() {
                                    let off = slot_bytes(i64::from(s0) + k as i64 * stride)?;
                                    *x = Some(self.b.ins().load(clif_type(ty), FLAGS, at, off));
                                }
                                let [Some(x0), Some(x1)] = xs else {
                                    unreachable!()
                                };
                                self.pack(ty, x0, x1)
                            }
                        };
                        loaded.insert((a.index(), step), x);
                        x
                    }
                }
            };
            overrides.push((a.index(), x));
        }
        for (table, &entry) in run.tables.iter().zip(tables) {
            if table.pos as usize == t {
                let base = self.table_base();
                let at = self.advance(advanced, base, j, 8);
                let x = if table.ty == Type::F64 {
                    let off = slot_bytes(i64::from(entry))?;
                    self.b.ins().load(types::F64X2, PAIR_READONLY, at, off)
                } else {
                    let mut xs = [None; 2];
                    for (k, x) in xs.iter_mut().enumerate() {
                        let off = slot_bytes(i64::from(entry) + k as i64)?;
                        *x = Some(
                            self.b
                                .ins()
                                .load(clif_type(table.ty), super::READONLY, at, off),
                        );
                    }
                    let [Some(x0), Some(x1)] = xs else {
                        unreachable!()
                    };
                    self.pack(table.ty, x0, x1)
                };
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

    /// Serial position `t` of iteration `j + k` in scalar code (`own`: the positions of that
    /// iteration lowered so far; parallel ones not in it are read from `trip`'s lanes;
    /// `prev`: the carried positions' values of the iteration before).
    #[allow(clippy::too_many_arguments)]
    fn scalar_position(
        &mut self,
        run: &Run,
        tables: &[u32],
        t: usize,
        k: usize,
        own: &mut [Option<ir::Value>],
        trip: &mut Trip,
        carried: &[(u32, u32)],
        prev: &[ir::Value],
        loaded: &mut HashMap<(usize, i64, usize), ir::Value>,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
        j: ir::Value,
    ) -> Result<ir::Value, JitError> {
        let func = self.input.func;
        let v = run.value(t, 0);
        let ValueDef::Inst(inst) = &func.values[v].def else {
            unreachable!("a run holds instructions only")
        };
        let mut operands = Vec::with_capacity(3);
        inst.for_each_value(|a| operands.push(a));
        let mut overrides = Vec::with_capacity(3);
        let lane = k as i64;
        for (a, &src) in operands.into_iter().zip(&run.sources[t]) {
            let ty = func.values[a.index()].ty;
            let x = match src {
                Source::Same { pos } => match own[pos as usize] {
                    Some(x) => x,
                    None => self.value_in_lane(run, trip, pos as usize, k)?,
                },
                Source::Carried { pos, .. } => prev[carried.partition_point(|&(p, _)| p < pos)],
                Source::Affine { step: 0, .. } => self.use_value(a)?,
                Source::Affine { base, step } => {
                    if let Some(&x) = loaded.get(&(a.index(), step, k)) {
                        x
                    } else {
                        let x = if func.is_param(a) {
                            let at = self.advance(advanced, self.inputs, j, 8 * step);
                            let off = slot_bytes(i64::from(base) + lane * step)?;
                            let raw = self.b.ins().load(types::F64, super::READONLY, at, off);
                            self.boundary_to_value(raw, ty)
                        } else {
                            let (s0, stride) = self.array_of(base, step);
                            let at = self.advance(advanced, self.work, j, 8 * stride);
                            let off = slot_bytes(i64::from(s0) + lane * stride)?;
                            self.b.ins().load(clif_type(ty), FLAGS, at, off)
                        };
                        loaded.insert((a.index(), step, k), x);
                        x
                    }
                }
            };
            overrides.push((a.index(), x));
        }
        for (table, &entry) in run.tables.iter().zip(tables) {
            if table.pos as usize == t {
                let base = self.table_base();
                let at = self.advance(advanced, base, j, 8);
                let off = slot_bytes(i64::from(entry) + lane)?;
                let x = self
                    .b
                    .ins()
                    .load(clif_type(table.ty), super::READONLY, at, off);
                self.tabled[table.slot as usize] = Some(x);
            }
        }
        self.overrides = overrides;
        let x = self.lower_inst(v, inst);
        self.overrides.clear();
        self.tabled = [None; 3];
        x
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
        run: &Run,
        homes: &[Home],
        t: usize,
        x: ir::Value,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
        j: ir::Value,
    ) -> Result<(), JitError> {
        let ty = self.input.func.values[run.value(t, 0)].ty;
        if let Home::Array(first) = homes[t] {
            let at = self.advance(advanced, self.work, j, 8);
            let off = self.slot_offset(first)?;
            if ty == Type::F64 {
                self.b.ins().store(PAIR, x, at, off);
            } else {
                for k in 0..2 {
                    let y = self.unpack(ty, x, k);
                    self.b.ins().store(FLAGS, y, at, off + 8 * k as i32);
                }
            }
        }
        if run.outputs[t].is_empty() {
            return Ok(());
        }
        self.lanes = Lanes::Two;
        let y = self.value_to_boundary(x, ty);
        self.lanes = Lanes::One;
        for store in &run.outputs[t] {
            let at = self.advance(advanced, self.outputs, j, 8 * store.step);
            if store.step == 1 {
                let off = slot_bytes(i64::from(store.first))?;
                self.b.ins().store(PAIR, y, at, off);
            } else {
                for k in 0..2 {
                    let lane = self.unpack(Type::F64, y, k);
                    let off = slot_bytes(i64::from(store.first) + k as i64 * store.step)?;
                    self.b.ins().store(FLAGS, lane, at, off);
                }
            }
        }
        Ok(())
    }

    /// Stores of serial position `t`'s value `x` of iteration `j + k`: its array home and
    /// its outputs.
    #[allow(clippy::too_many_arguments)]
    fn scalar_stores(
        &mut self,
        run: &Run,
        homes: &[Home],
        t: usize,
        k: usize,
        x: ir::Value,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
        j: ir::Value,
    ) -> Result<(), JitError> {
        let ty = self.input.func.values[run.value(t, 0)].ty;
        if let Home::Array(first) = homes[t] {
            let at = self.advance(advanced, self.work, j, 8);
            let off = slot_bytes(i64::from(first) + k as i64)?;
            self.b.ins().store(FLAGS, x, at, off);
        }
        if run.outputs[t].is_empty() {
            return Ok(());
        }
        let y = self.value_to_boundary(x, ty);
        for store in &run.outputs[t] {
            let at = self.advance(advanced, self.outputs, j, 8 * store.step);
            let off = slot_bytes(i64::from(store.first) + k as i64 * store.step)?;
            self.b.ins().store(FLAGS, y, at, off);
        }
        Ok(())
    }

    /// Position `t`'s value in iteration `j + k` of the current trip, as a scalar.
    fn value_in_lane(
        &mut self,
        run: &Run,
        trip: &mut Trip,
        t: usize,
        k: usize,
    ) -> Result<ir::Value, JitError> {
        // (While lane `k`'s serial part is lowered, its values are the caller's.)
        if let Some(x) = trip.scalar[k].get(t).copied().flatten() {
            return Ok(x);
        }
        if let Some(&x) = trip.lanes.get(&(t, k)) {
            return Ok(x);
        }
        let v = trip.vector[t].expect("a position is serial or parallel");
        let ty = self.input.func.values[run.value(t, 0)].ty;
        let x = self.unpack(ty, v, k);
        trip.lanes.insert((t, k), x);
        Ok(x)
    }

    /// Scalars `x0` and `x1` of type `ty` (one-lane registers) as lanes 0 and 1 of a two-lane
    /// value.
    fn pack(&mut self, ty: Type, x0: ir::Value, x1: ir::Value) -> ir::Value {
        let [x0, x1] = match ty {
            // An `i8` 0/1 as a 64-bit mask of all ones or all zeros.
            Type::Bool => [x0, x1].map(|x| {
                let wide = self.b.ins().uextend(types::I64, x);
                self.b.ins().ineg(wide)
            }),
            _ => [x0, x1],
        };
        let v = self.b.ins().scalar_to_vector(lane_type(ty), x0);
        self.b.ins().insertlane(v, x1, 1)
    }

    /// Lane `k` of the two-lane value `v` of type `ty`, as a one-lane register.
    fn unpack(&mut self, ty: Type, v: ir::Value, k: usize) -> ir::Value {
        let x = self.b.ins().extractlane(v, k as u8);
        match ty {
            Type::Bool => self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
            _ => x,
        }
    }
}
