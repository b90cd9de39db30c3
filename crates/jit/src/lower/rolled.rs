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
//! constant table's literal tables. Homes, liveness and output streams are the
//! [`RolledPlan`]'s. Every instruction is lowered by the same code as the straight-line
//! program's ([`Lowerer::lower_inst_as`]) and every iteration runs in program order, so the
//! results are bitwise those of the expanded program and of the interpreter.

use std::collections::HashMap;

use adjit_ir::roll::Source;
use adjit_ir::{literal_type_with, InstData, Rolled, Type, Value};
use cranelift_codegen::ir::{self, condcodes::IntCC, types, InstBuilder};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::Module;

use super::{offset, Cached, Imports, LowerInput, Lowerer, FLAGS, READONLY};
use crate::error::JitError;
use crate::rolled_plan::{Home, Place, RolledPlan};

/// The first of the stand-in values a template instruction's operands are renamed to while it
/// is lowered (operand `c` is `PLACEHOLDER + c`): two operands of one instruction may read the
/// same value of iteration 0 by different rules (`x[j]` and `x[0]`).
const PLACEHOLDER: usize = u32::MAX as usize - 4;

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
    for k in 0..rolled.loops().len() {
        let values = match rolled.loops()[k].trips {
            1 => lowerer.rolled_straight(rolled, plan, k, &last)?,
            _ => lowerer.rolled_loop(rolled, plan, k, &last)?,
        };
        last.push(values);
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
    Ok(())
}

/// Where value `v` lies.
fn place_of(rolled: &Rolled, v: usize) -> Place {
    if v < rolled.n_params() {
        return Place::Param(v);
    }
    let (k, t, j) = rolled
        .locate(v)
        .expect("a verified rolled program reads its own values");
    Place::Loop { k, t, j }
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
                    return Ok(last[k][t].expect("plan: a value read later is live"));
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
    /// order.
    fn lower_template(
        &mut self,
        rolled: &Rolled,
        ty: Type,
        inst: &InstData,
        operands: &[ir::Value],
    ) -> Result<ir::Value, JitError> {
        let lit_ty = literal_type_with(inst, ty, |v| rolled.ty(v.index()));
        let mut c = 0;
        let renamed = inst.map_values(|_| {
            c += 1;
            Value::new(PLACEHOLDER + c - 1)
        });
        self.overrides = operands
            .iter()
            .enumerate()
            .map(|(c, &x)| (PLACEHOLDER + c, x))
            .collect();
        let x = self.lower_inst_as(ty, lit_ty, &renamed);
        self.overrides.clear();
        self.tabled = [None; 3];
        x
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
            let ty = l.template[t].ty;
            let x = self.lower_template(rolled, ty, &inst, &operands)?;
            if let Some(home) = plan.homes[k][t] {
                self.b
                    .ins()
                    .store(FLAGS, x, self.work, offset(home.first as usize)?);
            }
            if !plan.streams[k][t].is_empty() {
                let y = self.value_to_boundary(x, ty);
                for stream in &plan.streams[k][t] {
                    self.b
                        .ins()
                        .store(FLAGS, y, self.outputs, offset(stream.first)?);
                }
            }
            body[t] = Some(x);
        }
        Ok(body)
    }

    /// Loop `k` as a counted loop; returns its last iteration's values (registers of the
    /// header block, which dominates all later code).
    fn rolled_loop(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        k: usize,
        last: &LastValues,
    ) -> Result<Vec<Option<ir::Value>>, JitError> {
        let l = &rolled.loops()[k];
        let period = l.period();
        let live = |t: usize| plan.live[k][t];
        let ptr = self.module.target_config().pointer_type();
        // Before the loop: invariants, and the values carried into its first iteration (one
        // header parameter per distinct (position, value before the loop)).
        let mut invariants: HashMap<usize, ir::Value> = HashMap::new();
        let mut carried: Vec<(u32, u32)> = Vec::new();
        for t in (0..period).filter(|&t| live(t)) {
            for &src in &l.sources[t] {
                let v = match src {
                    Source::Affine { base, step: 0 } => base as usize,
                    Source::Carried { pos, init } => {
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
        let mut inits = vec![ir::BlockArg::Value(self.b.ins().iconst(ptr, 0))];
        inits.extend(
            carried
                .iter()
                .map(|&(_, init)| ir::BlockArg::Value(invariants[&(init as usize)])),
        );
        let header = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, ptr);
        for &(pos, _) in &carried {
            let reg = self.reg_type(l.template[pos as usize].ty);
            self.b.append_block_param(header, reg);
        }
        self.b.ins().jump(header, &inits);
        self.b.switch_to_block(header);
        let params = self.b.block_params(header).to_vec();
        let j = params[0];
        let mut advanced = HashMap::new();
        // Values read from memory at a moving index, by (first value, step): each once.
        let mut loaded: HashMap<(u32, i64), ir::Value> = HashMap::new();
        self.body_literals = Some(HashMap::new());
        let mut body: Vec<Option<ir::Value>> = vec![None; period];
        for t in (0..period).filter(|&t| live(t)) {
            // Iteration 0's instruction: a template's own operands need not be values of the
            // program (a derived loop's are placeholders); its rules are what it reads.
            let inst = &l.instance(t, 0);
            let mut operands = Vec::with_capacity(3);
            for &src in &l.sources[t] {
                let x = match src {
                    Source::Same { pos } => body[pos as usize].expect("plan: a read value is live"),
                    Source::Carried { pos, init } => {
                        let at = carried
                            .binary_search(&(pos, init))
                            .expect("collected above");
                        params[1 + at]
                    }
                    Source::Affine { base, step: 0 } => invariants[&(base as usize)],
                    Source::Affine { base, step } => match loaded.get(&(base, step)) {
                        Some(&x) => x,
                        None => {
                            let x = self.load_moving(rolled, plan, &mut advanced, j, base, step)?;
                            loaded.insert((base, step), x);
                            x
                        }
                    },
                };
                operands.push(x);
            }
            let input = self.input;
            for (table, &entry) in l.tables.iter().zip(&input.consts.run_tables[k]) {
                if table.pos as usize == t {
                    let base = self.table_base();
                    let x = self.table_entry(&mut advanced, base, j, table.ty, entry)?;
                    self.tabled[table.slot as usize] = Some(x);
                }
            }
            let ty = l.template[t].ty;
            let x = self.lower_template(rolled, ty, inst, &operands)?;
            body[t] = Some(x);
            if let Some(Home { first, stride }) = plan.homes[k][t] {
                let at = self.advance(&mut advanced, self.work, j, 8 * i64::from(stride));
                self.b.ins().store(FLAGS, x, at, offset(first as usize)?);
            }
            if !plan.streams[k][t].is_empty() {
                let y = self.value_to_boundary(x, ty);
                for stream in &plan.streams[k][t] {
                    let at = self.advance(&mut advanced, self.outputs, j, 8 * stream.step);
                    self.b.ins().store(FLAGS, y, at, offset(stream.first)?);
                }
            }
        }
        self.body_literals = None;
        let next = self.b.ins().iadd_imm_s(j, 1);
        let trips = i64::try_from(l.trips)
            .map_err(|_| JitError::TooLarge(format!("a loop of {} trips", l.trips)))?;
        let more = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, next, trips);
        let mut args = vec![ir::BlockArg::Value(next)];
        for &(pos, _) in &carried {
            let x = body[pos as usize].expect("plan: a carried value is live");
            args.push(ir::BlockArg::Value(x));
        }
        self.b.ins().brif(more, header, &args, exit, &[]);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        Ok(body)
    }

    /// The value `base + step·j` (`step` ≠ 0) in iteration `j` of a loop: from `inputs`, or
    /// from the home of the loop it lies in (the plan made every such read one region).
    fn load_moving(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
        j: ir::Value,
        base: u32,
        step: i64,
    ) -> Result<ir::Value, JitError> {
        match place_of(rolled, base as usize) {
            Place::Param(i) => {
                let at = self.advance(advanced, self.inputs, j, 8 * step);
                let raw = self.b.ins().load(types::F64, READONLY, at, offset(i)?);
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
                Ok(self.b.ins().load(reg, FLAGS, at, offset(slot)?))
            }
        }
    }
}
