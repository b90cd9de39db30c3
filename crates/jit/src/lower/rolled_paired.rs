//! Paired pipelines: the loops of a rolled program ([`super::rolled`]) run two iterations per
//! trip in vector lanes, as [`super::paired`] runs the runs of a straight-line program.
//!
//! A [`Pipeline`] is the lines one *virtual iteration* runs, in order: a loop's live template
//! positions, or for a reverse loop fused into its forward loop the forward positions and
//! then the reverse ones by lag (see `Lowerer::rolled_fused`). Each operand is a [`Read`]: a
//! line's value some virtual iterations back, a register made before the loop, or a value at
//! an index moving with the counter.
//!
//! A line is *serial* when it reads a serial line, or the value of a line one virtual
//! iteration back that the trip does not make before it (a running sum reads its own); every
//! other line is *parallel*. A trip runs the parallel lines once on two-lane vectors (virtual
//! iteration `v` in lane 0, `v + 1` in lane 1, the representation of [`crate::lanes`]), then
//! the serial lines of `v` and then of `v + 1` in scalars, reading parallel values out of
//! their lanes. A parallel line reads a line `a` iterations back from the vectors of the trips
//! before, or for an odd `a` from the lanes of two consecutive trips' vectors joined. Values
//! read later than the trip pass to the next trip as header parameters, a vector (or two
//! scalars) per trip back.
//!
//! The operations are those of the one-lane code, applied to the same operands (two-lane code
//! is bitwise the one-lane code in every lane), and the serial lines still run every iteration
//! in order, so results are bitwise those of the expanded program. Pairing pays where the
//! parallel lines hold work a vector does at the price of a scalar, and costs where values
//! cross between the parts or memory is not contiguous: the cost model of [`super::paired`]
//! weighs both, under [`Pairing::Auto`].

use std::collections::HashMap;

use adjit_ir::{InstData, Rolled, Type};
use cranelift_codegen::ir::{self, condcodes::IntCC, types, InstBuilder};
use cranelift_module::Module;

use super::paired::{inst_cost, LOOP_OVERHEAD, MIN_GAIN, MIN_SHARE, PAIR, PAIR_READONLY};
use super::rolled_place::{place_of, History, Iteration, Sweep};
use super::{signed_offset, Lowerer, FLAGS, READONLY};
use crate::abi::clif_type;
use crate::error::JitError;
use crate::lanes::{lane_type, Lanes};
use crate::options::Pairing;
use crate::rolled_plan::{Home, Place, RolledPlan};

/// How a line reads one of its operands.
#[derive(Clone, Copy, Debug)]
pub(super) enum Read {
    /// The value of line `line` made `age` virtual iterations earlier (0: in this one).
    Line { line: usize, age: usize },
    /// A register made before the loop, holding a value of this type.
    Fixed(ir::Value, Type),
    /// The value `base + step·(v − shift)` in virtual iteration `v` (from `inputs` or a home).
    Moving { base: u32, step: i64, shift: i64 },
}

/// One line of a pipeline: live position `t` of loop `k` (of `sweep` in a fused loop), how it
/// reads its operands, and where it runs: iteration `from + dir·v` of its loop in virtual
/// iteration `v`.
pub(super) struct Line {
    pub(super) sweep: Sweep,
    pub(super) k: usize,
    pub(super) t: usize,
    pub(super) reads: Vec<Read>,
    pub(super) from: i64,
    pub(super) dir: i64,
}

/// The lines of one virtual iteration, in the order they run (see the module docs).
pub(super) struct Pipeline {
    pub(super) lines: Vec<Line>,
}

impl Pipeline {
    /// Which lines run in scalars (see the module docs): a fixed point, since a line may read
    /// a later line of the iteration before.
    pub(super) fn serial(&self) -> Vec<bool> {
        let n = self.lines.len();
        let mut serial = vec![false; n];
        let mut changed = true;
        while changed {
            changed = false;
            for p in 0..n {
                if serial[p] {
                    continue;
                }
                let reads_serial = self.lines[p].reads.iter().any(|read| match *read {
                    Read::Line { line, age } => serial[line] || (age <= 1 && line >= p),
                    _ => false,
                });
                if reads_serial {
                    serial[p] = true;
                    changed = true;
                }
            }
        }
        serial
    }

    /// Per line, the most virtual iterations back any line reads it (0: only in its own).
    fn depth(&self) -> Vec<usize> {
        let mut depth = vec![0; self.lines.len()];
        for line in &self.lines {
            for read in &line.reads {
                if let Read::Line { line, age } = *read {
                    depth[line] = depth[line].max(age);
                }
            }
        }
        depth
    }

    /// Line `p`'s value type.
    fn ty(&self, rolled: &Rolled, p: usize) -> Type {
        let line = &self.lines[p];
        rolled.loops()[line.k].template[line.t].ty
    }

    /// Line `p`'s key in a [`History`] (without the virtual iteration).
    fn key(&self, p: usize) -> (Sweep, usize) {
        (self.lines[p].sweep, self.lines[p].t)
    }

    /// Whether running two virtual iterations per trip is asked for (`pairing`) and, under
    /// [`Pairing::Auto`], pays (the estimate of [`super::paired`]: work a vector does once for
    /// two iterations, the counter's add, compare and branch paid once, against lanes
    /// extracted for serial readers, memory that is not contiguous and joined lanes).
    pub(super) fn pays(
        &self,
        rolled: &Rolled,
        plan: &RolledPlan,
        serial: &[bool],
        pairing: Pairing,
        math: crate::options::MathImpl,
    ) -> bool {
        match pairing {
            Pairing::Off => return false,
            Pairing::Always => return serial.iter().any(|&s| !s),
            Pairing::Auto => {}
        }
        let mut cost = LOOP_OVERHEAD;
        let mut gain = LOOP_OVERHEAD;
        let mut crossing = vec![false; self.lines.len()];
        for (p, line) in self.lines.iter().enumerate() {
            let l = &rolled.loops()[line.k];
            let inst = l.instance(line.t, 0);
            let (cycles, paired) = inst_cost(&inst, math);
            let tables: Vec<Type> = l
                .tables
                .iter()
                .filter(|table| table.pos as usize == line.t)
                .map(|table| table.ty)
                .collect();
            let moving = line
                .reads
                .iter()
                .filter(|read| matches!(read, Read::Moving { .. }))
                .count();
            let streams = &plan.streams[line.k][line.t];
            cost += cycles + (moving + tables.len() + streams.len()) as i64;
            if serial[p] {
                for read in &line.reads {
                    if let Read::Line { line: q, .. } = *read {
                        crossing[q] |= !serial[q];
                    }
                }
                continue;
            }
            gain += paired;
            for read in &line.reads {
                gain += match *read {
                    Read::Moving { base, step, .. } => {
                        match moving_stride(rolled, plan, base, step) {
                            (1, Type::F64) => 1,
                            (-1, Type::F64) => 0,
                            _ => -2,
                        }
                    }
                    Read::Line { age, .. } if age % 2 == 1 => -1,
                    _ => 0,
                };
            }
            gain += tables
                .iter()
                .map(|&ty| if ty == Type::F64 { 1 } else { -2 })
                .sum::<i64>();
            gain += streams
                .iter()
                .map(|stream| match stream.step * line.dir {
                    1 => 1,
                    -1 => 0,
                    _ => -1,
                })
                .sum::<i64>();
        }
        gain -= crossing.iter().filter(|&&c| c).count() as i64;
        gain >= MIN_GAIN && gain * MIN_SHARE >= 2 * cost
    }
}

/// Slots per virtual iteration between the values a [`Read::Moving`] of `base` and `step`
/// reads, and their type: a parameter's inputs lie in value order, a loop's values in their
/// home (an array: one slot per iteration; a dense home: one per value).
fn moving_stride(rolled: &Rolled, plan: &RolledPlan, base: u32, step: i64) -> (i64, Type) {
    match place_of(rolled, base as usize) {
        Place::Param(i) => (step, rolled.ty(i)),
        Place::Loop { k, t, .. } => {
            let m = &rolled.loops()[k];
            let home = plan.homes[k][t].expect("plan: a moving read has a home");
            let per_step = step * i64::from(home.stride) / m.period() as i64;
            (per_step, m.template[t].ty)
        }
    }
}

/// The registers of one trip of a paired pipeline.
struct Trip {
    serial: Vec<bool>,
    /// Parallel lines' vectors of this trip (virtual iterations `v`, `v + 1`).
    vector: Vec<Option<ir::Value>>,
    /// Serial lines' scalars of this trip, by lane.
    scalar: [Vec<Option<ir::Value>>; 2],
    /// Per line, its values of the trips before, most recent first: a vector (parallel) or
    /// the two lanes' scalars (serial).
    before: Vec<Vec<Held>>,
    /// Lanes already extracted, by (line, virtual iteration relative to `v`).
    lanes: HashMap<(usize, i64), ir::Value>,
    /// Vectors already joined from two trips' lanes, by (line, age).
    joined: HashMap<(usize, usize), ir::Value>,
}

/// A line's values of one earlier trip.
#[derive(Clone, Copy)]
enum Held {
    Vector(ir::Value),
    Scalars([ir::Value; 2]),
}

/// Addresses and loads of one trip (one counter): the counter scaled per buffer and step, and
/// the values loaded by (value read when the counter is 0, step, lane or [`BOTH`]).
#[derive(Default)]
struct TripMemo {
    advanced: HashMap<(ir::Value, i64), ir::Value>,
    loaded: HashMap<(i64, i64, usize), ir::Value>,
}

/// The lane key of a two-lane load in [`TripMemo::loaded`].
const BOTH: usize = 2;

impl<M: Module> Lowerer<'_, '_, M> {
    /// Virtual iterations `v0 .. v0 + 2·pairs` of `pipe` as a loop running two per trip (see
    /// the module docs; `serial` from [`Pipeline::serial`]). `history` holds the values of
    /// earlier virtual iterations the first trip reads, by line key and virtual iteration, and
    /// receives every line's values of the last two and those the last trip held.
    #[allow(clippy::too_many_arguments, reason = "the pipeline and where it runs")]
    pub(super) fn paired_pipeline(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        pipe: &Pipeline,
        serial: &[bool],
        v0: i64,
        pairs: usize,
        history: &mut History,
    ) -> Result<(), JitError> {
        let n = pipe.lines.len();
        let depth = pipe.depth();
        let held: Vec<usize> = depth.iter().map(|d| d.div_ceil(2)).collect();
        // Fixed reads of parallel lines, splat before the loop.
        let mut splats: HashMap<ir::Value, ir::Value> = HashMap::new();
        for (p, line) in pipe.lines.iter().enumerate() {
            for read in &line.reads {
                if let Read::Fixed(x, ty) = *read {
                    if !serial[p] && !splats.contains_key(&x) {
                        let v = self.pack(ty, [x, x]);
                        self.known.splatted(x, v);
                        splats.insert(x, v);
                    }
                }
            }
        }
        // Header parameters: the counter, then per line its trips held, oldest last.
        let ptr = self.module.target_config().pointer_type();
        let mut types = Vec::new();
        let mut args = vec![self.b.ins().iconst(ptr, v0)];
        for p in 0..n {
            let ty = pipe.ty(rolled, p);
            let (sweep, t) = pipe.key(p);
            for back in 1..=held[p] {
                let first = v0 - 2 * back as i64;
                let lanes = [first, first + 1].map(|v| history.get(&(sweep, t, v)).copied());
                // A lane no read reaches (before the program's first iteration): any value.
                let [a, b] = match lanes {
                    [Some(a), Some(b)] => [a, b],
                    [Some(x), None] | [None, Some(x)] => [x, x],
                    [None, None] => {
                        let zero = self.literal(ty, 0)?;
                        [zero, zero]
                    }
                };
                if serial[p] {
                    types.extend([clif_type(ty); 2]);
                    args.extend([a, b]);
                } else {
                    types.push(lane_type(ty));
                    args.push(self.pack(ty, [a, b]));
                }
            }
        }
        let (header, params) = self.enter_loop(&types, args);
        let j = params[0];
        let mut at = 1;
        let mut before = vec![Vec::new(); n];
        for p in 0..n {
            for _ in 0..held[p] {
                before[p].push(match serial[p] {
                    true => Held::Scalars([params[at], params[at + 1]]),
                    false => Held::Vector(params[at]),
                });
                at += if serial[p] { 2 } else { 1 };
            }
        }
        let mut trip = Trip {
            serial: serial.to_vec(),
            vector: vec![None; n],
            scalar: [vec![None; n], vec![None; n]],
            before,
            lanes: HashMap::new(),
            joined: HashMap::new(),
        };
        let mut memo = TripMemo::default();
        // The parallel part, both iterations at once.
        for (p, line) in pipe.lines.iter().enumerate().filter(|&(p, _)| !serial[p]) {
            self.lanes = Lanes::Two;
            let mut operands = Vec::with_capacity(3);
            for read in &line.reads {
                operands.push(match *read {
                    Read::Line { line: q, age } => self.vector_at(rolled, pipe, &mut trip, q, age),
                    Read::Fixed(x, _) => splats[&x],
                    Read::Moving { base, step, shift } => {
                        self.load_moving_pair(rolled, plan, &mut memo, j, (base, step, shift))?
                    }
                });
            }
            let x = self.lower_line_pair(rolled, plan, line, &operands, j, &mut memo.advanced);
            self.lanes = Lanes::One;
            trip.vector[p] = Some(x?);
        }
        // The serial part: iteration v, then v + 1.
        for lane in 0..2 {
            for (p, line) in pipe.lines.iter().enumerate().filter(|&(p, _)| serial[p]) {
                let mut operands = Vec::with_capacity(3);
                for read in &line.reads {
                    operands.push(match *read {
                        Read::Line { line: q, age } => {
                            self.scalar_at(rolled, pipe, &mut trip, q, lane as i64 - age as i64)
                        }
                        Read::Fixed(x, _) => x,
                        Read::Moving { base, step, shift } => {
                            let key = (i64::from(base) - step * (shift - lane as i64), step, lane);
                            match memo.loaded.get(&key) {
                                Some(&x) => x,
                                None => {
                                    let read = (base, step, shift - lane as i64);
                                    let x = self.load_moving(
                                        rolled,
                                        plan,
                                        &mut memo.advanced,
                                        j,
                                        read,
                                    )?;
                                    memo.loaded.insert(key, x);
                                    x
                                }
                            }
                        }
                    });
                }
                let it = Iteration {
                    counter: Some(j),
                    from: line.from + line.dir * lane as i64,
                    dir: line.dir,
                    last: false,
                };
                let inst = rolled.loops()[line.k].instance(line.t, 0);
                let (k, t) = (line.k, line.t);
                let x = self.lower_line(
                    rolled,
                    plan,
                    (k, t),
                    &inst,
                    &operands,
                    it,
                    &mut memo.advanced,
                )?;
                trip.scalar[lane][p] = Some(x);
            }
        }
        // To the next trip: the counter, and per line this trip and the ones before it.
        self.body_literals = None;
        let next = self.b.ins().iadd_imm_s(j, 2);
        let end = v0 + 2 * pairs as i64;
        let more = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, next, end);
        let mut next_args = vec![ir::BlockArg::Value(next)];
        for p in 0..n {
            for back in 0..held[p] {
                let held = match back {
                    0 => self.held_now(&trip, p),
                    _ => trip.before[p][back - 1],
                };
                match held {
                    Held::Vector(x) => next_args.push(ir::BlockArg::Value(x)),
                    Held::Scalars(xs) => next_args.extend(xs.map(ir::BlockArg::Value)),
                }
            }
        }
        let exit = self.b.create_block();
        self.b.ins().brif(more, header, &next_args, exit, &[]);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        // After the loop (the header, which made the last trip's values, dominates the rest):
        // every line's last two iterations, and the trips it held.
        for (p, &trips) in held.iter().enumerate() {
            let (sweep, t) = pipe.key(p);
            for rel in -2 * trips as i64..2 {
                let x = self.scalar_at(rolled, pipe, &mut trip, p, rel);
                history.insert((sweep, t, end - 2 + rel), x);
            }
        }
        Ok(())
    }

    /// Line `p`'s values of the current trip.
    fn held_now(&self, trip: &Trip, p: usize) -> Held {
        match trip.serial[p] {
            true => Held::Scalars([0, 1].map(|lane| trip.scalar[lane][p].expect("made"))),
            false => Held::Vector(trip.vector[p].expect("made")),
        }
    }

    /// Line `p`'s value in virtual iteration `v + rel` (`v` the trip's first), as a scalar.
    fn scalar_at(
        &mut self,
        rolled: &Rolled,
        pipe: &Pipeline,
        trip: &mut Trip,
        p: usize,
        rel: i64,
    ) -> ir::Value {
        let lane = rel.rem_euclid(2) as usize;
        let back = ((lane as i64 - rel) / 2) as usize;
        if let Some(&x) = trip.lanes.get(&(p, rel)) {
            return x;
        }
        let held = match back {
            // (The lane's own: the other may not be made yet.)
            0 if trip.serial[p] => return trip.scalar[lane][p].expect("made before"),
            0 => self.held_now(trip, p),
            _ => trip.before[p][back - 1],
        };
        let x = match held {
            Held::Scalars(xs) => return xs[lane],
            Held::Vector(v) => self.unpack(pipe.ty(rolled, p), v, lane),
        };
        trip.lanes.insert((p, rel), x);
        x
    }

    /// Parallel line `p`'s values `age` virtual iterations back from this trip's two, as a
    /// vector: a trip's vector for an even age, else lane 1 of one trip's and lane 0 of the
    /// next one's.
    fn vector_at(
        &mut self,
        rolled: &Rolled,
        pipe: &Pipeline,
        trip: &mut Trip,
        p: usize,
        age: usize,
    ) -> ir::Value {
        let vector = |trip: &Trip, back: usize| match back {
            0 => trip.vector[p].expect("a parallel line reads earlier lines"),
            _ => match trip.before[p][back - 1] {
                Held::Vector(x) => x,
                Held::Scalars(_) => unreachable!("a parallel line reads parallel lines"),
            },
        };
        if age.is_multiple_of(2) {
            return vector(trip, age / 2);
        }
        if let Some(&x) = trip.joined.get(&(p, age)) {
            return x;
        }
        let (a, b) = (vector(trip, age.div_ceil(2)), vector(trip, age / 2));
        let x = self.join_lanes(pipe.ty(rolled, p), a, b);
        trip.joined.insert((p, age), x);
        x
    }

    /// Lane 1 of `a` and lane 0 of `b` (two-lane values of type `ty`) as lanes 0 and 1.
    fn join_lanes(&mut self, ty: Type, a: ir::Value, b: ir::Value) -> ir::Value {
        // Bytes of `a` are 0..16 of the shuffle, those of `b` 16..32.
        let order: [u8; 16] = match ty {
            Type::F32 => [4, 5, 6, 7, 16, 17, 18, 19, 8, 9, 10, 11, 12, 13, 14, 15],
            _ => [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23],
        };
        self.shuffle_two(a, b, order, lane_type(ty))
    }

    /// The values `base + step·(v − shift)` of virtual iterations `v` and `v + 1` (counter `j`
    /// at `v`) as a two-lane value: one vector load where they are adjacent `f64` slots (its
    /// lanes swapped when they lie backwards), else two loads.
    fn load_moving_pair(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        memo: &mut TripMemo,
        j: ir::Value,
        (base, step, shift): (u32, i64, i64),
    ) -> Result<ir::Value, JitError> {
        let key = (i64::from(base) - step * shift, step, BOTH);
        if let Some(&x) = memo.loaded.get(&key) {
            return Ok(x);
        }
        let (buffer, first, stride, ty, flags) = match place_of(rolled, base as usize) {
            Place::Param(i) => (self.inputs, i as i64, step, rolled.ty(i), PAIR_READONLY),
            Place::Loop { k, t, j: i0 } => {
                let home = plan.homes[k][t].expect("plan: a moving read has a home");
                let slot = i64::from(home.first) + i64::from(home.stride) * i0 as i64;
                let (stride, ty) = moving_stride(rolled, plan, base, step);
                (self.work, slot, stride, ty, PAIR)
            }
        };
        let first = first - stride * shift;
        let at = self.advance(&mut memo.advanced, buffer, j, 8 * stride);
        // Parameters arrive as `f64`s at the boundary.
        let is_param = buffer == self.inputs;
        let x = if stride.abs() == 1 && (is_param || ty == Type::F64) {
            let low = first.min(first + stride);
            let x = self
                .b
                .ins()
                .load(types::F64X2, flags, at, signed_offset(low)?);
            if stride == 1 {
                x
            } else {
                self.swap_lanes(x)
            }
        } else {
            let (load_ty, load_flags) = match is_param {
                true => (types::F64, READONLY),
                false => (clif_type(ty), FLAGS),
            };
            let mut lanes = [at; 2];
            for (k, x) in lanes.iter_mut().enumerate() {
                let off = signed_offset(first + k as i64 * stride)?;
                *x = self.b.ins().load(load_ty, load_flags, at, off);
            }
            self.pack(if is_param { Type::F64 } else { ty }, lanes)
        };
        let x = if is_param {
            self.boundary_to_value(x, ty)
        } else {
            x
        };
        memo.loaded.insert(key, x);
        Ok(x)
    }

    /// A parallel line on two-lane `operands` (virtual iterations `v`, `v + 1`, counter `j` at
    /// `v`): its tables' entries, the instruction, stores to its home and output streams.
    fn lower_line_pair(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        line: &Line,
        operands: &[ir::Value],
        j: ir::Value,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
    ) -> Result<ir::Value, JitError> {
        let (k, t, from, dir) = (line.k, line.t, line.from, line.dir);
        let l = &rolled.loops()[k];
        let width = self.input.consts.entry_bytes as i64;
        for (table, &entry) in l.tables.iter().zip(&self.input.consts.run_tables[k]) {
            if table.pos as usize == t {
                let base = self.table_base();
                let at = self.advance(advanced, base, j, dir * width);
                let first = i64::from(entry) + from;
                let x = if table.ty == Type::F64 {
                    let x = self.b.ins().load(
                        types::F64X2,
                        PAIR_READONLY,
                        at,
                        signed_offset(first.min(first + dir))?,
                    );
                    if dir == 1 {
                        x
                    } else {
                        self.swap_lanes(x)
                    }
                } else {
                    let mut lanes = [at; 2];
                    for (c, x) in lanes.iter_mut().enumerate() {
                        let off = signed_offset(first + c as i64 * dir)?;
                        *x = self.b.ins().load(clif_type(table.ty), READONLY, at, off);
                    }
                    self.pack(table.ty, lanes)
                };
                self.tabled[table.slot as usize] = Some(x);
            }
        }
        let ty = l.template[t].ty;
        let inst: InstData = l.instance(t, 0);
        let x = self.lower_template(rolled, ty, &inst, operands)?;
        if let Some(Home { first, stride }) = plan.homes[k][t] {
            // (A home of stride 0 is the fused reverse loop's last iteration's, stored by
            // straight code.)
            if stride != 0 {
                let step = i64::from(stride) * dir;
                let at = self.advance(advanced, self.work, j, 8 * step);
                let slot = i64::from(first) + i64::from(stride) * from;
                self.store_pair(ty, x, at, slot, step)?;
            }
        }
        if !plan.streams[k][t].is_empty() {
            let y = self.value_to_boundary(x, ty);
            for stream in &plan.streams[k][t] {
                let step = stream.step * dir;
                let at = self.advance(advanced, self.outputs, j, 8 * step);
                let out = stream.first as i64 + stream.step * from;
                self.store_pair(Type::F64, y, at, out, step)?;
            }
        }
        Ok(x)
    }

    /// Store the two-lane `x` of type `ty` to slots `slot` and `slot + step` from `at`: one
    /// vector store where they are adjacent `f64` slots, else a store per lane.
    fn store_pair(
        &mut self,
        ty: Type,
        x: ir::Value,
        at: ir::Value,
        slot: i64,
        step: i64,
    ) -> Result<(), JitError> {
        if ty == Type::F64 && step.abs() == 1 {
            let (y, low) = match step {
                1 => (x, slot),
                _ => (self.swap_lanes(x), slot - 1),
            };
            self.b.ins().store(PAIR, y, at, signed_offset(low)?);
            return Ok(());
        }
        for lane in 0..2 {
            let y = self.unpack(ty, x, lane);
            let off = signed_offset(slot + lane as i64 * step)?;
            self.b.ins().store(FLAGS, y, at, off);
        }
        Ok(())
    }
}
