//! Lowering of a rolled program ([`adjit_ir::Rolled`]) to one Cranelift function, from its
//! templates: the expansion is never built.
//!
//! Every loop of the program becomes, in program order, one counted loop whose body is its
//! template's live instructions once (a loop of one trip: straight code). Each value operand
//! is read by its [`Source`] rule: the same iteration's register; a carried value as a
//! parameter of the loop's header block (the value before the loop on entry); an invariant,
//! and any value read at a fixed place, from the register of its loop's last iteration (the
//! header that defined it dominates all later code), from `inputs`, or from its home; an
//! index moving with the counter from `inputs` or from the home of the loop it reads, at an
//! address advanced by the counter. Literals that change per iteration are read from the
//! constant table's literal tables. Homes, liveness, output streams and which reverse loops
//! run fused into their forward loops ([`Lowerer::rolled_fused`]) are the [`RolledPlan`]'s. Every instruction is lowered by the same code as the straight-line
//! program's ([`Lowerer::lower_inst_as`]) and every iteration runs in program order, so the
//! results are bitwise those of the expanded program and of the interpreter.

use std::collections::{BTreeMap, HashMap};

use adjit_ir::identities::{self, Rewrite};
use adjit_ir::roll::Source;
use adjit_ir::{literal_type_with, math, InstData, Loop, Operand, Rolled, Type, Value};
use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::ir::{self, condcodes::IntCC, types, InstBuilder};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::Module;

use super::rolled_paired::{Line, Pipeline, Read};
use super::rolled_place::{place_of, History, Iteration, Sweep};
use super::{offset, signed_offset, Cached, Imports, LowerInput, Lowerer, FLAGS, READONLY};
use crate::abi::clif_type;
use crate::error::JitError;
use crate::rolled_plan::{fused_read, FusedRead, Fusion, Home, Place, RolledPlan};

/// What the lowering knows of the registers it made, to apply the simplifier's IEEE-exact
/// identities ([`adjit_ir::identities`]) and constant folding to a template's instruction
/// once its operands are registers: a derived loop keeps, for every iteration, what
/// `adjit_diff::simplify` folds once in the expansion (its multiplications by the seed 1 of a
/// gradient, `fma 1, a, b`, negations its users absorb). An instruction being lowered has
/// its operands renamed to their registers (register `r` as IR value `r`, see
/// [`register_value`]), so that a rewrite to an operand of an operand's definition (`neg b`'s
/// `b`) names a register, which dominates the instruction since the definition does.
#[derive(Default)]
pub(super) struct Known {
    /// The instruction that made each register, its operands registers.
    defs: HashMap<ir::Value, InstData>,
    /// The registers holding a known constant (from a `const` or folded; never NaN).
    consts: HashMap<ir::Value, f64>,
}

/// The result of an instruction simplified away: a register that holds it, or a constant (as
/// `f64` bits).
enum Simplified {
    Register(ir::Value),
    Const(u64),
}

/// Register `x` as an IR value (see [`Known`]).
fn register_value(x: ir::Value) -> Value {
    Value::new(x.index())
}

/// The register an IR value made by [`register_value`] stands for.
fn value_register(v: Value) -> ir::Value {
    ir::Value::new(v.index())
}

impl Known {
    /// `vector` holds `scalar` in both lanes: a known constant too.
    pub(super) fn splatted(&mut self, scalar: ir::Value, vector: ir::Value) {
        if let Some(&c) = self.consts.get(&scalar) {
            self.consts.insert(vector, c);
        }
    }

    /// Rounds of identities on one instruction: `fma 1, a, (neg b)` is an `add`, then a `sub`.
    const ROUNDS: usize = 3;

    /// `inst` (of result type `ty`, operands registers) with its known constant operands as
    /// literals, folded when they all are (and the result is not NaN), then rewritten by the
    /// identities: the instruction to lower, or its result when none is needed.
    fn simplified(&self, inst: InstData, ty: Type) -> (InstData, Option<Simplified>) {
        let known = |o: Operand| match o {
            Operand::Const(c) => Some(c),
            Operand::Value(v) => self.consts.get(&value_register(v)).copied(),
        };
        let mut all_known = !matches!(inst, InstData::Const { .. });
        let mut any_value = false;
        for o in inst.operands() {
            all_known &= known(o).is_some();
            any_value |= matches!(o, Operand::Value(_));
        }
        if all_known && any_value && ty.is_float() {
            let r = math::eval_inst(&inst, ty, |o| known(o).unwrap_or(f64::NAN));
            if !r.is_nan() {
                return (inst, Some(Simplified::Const(ty.round(r).to_bits())));
            }
        }
        let mut inst = identities::inline_literals(inst, known);
        for _ in 0..Self::ROUNDS {
            let def_of = |o: Operand| o.as_value().and_then(|v| self.defs.get(&value_register(v)));
            match identities::rewrite(&inst, false, def_of) {
                Some(Rewrite::Alias(v)) => {
                    return (inst, Some(Simplified::Register(value_register(v))));
                }
                Some(Rewrite::Inst(new)) => inst = identities::inline_literals(new, known),
                None => break,
            }
        }
        (inst, None)
    }
}

/// What a loop reads before its first iteration: registers by value read at a fixed place,
/// and its carried positions with their first values (see [`Lowerer::loop_entry`]).
type LoopEntry = (HashMap<usize, ir::Value>, Vec<(u32, u32)>);

/// Per loop, per template position: the register of its last iteration's value, once the
/// loop is lowered (`None` for dead positions).
type LastValues = Vec<Vec<Option<ir::Value>>>;

/// Build `rolled` (verified, planned by `plan`) into `clif` as one function of the kernel ABI.
/// `input` holds the options, the constant table ([`crate::constants::ConstTable::build_rolled`])
/// and the program's header as its function.
pub(crate) fn lower_rolled<M: Module>(
    module: &mut M,
    imports: &mut Imports,
    input: &LowerInput<'_>,
    rolled: &Rolled,
    plan: &RolledPlan,
    clif: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
) -> Result<(), JitError> {
    let mut cache: Vec<Option<Cached>> = Vec::new();
    let mut lowerer = Lowerer::begin(module, imports, input, 0, &mut cache, clif, fctx);
    let mut last: LastValues = Vec::with_capacity(rolled.loops().len());
    let mut k = 0;
    while k < rolled.loops().len() {
        if let Some(fusion) = &plan.fused[k] {
            lowerer.rolled_fused(rolled, plan, k, fusion, &mut last)?;
            k = fusion.reverse + 1;
            continue;
        }
        let values = match rolled.loops()[k].trips {
            0 => vec![None; rolled.loops()[k].period()],
            1 => lowerer.rolled_straight(rolled, plan, k, &last)?,
            _ => lowerer.rolled_loop(rolled, plan, k, &last)?,
        };
        last.push(values);
        k += 1;
    }
    for &(place, out) in &plan.copies {
        let x = lowerer.read_fixed(rolled, plan, &last, place)?;
        let ty = match place {
            Place::Param(i) => rolled.ty(i),
            Place::Loop { k, t, .. } => rolled.loops()[k].template[t].ty,
        };
        let y = lowerer.value_to_boundary(x, ty);
        lowerer
            .b
            .ins()
            .store(FLAGS, y, lowerer.outputs, offset(out)?);
    }
    lowerer.b.ins().return_(&[]);
    let config = lowerer.module.target_config();
    lowerer.b.finalize(config);
    remove_unused(clif);
    Ok(())
}

/// Remove the instructions of `func` whose results nothing uses and that have no effect: the
/// arithmetic and the constant-table loads (read-only) of lines whose every reader the
/// identities rewrote to read something else ([`Known`]). Cranelift's lowering drops unused
/// arithmetic itself, but keeps every load.
fn remove_unused(func: &mut ir::Function) {
    let mut uses: HashMap<ir::Value, u32> = HashMap::new();
    let mut insts = Vec::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            insts.push(inst);
            for x in func.dfg.inst_values(inst) {
                *uses.entry(x).or_insert(0) += 1;
            }
        }
    }
    let removable = |func: &ir::Function, inst: ir::Inst| {
        let op = func.dfg.insts[inst].opcode();
        let effect = op.is_branch()
            || op.is_terminator()
            || op.is_call()
            || op.can_store()
            || op.can_trap()
            || op.other_side_effects();
        let read_only = match func.dfg.insts[inst] {
            ir::InstructionData::Load { flags, .. } => func.dfg.mem_flags[flags].readonly(),
            _ => !op.can_load(),
        };
        !effect && read_only && !func.dfg.inst_results(inst).is_empty()
    };
    // Backwards, so that an instruction only a removed one used goes too (definitions come
    // before their uses in the layout, loops aside: a header parameter is no instruction).
    for &inst in insts.iter().rev() {
        let unused = func
            .dfg
            .inst_results(inst)
            .iter()
            .all(|x| uses.get(x).is_none_or(|&n| n == 0));
        if unused && removable(func, inst) {
            let args: Vec<ir::Value> = func.dfg.inst_values(inst).collect();
            for x in args {
                if let Some(n) = uses.get_mut(&x) {
                    *n -= 1;
                }
            }
            func.layout.remove_inst(inst);
        }
    }
}

/// Addresses and loads already made for one counter in the current block: the counter scaled
/// and added to a buffer (see [`Lowerer::advance`]), and the values read at a moving index,
/// by (the value read when the counter is 0, step per count; the first need not exist).
/// Shared by every line of a fused loop's virtual iteration, whatever its lag: one counter
/// scaled once per buffer, and a value read twice loaded once.
#[derive(Default)]
struct Memo {
    advanced: HashMap<(ir::Value, i64), ir::Value>,
    loaded: HashMap<(i64, i64), ir::Value>,
}

/// A fused reverse loop, as [`Lowerer::reverse_lag`] reads it.
struct Reverse<'a> {
    /// The reverse loop.
    k: usize,
    /// The forward loop it is fused into.
    forward: &'a Loop,
    /// The reverse loop's trips: the terms both run.
    n: usize,
    /// Its values read at a fixed place, made before the fused loop.
    invariants: &'a HashMap<usize, ir::Value>,
    /// Per position: how many terms late it runs.
    lag: &'a [usize],
    /// The most of `lag` over the live positions.
    max_lag: usize,
}

/// Values of earlier virtual iterations by (loop, position, iterations back).
type Past = HashMap<(Sweep, usize, usize), ir::Value>;
/// One virtual iteration's values by (loop, position).
type Now = HashMap<(Sweep, usize), ir::Value>;

/// A virtual iteration: its index in a register, and known when it is straight code.
#[derive(Clone, Copy)]
struct Step {
    at: ir::Value,
    v: Option<i64>,
}

/// A term of the reverse loop, `lag` behind the virtual iteration in register `at` (its
/// addresses are those of the virtual iteration's, moved by the lag: one counter for every
/// line of the iteration); known when it is straight code.
#[derive(Clone, Copy)]
struct Term {
    at: ir::Value,
    lag: i64,
    known: Option<i64>,
}

/// The values `body` (an iteration's) carries into the next iteration, in `carried`'s order.
fn carried_out(carried: &[(u32, u32)], body: &[Option<ir::Value>]) -> Vec<ir::Value> {
    carried
        .iter()
        .map(|&(pos, _)| body[pos as usize].expect("plan: a carried value is live"))
        .collect()
}

/// A forward iteration's values as [`Now`] entries.
fn forward_values(body: &[Option<ir::Value>]) -> Now {
    body.iter()
        .enumerate()
        .filter_map(|(q, x)| x.map(|x| ((Sweep::Forward, q), x)))
        .collect()
}

/// Loop `k`'s live lines as a [`Pipeline`] (`invariants`: [`Lowerer::loop_entry`]'s), a
/// carried value one iteration back; `None` when a position is carried with two first values.
fn plain_pipeline(
    rolled: &Rolled,
    plan: &RolledPlan,
    k: usize,
    invariants: &HashMap<usize, ir::Value>,
) -> Option<Pipeline> {
    let l = &rolled.loops()[k];
    let live: Vec<usize> = plan.order[k].iter().map(|&t| t as usize).collect();
    let mut index = vec![usize::MAX; l.period()];
    for (p, &t) in live.iter().enumerate() {
        index[t] = p;
    }
    let mut inits: HashMap<u32, u32> = HashMap::new();
    let mut lines = Vec::with_capacity(live.len());
    for &t in &live {
        let mut reads = Vec::with_capacity(3);
        for &src in &l.sources[t] {
            reads.push(match src {
                Source::Same { pos } => Read::Line {
                    line: index[pos as usize],
                    age: 0,
                },
                Source::Carried { pos, init } => {
                    if *inits.entry(pos).or_insert(init) != init {
                        return None;
                    }
                    Read::Line {
                        line: index[pos as usize],
                        age: 1,
                    }
                }
                Source::Affine { base, step: 0 } => {
                    let v = base as usize;
                    Read::Fixed(invariants[&v], rolled.ty(v))
                }
                Source::Affine { base, step } => Read::Moving {
                    base,
                    step,
                    shift: 0,
                },
            });
        }
        lines.push(Line {
            sweep: Sweep::Forward,
            k,
            t,
            reads,
            from: 0,
            dir: 1,
        });
    }
    Some(Pipeline { lines })
}

/// The forward loop `kf` and the reverse loop fused into it (`rev`) as one [`Pipeline`]: the
/// forward lines, then the reverse ones by lag, each reading what it reads in
/// [`Lowerer::reverse_lag`] (`f_invariants`: the forward loop's [`Lowerer::loop_entry`]).
fn fused_pipeline(
    rolled: &Rolled,
    plan: &RolledPlan,
    kf: usize,
    f_invariants: &HashMap<usize, ir::Value>,
    rev: &Reverse<'_>,
) -> Option<Pipeline> {
    let mut pipe = plain_pipeline(rolled, plan, kf, f_invariants)?;
    let forward_index: HashMap<usize, usize> = pipe
        .lines
        .iter()
        .enumerate()
        .map(|(p, line)| (line.t, p))
        .collect();
    let r = &rolled.loops()[rev.k];
    let back = (rev.n - 1) as i64;
    let mut index = vec![usize::MAX; r.period()];
    for g in 0..=rev.max_lag {
        for t in (0..r.period()).filter(|&t| plan.live[rev.k][t] && rev.lag[t] == g) {
            index[t] = pipe.lines.len();
            let mut reads = Vec::with_capacity(3);
            for &src in &r.sources[t] {
                reads.push(match src {
                    Source::Same { pos } => Read::Line {
                        line: index[pos as usize],
                        age: g - rev.lag[pos as usize],
                    },
                    Source::Carried { pos, .. } => Read::Line {
                        line: index[pos as usize],
                        age: g - 1 - rev.lag[pos as usize],
                    },
                    Source::Affine { base, step } => {
                        match fused_read(rev.forward, rev.n, base, step)? {
                            FusedRead::Forward { q, offset } => Read::Line {
                                line: forward_index[&q],
                                age: (g as i64 - offset) as usize,
                            },
                            FusedRead::Rule if step == 0 => {
                                let v = base as usize;
                                Read::Fixed(rev.invariants[&v], rolled.ty(v))
                            }
                            FusedRead::Rule => {
                                let from = i64::from(base) + step * back;
                                Read::Moving {
                                    base: u32::try_from(from).ok()?,
                                    step: -step,
                                    shift: g as i64,
                                }
                            }
                        }
                    }
                });
            }
            pipe.lines.push(Line {
                sweep: Sweep::Reverse,
                k: rev.k,
                t,
                reads,
                from: back + g as i64,
                dir: -1,
            });
        }
    }
    Some(pipe)
}

impl<M: Module> Lowerer<'_, '_, M> {
    /// The value at `place`, read after its loop: a parameter from `inputs`, a loop's last
    /// iteration from its register, an earlier iteration from its home.
    fn read_fixed(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        last: &LastValues,
        place: Place,
    ) -> Result<ir::Value, JitError> {
        match place {
            Place::Param(i) => {
                let raw = self
                    .b
                    .ins()
                    .load(types::F64, READONLY, self.inputs, offset(i)?);
                Ok(self.boundary_to_value(raw, rolled.ty(i)))
            }
            Place::Loop { k, t, j } => {
                let l = &rolled.loops()[k];
                if j + 1 == l.trips {
                    // (None: a fused reverse loop, read from its home.)
                    if let Some(x) = last[k][t] {
                        return Ok(x);
                    }
                }
                let home = plan.homes[k][t].expect("plan: an earlier iteration read has a home");
                let slot = home.first as usize + home.stride as usize * j;
                let reg = self.reg_type(l.template[t].ty);
                Ok(self.b.ins().load(reg, FLAGS, self.work, offset(slot)?))
            }
        }
    }

    /// The instruction `inst` (a template's iteration 0, whose operands give the literals'
    /// type) of result type `ty`, its value operands being the registers `operands` in text
    /// order, after the simplifier's rules on what is known of those registers (see
    /// [`Known`]).
    pub(super) fn lower_template(
        &mut self,
        rolled: &Rolled,
        ty: Type,
        inst: &InstData,
        operands: &[ir::Value],
    ) -> Result<ir::Value, JitError> {
        let lit_ty = literal_type_with(inst, ty, |v| rolled.ty(v.index()));
        let mut c = 0;
        let on_registers = inst.map_values(|_| {
            c += 1;
            register_value(operands[c - 1])
        });
        // A literal read from a table is this iteration's entry: data, not a special value.
        let data = self.tabled.iter().any(Option::is_some);
        let (inst, folded) = if data {
            (on_registers, None)
        } else {
            self.known.simplified(on_registers, ty)
        };
        if let Some(x) = folded {
            return Ok(match x {
                Simplified::Register(x) => x,
                Simplified::Const(bits) => {
                    let x = self.literal(ty, bits)?;
                    self.known.consts.insert(x, f64::from_bits(bits));
                    x
                }
            });
        }
        let mut registers = Vec::with_capacity(3);
        inst.for_each_value(|v| registers.push((v.index(), ir::Value::new(v.index()))));
        self.overrides = registers;
        let x = self.lower_inst_as(ty, lit_ty, &inst);
        self.overrides.clear();
        self.tabled = [None; 3];
        let x = x?;
        match inst {
            InstData::Const { bits, .. } if !data && !f64::from_bits(bits).is_nan() => {
                self.known.consts.insert(x, f64::from_bits(bits));
            }
            _ => {
                self.known.defs.insert(x, inst);
            }
        }
        Ok(x)
    }

    /// Loop `k`, of one trip, as straight code; returns its values.
    fn rolled_straight(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        k: usize,
        last: &LastValues,
    ) -> Result<Vec<Option<ir::Value>>, JitError> {
        let l = &rolled.loops()[k];
        let mut body: Vec<Option<ir::Value>> = vec![None; l.period()];
        // Values read from before the loop, each once.
        let mut read: HashMap<usize, ir::Value> = HashMap::new();
        let mut advanced = HashMap::new();
        for t in (0..l.period()).filter(|&t| plan.live[k][t]) {
            let inst = l.instance(t, 0);
            let mut operands = Vec::with_capacity(3);
            for &src in &l.sources[t] {
                operands.push(match src {
                    Source::Same { pos } => body[pos as usize].expect("plan: a read value is live"),
                    _ => {
                        let v = l.source_value(src, 0);
                        match read.get(&v) {
                            Some(&x) => x,
                            None => {
                                let x = self.read_fixed(rolled, plan, last, place_of(rolled, v))?;
                                read.insert(v, x);
                                x
                            }
                        }
                    }
                });
            }
            let it = Iteration {
                counter: None,
                from: 0,
                dir: 1,
                last: true,
            };
            let x = self.lower_line(rolled, plan, (k, t), &inst, &operands, it, &mut advanced)?;
            body[t] = Some(x);
        }
        Ok(body)
    }

    /// Before loop `k`: the values it reads at a fixed place (invariants, and the values
    /// carried into its first iteration), and its carried positions with their first values'
    /// places, one header parameter each (sorted, distinct).
    fn loop_entry(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        k: usize,
        last: &LastValues,
        with_carried: bool,
    ) -> Result<LoopEntry, JitError> {
        let l = &rolled.loops()[k];
        let mut invariants: HashMap<usize, ir::Value> = HashMap::new();
        let mut carried: Vec<(u32, u32)> = Vec::new();
        for t in (0..l.period()).filter(|&t| plan.live[k][t]) {
            for &src in &l.sources[t] {
                let v = match src {
                    Source::Affine { base, step: 0 } => base as usize,
                    Source::Carried { pos, init } if with_carried => {
                        carried.push((pos, init));
                        init as usize
                    }
                    _ => continue,
                };
                if let std::collections::hash_map::Entry::Vacant(e) = invariants.entry(v) {
                    let x = self.read_fixed(rolled, plan, last, place_of(rolled, v))?;
                    e.insert(x);
                }
            }
        }
        carried.sort_unstable();
        carried.dedup();
        Ok((invariants, carried))
    }

    /// One iteration of loop `k`'s live positions, iteration `j` (a register): operands by
    /// their rules (`carried_in` holds the carried values, in the order of `carried`), values
    /// stored to their homes and output streams. Returns the iteration's values.
    #[allow(clippy::too_many_arguments, reason = "the loop's state, passed apart")]
    fn loop_body(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        k: usize,
        j: ir::Value,
        invariants: &HashMap<usize, ir::Value>,
        carried: &[(u32, u32)],
        carried_in: &[ir::Value],
        memo: &mut Memo,
    ) -> Result<Vec<Option<ir::Value>>, JitError> {
        let l = &rolled.loops()[k];
        let Memo { advanced, loaded } = memo;
        let mut body: Vec<Option<ir::Value>> = vec![None; l.period()];
        for t in plan.order[k].iter().map(|&t| t as usize) {
            // Iteration 0's instruction: a template's own operands need not be values of the
            // program (a derived loop's are placeholders); its rules are what it reads.
            let inst = &l.instance(t, 0);
            let mut operands = Vec::with_capacity(3);
            for &src in &l.sources[t] {
                let x = match src {
                    Source::Same { pos } => body[pos as usize].expect("plan: a read value is live"),
                    Source::Carried { pos, init } => {
                        let at = carried.binary_search(&(pos, init)).expect("collected");
                        carried_in[at]
                    }
                    Source::Affine { base, step: 0 } => invariants[&(base as usize)],
                    Source::Affine { base, step } => match loaded.get(&(i64::from(base), step)) {
                        Some(&x) => x,
                        None => {
                            let read = (base, step, 0);
                            let x = self.load_moving(rolled, plan, advanced, j, read)?;
                            loaded.insert((i64::from(base), step), x);
                            x
                        }
                    },
                };
                operands.push(x);
            }
            let it = Iteration {
                counter: Some(j),
                from: 0,
                dir: 1,
                last: false,
            };
            body[t] = Some(self.lower_line(rolled, plan, (k, t), inst, &operands, it, advanced)?);
        }
        Ok(body)
    }

    /// Line `t` of loop `k` (`inst`, its iteration 0, with its value operands in registers) in
    /// iteration `it`: its literals that change per iteration from the tables, then the
    /// instruction, stored to its home and its output streams. Returns its register.
    #[allow(clippy::too_many_arguments, reason = "a line and where it runs")]
    pub(super) fn lower_line(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        (k, t): (usize, usize),
        inst: &InstData,
        operands: &[ir::Value],
        it: Iteration,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
    ) -> Result<ir::Value, JitError> {
        let l = &rolled.loops()[k];
        let input = self.input;
        let width = input.consts.entry_bytes as i64;
        let mut moved = |this: &mut Self, base: ir::Value, bytes: i64| match it.counter {
            Some(counter) => this.advance(advanced, base, counter, it.dir * bytes),
            None => base,
        };
        for (table, &entry) in l.tables.iter().zip(&input.consts.run_tables[k]) {
            if table.pos as usize == t {
                let base = self.table_base();
                let at = moved(self, base, width);
                let off = signed_offset(i64::from(entry) + it.from)?;
                let x = self.b.ins().load(clif_type(table.ty), READONLY, at, off);
                self.tabled[table.slot as usize] = Some(x);
            }
        }
        let ty = l.template[t].ty;
        let x = self.lower_template(rolled, ty, inst, operands)?;
        match plan.homes[k][t] {
            // The last iteration alone (a fused reverse loop's): stored by that iteration.
            Some(Home { first, stride: 0 }) if it.last => {
                self.b
                    .ins()
                    .store(FLAGS, x, self.work, offset(first as usize)?);
            }
            Some(Home { stride: 0, .. }) | None => {}
            Some(Home { first, stride }) => {
                let stride = i64::from(stride);
                let at = moved(self, self.work, 8 * stride);
                let slot = i64::from(first) + stride * it.from;
                self.b.ins().store(FLAGS, x, at, signed_offset(slot)?);
            }
        }
        if !plan.streams[k][t].is_empty() {
            let y = self.value_to_boundary(x, ty);
            for stream in &plan.streams[k][t] {
                let at = moved(self, self.outputs, 8 * stream.step);
                let out = stream.first as i64 + stream.step * it.from;
                self.b.ins().store(FLAGS, y, at, signed_offset(out)?);
            }
        }
        Ok(x)
    }

    /// A loop header with the counter and `types` as parameters, entered with `args`;
    /// returns the header and its parameters, the builder in it.
    pub(super) fn enter_loop(
        &mut self,
        types: &[types::Type],
        args: Vec<ir::Value>,
    ) -> (ir::Block, Vec<ir::Value>) {
        let ptr = self.module.target_config().pointer_type();
        let header = self.b.create_block();
        self.b.append_block_param(header, ptr);
        for &ty in types {
            self.b.append_block_param(header, ty);
        }
        let args: Vec<ir::BlockArg> = args.into_iter().map(ir::BlockArg::Value).collect();
        self.b.ins().jump(header, &args);
        self.b.switch_to_block(header);
        self.body_literals = Some(HashMap::new());
        let params = self.b.block_params(header).to_vec();
        (header, params)
    }

    /// The end of a loop body of counter `j`: back to `header` with `next` (after `j + 1`)
    /// while the counter is below `trips`, else on after the loop.
    fn leave_loop(
        &mut self,
        header: ir::Block,
        j: ir::Value,
        trips: usize,
        next: &[ir::Value],
    ) -> Result<(), JitError> {
        self.body_literals = None;
        let step = self.b.ins().iadd_imm_s(j, 1);
        let trips = i64::try_from(trips)
            .map_err(|_| JitError::TooLarge(format!("a loop of {trips} trips")))?;
        let more = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, step, trips);
        let mut args = vec![ir::BlockArg::Value(step)];
        args.extend(next.iter().map(|&x| ir::BlockArg::Value(x)));
        let exit = self.b.create_block();
        self.b.ins().brif(more, header, &args, exit, &[]);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        Ok(())
    }

    /// Loop `k` as a counted loop, two iterations per trip where that pays
    /// ([`super::rolled_paired`]); returns its last iteration's values (registers of the
    /// header block, or of straight code after it, which dominate all later code).
    fn rolled_loop(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        k: usize,
        last: &LastValues,
    ) -> Result<Vec<Option<ir::Value>>, JitError> {
        let (invariants, carried) = self.loop_entry(rolled, plan, k, last, true)?;
        let firsts: Vec<ir::Value> = carried
            .iter()
            .map(|&(_, init)| invariants[&(init as usize)])
            .collect();
        let entry = (&invariants, &carried[..]);
        let l = &rolled.loops()[k];
        let trips = l.trips;
        let paired = match trips >= 4 {
            true => plain_pipeline(rolled, plan, k, &invariants).and_then(|pipe| {
                let serial = pipe.serial();
                let (pairing, math) = (self.input.pair_loops, self.input.math);
                pipe.pays(rolled, plan, &serial, pairing, math)
                    .then_some((pipe, serial))
            }),
            false => None,
        };
        let Some((pipe, serial)) = paired else {
            return self.counted_loop(rolled, plan, k, 0..trips, entry, &firsts);
        };
        let mut history = History::new();
        for (&(pos, _), &x) in carried.iter().zip(&firsts) {
            history.insert((Sweep::Forward, pos as usize, -1), x);
        }
        let pairs = trips / 2;
        self.paired_pipeline(rolled, plan, &pipe, &serial, 0, pairs, &mut history)?;
        let end = 2 * pairs as i64;
        if trips % 2 == 1 {
            let mut before: Vec<ir::Value> = carried
                .iter()
                .map(|&(pos, _)| history[&(Sweep::Forward, pos as usize, end - 1)])
                .collect();
            let mut memo = Memo::default();
            let v = trips - 1;
            return self.straight_iteration(rolled, plan, k, v, entry, &mut before, &mut memo);
        }
        Ok((0..l.period())
            .map(|t| history.get(&(Sweep::Forward, t, end - 1)).copied())
            .collect())
    }

    /// Iterations `range` of loop `k` as a counted loop, its carried values entering as
    /// `firsts` (`entry`: [`Self::loop_entry`]'s); returns the last iteration's values.
    fn counted_loop(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        k: usize,
        range: std::ops::Range<usize>,
        (invariants, carried): (&HashMap<usize, ir::Value>, &[(u32, u32)]),
        firsts: &[ir::Value],
    ) -> Result<Vec<Option<ir::Value>>, JitError> {
        let l = &rolled.loops()[k];
        let ptr = self.module.target_config().pointer_type();
        let types: Vec<types::Type> = carried
            .iter()
            .map(|&(pos, _)| self.reg_type(l.template[pos as usize].ty))
            .collect();
        let mut args = vec![self.b.ins().iconst(ptr, range.start as i64)];
        args.extend(firsts);
        let (header, params) = self.enter_loop(&types, args);
        let j = params[0];
        let mut memo = Memo::default();
        let body = self.loop_body(
            rolled,
            plan,
            k,
            j,
            invariants,
            carried,
            &params[1..],
            &mut memo,
        )?;
        let next = carried_out(carried, &body);
        self.leave_loop(header, j, range.end, &next)?;
        Ok(body)
    }

    /// Iteration `v` of loop `k` as straight code, its carried values entering as `firsts`,
    /// which then become the iteration's; returns its values.
    #[allow(clippy::too_many_arguments, reason = "the loop's state, passed apart")]
    fn straight_iteration(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        k: usize,
        v: usize,
        (invariants, carried): (&HashMap<usize, ir::Value>, &[(u32, u32)]),
        firsts: &mut Vec<ir::Value>,
        memo: &mut Memo,
    ) -> Result<Vec<Option<ir::Value>>, JitError> {
        let ptr = self.module.target_config().pointer_type();
        let at = self.b.ins().iconst(ptr, v as i64);
        let body = self.loop_body(rolled, plan, k, at, invariants, carried, firsts, memo)?;
        *firsts = carried_out(carried, &body);
        Ok(body)
    }

    /// The forward loop `kf`, the loops of one trip after it and the reverse loop
    /// `fusion.reverse` fused into it (see [`Fusion`]), as a software pipeline over *virtual
    /// iterations* `v`: each runs the forward iteration `v` (while `v < n`, `n` the reverse
    /// loop's trips) and then, lag by lag, the reverse lines of lag `g` for term `v − g`
    /// (while that term is one of `0..n`). Iterations `0..=max lag` are straight code, then
    /// a loop runs the rest up to `n − 1` (values read some iterations back pass in chains of
    /// header parameters), then the forward loop's remaining iterations, then the loops
    /// between, then the iterations past `n − 1` (the last term's lagging lines read their
    /// carried values' first values, made by the loops between). Every instruction reads
    /// exactly the values it reads in the expanded program. Pushes the values of every loop
    /// it lowers to `last` (none for the reverse loop: what is read of it later is read from
    /// its homes).
    fn rolled_fused(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        kf: usize,
        fusion: &Fusion,
        last: &mut LastValues,
    ) -> Result<(), JitError> {
        let loops = rolled.loops();
        let kr = fusion.reverse;
        let (f, r) = (&loops[kf], &loops[kr]);
        let n = r.trips;
        let lag = &fusion.lag;
        let live_r = |t: &usize| plan.live[kr][*t];
        let max_lag = (0..r.period())
            .filter(live_r)
            .map(|t| lag[t])
            .max()
            .unwrap_or(0);
        let ptr = self.module.target_config().pointer_type();
        let (f_invariants, carried) = self.loop_entry(rolled, plan, kf, last, true)?;
        // The reverse loop's invariants are made before the forward loop (the plan saw to it);
        // its carried values' first values after the loops between.
        let (r_invariants, _) = self.loop_entry(rolled, plan, kr, last, false)?;
        let reverse = Reverse {
            k: kr,
            forward: f,
            n,
            invariants: &r_invariants,
            lag,
            max_lag,
        };
        // How many iterations back each value is read, at most; the forward values of term
        // −1 that term 0 reads (the values before the forward loop in their places).
        let mut ages: BTreeMap<(Sweep, usize), usize> = BTreeMap::new();
        let mut history: History = HashMap::new();
        // Whether a line reads the forward loop's term after its own (the last term reads the
        // forward iteration n, which then runs as straight code, its values kept).
        let mut after = false;
        for t in (0..r.period()).filter(live_r) {
            for &src in &r.sources[t] {
                let (key, age) = match src {
                    Source::Same { pos } => {
                        ((Sweep::Reverse, pos as usize), lag[t] - lag[pos as usize])
                    }
                    Source::Carried { pos, .. } => (
                        (Sweep::Reverse, pos as usize),
                        lag[t] - 1 - lag[pos as usize],
                    ),
                    Source::Affine { base, step } => match fused_read(f, n, base, step) {
                        Some(FusedRead::Forward { q, offset }) => {
                            after |= offset > 0;
                            if offset < 0 && !history.contains_key(&(Sweep::Forward, q, -1)) {
                                let v = f.start + q - f.period();
                                let x = self.read_fixed(rolled, plan, last, place_of(rolled, v))?;
                                history.insert((Sweep::Forward, q, -1), x);
                            }
                            // (The plan made a line reading the term after lag.)
                            ((Sweep::Forward, q), (lag[t] as i64 - offset) as usize)
                        }
                        _ => continue,
                    },
                };
                if age > 0 {
                    let at = ages.entry(key).or_insert(0);
                    *at = (*at).max(age);
                }
            }
        }
        let past_of = |history: &History, v: i64| -> Past {
            let mut past = Past::new();
            for (&(sweep, p), &most) in &ages {
                for age in 1..=most {
                    if let Some(&x) = history.get(&(sweep, p, v - age as i64)) {
                        past.insert((sweep, p, age), x);
                    }
                }
            }
            past
        };
        let record = |history: &mut History, now: &Now, v: i64| {
            for (&(sweep, p), &x) in now {
                history.insert((sweep, p, v), x);
            }
        };

        // Virtual iterations 0..=max lag, straight.
        let mut f_carried: Vec<ir::Value> = carried
            .iter()
            .map(|&(_, init)| f_invariants[&(init as usize)])
            .collect();
        let straight_end = (max_lag + 1).min(n);
        let mut f_last = Vec::new();
        let f_entry = (&f_invariants, &carried[..]);
        // Virtual iteration `v` as straight code; returns its forward values.
        let straight = |this: &mut Self,
                        v: usize,
                        f_carried: &mut Vec<ir::Value>,
                        history: &mut History|
         -> Result<Vec<Option<ir::Value>>, JitError> {
            let mut memo = Memo::default();
            let f_body =
                this.straight_iteration(rolled, plan, kf, v, f_entry, f_carried, &mut memo)?;
            let at = this.b.ins().iconst(ptr, v as i64);
            let mut now = forward_values(&f_body);
            let past = past_of(history, v as i64);
            let step = Step {
                at,
                v: Some(v as i64),
            };
            this.virtual_iteration(rolled, plan, &reverse, step, &past, &mut now, last, memo)?;
            record(history, &now, v as i64);
            Ok(f_body)
        };
        for v in 0..straight_end {
            f_last = straight(self, v, &mut f_carried, &mut history)?;
        }

        // Virtual iterations max lag + 1 .. n, two per trip where that pays (and the last
        // one straight when they are odd).
        let pairs = (n - straight_end) / 2;
        let paired = match pairs >= 2 {
            true => fused_pipeline(rolled, plan, kf, &f_invariants, &reverse).and_then(|pipe| {
                let serial = pipe.serial();
                let (pairing, math) = (self.input.pair_loops, self.input.math);
                pipe.pays(rolled, plan, &serial, pairing, math)
                    .then_some((pipe, serial))
            }),
            false => None,
        };
        if let Some((pipe, serial)) = paired {
            let v0 = straight_end as i64;
            self.paired_pipeline(rolled, plan, &pipe, &serial, v0, pairs, &mut history)?;
            let end = straight_end + 2 * pairs;
            let forward = |history: &History, q: usize| {
                history.get(&(Sweep::Forward, q, end as i64 - 1)).copied()
            };
            f_carried = carried
                .iter()
                .map(|&(pos, _)| forward(&history, pos as usize).expect("a carried line"))
                .collect();
            f_last = (0..f.period()).map(|q| forward(&history, q)).collect();
            if end < n {
                f_last = straight(self, end, &mut f_carried, &mut history)?;
            }
        } else if straight_end < n {
            // One per trip.
            let chains: Vec<((Sweep, usize), usize)> = ages.iter().map(|(&k, &a)| (k, a)).collect();
            let ty_of = |(sweep, p): (Sweep, usize)| match sweep {
                Sweep::Forward => f.template[p].ty,
                Sweep::Reverse => r.template[p].ty,
            };
            let mut types: Vec<types::Type> = carried
                .iter()
                .map(|&(pos, _)| self.reg_type(f.template[pos as usize].ty))
                .collect();
            let mut args = vec![self.b.ins().iconst(ptr, straight_end as i64)];
            args.extend(&f_carried);
            for &(key, most) in &chains {
                for age in 1..=most {
                    types.push(self.reg_type(ty_of(key)));
                    let from = straight_end as i64 - age as i64;
                    args.push(history[&(key.0, key.1, from)]);
                }
            }
            let (header, params) = self.enter_loop(&types, args);
            let j = params[0];
            let n_carried = carried.len();
            let mut past = Past::new();
            let mut at = 1 + n_carried;
            for &(key, most) in &chains {
                for age in 1..=most {
                    past.insert((key.0, key.1, age), params[at]);
                    at += 1;
                }
            }
            let mut memo = Memo::default();
            let f_body = self.loop_body(
                rolled,
                plan,
                kf,
                j,
                &f_invariants,
                &carried,
                &params[1..1 + n_carried],
                &mut memo,
            )?;
            let mut now = forward_values(&f_body);
            let step = Step { at: j, v: None };
            self.virtual_iteration(rolled, plan, &reverse, step, &past, &mut now, last, memo)?;
            let mut next = carried_out(&carried, &f_body);
            for &(key, most) in &chains {
                for age in 1..=most {
                    next.push(match age {
                        1 => now[&key],
                        _ => past[&(key.0, key.1, age - 1)],
                    });
                }
            }
            self.leave_loop(header, j, n, &next)?;
            // The last iteration's values and those it held, for the iterations past n − 1.
            let end = n as i64 - 1;
            for (&(sweep, p, age), &x) in &past {
                history.insert((sweep, p, end - age as i64), x);
            }
            record(&mut history, &now, end);
            f_carried = carried_out(&carried, &f_body);
            f_last = f_body;
        }

        // The forward loop's iterations past the reverse loop's terms: iteration n straight
        // when the last term reads it, then a loop.
        let mut tail_from = n;
        if after && f.trips > n {
            let mut memo = Memo::default();
            let f_body =
                self.straight_iteration(rolled, plan, kf, n, f_entry, &mut f_carried, &mut memo)?;
            record(&mut history, &forward_values(&f_body), n as i64);
            f_last = f_body;
            tail_from = n + 1;
        }
        if f.trips > tail_from {
            let range = tail_from..f.trips;
            f_last = self.counted_loop(rolled, plan, kf, range, f_entry, &f_carried)?;
        }
        last.push(f_last);

        // The loops between, then the virtual iterations past n − 1.
        for (k, l) in loops.iter().enumerate().take(kr).skip(kf + 1) {
            let values = match l.trips {
                0 => vec![None; l.period()],
                _ => self.rolled_straight(rolled, plan, k, last)?,
            };
            last.push(values);
        }
        for v in n..n + max_lag {
            let at = self.b.ins().iconst(ptr, v as i64);
            let past = past_of(&history, v as i64);
            // (The forward iteration n, when it ran straight for the last term's reads.)
            let mut now: Now = (0..f.period())
                .filter_map(|q| {
                    let x = history.get(&(Sweep::Forward, q, v as i64))?;
                    Some(((Sweep::Forward, q), *x))
                })
                .collect();
            let step = Step {
                at,
                v: Some(v as i64),
            };
            let memo = Memo::default();
            self.virtual_iteration(rolled, plan, &reverse, step, &past, &mut now, last, memo)?;
            record(&mut history, &now, v as i64);
        }
        last.push(vec![None; r.period()]);
        Ok(())
    }

    /// The reverse lines of one virtual iteration (see [`Self::rolled_fused`]), lag by lag:
    /// those of lag `g` for term `v − g`, when that is a term. `now` holds this iteration's
    /// forward values and receives its reverse ones; `past` the values of earlier iterations by
    /// age. `memo` is the forward iteration's (lag 0 runs its term).
    #[allow(
        clippy::too_many_arguments,
        reason = "the fused loop's state, passed apart"
    )]
    fn virtual_iteration(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        rev: &Reverse<'_>,
        step: Step,
        past: &Past,
        now: &mut Now,
        last: &LastValues,
        memo: Memo,
    ) -> Result<(), JitError> {
        let mut memo = memo;
        for g in 0..=rev.max_lag {
            let term = step.v.map(|v| v - g as i64);
            if term.is_some_and(|term| term < 0 || term >= rev.n as i64) {
                continue;
            }
            let term = Term {
                at: step.at,
                lag: g as i64,
                known: term,
            };
            self.reverse_lag(rolled, plan, rev, g, term, past, now, last, &mut memo)?;
        }
        Ok(())
    }

    /// The reverse lines of lag `g` for one term (see [`Self::virtual_iteration`]): each
    /// operand from this iteration's values (`now`), an earlier one's (`past`, by age), the
    /// rules (invariants, moving reads by term: iteration `n − 1 − term`), or for the last
    /// term's carried reads their first values; stored to its homes and output streams at its
    /// iteration's place.
    #[allow(
        clippy::too_many_arguments,
        reason = "the fused loop's state, passed apart"
    )]
    fn reverse_lag(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        rev: &Reverse<'_>,
        g: usize,
        term: Term,
        past: &Past,
        now: &mut Now,
        last: &LastValues,
        memo: &mut Memo,
    ) -> Result<(), JitError> {
        let (k, n) = (rev.k, rev.n);
        let l = &rolled.loops()[k];
        let live = "plan: a read value is live";
        // Iteration `n − 1 − term`: what moves by `step` per iteration moves by `−step` per
        // term, from its place at iteration `n − 1`; by the virtual iteration `term + lag`,
        // from its place at iteration `n − 1 + lag`.
        let back = (n - 1) as i64;
        let from_back = back + term.lag;
        let Memo { advanced, loaded } = memo;
        let value = |now: &Now, key: (Sweep, usize), age: usize| match age {
            0 => now.get(&key).copied(),
            _ => past.get(&(key.0, key.1, age)).copied(),
        };
        for t in (0..l.period()).filter(|&t| plan.live[k][t] && rev.lag[t] == g) {
            let inst = &l.instance(t, 0);
            let mut operands = Vec::with_capacity(3);
            for &src in &l.sources[t] {
                let x = match src {
                    Source::Same { pos } => {
                        let pos = pos as usize;
                        value(now, (Sweep::Reverse, pos), g - rev.lag[pos]).expect(live)
                    }
                    Source::Carried { init, .. } if term.known == Some(back) => {
                        let place = place_of(rolled, init as usize);
                        self.read_fixed(rolled, plan, last, place)?
                    }
                    Source::Carried { pos, .. } => {
                        let pos = pos as usize;
                        value(now, (Sweep::Reverse, pos), g - 1 - rev.lag[pos]).expect(live)
                    }
                    Source::Affine { base, step } => {
                        match fused_read(rev.forward, n, base, step).expect("plan: fusable") {
                            FusedRead::Forward { q, offset } => {
                                let age = (g as i64 - offset) as usize;
                                value(now, (Sweep::Forward, q), age).expect(live)
                            }
                            FusedRead::Rule if step == 0 => rev.invariants[&(base as usize)],
                            FusedRead::Rule => {
                                // By term: from the value at iteration n − 1, moving back;
                                // by the virtual iteration, `lag` counts later.
                                let from = i64::from(base) + step * back;
                                let from = u32::try_from(from).expect("a value index");
                                let key = (i64::from(from) + step * term.lag, -step);
                                match loaded.get(&key) {
                                    Some(&x) => x,
                                    None => {
                                        let read = (from, -step, term.lag);
                                        let x = self
                                            .load_moving(rolled, plan, advanced, term.at, read)?;
                                        loaded.insert(key, x);
                                        x
                                    }
                                }
                            }
                        }
                    }
                };
                operands.push(x);
            }
            let it = Iteration {
                counter: Some(term.at),
                from: from_back,
                dir: -1,
                last: term.known == Some(0),
            };
            let x = self.lower_line(rolled, plan, (k, t), inst, &operands, it, advanced)?;
            now.insert((Sweep::Reverse, t), x);
        }
        Ok(())
    }

    /// The value `base + step·(j − shift)` (`step` ≠ 0) when the counter is `j`: from
    /// `inputs`, or from the home of the loop it lies in (the plan made every such read one
    /// region).
    pub(super) fn load_moving(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
        j: ir::Value,
        (base, step, shift): (u32, i64, i64),
    ) -> Result<ir::Value, JitError> {
        match place_of(rolled, base as usize) {
            Place::Param(i) => {
                let at = self.advance(advanced, self.inputs, j, 8 * step);
                let off = signed_offset(i as i64 - step * shift)?;
                let raw = self.b.ins().load(types::F64, READONLY, at, off);
                Ok(self.boundary_to_value(raw, rolled.ty(i)))
            }
            Place::Loop { k, t, j: i0 } => {
                let m = &rolled.loops()[k];
                let home = plan.homes[k][t].expect("plan: a moving read has a home");
                // Iteration `i` of position `t` is slot `first + stride·i`; a dense home's
                // stride is the period, so a step that walks across positions moves `step`
                // slots, and an array's moves `step / period` (a multiple).
                let slot = home.first as usize + home.stride as usize * i0;
                let per_step = step * i64::from(home.stride) / m.period() as i64;
                let at = self.advance(advanced, self.work, j, 8 * per_step);
                let reg = self.reg_type(m.template[t].ty);
                let off = signed_offset(slot as i64 - per_step * shift)?;
                Ok(self.b.ins().load(reg, FLAGS, at, off))
            }
        }
    }
}
