//! Lowering: one chunk of a verified IR function to one Cranelift function
//! `fn(inputs, outputs, work)`, with the scalar semantics of [`adjit_ir::math`] reproduced
//! exactly.
//!
//! - Arithmetic, `sqrt`, `abs`, `neg`, `floor`, `ceil`, `fma`, comparisons, `select` and
//!   conversions are native instructions (Cranelift itself turns `fma`/`floor`/`ceil` into
//!   correctly rounded libm calls where the target lacks them).
//! - `min a, b` is `select(a uno a, b, select(b < a, b, a))`, `max` likewise with `>`: NaN picks
//!   the other operand and ties pick the first, as in `math.rs` (Cranelift's `fmin` differs).
//! - `powi` is unrolled in exactly the multiplication order of [`adjit_ir::math::powi_f64`].
//! - Transcendentals call imported routines ([`crate::abi`]), as do `pow` and `atan2`; under
//!   [`MathImpl::Inline`] they are emitted inline instead, from [`adjit_ir::mathlib`]
//!   ([`crate::inline_math`]).
//! - Bools live in registers as `i8` 0/1 and in memory as one byte; at the boundary they are
//!   `f64` 0.0/1.0 (nonzero reads as true). `f32` values cross the boundary as `f64`.
//!
//! With [`Lanes::Two`] the same plan is lowered to a function evaluating two points at once:
//! every value of point `p` is lane 0, and of point `p + 1` lane 1, of a 128-bit vector
//! (`f64` → `F64X2`, `f32` → `F32X4` with lanes 2 and 3 unused, `bool` → an `I64X2` lane
//! mask of all ones or all zeros). `inputs`, `outputs` and `work` are buffers of 16-byte
//! slots aligned to 16, interleaved (structure of arrays): slot `i` of `inputs` holds input
//! `i` of point `p` then of point `p + 1`, so reading an input or writing an output is one
//! vector load or store (the caller transposes the point-major batch, see
//! [`crate::compiled`]). Each instruction is the lane-wise form of its scalar lowering, so every lane is
//! bitwise the scalar result: IEEE arithmetic, `sqrt`, `fma`, `floor`, `ceil` and conversions
//! are correctly rounded in both forms; `select`/`min`/`max` become `bitselect` on compare
//! masks (same rule: NaN picks the other operand, ties the first); `powi` multiplies in the
//! same order; inline math routines are the same definition emitted on vectors; called math
//! routines are called once per lane with the same scalar routine. The same lane-wise forms
//! run two iterations of a one-lane loop at once in a paired loop ([`paired`]).
//!
//! Values are cached in registers exactly as [`crate::plan`] simulated: a register copy is
//! dropped at each planned eviction, and a use of a value without one reloads it from its
//! home (`inputs` for parameters, its `work` slot otherwise). Dead instructions are skipped.

use std::collections::HashMap;

use adjit_ir::mathlib;
use adjit_ir::{BinaryOp, CmpPred, Function, InstData, Operand, Type, UnaryOp, Value, ValueDef};
use cranelift_codegen::ir::{
    self, condcodes::FloatCC, types, ConstantData, FuncRef, InstBuilder, MemFlagsData, UserFuncName,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};

use crate::abi::{clif_type, kernel_signature, math_signature, MathCall, MathNames};
use crate::constants::{ConstTable, SIGN_MASK};
use crate::error::JitError;
use crate::inline_math::ClifMath;
use crate::lanes::{lane_bitcast, lane_type, Lanes};
use crate::options::{MathImpl, Pairing};
use crate::plan::{Fill, Home, Plan, NO_SLOT};
use crate::roll::{Across, Outer, Run, Source};

pub(crate) mod paired;
pub(crate) mod rolled;
mod rolled_paired;
mod rolled_place;

/// Registers of a nest's current row, made in its outer loop's header before the row's inner
/// loop (so they dominate it and the gap); empty outside nests.
#[derive(Default)]
struct RowValues {
    /// `(buffer, bytes per row)` → the buffer advanced to the current row.
    bases: HashMap<(ir::Value, i64), ir::Value>,
    /// `(template position, operand)` → the operand's value in this row: a loop invariant of
    /// the inner loop, or a carried value's first value.
    operands: HashMap<(usize, usize), ir::Value>,
}

/// The math routines declared in one module, by symbol convention.
pub(crate) struct Imports {
    names: MathNames,
    ids: HashMap<MathCall, FuncId>,
}

impl Imports {
    pub fn new(names: MathNames) -> Imports {
        Imports {
            names,
            ids: HashMap::new(),
        }
    }

    fn id<M: Module>(&mut self, module: &mut M, call: MathCall) -> Result<FuncId, JitError> {
        if let Some(&id) = self.ids.get(&call) {
            return Ok(id);
        }
        let sig = math_signature(module, call);
        let name = call.symbol(self.names);
        let id = module
            .declare_function(&name, Linkage::Import, &sig)
            .map_err(|e| JitError::cranelift(format!("declaring `{name}`"), e))?;
        self.ids.insert(call, id);
        Ok(id)
    }
}

/// A register copy of an IR value, valid within one chunk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cached {
    chunk: u32,
    value: ir::Value,
}

/// Per-value register cache, shared by all chunks of one compilation (entries of other
/// chunks are ignored).
pub(crate) fn new_cache(func: &Function) -> Vec<Option<Cached>> {
    vec![None; func.n_values()]
}

/// Everything [`lower_chunk`] reads besides the chunk index.
pub(crate) struct LowerInput<'a> {
    pub func: &'a Function,
    pub plan: &'a Plan,
    /// The runs the plan lowers as loops.
    pub runs: &'a [Run],
    pub consts: &'a ConstTable,
    pub lanes: Lanes,
    pub math: MathImpl,
    /// Whether one-lane code selects between floats with bit masks instead of Cranelift's
    /// `select` (x86-64, where a float `select` is a branch; AArch64's is `fcsel`).
    pub mask_selects: bool,
    /// Which one-lane loops run two iterations per trip in vector lanes (see [`paired`]).
    pub pair_loops: Pairing,
}

/// Accesses to `outputs` and `work`: aligned, never trapping, ordered.
const FLAGS: MemFlagsData = MemFlagsData::trusted();

/// Loads from `inputs` and the constant table, which no call writes: pure, so Cranelift's
/// e-graph places them next to their first use. As ordered loads they would all stay at the
/// top while the pure arithmetic using them sinks to its (often last) use, keeping every
/// input live at once (measured: rosenbrock n=1000 spilled all inputs and took 4 s to compile).
const READONLY: MemFlagsData = MemFlagsData::trusted().with_readonly().with_can_move();

/// Byte offset of element `index` of 8-byte slots, as a Cranelift immediate.
fn offset(index: usize) -> Result<i32, JitError> {
    index
        .checked_mul(8)
        .and_then(|o| i32::try_from(o).ok())
        .ok_or_else(|| JitError::TooLarge(format!("buffer index {index} exceeds 2 GiB")))
}

/// Byte offset of element `index` of 8-byte slots from an address that may lie past it (a
/// counter's address moved back by a constant), as a Cranelift immediate.
fn signed_offset(index: i64) -> Result<i32, JitError> {
    index
        .checked_mul(8)
        .and_then(|o| i32::try_from(o).ok())
        .ok_or_else(|| JitError::TooLarge(format!("buffer index {index} exceeds 2 GiB")))
}

/// Byte offset of element `index` of 16-byte slots (pair buffers), as an immediate.
fn pair_offset(index: usize) -> Result<i32, JitError> {
    offset(index.saturating_mul(2))
}

/// One side of a masked `select`: a value, or the literal +0.0 (never materialised).
#[derive(Clone, Copy)]
enum Side {
    Value(ir::Value),
    Zero,
}

/// [`Lowerer::carried_positions`]: each carried position with its value before the run,
/// and the values of each in the loop's first iteration.
type CarriedFirsts = (Vec<(u32, u32)>, Vec<ir::Value>);

/// [`Lowerer::select_mask`]'s memory: (block, condition, float type) and the masks of the
/// condition's false and true.
type LastMasks = ((Option<ir::Block>, ir::Value, Type), [Option<ir::Value>; 2]);

struct Lowerer<'a, 'm, M: Module> {
    b: FunctionBuilder<'a>,
    module: &'m mut M,
    imports: &'m mut Imports,
    func_refs: HashMap<MathCall, FuncRef>,
    input: &'m LowerInput<'m>,
    /// The width of the values being computed: `input.lanes`, except inside a paired loop
    /// (see [`paired`]), whose parallel part computes two iterations in the lanes of one-lane
    /// code.
    lanes: Lanes,
    chunk: u32,
    cache: &'m mut [Option<Cached>],
    inputs: ir::Value,
    outputs: ir::Value,
    work: ir::Value,
    const_base: Option<ir::Value>,
    /// Math tables read by this chunk (see [`ClifMath`]).
    table_bases: HashMap<usize, ir::Value>,
    /// Registers standing for IR values in the instruction being lowered (the loop body
    /// of a run: operands resolved by their [`Source`]), consulted before the cache.
    overrides: Vec<(usize, ir::Value)>,
    /// Literals already materialised in the current loop body (one block: each is loaded
    /// once per iteration, not once per use), by width; `None` outside loops.
    body_literals: Option<HashMap<(Lanes, Type, u64), ir::Value>>,
    /// The literal operands of the instruction being lowered that are read from a table
    /// (this iteration's entry), by literal slot in text order; consumed by [`Self::operand`]
    /// and `const`.
    tabled: [Option<ir::Value>; 3],
    /// The next literal slot of the instruction being lowered.
    next_slot: usize,
    /// The masks of the last condition [`Self::select_mask`] was asked for: (its block,
    /// the condition, the float type) and the masks of false and true.
    last_masks: Option<LastMasks>,
    /// What the lowering of a rolled program knows of the registers it made (see
    /// [`rolled::Known`]); empty for straight-line programs.
    known: rolled::Known,
    /// Whether a two-lane `fcmp` must not read a vector straight from memory: x86-64 without
    /// AVX (objects for the baseline ISA), where Cranelift 0.135 folds an 8-aligned vector
    /// load into the legacy SSE `cmppd`/`cmpps`, whose memory operand must be 16-aligned (the
    /// process faults). Its definition of those two takes `xmm_m128` where `addpd` takes
    /// `align(xmm_m128)`.
    compare_registers_only: bool,
}

/// Build chunk `chunk` of `input.func` into `clif` (its name becomes `u0:chunk`): a run's
/// loop (see [`lower_run`]) or straight-line code.
pub(crate) fn lower_chunk<M: Module>(
    module: &mut M,
    imports: &mut Imports,
    input: &LowerInput<'_>,
    chunk: usize,
    cache: &mut [Option<Cached>],
    clif: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
) -> Result<(), JitError> {
    let mut lowerer = Lowerer::begin(module, imports, input, chunk, cache, clif, fctx);
    let func = input.func;
    if chunk == 0 {
        // Fills first: every other output in their spans is stored after them.
        for fill in &input.plan.fills {
            lowerer.lower_fill(fill)?;
        }
        // Returned parameters are copied once, before anything else, without caching them
        // (the plan did not count them as registers).
        for v in 0..func.n_params {
            if input.plan.outputs_of(v).next().is_some() {
                let x = lowerer.load_home(Value::new(v))?;
                lowerer.store_outputs(v, x)?;
            }
        }
    }
    if let Some(r) = input.plan.chunk_runs[chunk] {
        lowerer.lower_run(
            &input.runs[r],
            &input.plan.homes[r],
            &input.consts.run_tables[r],
        )?;
        let config = lowerer.module.target_config();
        lowerer.b.finalize(config);
        return Ok(());
    }
    let evictions = &input.plan.evictions;
    let range = input.plan.chunks[chunk].clone();
    let mut next_eviction = evictions.partition_point(|&(at, _)| (at as usize) < range.start);
    for v in range {
        while let Some(&(at, w)) = evictions.get(next_eviction) {
            if at as usize > v {
                break;
            }
            lowerer.cache[w as usize] = None;
            next_eviction += 1;
        }
        if !input.plan.live[v] {
            continue;
        }
        let ValueDef::Inst(inst) = &func.values[v].def else {
            continue;
        };
        let x = lowerer.lower_inst(v, inst)?;
        lowerer.define(v, x)?;
    }
    lowerer.b.ins().return_(&[]);
    let config = lowerer.module.target_config();
    lowerer.b.finalize(config);
    Ok(())
}

impl<'a, 'm, M: Module> Lowerer<'a, 'm, M> {
    /// A lowerer building chunk `chunk` into `clif`: the kernel signature, the entry block
    /// with the three buffer pointers, and the constant table's address if the chunk reads it.
    fn begin(
        module: &'m mut M,
        imports: &'m mut Imports,
        input: &'m LowerInput<'m>,
        chunk: usize,
        cache: &'m mut [Option<Cached>],
        clif: &'a mut ir::Function,
        fctx: &'a mut FunctionBuilderContext,
    ) -> Self {
        clif.signature = kernel_signature(module);
        clif.name = UserFuncName::user(0, chunk as u32);
        let const_data = match (input.consts.chunk_uses_table[chunk], input.consts.data) {
            (true, Some(id)) => Some(module.declare_data_in_func(id, clif)),
            _ => None,
        };
        let mut b = FunctionBuilder::new(clif, fctx);
        let block = b.create_block();
        b.append_block_params_for_function_params(block);
        b.switch_to_block(block);
        b.seal_block(block);
        let params = b.block_params(block).to_vec();
        let ptr = module.target_config().pointer_type();
        let const_base = const_data.map(|gv| b.ins().symbol_value(ptr, gv));
        let isa = module.isa();
        let compare_registers_only = isa.triple().architecture
            == target_lexicon::Architecture::X86_64
            && !isa
                .isa_flags()
                .iter()
                .any(|flag| flag.name == "has_avx" && flag.as_bool() == Some(true));
        Lowerer {
            b,
            module,
            imports,
            func_refs: HashMap::new(),
            input,
            lanes: input.lanes,
            chunk: chunk as u32,
            cache,
            inputs: params[0],
            outputs: params[1],
            work: params[2],
            const_base,
            table_bases: HashMap::new(),
            overrides: Vec::new(),
            body_literals: None,
            tabled: [None; 3],
            next_slot: 0,
            last_masks: None,
            known: rolled::Known::default(),
            compare_registers_only,
        }
    }
}

impl<M: Module> Lowerer<'_, '_, M> {
    /// A register holding `v`: its stand-in in a loop body, its cached copy, or a reload
    /// from its home.
    fn use_value(&mut self, v: Value) -> Result<ir::Value, JitError> {
        let i = v.index();
        if let Some(&(_, x)) = self.overrides.iter().find(|&&(w, _)| w == i) {
            return Ok(x);
        }
        if let Some(c) = self.cache[i] {
            if c.chunk == self.chunk {
                return Ok(c.value);
            }
        }
        let x = self.load_home(v)?;
        self.cache[i] = Some(Cached {
            chunk: self.chunk,
            value: x,
        });
        Ok(x)
    }

    /// Load `v` from its home: `inputs` for a parameter, its workspace slot otherwise.
    fn load_home(&mut self, v: Value) -> Result<ir::Value, JitError> {
        let i = v.index();
        let func = self.input.func;
        let ty = func.values[i].ty;
        Ok(if func.is_param(v) {
            let raw = match self.input.lanes {
                Lanes::One => self
                    .b
                    .ins()
                    .load(types::F64, READONLY, self.inputs, offset(i)?),
                // Input `i` of both points: slot `i` of the interleaved (structure-of-arrays)
                // pair buffer, one vector load.
                Lanes::Two => {
                    self.b
                        .ins()
                        .load(types::F64X2, READONLY, self.inputs, pair_offset(i)?)
                }
            };
            self.boundary_to_value(raw, ty)
        } else {
            let slot = self.input.plan.slots[i];
            assert_ne!(slot, NO_SLOT, "plan: {v} reloaded without a workspace slot");
            let at = self.slot_offset(slot)?;
            let reg_ty = self.reg_type(ty);
            self.b.ins().load(reg_ty, FLAGS, self.work, at)
        })
    }

    /// `base` advanced by `bytes` per iteration of the loop counter `j` (memoised in
    /// `advanced` for the current iteration).
    fn advance(
        &mut self,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
        base: ir::Value,
        j: ir::Value,
        bytes: i64,
    ) -> ir::Value {
        if bytes == 0 {
            return base;
        }
        if let Some(&at) = advanced.get(&(base, bytes)) {
            return at;
        }
        // The counter scaled by `bytes` is shared by every base advancing as far.
        let delta = match advanced.get(&(j, bytes)) {
            Some(&d) => d,
            None => {
                let d = self.b.ins().imul_imm_s(j, bytes);
                advanced.insert((j, bytes), d);
                d
            }
        };
        let at = self.b.ins().iadd(base, delta);
        advanced.insert((base, bytes), at);
        at
    }

    /// The run `run` as one counted loop (see [`crate::roll`]): the template's instructions
    /// once, with operands read by their [`Source`] (parameters and earlier runs' arrays at
    /// addresses advanced by the counter, carried values as block parameters), every value
    /// stored to its [`Home`] and its outputs; `trips` iterations in order, so the result is
    /// bitwise that of the straight-line program. A nest is an outer loop around it (see
    /// [`Self::lower_nest`]).
    fn lower_run(&mut self, run: &Run, homes: &[Home], tables: &[u32]) -> Result<(), JitError> {
        if let Some(outer) = &run.outer {
            return self.lower_nest(run, outer, homes, tables);
        }
        // Loop-invariant operands and the carried values' first iteration, before the loop.
        for &src in run.sources.iter().flatten() {
            if let Source::Affine { base, step: 0 } = src {
                self.use_value(Value::new(base as usize))?;
            }
        }
        self.row_loop(run, homes, &RowValues::default(), tables)?;
        self.b.ins().return_(&[]);
        Ok(())
    }

    /// The loop of `run`'s iterations (a nest's row: `row` holds the row's registers): paired
    /// where [`JitOptions::pair_loops`](crate::JitOptions::pair_loops) says so (see
    /// [`paired`]), else [`Self::inner_loop`]. Ends with the builder after the loop; returns
    /// the last iteration's values, by template position.
    fn row_loop(
        &mut self,
        run: &Run,
        homes: &[Home],
        row: &RowValues,
        tables: &[u32],
    ) -> Result<Vec<ir::Value>, JitError> {
        if self.input.lanes == Lanes::One {
            let pairing = self.input.pair_loops;
            let func = self.input.func;
            if let Some(serial) =
                paired::serial_positions(func, self.input.runs, run, pairing, self.input.math)
            {
                return self.paired_loop(run, homes, row, tables, &serial);
            }
        }
        self.inner_loop(run, homes, row, tables)
    }

    /// A nest (see [`Outer`]): an outer counted loop over the rows whose body is the inner
    /// loop of row `k` ([`Self::row_loop`], with addresses advanced by `k` rows) and then,
    /// unless `k` is the last row, the gap's instructions, which lead to row `k + 1`. Values
    /// carried from row to row are block parameters of the outer loop's header; every row
    /// runs exactly the instructions of its row of the straight-line program, in order.
    fn lower_nest(
        &mut self,
        run: &Run,
        outer: &Outer,
        homes: &[Home],
        tables: &[u32],
    ) -> Result<(), JitError> {
        let func = self.input.func;
        let ptr = self.module.target_config().pointer_type();
        let unit = 8 * self.input.lanes.count() as i64;
        let len = run.row_len();
        // Invariants of the whole nest, loaded once before it (the loops only read the cache).
        let rules = outer.inner.iter().flatten().flatten();
        for &rule in rules.chain(outer.gap.iter().flatten()) {
            if let Across::Affine { base, step: 0 } = rule {
                self.use_value(Value::new(base as usize))?;
            }
        }
        // Values carried across rows: one first value per row position.
        let mut carried: Vec<(u32, u32)> = outer
            .inner
            .iter()
            .flatten()
            .flatten()
            .chain(outer.gap.iter().flatten())
            .filter_map(|r| match *r {
                Across::PrevRow { pos, init } => Some((pos, init)),
                _ => None,
            })
            .collect();
        carried.sort_unstable();
        carried.dedup_by_key(|&mut (pos, _)| pos);
        let mut inits = vec![ir::BlockArg::Value(self.b.ins().iconst(ptr, 0))];
        for &(_, init) in &carried {
            let x = self.use_value(Value::new(init as usize))?;
            inits.push(ir::BlockArg::Value(x));
        }
        let header = self.b.create_block();
        let gap_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, ptr);
        for &(pos, _) in &carried {
            let ty = func.values[run.start + pos as usize].ty;
            let reg = self.reg_type(ty);
            self.b.append_block_param(header, reg);
        }
        self.b.ins().jump(header, &inits);
        self.b.switch_to_block(header);
        let params = self.b.block_params(header).to_vec();
        let k = params[0];
        let from_prev = |pos: u32| -> ir::Value {
            let i = carried.partition_point(|&(p, _)| p < pos);
            params[1 + i]
        };

        // The row's registers: buffers advanced to row `k`, and the inner loop's operands
        // that are fixed within a row.
        let mut row = RowValues {
            bases: HashMap::new(),
            operands: HashMap::new(),
        };
        let mut base_of = |this: &mut Self, buffer: ir::Value, bytes: i64| -> ir::Value {
            if bytes == 0 {
                return buffer;
            }
            *row.bases.entry((buffer, bytes)).or_insert_with(|| {
                let delta = this.b.ins().imul_imm_s(k, bytes);
                this.b.ins().iadd(buffer, delta)
            })
        };
        let mut operands = HashMap::new();
        for (t, rules) in outer.inner.iter().enumerate() {
            for (c, rule) in rules.iter().enumerate() {
                let (Some(rule), Some(src)) = (*rule, run.sources[t].get(c).copied()) else {
                    continue;
                };
                let fixed_in_row =
                    matches!(src, Source::Carried { .. } | Source::Affine { step: 0, .. });
                let x = match rule {
                    Across::PrevRow { pos, .. } if fixed_in_row => from_prev(pos),
                    Across::Affine { base, step: 0 } if fixed_in_row => {
                        self.use_value(Value::new(base as usize))?
                    }
                    Across::Affine { base, step } if fixed_in_row => {
                        let a = Value::new(base as usize);
                        self.row_load(a, step, &mut |this, buf, bytes| base_of(this, buf, bytes))?
                    }
                    Across::Affine { base, step } => {
                        // A moving read: only its row's address.
                        let bytes = self.row_stride(base, step, unit)?;
                        let buffer = if func.is_param(Value::new(base as usize)) {
                            self.inputs
                        } else {
                            self.work
                        };
                        base_of(self, buffer, bytes);
                        continue;
                    }
                    Across::Row { .. } | Across::PrevRow { .. } => {
                        unreachable!("roll: an inner run's moving read is affine across rows")
                    }
                };
                operands.insert((t, c), x);
            }
            for &ostep in &outer.inner_outputs[t] {
                base_of(self, self.outputs, ostep * unit);
            }
        }
        if homes[..run.period]
            .iter()
            .any(|h| matches!(h, Home::Array(_)))
        {
            base_of(self, self.work, run.trips as i64 * unit);
        }
        let (inner_tables, gap_tables) = tables.split_at(run.tables.len());
        if !inner_tables.is_empty() {
            // Row k's iterations start at entry k·trips of each inner table.
            let base = self.table_base();
            let width = self.input.consts.entry_bytes as i64;
            base_of(self, base, run.trips as i64 * width);
        }
        row.operands = operands;
        let body = self.row_loop(run, homes, &row, inner_tables)?;

        // After row k's inner loop: the gap to row k + 1, or the end.
        let next = self.b.ins().iadd_imm_s(k, 1);
        let rows = i64::try_from(outer.trips)
            .map_err(|_| JitError::TooLarge(format!("a nest of {} rows", outer.trips)))?;
        let more = self
            .b
            .ins()
            .icmp_imm_s(ir::condcodes::IntCC::UnsignedLessThan, next, rows);
        self.b.ins().brif(more, gap_block, &[], exit, &[]);
        self.b.switch_to_block(gap_block);
        self.b.seal_block(gap_block);
        let row_value = |gap: &[ir::Value], pos: u32| -> ir::Value {
            let pos = pos as usize;
            if pos < len {
                let t = run
                    .last_of(run.start + pos)
                    .expect("roll: a row reads its inner loop's last iteration only");
                body[t]
            } else {
                gap[pos - len]
            }
        };
        let mut gap: Vec<ir::Value> = Vec::with_capacity(outer.gap.len());
        let mut advanced = HashMap::new();
        self.body_literals = Some(HashMap::new());
        for (u, rules) in outer.gap.iter().enumerate() {
            let v = run.start + len + u;
            let ValueDef::Inst(inst) = &func.values[v].def else {
                unreachable!("a nest holds instructions only")
            };
            let mut operands = Vec::with_capacity(3);
            inst.for_each_value(|a| operands.push(a));
            let mut overrides = Vec::with_capacity(3);
            for (a, &rule) in operands.into_iter().zip(rules) {
                let x = match rule {
                    Across::Row { pos } => row_value(&gap, pos),
                    Across::PrevRow { pos, .. } => from_prev(pos),
                    Across::Affine { step: 0, .. } => self.use_value(a)?,
                    Across::Affine { step, .. } => {
                        self.row_load(a, step, &mut |this, buf, bytes| {
                            this.advance(&mut advanced, buf, k, bytes)
                        })?
                    }
                };
                overrides.push((a.index(), x));
            }
            self.overrides = overrides;
            for (table, &entry) in outer.gap_tables.iter().zip(gap_tables) {
                if table.pos as usize == u {
                    // The gap after row k: entry k.
                    let base = self.table_base();
                    let x = self.table_entry(&mut advanced, base, k, table.ty, entry)?;
                    self.tabled[table.slot as usize] = Some(x);
                }
            }
            let x = self.lower_inst(v, inst)?;
            self.overrides.clear();
            self.tabled = [None; 3];
            gap.push(x);
            match homes[run.period + u] {
                Home::None => {}
                Home::Last(slot) => {
                    let off = self.slot_offset(slot)?;
                    self.b.ins().store(FLAGS, x, self.work, off);
                }
                Home::Array(first) => {
                    let at = self.advance(&mut advanced, self.work, k, unit);
                    let off = self.slot_offset(first)?;
                    self.b.ins().store(FLAGS, x, at, off);
                }
            }
            if !outer.gap_outputs[u].is_empty() {
                let y = self.value_to_boundary(x, func.values[v].ty);
                for store in &outer.gap_outputs[u] {
                    let at = self.advance(&mut advanced, self.outputs, k, store.step * unit);
                    let off = offset(store.first as usize * self.input.lanes.count())?;
                    self.b.ins().store(FLAGS, y, at, off);
                }
            }
        }
        self.body_literals = None;
        let mut args = vec![ir::BlockArg::Value(next)];
        args.extend(
            carried
                .iter()
                .map(|&(pos, _)| ir::BlockArg::Value(row_value(&gap, pos))),
        );
        self.b.ins().jump(header, &args);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        self.b.ins().return_(&[]);
        Ok(())
    }

    /// Bytes one row moves a read of `base + step·k` (a parameter, or an earlier run's array
    /// at the slot stride the plan gave it).
    fn row_stride(&self, base: u32, step: i64, unit: i64) -> Result<i64, JitError> {
        if step == 0 || self.input.func.is_param(Value::new(base as usize)) {
            return Ok(step * unit);
        }
        let slots = &self.input.plan.slots;
        let s0 = slots[base as usize];
        let s1 = slots[(i64::from(base) + step) as usize];
        assert!(
            s0 != NO_SLOT && s1 != NO_SLOT,
            "plan: nest operand v{base} without an array home"
        );
        Ok((i64::from(s1) - i64::from(s0)) * unit)
    }

    /// Row `k`'s value of the read `a + step·k` (`a` read by row 0): a load from `inputs` or
    /// from an earlier run's array in `work`, at the address `at(buffer, bytes per row)`.
    fn row_load(
        &mut self,
        a: Value,
        step: i64,
        at: &mut dyn FnMut(&mut Self, ir::Value, i64) -> ir::Value,
    ) -> Result<ir::Value, JitError> {
        let func = self.input.func;
        let unit = 8 * self.input.lanes.count() as i64;
        let bytes = self.row_stride(a.index() as u32, step, unit)?;
        if func.is_param(a) {
            let base = at(self, self.inputs, bytes);
            let raw_ty = self.reg_type(Type::F64);
            let off = offset(a.index() * self.input.lanes.count())?;
            let raw = self.b.ins().load(raw_ty, READONLY, base, off);
            Ok(self.boundary_to_value(raw, func.values[a.index()].ty))
        } else {
            let base = at(self, self.work, bytes);
            let reg = self.reg_type(func.values[a.index()].ty);
            let off = self.slot_offset(self.input.plan.slots[a.index()])?;
            Ok(self.b.ins().load(reg, FLAGS, base, off))
        }
    }

    /// The loop of `run`'s iterations (a nest's row: `row` holds the row's registers), ending
    /// with the builder in the block after the loop; returns the last iteration's values, by
    /// template position.
    fn inner_loop(
        &mut self,
        run: &Run,
        homes: &[Home],
        row: &RowValues,
        tables: &[u32],
    ) -> Result<Vec<ir::Value>, JitError> {
        let func = self.input.func;
        let ptr = self.module.target_config().pointer_type();
        // Bytes per element of `inputs`, `outputs` and `work`: 8 per lane.
        let unit = 8 * self.input.lanes.count() as i64;
        let outer = run.outer.as_deref();
        // How far the read of template position `t`'s operand `c` moves per row (0 outside
        // nests).
        let row_step = |t: usize, c: usize| -> i64 {
            match outer.and_then(|o| o.inner[t][c]) {
                Some(Across::Affine { step, .. }) => step,
                _ => 0,
            }
        };
        let row_base = |buffer: ir::Value, bytes: i64| -> ir::Value {
            if bytes == 0 {
                buffer
            } else {
                row.bases[&(buffer, bytes)]
            }
        };
        let (carried, firsts) = self.carried_positions(run, row)?;
        let carried: Vec<u32> = carried.iter().map(|&(pos, _)| pos).collect();
        let mut inits = vec![ir::BlockArg::Value(self.b.ins().iconst(ptr, 0))];
        inits.extend(firsts.into_iter().map(ir::BlockArg::Value));
        let header = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, ptr);
        for &pos in &carried {
            let ty = func.values[run.value(pos as usize, 0)].ty;
            let reg = self.reg_type(ty);
            self.b.append_block_param(header, reg);
        }
        self.b.ins().jump(header, &inits);
        self.b.switch_to_block(header);
        let params = self.b.block_params(header).to_vec();
        let j = params[0];
        let mut body: Vec<ir::Value> = Vec::with_capacity(run.period);
        let mut advanced = HashMap::new();
        // Values read from memory in this iteration, by IR value: each is loaded once.
        let mut loaded: HashMap<((usize, i64), i64), ir::Value> = HashMap::new();
        self.body_literals = Some(HashMap::new());
        let mut last_values = Vec::new();
        for (t, &home) in homes.iter().enumerate().take(run.period) {
            let v = run.value(t, 0);
            let ValueDef::Inst(inst) = &func.values[v].def else {
                unreachable!("a run holds instructions only")
            };
            let mut overrides = Vec::with_capacity(3);
            let mut operands = Vec::with_capacity(3);
            inst.for_each_value(|a| operands.push(a));
            for (c, (a, &src)) in operands.into_iter().zip(&run.sources[t]).enumerate() {
                // (A nest's row may read one value of row 0 at two row strides.)
                let key = (a.index(), row_step(t, c));
                if let Source::Affine { step, .. } = src {
                    if let Some(&x) = loaded.get(&(key, step)) {
                        overrides.push((a.index(), x));
                        continue;
                    }
                }
                let x = match src {
                    Source::Same { pos } => body[pos as usize],
                    Source::Carried { pos, .. } => {
                        let k = carried.partition_point(|&c| c < pos);
                        params[1 + k]
                    }
                    Source::Affine { step: 0, .. } => match row.operands.get(&(t, c)) {
                        Some(&x) => x,
                        None => self.use_value(a)?,
                    },
                    Source::Affine { base, step } if func.is_param(a) => {
                        let rows = row_base(self.inputs, row_step(t, c) * unit);
                        let at = self.advance(&mut advanced, rows, j, step * unit);
                        let raw_ty = self.reg_type(Type::F64);
                        let raw = self.b.ins().load(
                            raw_ty,
                            READONLY,
                            at,
                            offset(base as usize * self.input.lanes.count())?,
                        );
                        self.boundary_to_value(raw, func.values[a.index()].ty)
                    }
                    Source::Affine { base, step } => {
                        // A value of an earlier run: its array, at a slot stride of
                        // (slot of iteration 1) − (slot of iteration 0).
                        let slots = &self.input.plan.slots;
                        let s0 = slots[base as usize];
                        let s1 = slots[(i64::from(base) + step) as usize];
                        assert!(
                            s0 != NO_SLOT && s1 != NO_SLOT,
                            "plan: run operand {a} without an array home"
                        );
                        let stride = i64::from(s1) - i64::from(s0);
                        let per_row = self.row_stride(base, row_step(t, c), unit)?;
                        let rows = row_base(self.work, per_row);
                        let at = self.advance(&mut advanced, rows, j, stride * unit);
                        let reg = self.reg_type(func.values[a.index()].ty);
                        let off = self.slot_offset(s0)?;
                        self.b.ins().load(reg, FLAGS, at, off)
                    }
                };
                if let Source::Affine { step, .. } = src {
                    loaded.insert((key, step), x);
                }
                overrides.push((a.index(), x));
            }
            self.overrides = overrides;
            for (table, &entry) in run.tables.iter().zip(tables) {
                if table.pos as usize == t {
                    // In a nest, from row k's first entry.
                    let per_row = outer.map_or(0, |_| {
                        run.trips as i64 * self.input.consts.entry_bytes as i64
                    });
                    let base = row_base(self.table_base(), per_row);
                    let x = self.table_entry(&mut advanced, base, j, table.ty, entry)?;
                    self.tabled[table.slot as usize] = Some(x);
                }
            }
            let x = self.lower_inst(v, inst)?;
            self.overrides.clear();
            self.tabled = [None; 3];
            body.push(x);
            match home {
                Home::None => {}
                // Stored once, after the loop: only the last iteration's value is read.
                Home::Last(slot) => last_values.push((slot, x)),
                Home::Array(first) => {
                    let per_row = outer.map_or(0, |_| run.trips as i64 * unit);
                    let rows = row_base(self.work, per_row);
                    let at = self.advance(&mut advanced, rows, j, unit);
                    let off = self.slot_offset(first)?;
                    self.b.ins().store(FLAGS, x, at, off);
                }
            }
            if !run.outputs[t].is_empty() {
                let y = self.value_to_boundary(x, func.values[v].ty);
                for (s, store) in run.outputs[t].iter().enumerate() {
                    let per_row = outer.map_or(0, |o| o.inner_outputs[t][s]);
                    let rows = row_base(self.outputs, per_row * unit);
                    let at = self.advance(&mut advanced, rows, j, store.step * unit);
                    let off = offset(store.first as usize * self.input.lanes.count())?;
                    self.b.ins().store(FLAGS, y, at, off);
                }
            }
        }
        self.body_literals = None;
        let next = self.b.ins().iadd_imm_s(j, 1);
        let trips = i64::try_from(run.trips)
            .map_err(|_| JitError::TooLarge(format!("a loop of {} trips", run.trips)))?;
        let more = self
            .b
            .ins()
            .icmp_imm_s(ir::condcodes::IntCC::UnsignedLessThan, next, trips);
        let mut args = vec![ir::BlockArg::Value(next)];
        args.extend(
            carried
                .iter()
                .map(|&pos| ir::BlockArg::Value(body[pos as usize])),
        );
        self.b.ins().brif(more, header, &args, exit, &[]);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        // The header, which defines the body's values, is the exit's only predecessor.
        for (slot, x) in last_values {
            let off = self.slot_offset(slot)?;
            self.b.ins().store(FLAGS, x, self.work, off);
        }
        Ok(body)
    }

    /// The carried positions of `run`, each with the value before the run (the value
    /// `period` before the position's first iteration), in position order, and their values
    /// in the loop's first iteration: in a nest, the row's first values; else those values.
    fn carried_positions(&mut self, run: &Run, row: &RowValues) -> Result<CarriedFirsts, JitError> {
        let mut carried_from: Vec<(u32, u32, (usize, usize))> = Vec::new();
        for (t, srcs) in run.sources.iter().enumerate() {
            for (c, &src) in srcs.iter().enumerate() {
                if let Source::Carried { pos, init } = src {
                    carried_from.push((pos, init, (t, c)));
                }
            }
        }
        carried_from.sort_unstable();
        carried_from.dedup_by_key(|&mut (pos, _, _)| pos);
        let mut firsts = Vec::with_capacity(carried_from.len());
        for &(_, init, operand) in &carried_from {
            firsts.push(match row.operands.get(&operand) {
                Some(&x) => x,
                None => self.use_value(Value::new(init as usize))?,
            });
        }
        let carried = carried_from
            .into_iter()
            .map(|(pos, init, _)| (pos, init))
            .collect();
        Ok((carried, firsts))
    }

    /// The constant table's address (a loop with literal tables always has one).
    fn table_base(&self) -> ir::Value {
        self.const_base
            .expect("ConstTable::build gives a loop with literal tables the constant table")
    }

    /// Entry `j` of a literal table whose first entry is `entry` entries from `base` (the
    /// constant table, or in a nest's row that table advanced to the row's part).
    fn table_entry(
        &mut self,
        advanced: &mut HashMap<(ir::Value, i64), ir::Value>,
        base: ir::Value,
        j: ir::Value,
        ty: Type,
        entry: u32,
    ) -> Result<ir::Value, JitError> {
        let width = self.input.consts.entry_bytes;
        let at = self.advance(advanced, base, j, width as i64);
        let reg_ty = match self.input.lanes {
            Lanes::One => clif_type(ty),
            Lanes::Two => lane_type(ty),
        };
        let off = offset(entry as usize * width / 8)?;
        Ok(self.b.ins().load(reg_ty, READONLY, at, off))
    }

    /// Outputs `fill.first..=fill.last` set to `fill.value`: a loop of four stores per
    /// iteration, then the remaining one to three stores.
    fn lower_fill(&mut self, fill: &Fill) -> Result<(), JitError> {
        const UNROLL: usize = 4;
        let ptr = self.module.target_config().pointer_type();
        let unit = 8 * self.input.lanes.count() as i64;
        let x = self.b.ins().f64const(fill.value);
        let y = self.splat(Type::F64, x);
        let count = fill.last - fill.first + 1;
        let looped = count / UNROLL * UNROLL;
        let start = offset(fill.first)? as i64 * self.input.lanes.count() as i64;
        if looped > 0 {
            let end = start + looped as i64 * unit;
            let header = self.b.create_block();
            let exit = self.b.create_block();
            self.b.append_block_param(header, ptr);
            let first = self.b.ins().iconst(ptr, start);
            self.b.ins().jump(header, &[ir::BlockArg::Value(first)]);
            self.b.switch_to_block(header);
            let at = self.b.block_params(header)[0];
            let addr = self.b.ins().iadd(self.outputs, at);
            for k in 0..UNROLL as i32 {
                self.b.ins().store(FLAGS, y, addr, k * unit as i32);
            }
            let next = self.b.ins().iadd_imm_s(at, UNROLL as i64 * unit);
            let more = self
                .b
                .ins()
                .icmp_imm_s(ir::condcodes::IntCC::SignedLessThan, next, end);
            self.b
                .ins()
                .brif(more, header, &[ir::BlockArg::Value(next)], exit, &[]);
            self.b.seal_block(header);
            self.b.switch_to_block(exit);
            self.b.seal_block(exit);
        }
        for out in fill.first + looped..=fill.last {
            let at = match self.input.lanes {
                Lanes::One => offset(out)?,
                Lanes::Two => pair_offset(out)?,
            };
            self.b.ins().store(FLAGS, y, self.outputs, at);
        }
        Ok(())
    }

    /// Record the definition of `v`: cache it, spill it if planned, store it to its outputs.
    fn define(&mut self, v: usize, x: ir::Value) -> Result<(), JitError> {
        self.cache[v] = Some(Cached {
            chunk: self.chunk,
            value: x,
        });
        let slot = self.input.plan.slots[v];
        if slot != NO_SLOT {
            let at = self.slot_offset(slot)?;
            self.b.ins().store(FLAGS, x, self.work, at);
        }
        self.store_outputs(v, x)
    }

    fn store_outputs(&mut self, v: usize, x: ir::Value) -> Result<(), JitError> {
        let ty = self.input.func.values[v].ty;
        let mut boundary = None;
        let outs: Vec<usize> = self.input.plan.outputs_of(v).collect();
        for out in outs {
            let y = match boundary {
                Some(y) => y,
                None => {
                    let y = self.value_to_boundary(x, ty);
                    boundary = Some(y);
                    y
                }
            };
            match self.input.lanes {
                Lanes::One => {
                    self.b.ins().store(FLAGS, y, self.outputs, offset(out)?);
                }
                // Output `out` of both points: one vector store into its interleaved slot.
                Lanes::Two => {
                    self.b
                        .ins()
                        .store(FLAGS, y, self.outputs, pair_offset(out)?);
                }
            }
        }
        Ok(())
    }

    /// The register type of an IR type: scalar, or its vector in [`Lanes::Two`] code.
    fn reg_type(&self, ty: Type) -> types::Type {
        match self.lanes {
            Lanes::One => clif_type(ty),
            Lanes::Two => lane_type(ty),
        }
    }

    /// Byte offset of workspace slot `slot` (8 bytes per lane).
    fn slot_offset(&self, slot: u32) -> Result<i32, JitError> {
        let words = (slot as usize)
            .checked_mul(self.input.lanes.count())
            .ok_or_else(|| JitError::TooLarge(format!("workspace slot {slot}")))?;
        offset(words)
    }

    /// `x` (a scalar of `ty`) in every lane, in [`Lanes::Two`] code; `x` itself otherwise.
    fn splat(&mut self, ty: Type, x: ir::Value) -> ir::Value {
        match self.lanes {
            Lanes::One => x,
            Lanes::Two => self.b.ins().splat(lane_type(ty), x),
        }
    }

    /// A bool lane mask as the mask type `bitselect` needs for values of type `ty`: `I64X2`
    /// lanes reinterpreted as `F64X2`; for `F32X4`, lanes 0 and 1 of the 64-bit mask
    /// narrowed into 32-bit lanes 0 and 1 (a byte shuffle: Cranelift has no `snarrow` from
    /// `I64X2` on x86-64).
    fn mask_for(&mut self, mask: ir::Value, ty: Type) -> ir::Value {
        match ty {
            Type::Bool => mask,
            Type::F64 => self.b.ins().bitcast(types::F64X2, lane_bitcast(), mask),
            Type::F32 => {
                let order = [0, 1, 2, 3, 8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11];
                self.shuffle_bytes(mask, order, types::F32X4)
            }
        }
    }

    /// The 128-bit `x` with byte `i` of the result taken from byte `order[i]` of `x`,
    /// reinterpreted as `ty`.
    fn shuffle_bytes(&mut self, x: ir::Value, order: [u8; 16], ty: types::Type) -> ir::Value {
        self.shuffle_two(x, x, order, ty)
    }

    /// The 128-bit values `a` and `b` with byte `i` of the result taken from byte `order[i]`
    /// of their 32 bytes (`a`'s first), reinterpreted as `ty`.
    fn shuffle_two(
        &mut self,
        a: ir::Value,
        b: ir::Value,
        order: [u8; 16],
        ty: types::Type,
    ) -> ir::Value {
        let a = self.b.ins().bitcast(types::I8X16, lane_bitcast(), a);
        let b = match a == b {
            true => a,
            false => self.b.ins().bitcast(types::I8X16, lane_bitcast(), b),
        };
        let imm = self
            .b
            .func
            .dfg
            .immediates
            .push(ConstantData::from(&order[..]));
        let shuffled = self.b.ins().shuffle(a, b, imm);
        self.b.ins().bitcast(ty, lane_bitcast(), shuffled)
    }

    /// The lane mask of a vector `fcmp` on values of type `operand_ty`, as the canonical
    /// `I64X2` bool (an `F32X4` compare yields `I32X4`: lanes 0 and 1 are sign-extended).
    fn canonical_mask(&mut self, mask: ir::Value, operand_ty: Type) -> ir::Value {
        match operand_ty {
            Type::F32 => self.b.ins().swiden_low(mask),
            _ => mask,
        }
    }

    /// `select` of the scalar code, lane-wise in [`Lanes::Two`] code (`cond` is a bool of
    /// the current width, `x` and `y` values of `ty`).
    fn select(&mut self, ty: Type, cond: ir::Value, x: ir::Value, y: ir::Value) -> ir::Value {
        match self.lanes {
            Lanes::One if self.masks_selects(ty) => {
                self.masked_select(ty, cond, Side::Value(x), Side::Value(y))
            }
            Lanes::One => self.b.ins().select(cond, x, y),
            Lanes::Two => {
                let mask = self.mask_for(cond, ty);
                self.b.ins().bitselect(mask, x, y)
            }
        }
    }

    /// Whether a one-lane `select` of values of type `ty` is [`Self::masked_select`]: floats,
    /// where [`LowerInput::mask_selects`] says so.
    fn masks_selects(&self, ty: Type) -> bool {
        self.input.mask_selects && ty != Type::Bool
    }

    /// One-lane `select` between floats without a branch: `x & mask | y & !mask` with the
    /// bool as a mask of the float's width (all ones or zero), bit for bit the chosen operand.
    /// x86-64 lowers a float `select` to a conditional jump, which the CPU mispredicts where
    /// the condition follows the data (a reverse sweep through `min`, `max` or `abs` at
    /// varying points); the mask costs a few instructions and never a misprediction. A side
    /// that is the literal +0.0 ([`Side::Zero`]: the usual reverse-mode routing of a
    /// cotangent) needs one `and`.
    fn masked_select(&mut self, ty: Type, cond: ir::Value, x: Side, y: Side) -> ir::Value {
        match (x, y) {
            (Side::Value(x), Side::Zero) => {
                let mask = self.select_mask(ty, cond, true);
                self.b.ins().band(x, mask)
            }
            (Side::Zero, Side::Value(y)) => {
                let mask = self.select_mask(ty, cond, false);
                self.b.ins().band(y, mask)
            }
            (Side::Value(x), Side::Value(y)) => {
                let mask = self.select_mask(ty, cond, true);
                self.b.ins().bitselect(mask, x, y)
            }
            (Side::Zero, Side::Zero) => match ty {
                Type::F32 => self.b.ins().f32const(0.0),
                _ => self.b.ins().f64const(0.0),
            },
        }
    }

    /// The bool `cond` (`when` true) or its negation (`when` false) as a float of type `ty`
    /// whose bits are all ones or all zeros: `-c` or `c - 1` in an integer register, moved
    /// over. The masks of the last condition are kept while lowering stays in one block:
    /// a reverse sweep routes a cotangent to both operands of a `min` by two selects on one
    /// condition, and Cranelift does not merge equal instructions at `opt_level = none`.
    fn select_mask(&mut self, ty: Type, cond: ir::Value, when: bool) -> ir::Value {
        let block = self.b.current_block();
        let key = (block, cond, ty);
        match self.last_masks {
            Some((k, masks)) if k == key => {
                if let Some(mask) = masks[usize::from(when)] {
                    return mask;
                }
            }
            _ => self.last_masks = Some((key, [None; 2])),
        }
        let (int_ty, float_ty) = match ty {
            Type::F32 => (types::I32, types::F32),
            _ => (types::I64, types::F64),
        };
        let bit = self.b.ins().uextend(int_ty, cond);
        let mask = match when {
            true => self.b.ins().ineg(bit),
            false => self.b.ins().iadd_imm_s(bit, -1),
        };
        let mask = self.b.ins().bitcast(float_ty, MemFlagsData::new(), mask);
        if let Some((_, masks)) = &mut self.last_masks {
            masks[usize::from(when)] = Some(mask);
        }
        mask
    }

    /// `fcmp` of the scalar code; in [`Lanes::Two`] code a canonical bool mask.
    fn fcmp(&mut self, cc: FloatCC, operand_ty: Type, a: ir::Value, b: ir::Value) -> ir::Value {
        let (a, b) = match self.lanes {
            Lanes::Two if self.compare_registers_only => (self.in_register(a), self.in_register(b)),
            _ => (a, b),
        };
        let c = self.b.ins().fcmp(cc, a, b);
        match self.lanes {
            Lanes::One => c,
            Lanes::Two => self.canonical_mask(c, operand_ty),
        }
    }

    /// The vector `x`, put through a bitcast when a load defines it, so that Cranelift loads it
    /// into a register rather than folding the load into its user (see
    /// [`Lowerer::compare_registers_only`]).
    fn in_register(&mut self, x: ir::Value) -> ir::Value {
        let dfg = &self.b.func.dfg;
        let loaded = dfg
            .value_def(x)
            .inst()
            .is_some_and(|inst| dfg.insts[inst].opcode() == ir::Opcode::Load);
        if !loaded {
            return x;
        }
        let ty = dfg.value_type(x);
        let bytes = self.b.ins().bitcast(types::I8X16, lane_bitcast(), x);
        self.b.ins().bitcast(ty, lane_bitcast(), bytes)
    }

    /// An `f64` read from the boundary (an `F64X2` of two points in [`Lanes::Two`] code), as
    /// a value of type `ty`.
    fn boundary_to_value(&mut self, raw: ir::Value, ty: Type) -> ir::Value {
        match ty {
            Type::F64 => raw,
            Type::F32 => self.demote(raw),
            Type::Bool => {
                let zero = self.b.ins().f64const(0.0);
                let zero = self.splat(Type::F64, zero);
                self.fcmp(FloatCC::NotEqual, Type::F64, raw, zero)
            }
        }
    }

    /// A value of type `ty` as the `f64` the boundary carries (`F64X2` in [`Lanes::Two`]).
    fn value_to_boundary(&mut self, x: ir::Value, ty: Type) -> ir::Value {
        match ty {
            Type::F64 => x,
            Type::F32 => self.promote(x),
            Type::Bool => {
                let one = self.b.ins().f64const(1.0);
                let one = self.splat(Type::F64, one);
                let zero = self.b.ins().f64const(0.0);
                let zero = self.splat(Type::F64, zero);
                self.select(Type::F64, x, one, zero)
            }
        }
    }

    /// `f32` → `f64` (exact).
    fn promote(&mut self, x: ir::Value) -> ir::Value {
        match self.lanes {
            Lanes::One => self.b.ins().fpromote(types::F64, x),
            Lanes::Two => self.b.ins().fvpromote_low(x),
        }
    }

    /// `f64` → `f32`, rounded to nearest even (`cvtsd2ss` / `cvtpd2ps` alike).
    fn demote(&mut self, x: ir::Value) -> ir::Value {
        match self.lanes {
            Lanes::One => self.b.ins().fdemote(types::F32, x),
            Lanes::Two => self.b.ins().fvdemote(x),
        }
    }

    /// A literal of type `ty` (in every lane in [`Lanes::Two`] code).
    fn literal(&mut self, ty: Type, bits: u64) -> Result<ir::Value, JitError> {
        let key = (self.lanes, ty, bits);
        if let Some(&x) = self.body_literals.as_ref().and_then(|m| m.get(&key)) {
            return Ok(x);
        }
        let x = self.materialise_literal(ty, bits)?;
        if let Some(memo) = self.body_literals.as_mut() {
            memo.insert(key, x);
        }
        Ok(x)
    }

    fn materialise_literal(&mut self, ty: Type, bits: u64) -> Result<ir::Value, JitError> {
        if let (Lanes::Two, Lanes::Two, Some(base), Some(&index)) = (
            self.lanes,
            self.input.lanes,
            self.const_base,
            self.input.consts.index.get(&(ty, bits)),
        ) {
            // The pair table holds the literal in every lane: one vector load.
            return Ok(self.b.ins().load(
                lane_type(ty),
                READONLY,
                base,
                pair_offset(index as usize)?,
            ));
        }
        if self.lanes == Lanes::Two && ty.is_float() {
            // One vector constant from the pool: a single load, where a scalar constant
            // splatted into both lanes is three instructions at every use (the traced
            // Rosenbrock-100, with three literals a term, ran slower in two lanes than in one).
            let bytes: Vec<u8> = match ty {
                Type::F32 => (0..4)
                    .flat_map(|_| (f64::from_bits(bits) as f32).to_le_bytes())
                    .collect(),
                _ => (0..2).flat_map(|_| bits.to_le_bytes()).collect(),
            };
            let handle = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
            return Ok(self.b.ins().vconst(lane_type(ty), handle));
        }
        let x = self.scalar_literal(ty, bits)?;
        Ok(match (self.lanes, ty) {
            (Lanes::One, _) => x,
            (Lanes::Two, Type::Bool) => {
                // An all-ones or all-zeros lane mask.
                let wide = self.b.ins().sextend(types::I64, x);
                let mask = self.b.ins().ineg(wide);
                self.b.ins().splat(types::I64X2, mask)
            }
            (Lanes::Two, _) => self.b.ins().splat(lane_type(ty), x),
        })
    }

    fn scalar_literal(&mut self, ty: Type, bits: u64) -> Result<ir::Value, JitError> {
        let x = f64::from_bits(bits);
        if let (Some(base), Some(&index)) =
            (self.const_base, self.input.consts.index.get(&(ty, bits)))
        {
            return Ok(self
                .b
                .ins()
                .load(clif_type(ty), READONLY, base, offset(index as usize)?));
        }
        Ok(match ty {
            Type::F32 => self.b.ins().f32const(x as f32),
            Type::F64 => self.b.ins().f64const(x),
            Type::Bool => self.b.ins().iconst(types::I8, i64::from(x != 0.0)),
        })
    }

    fn operand(&mut self, o: Operand, lit_ty: Type) -> Result<ir::Value, JitError> {
        match o {
            Operand::Value(v) => self.use_value(v),
            Operand::Const(c) => match self.next_tabled() {
                Some(x) => Ok(x),
                None => self.literal(lit_ty, c.to_bits()),
            },
        }
    }

    /// The table entry standing for the instruction's next literal, if it is tabled.
    fn next_tabled(&mut self) -> Option<ir::Value> {
        let slot = self.next_slot;
        self.next_slot += 1;
        self.tabled.get(slot).copied().flatten()
    }

    /// A math routine applied to `args`; in [`Lanes::Two`] code once per lane (lanes
    /// extracted, the scalar routine called on each, the vector rebuilt).
    fn call(&mut self, call: MathCall, args: &[ir::Value]) -> Result<ir::Value, JitError> {
        if self.lanes == Lanes::One {
            return self.call_scalar(call, args);
        }
        let mut lanes = [None; 2];
        for (lane, result) in lanes.iter_mut().enumerate() {
            let scalars: Vec<ir::Value> = args
                .iter()
                .map(|&a| self.b.ins().extractlane(a, lane as u8))
                .collect();
            *result = Some(self.call_scalar(call, &scalars)?);
        }
        let [Some(r0), Some(r1)] = lanes else {
            unreachable!("both lanes called")
        };
        let vector = self.b.ins().scalar_to_vector(lane_type(call.ty()), r0);
        Ok(self.b.ins().insertlane(vector, r1, 1))
    }

    /// `op(x)` by [`mathlib`]'s routine emitted inline (`f32`: on the promoted argument, the
    /// result rounded back, as `adjit_ir::math` does).
    fn inline_unary(&mut self, op: UnaryOp, ty: Type, x: ir::Value) -> Result<ir::Value, JitError> {
        let wide = match ty {
            Type::F32 => self.promote(x),
            _ => x,
        };
        let mut emitter = ClifMath {
            b: &mut self.b,
            lanes: self.lanes,
            module: &mut *self.module,
            table_bases: &mut self.table_bases,
            error: None,
        };
        let y = mathlib::unary(&mut emitter, op, wide).expect("checked by has_unary");
        if let Some(e) = emitter.error {
            return Err(e);
        }
        Ok(match ty {
            Type::F32 => self.demote(y),
            _ => y,
        })
    }

    /// `op(a, b)` by [`mathlib`]'s routine emitted inline (`f32`: as [`Self::inline_unary`]).
    fn inline_binary(
        &mut self,
        op: BinaryOp,
        ty: Type,
        a: ir::Value,
        b: ir::Value,
    ) -> Result<ir::Value, JitError> {
        let (a, b) = match ty {
            Type::F32 => (self.promote(a), self.promote(b)),
            _ => (a, b),
        };
        let mut emitter = ClifMath {
            b: &mut self.b,
            lanes: self.lanes,
            module: &mut *self.module,
            table_bases: &mut self.table_bases,
            error: None,
        };
        let y = mathlib::binary(&mut emitter, op, a, b).expect("checked by has_binary");
        if let Some(e) = emitter.error {
            return Err(e);
        }
        Ok(match ty {
            Type::F32 => self.demote(y),
            _ => y,
        })
    }

    fn call_scalar(&mut self, call: MathCall, args: &[ir::Value]) -> Result<ir::Value, JitError> {
        let fref = match self.func_refs.get(&call) {
            Some(&f) => f,
            None => {
                let id = self.imports.id(self.module, call)?;
                let f = self.module.declare_func_in_func(id, self.b.func);
                self.func_refs.insert(call, f);
                f
            }
        };
        let inst = self.b.ins().call(fref, args);
        Ok(self.b.inst_results(inst)[0])
    }

    fn lower_inst(&mut self, v: usize, inst: &InstData) -> Result<ir::Value, JitError> {
        let func = self.input.func;
        let ty = func.values[v].ty;
        self.lower_inst_as(ty, func.literal_type(inst, ty), inst)
    }

    /// `inst`, of result type `ty` and literals of type `lit_ty`, with its value operands read
    /// by [`Self::use_value`].
    fn lower_inst_as(
        &mut self,
        ty: Type,
        lit_ty: Type,
        inst: &InstData,
    ) -> Result<ir::Value, JitError> {
        self.next_slot = 0;
        Ok(match *inst {
            InstData::Const { ty, bits } => match self.next_tabled() {
                Some(x) => x,
                None => self.literal(ty, bits)?,
            },
            InstData::Unary { op, arg } => {
                let x = self.use_value(arg)?;
                let ins = self.b.ins();
                match op {
                    UnaryOp::Neg => {
                        // `fneg` rebuilds its sign mask in a register at every use
                        // (`movabsq` + `vmovq` + `vxorpd`); xor with a `-0.0` literal is the
                        // same bit flip and reads the mask from the constant pool.
                        let mask = self.literal(ty, SIGN_MASK)?;
                        self.b.ins().bxor(x, mask)
                    }
                    UnaryOp::Abs => ins.fabs(x),
                    UnaryOp::Sqrt => ins.sqrt(x),
                    UnaryOp::Floor => ins.floor(x),
                    UnaryOp::Ceil => ins.ceil(x),
                    _ if self.input.math.inlines_unary(op) => self.inline_unary(op, ty, x)?,
                    _ => self.call(MathCall::Unary(op, ty), &[x])?,
                }
            }
            InstData::Binary { op, args } => {
                let a = self.operand(args[0], lit_ty)?;
                let c = self.operand(args[1], lit_ty)?;
                match op {
                    BinaryOp::Add => self.b.ins().fadd(a, c),
                    BinaryOp::Sub => self.b.ins().fsub(a, c),
                    BinaryOp::Mul => self.b.ins().fmul(a, c),
                    BinaryOp::Div => self.b.ins().fdiv(a, c),
                    BinaryOp::Pow | BinaryOp::Atan2 if self.input.math.inlines_binary(op) => {
                        self.inline_binary(op, ty, a, c)?
                    }
                    BinaryOp::Pow | BinaryOp::Atan2 => {
                        self.call(MathCall::Binary(op, ty), &[a, c])?
                    }
                    BinaryOp::Min => self.min_max(ty, FloatCC::LessThan, a, c),
                    BinaryOp::Max => self.min_max(ty, FloatCC::GreaterThan, a, c),
                }
            }
            InstData::Fma { args } => {
                let a = self.operand(args[0], lit_ty)?;
                let c = self.operand(args[1], lit_ty)?;
                let d = self.operand(args[2], lit_ty)?;
                self.b.ins().fma(a, c, d)
            }
            InstData::Powi { arg, exp } => {
                let x = self.use_value(arg)?;
                self.powi(x, ty, exp)
            }
            InstData::Fcmp { pred, args } => {
                let a = self.operand(args[0], lit_ty)?;
                let c = self.operand(args[1], lit_ty)?;
                let cc = match pred {
                    CmpPred::Eq => FloatCC::Equal,
                    CmpPred::Ne => FloatCC::NotEqual,
                    CmpPred::Lt => FloatCC::LessThan,
                    CmpPred::Le => FloatCC::LessThanOrEqual,
                    CmpPred::Gt => FloatCC::GreaterThan,
                    CmpPred::Ge => FloatCC::GreaterThanOrEqual,
                };
                self.fcmp(cc, lit_ty, a, c)
            }
            InstData::Select { cond, args } => {
                let c = self.use_value(cond)?;
                if self.lanes == Lanes::One && self.masks_selects(ty) {
                    // A literal +0.0 side is not materialised, unless it is a table's entry
                    // (a literal that is +0.0 in this iteration only).
                    let [a, d] = args.map(|o| match o {
                        Operand::Const(x) if x.to_bits() == 0 => {
                            Ok(self.next_tabled().map_or(Side::Zero, Side::Value))
                        }
                        _ => self.operand(o, lit_ty).map(Side::Value),
                    });
                    self.masked_select(ty, c, a?, d?)
                } else {
                    let a = self.operand(args[0], lit_ty)?;
                    let d = self.operand(args[1], lit_ty)?;
                    self.select(ty, c, a, d)
                }
            }
            InstData::Fpromote { arg } => {
                let x = self.use_value(arg)?;
                self.promote(x)
            }
            InstData::Fdemote { arg } => {
                let x = self.use_value(arg)?;
                self.demote(x)
            }
        })
    }

    /// `min` (with `LessThan`) or `max` (with `GreaterThan`) under the rules of `math.rs`:
    /// `if a is NaN { b } else if b OP a { b } else { a }`.
    /// In [`Lanes::Two`] code the selects are `bitselect`s on the compare masks (x86-64 turns
    /// `bitselect(b < a, b, a)` into `minpd b, a`, which has exactly this rule).
    fn min_max(&mut self, ty: Type, cc: FloatCC, a: ir::Value, b: ir::Value) -> ir::Value {
        match self.lanes {
            Lanes::One => {
                let ins = &mut self.b;
                let b_wins = ins.ins().fcmp(cc, b, a);
                let r = ins.ins().select(b_wins, b, a);
                let a_nan = ins.ins().fcmp(FloatCC::Unordered, a, a);
                ins.ins().select(a_nan, b, r)
            }
            Lanes::Two => {
                let b_wins = self.b.ins().fcmp(cc, b, a);
                let b_wins = self.b.ins().bitcast(lane_type(ty), lane_bitcast(), b_wins);
                let r = self.b.ins().bitselect(b_wins, b, a);
                let a_nan = self.b.ins().fcmp(FloatCC::Unordered, a, a);
                let a_nan = self.b.ins().bitcast(lane_type(ty), lane_bitcast(), a_nan);
                self.b.ins().bitselect(a_nan, b, r)
            }
        }
    }

    /// `x^k` by binary exponentiation in the order of `math::powi_f64`.
    fn powi(&mut self, x: ir::Value, ty: Type, k: i32) -> ir::Value {
        let mut n = k.unsigned_abs();
        let mut base = x;
        let mut acc: Option<ir::Value> = None;
        while n > 0 {
            if n & 1 == 1 {
                acc = Some(match acc {
                    // 1·base is base exactly (up to NaN payload).
                    None => base,
                    Some(a) => self.b.ins().fmul(a, base),
                });
            }
            n >>= 1;
            if n > 0 {
                base = self.b.ins().fmul(base, base);
            }
        }
        match acc {
            Some(a) if k >= 0 => a,
            acc => {
                let one = match ty {
                    Type::F32 => self.b.ins().f32const(1.0),
                    _ => self.b.ins().f64const(1.0),
                };
                let one = self.splat(ty, one);
                match acc {
                    Some(a) => self.b.ins().fdiv(one, a),
                    None => one,
                }
            }
        }
    }
}
