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

use std::collections::HashMap;

use adjit_ir::roll::Source;
use adjit_ir::{literal_type_with, InstData, Loop, Rolled, Type, Value};
use cranelift_codegen::ir::{self, condcodes::IntCC, types, InstBuilder};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::Module;

use super::{offset, Cached, Imports, LowerInput, Lowerer, FLAGS, READONLY};
use crate::abi::clif_type;
use crate::error::JitError;
use crate::rolled_plan::{fused_read, FusedRead, Fusion, Home, Place, RolledPlan};

/// The first of the stand-in values a template instruction's operands are renamed to while it
/// is lowered (operand `c` is `PLACEHOLDER + c`): two operands of one instruction may read the
/// same value of iteration 0 by different rules (`x[j]` and `x[0]`).
const PLACEHOLDER: usize = u32::MAX as usize - 4;

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
    Ok(())
}

/// Addresses and loads already made for one counter register in the current block: the
/// counter scaled and added to a buffer (see [`Lowerer::advance`]), and the values read at a
/// moving index, by (first value, step). Shared by the parts of a fused loop that run the
/// same term, so that a value both read is loaded once.
#[derive(Default)]
struct Memo {
    advanced: HashMap<(ir::Value, i64), ir::Value>,
    loaded: HashMap<(u32, i64), ir::Value>,
}

/// A fused reverse loop, as [`Lowerer::reverse_part`] reads it.
struct Reverse<'a> {
    /// The reverse loop.
    k: usize,
    /// The forward loop it is fused into.
    forward: &'a Loop,
    /// The trips of both.
    n: usize,
    /// Its values read at a fixed place, made before the fused loop.
    invariants: &'a HashMap<usize, ir::Value>,
    /// Per position: whether it runs one term late.
    shifted: &'a [bool],
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
        for t in (0..l.period()).filter(|&t| plan.live[k][t]) {
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
                    Source::Affine { base, step } => match loaded.get(&(base, step)) {
                        Some(&x) => x,
                        None => {
                            let x = self.load_moving(rolled, plan, advanced, j, base, step)?;
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
                    let x = self.table_entry(advanced, base, j, table.ty, entry)?;
                    self.tabled[table.slot as usize] = Some(x);
                }
            }
            let ty = l.template[t].ty;
            let x = self.lower_template(rolled, ty, inst, &operands)?;
            body[t] = Some(x);
            if let Some(Home { first, stride }) = plan.homes[k][t] {
                let at = self.advance(advanced, self.work, j, 8 * i64::from(stride));
                self.b.ins().store(FLAGS, x, at, offset(first as usize)?);
            }
            if !plan.streams[k][t].is_empty() {
                let y = self.value_to_boundary(x, ty);
                for stream in &plan.streams[k][t] {
                    let at = self.advance(advanced, self.outputs, j, 8 * stream.step);
                    self.b.ins().store(FLAGS, y, at, offset(stream.first)?);
                }
            }
        }
        Ok(body)
    }

    /// A loop header with the counter and `types` as parameters, entered with `args`;
    /// returns the header and its parameters, the builder in it.
    fn enter_loop(
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
        let ptr = self.module.target_config().pointer_type();
        let (invariants, carried) = self.loop_entry(rolled, plan, k, last, true)?;
        let types: Vec<types::Type> = carried
            .iter()
            .map(|&(pos, _)| self.reg_type(l.template[pos as usize].ty))
            .collect();
        let mut args = vec![self.b.ins().iconst(ptr, 0)];
        args.extend(
            carried
                .iter()
                .map(|&(_, init)| invariants[&(init as usize)]),
        );
        let (header, params) = self.enter_loop(&types, args);
        let j = params[0];
        let mut memo = Memo::default();
        let body = self.loop_body(
            rolled,
            plan,
            k,
            j,
            &invariants,
            &carried,
            &params[1..],
            &mut memo,
        )?;
        let next: Vec<ir::Value> = carried
            .iter()
            .map(|&(pos, _)| body[pos as usize].expect("plan: a carried value is live"))
            .collect();
        self.leave_loop(header, j, l.trips, &next)?;
        Ok(body)
    }

    /// The forward loop `kf`, the loops of one trip after it and the reverse loop
    /// `fusion.reverse` fused into it (see [`Fusion`]): iteration 0 of the forward loop and
    /// the reverse loop's unshifted positions of term 0 first, then a loop over terms
    /// `1..n` running the forward iteration, the unshifted positions of the term and the
    /// shifted positions of the term before, then the loops between, then the shifted
    /// positions of term `n − 1`. Every instruction reads exactly the values it reads in the
    /// expanded program. Pushes the values of every loop it lowers to `last` (none for the
    /// reverse loop: what is read of it later is read from its homes).
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
        let n = f.trips;
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
            shifted: &fusion.shifted,
        };
        // Registers crossing from one term to the next for the shifted positions: unshifted
        // positions and forward positions they read.
        let mut r_needed: Vec<usize> = Vec::new();
        let mut f_needed: Vec<usize> = Vec::new();
        for t in (0..r.period()).filter(|&t| plan.live[kr][t] && fusion.shifted[t]) {
            for &src in &r.sources[t] {
                match src {
                    Source::Same { pos } if !fusion.shifted[pos as usize] => {
                        r_needed.push(pos as usize)
                    }
                    Source::Affine { base, step } => {
                        if let Some(FusedRead::Forward(q)) = fused_read(f, n, base, step) {
                            f_needed.push(q);
                        }
                    }
                    _ => {}
                }
            }
        }
        for v in [&mut r_needed, &mut f_needed] {
            v.sort_unstable();
            v.dedup();
        }

        // Term 0: the forward iteration and the unshifted positions.
        let zero = self.b.ins().iconst(ptr, 0);
        let firsts: Vec<ir::Value> = carried
            .iter()
            .map(|&(_, init)| f_invariants[&(init as usize)])
            .collect();
        let mut memo = Memo::default();
        let f_body = self.loop_body(
            rolled,
            plan,
            kf,
            zero,
            &f_invariants,
            &carried,
            &firsts,
            &mut memo,
        )?;
        let r_now = self.reverse_part(
            rolled,
            plan,
            &reverse,
            false,
            zero,
            true,
            &f_body,
            &[],
            None,
            last,
            &mut memo,
        )?;

        // Terms 1..n.
        let mut types: Vec<types::Type> = carried
            .iter()
            .map(|&(pos, _)| self.reg_type(f.template[pos as usize].ty))
            .collect();
        types.extend(r_needed.iter().map(|&p| self.reg_type(r.template[p].ty)));
        types.extend(f_needed.iter().map(|&q| self.reg_type(f.template[q].ty)));
        let crossing = |f_body: &[Option<ir::Value>], r_now: &[Option<ir::Value>]| {
            let live = "plan: a value read later is live";
            let mut next: Vec<ir::Value> = carried
                .iter()
                .map(|&(pos, _)| f_body[pos as usize].expect(live))
                .collect();
            next.extend(r_needed.iter().map(|&p| r_now[p].expect(live)));
            next.extend(f_needed.iter().map(|&q| f_body[q].expect(live)));
            next
        };
        let one = self.b.ins().iconst(ptr, 1);
        let mut args = vec![one];
        args.extend(crossing(&f_body, &r_now));
        let (header, params) = self.enter_loop(&types, args);
        let j = params[0];
        let n_carried = carried.len();
        let carried_in = &params[1..1 + n_carried];
        // The previous term's registers, by position.
        let mut r_prev: Vec<Option<ir::Value>> = vec![None; r.period()];
        for (i, &p) in r_needed.iter().enumerate() {
            r_prev[p] = Some(params[1 + n_carried + i]);
        }
        let mut f_prev: Vec<Option<ir::Value>> = vec![None; f.period()];
        for (i, &q) in f_needed.iter().enumerate() {
            f_prev[q] = Some(params[1 + n_carried + r_needed.len() + i]);
        }
        // The forward iteration and the unshifted positions run the same term: one memo.
        let mut memo = Memo::default();
        let f_body = self.loop_body(
            rolled,
            plan,
            kf,
            j,
            &f_invariants,
            &carried,
            carried_in,
            &mut memo,
        )?;
        let r_now = self.reverse_part(
            rolled,
            plan,
            &reverse,
            false,
            j,
            false,
            &f_body,
            &[],
            None,
            last,
            &mut memo,
        )?;
        let before = self.b.ins().iadd_imm_s(j, -1);
        self.reverse_part(
            rolled,
            plan,
            &reverse,
            true,
            before,
            false,
            &f_prev,
            &r_prev,
            Some(&r_now),
            last,
            &mut Memo::default(),
        )?;
        let next = crossing(&f_body, &r_now);
        self.leave_loop(header, j, n, &next)?;
        last.push(f_body.clone());

        // The loops between, then the shifted positions of term n − 1.
        for (k, l) in loops.iter().enumerate().take(kr).skip(kf + 1) {
            let values = match l.trips {
                0 => vec![None; l.period()],
                _ => self.rolled_straight(rolled, plan, k, last)?,
            };
            last.push(values);
        }
        let final_term = self.b.ins().iconst(ptr, n as i64 - 1);
        self.reverse_part(
            rolled,
            plan,
            &reverse,
            true,
            final_term,
            false,
            &f_body,
            &r_now,
            None,
            last,
            &mut Memo::default(),
        )?;
        last.push(vec![None; r.period()]);
        Ok(())
    }

    /// The unshifted (`shifted` false) or shifted positions of a fused reverse loop for term
    /// `term` (a register; its iteration is `n − 1 − term`; `first_term`: it is 0): `forward` holds the forward
    /// loop's values of that term, `unshifted` (for the shifted part) the term's unshifted
    /// values, `next` the next term's unshifted values, which carried reads take (`None` for
    /// term `n − 1`: they take their first values, read through `last`). Values are stored
    /// to their homes and output streams at the iteration's place. Returns the part's values.
    #[allow(
        clippy::too_many_arguments,
        reason = "the fused loop's state, passed apart"
    )]
    fn reverse_part(
        &mut self,
        rolled: &Rolled,
        plan: &RolledPlan,
        rev: &Reverse<'_>,
        shifted: bool,
        term: ir::Value,
        first_term: bool,
        forward: &[Option<ir::Value>],
        unshifted: &[Option<ir::Value>],
        next: Option<&[Option<ir::Value>]>,
        last: &LastValues,
        memo: &mut Memo,
    ) -> Result<Vec<Option<ir::Value>>, JitError> {
        let (k, n) = (rev.k, rev.n);
        let l = &rolled.loops()[k];
        let live = "plan: a read value is live";
        // Iteration `n − 1 − term`: what moves by `step` per iteration moves by `−step` per
        // term, from its place at iteration `n − 1`.
        let back = (n - 1) as i64;
        let Memo { advanced, loaded } = memo;
        let mut body: Vec<Option<ir::Value>> = vec![None; l.period()];
        for t in (0..l.period()).filter(|&t| plan.live[k][t] && rev.shifted[t] == shifted) {
            let inst = &l.instance(t, 0);
            let mut operands = Vec::with_capacity(3);
            for &src in &l.sources[t] {
                let x = match src {
                    Source::Same { pos } => {
                        let pos = pos as usize;
                        match shifted && !rev.shifted[pos] {
                            true => unshifted[pos],
                            false => body[pos],
                        }
                        .expect(live)
                    }
                    Source::Carried { pos, init } => match next {
                        Some(next) => next[pos as usize].expect(live),
                        None => {
                            let place = place_of(rolled, init as usize);
                            self.read_fixed(rolled, plan, last, place)?
                        }
                    },
                    Source::Affine { base, step } => {
                        match fused_read(rev.forward, n, base, step).expect("plan: fusable") {
                            FusedRead::Forward(q) => forward[q].expect(live),
                            FusedRead::Rule if step == 0 => rev.invariants[&(base as usize)],
                            FusedRead::Rule => {
                                // By term: from the value at iteration n − 1, moving back.
                                let from = i64::from(base) + step * back;
                                let from = u32::try_from(from).expect("a value index");
                                match loaded.get(&(from, -step)) {
                                    Some(&x) => x,
                                    None => {
                                        let x = self.load_moving(
                                            rolled, plan, advanced, term, from, -step,
                                        )?;
                                        loaded.insert((from, -step), x);
                                        x
                                    }
                                }
                            }
                        }
                    }
                };
                operands.push(x);
            }
            let input = self.input;
            let width = input.consts.entry_bytes as i64;
            for (table, &entry) in l.tables.iter().zip(&input.consts.run_tables[k]) {
                if table.pos as usize == t {
                    let base = self.table_base();
                    let at = self.advance(advanced, base, term, -width);
                    let off = offset(entry as usize + n - 1)?;
                    let x = self.b.ins().load(clif_type(table.ty), READONLY, at, off);
                    self.tabled[table.slot as usize] = Some(x);
                }
            }
            let ty = l.template[t].ty;
            let x = self.lower_template(rolled, ty, inst, &operands)?;
            body[t] = Some(x);
            match plan.homes[k][t] {
                // The last iteration alone: stored by term 0.
                Some(Home { first, stride: 0 }) if first_term => {
                    self.b
                        .ins()
                        .store(FLAGS, x, self.work, offset(first as usize)?);
                }
                Some(Home { first, stride }) if stride > 0 => {
                    let stride = i64::from(stride);
                    let at = self.advance(advanced, self.work, term, -8 * stride);
                    let slot = i64::from(first) + stride * back;
                    self.b.ins().store(FLAGS, x, at, offset(slot as usize)?);
                }
                _ => {}
            }
            if !plan.streams[k][t].is_empty() {
                let y = self.value_to_boundary(x, ty);
                for stream in &plan.streams[k][t] {
                    let at = self.advance(advanced, self.outputs, term, -8 * stream.step);
                    let out = stream.first as i64 + stream.step * back;
                    self.b.ins().store(FLAGS, y, at, offset(out as usize)?);
                }
            }
        }
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
