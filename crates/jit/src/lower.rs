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
//! - Transcendentals, `pow` and `atan2` call imported routines ([`crate::abi`]).
//! - Bools live in registers as `i8` 0/1 and in memory as one byte; at the boundary they are
//!   `f64` 0.0/1.0 (nonzero reads as true). `f32` values cross the boundary as `f64`.
//!
//! Values are cached in registers exactly as [`crate::plan`] simulated: a register copy is
//! dropped at each planned eviction, and a use of a value without one reloads it from its
//! home (`inputs` for parameters, its `work` slot otherwise). Dead instructions are skipped.

use std::collections::HashMap;

use adjit_ir::{BinaryOp, CmpPred, Function, InstData, Operand, Type, UnaryOp, Value, ValueDef};
use cranelift_codegen::ir::{
    self, condcodes::FloatCC, types, FuncRef, InstBuilder, MemFlagsData, UserFuncName,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};

use crate::abi::{clif_type, kernel_signature, math_signature, MathCall, MathNames};
use crate::constants::{literal_type, ConstTable, SIGN_MASK};
use crate::error::JitError;
use crate::plan::{Plan, NO_SLOT};

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
    pub consts: &'a ConstTable,
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

struct Lowerer<'a, 'm, M: Module> {
    b: FunctionBuilder<'a>,
    module: &'m mut M,
    imports: &'m mut Imports,
    func_refs: HashMap<MathCall, FuncRef>,
    input: &'m LowerInput<'m>,
    chunk: u32,
    cache: &'m mut [Option<Cached>],
    inputs: ir::Value,
    outputs: ir::Value,
    work: ir::Value,
    const_base: Option<ir::Value>,
}

/// Build chunk `chunk` of `input.func` into `clif` (its name becomes `u0:chunk`).
pub(crate) fn lower_chunk<M: Module>(
    module: &mut M,
    imports: &mut Imports,
    input: &LowerInput<'_>,
    chunk: usize,
    cache: &mut [Option<Cached>],
    clif: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
) -> Result<(), JitError> {
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
    let mut lowerer = Lowerer {
        b,
        module,
        imports,
        func_refs: HashMap::new(),
        input,
        chunk: chunk as u32,
        cache,
        inputs: params[0],
        outputs: params[1],
        work: params[2],
        const_base,
    };
    let func = input.func;
    if chunk == 0 {
        // Returned parameters are copied once, before anything else, without caching them
        // (the plan did not count them as registers).
        for v in 0..func.n_params {
            if input.plan.outputs_of(v).next().is_some() {
                let x = lowerer.load_home(Value::new(v))?;
                lowerer.store_outputs(v, x)?;
            }
        }
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

impl<M: Module> Lowerer<'_, '_, M> {
    /// A register holding `v`: its cached copy, or a reload from its home.
    fn use_value(&mut self, v: Value) -> Result<ir::Value, JitError> {
        let i = v.index();
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
            let raw = self
                .b
                .ins()
                .load(types::F64, READONLY, self.inputs, offset(i)?);
            self.boundary_to_value(raw, ty)
        } else {
            let slot = self.input.plan.slots[i];
            assert_ne!(slot, NO_SLOT, "plan: {v} reloaded without a workspace slot");
            self.b
                .ins()
                .load(clif_type(ty), FLAGS, self.work, offset(slot as usize)?)
        })
    }

    /// Record the definition of `v`: cache it, spill it if planned, store it to its outputs.
    fn define(&mut self, v: usize, x: ir::Value) -> Result<(), JitError> {
        self.cache[v] = Some(Cached {
            chunk: self.chunk,
            value: x,
        });
        let slot = self.input.plan.slots[v];
        if slot != NO_SLOT {
            self.b
                .ins()
                .store(FLAGS, x, self.work, offset(slot as usize)?);
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
            self.b.ins().store(FLAGS, y, self.outputs, offset(out)?);
        }
        Ok(())
    }

    /// An `f64` read from the boundary, as a value of type `ty`.
    fn boundary_to_value(&mut self, raw: ir::Value, ty: Type) -> ir::Value {
        match ty {
            Type::F64 => raw,
            Type::F32 => self.b.ins().fdemote(types::F32, raw),
            Type::Bool => {
                let zero = self.b.ins().f64const(0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, raw, zero)
            }
        }
    }

    /// A value of type `ty` as the `f64` the boundary carries.
    fn value_to_boundary(&mut self, x: ir::Value, ty: Type) -> ir::Value {
        match ty {
            Type::F64 => x,
            Type::F32 => self.b.ins().fpromote(types::F64, x),
            Type::Bool => {
                let one = self.b.ins().f64const(1.0);
                let zero = self.b.ins().f64const(0.0);
                self.b.ins().select(x, one, zero)
            }
        }
    }

    fn literal(&mut self, ty: Type, bits: u64) -> Result<ir::Value, JitError> {
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
            Operand::Const(c) => self.literal(lit_ty, c.to_bits()),
        }
    }

    fn call(&mut self, call: MathCall, args: &[ir::Value]) -> Result<ir::Value, JitError> {
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
        let lit_ty = literal_type(func, inst, ty);
        Ok(match *inst {
            InstData::Const { ty, bits } => self.literal(ty, bits)?,
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
                    BinaryOp::Pow | BinaryOp::Atan2 => {
                        self.call(MathCall::Binary(op, ty), &[a, c])?
                    }
                    BinaryOp::Min => self.min_max(FloatCC::LessThan, a, c),
                    BinaryOp::Max => self.min_max(FloatCC::GreaterThan, a, c),
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
                self.b.ins().fcmp(cc, a, c)
            }
            InstData::Select { cond, args } => {
                let c = self.use_value(cond)?;
                let a = self.operand(args[0], lit_ty)?;
                let d = self.operand(args[1], lit_ty)?;
                self.b.ins().select(c, a, d)
            }
            InstData::Fpromote { arg } => {
                let x = self.use_value(arg)?;
                self.b.ins().fpromote(types::F64, x)
            }
            InstData::Fdemote { arg } => {
                let x = self.use_value(arg)?;
                self.b.ins().fdemote(types::F32, x)
            }
        })
    }

    /// `min` (with `LessThan`) or `max` (with `GreaterThan`) under the rules of `math.rs`:
    /// `if a is NaN { b } else if b OP a { b } else { a }`.
    fn min_max(&mut self, cc: FloatCC, a: ir::Value, b: ir::Value) -> ir::Value {
        let ins = &mut self.b;
        let b_wins = ins.ins().fcmp(cc, b, a);
        let r = ins.ins().select(b_wins, b, a);
        let a_nan = ins.ins().fcmp(FloatCC::Unordered, a, a);
        ins.ins().select(a_nan, b, r)
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
                match acc {
                    Some(a) => self.b.ins().fdiv(one, a),
                    None => one,
                }
            }
        }
    }
}
