//! In-process compilation for the host: [`compile`] to a callable [`CompiledFunction`], and the
//! debugging dumps [`clif_text`] and [`asm_text`]. Math calls resolve to the `adjit_*` wrappers
//! of [`crate::abi`], so results equal the interpreter's bit for bit.

use std::fmt::Write as _;

use adjit_ir::{verify, Function, Rolled};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

use crate::abi::{jit_math_symbols, kernel_signature, MathNames};
use crate::compiled::{CompiledFunction, KernelFn, Kernels, OwnedModule};
use crate::constants::ConstTable;
use crate::error::JitError;
use crate::lanes::Lanes;
use crate::lower::rolled::lower_rolled;
use crate::lower::{Imports, LowerInput};
use crate::options::JitOptions;
use crate::pipeline::{lower_function, lowered_insts, prepare, shared_flags};
use crate::plan::Plan;
use crate::roll::Run;
use crate::rolled_plan::RolledPlan;

/// The host ISA with its detected features (FMA, SSE4.1, AVX on x86-64).
fn host_isa(lowered: usize, opts: &JitOptions) -> Result<OwnedTargetIsa, JitError> {
    let flags = shared_flags(lowered, opts, false)?;
    let builder = cranelift_native::builder().map_err(|e| JitError::HostNotSupported(e.into()))?;
    builder
        .finish(flags)
        .map_err(|e| JitError::cranelift("building the host ISA", e))
}

fn new_module(lowered: usize, opts: &JitOptions) -> Result<OwnedModule, JitError> {
    let mut builder = JITBuilder::with_isa(host_isa(lowered, opts)?, default_libcall_names());
    for (name, ptr) in jit_math_symbols() {
        builder.symbol(name, ptr);
    }
    Ok(OwnedModule::new(JITModule::new(builder)))
}

fn chunk_name(chunk: usize) -> String {
    format!("chunk{chunk}")
}

/// Compile `func` for the host.
///
/// ```
/// use adjit_ir::{Builder, Type};
/// let mut b = Builder::new("f");
/// let x = b.param(Type::F64, "x");
/// let y = b.mul(x, 3.0);
/// let f = b.finish(&[y]);
/// let code = adjit_jit::compile(&f, &adjit_jit::JitOptions::default()).unwrap();
/// let mut out = [0.0];
/// code.call(&[2.0], &mut out).unwrap();
/// assert_eq!(out, [6.0]);
/// ```
pub fn compile(func: &Function, opts: &JitOptions) -> Result<CompiledFunction, JitError> {
    verify(func)?;
    // SAFETY: `func` was just verified.
    unsafe { compile_verified(func, opts) }
}

/// [`compile`] without the verifier, for programs built by a transform from a verified one
/// (the facade's derivative programs): verifying them again was a second of a 10⁷-instruction
/// compile. Builds with debug assertions verify anyway, so the test suite checks every such
/// program.
///
/// # Safety
/// `func` must be accepted by [`adjit_ir::verify`]. The lowering trusts what the verifier
/// checks (operands defined before their use, their types), and code lowered from a program
/// that breaks it may read or write outside its buffers.
#[doc(hidden)]
pub unsafe fn compile_verified(
    func: &Function,
    opts: &JitOptions,
) -> Result<CompiledFunction, JitError> {
    if cfg!(debug_assertions) {
        verify(func)?;
    }
    let prepared = prepare(func, opts);
    let (program, runs) = (prepared.program(func), prepared.runs());
    let scalar = compile_kernels(program, opts, runs, Lanes::One)?;
    // The two-point kernels live in a module of their own, so that a function the host
    // cannot lower in vector lanes keeps its scalar code (and scalar batches).
    let pairs = if opts.batch_lanes >= 2 {
        compile_kernels(program, opts, runs, Lanes::Two).ok()
    } else {
        None
    };
    Ok(CompiledFunction::new(
        scalar,
        pairs,
        func.n_params,
        func.n_outputs(),
    ))
}

/// Most template instructions [`compile_rolled`] lowers as one function; a rolled program
/// holding more is compiled expanded (its straight code chunked and planned value by value).
pub const ROLLED_MAX_HELD: usize = 50_000;

/// Compile a rolled program ([`adjit_ir::Rolled`]) for the host from its templates, without
/// expanding it: each loop becomes a counted loop and compile time, code size and memory
/// follow the templates, not the trip counts. The results are bitwise those of
/// [`compile`] of [`Rolled::expand`] (and of the interpreter). Rolled derivatives
/// (`adjit_diff::vjp_rolled`, `jvp_rolled`) compile this way without ever being expanded.
///
/// The expansion is compiled instead, giving [`compile`]'s code, when that is the better
/// choice or the only one: rolling is off ([`JitOptions::roll`]), the program is small
/// (fewer than [`JitOptions::roll_above`] instructions) or its loops hold more than half of
/// it, it holds more than [`ROLLED_MAX_HELD`] template instructions, or it reads across the
/// end of a loop at a moving index or returns more than a few thousand values out of step
/// with its loops. [`CompiledFunction::loops`] says how many loops the code has. Two-point
/// batch kernels ([`JitOptions::batch_lanes`]) are not made for the rolled form.
///
/// ```
/// use adjit_ir::{trace, Rolled};
/// // Σ (x_i − 1)², traced term by term: one loop of 3 instructions per term, 40,000 terms.
/// let f = trace::trace(40_000, |x| {
///     let mut s = x[0] * 0.0;
///     for &xi in x {
///         s = s + (xi - 1.0) * (xi - 1.0);
///     }
///     s
/// });
/// let rolled = Rolled::from_function(&f);
/// let code = adjit_jit::compile_rolled(&rolled, &Default::default()).unwrap();
/// assert!(code.loops() >= 1);
/// let x = vec![2.0; 40_000];
/// let mut y = [0.0];
/// code.call(&x, &mut y).unwrap();
/// assert_eq!(y, [40_000.0]);
/// ```
pub fn compile_rolled(rolled: &Rolled, opts: &JitOptions) -> Result<CompiledFunction, JitError> {
    rolled.verify()?;
    let insts = rolled.n_values() - rolled.n_params();
    let held = rolled.n_template_insts();
    let plan = match opts.roll && insts >= opts.roll_above && 2 * held <= insts {
        true if held <= ROLLED_MAX_HELD => RolledPlan::new(rolled),
        _ => None,
    };
    let code = match plan {
        Some(plan) => Some(compile_planned(rolled, &plan, opts, None)?),
        None => None,
    };
    match code {
        Some(code) => Ok(code),
        None => compile(&rolled.expand(), opts),
    }
}

/// [`compile_rolled`] from the templates whatever the program's size and the share its loops
/// hold (a loop of one trip is straight code): `None` when the program reads across the end
/// of a loop at a moving index, returns more than a few thousand values out of step with its
/// loops, or holds more than [`ROLLED_MAX_HELD`] template instructions.
pub fn compile_templates(
    rolled: &Rolled,
    opts: &JitOptions,
) -> Result<Option<CompiledFunction>, JitError> {
    rolled.verify()?;
    // SAFETY: `rolled` was just verified.
    unsafe { compile_templates_verified(rolled, opts) }
}

/// [`compile_templates`] without the verifier, for rolled programs a transform built from a
/// verified program (the facade's rolled derivatives): verifying them again walks every
/// iteration's types, a tenth of a 10⁷-operation rolled compile. Builds with debug assertions
/// verify anyway, so the test suite checks every such program.
///
/// # Safety
/// `rolled` must be accepted by [`Rolled::verify`]. The lowering trusts what it checks (every
/// read of every iteration precedes it and has its type), and code lowered from a program that
/// breaks it may read or write outside its buffers.
#[doc(hidden)]
pub unsafe fn compile_templates_verified(
    rolled: &Rolled,
    opts: &JitOptions,
) -> Result<Option<CompiledFunction>, JitError> {
    if cfg!(debug_assertions) {
        rolled.verify()?;
    }
    if rolled.n_template_insts() > ROLLED_MAX_HELD {
        return Ok(None);
    }
    match RolledPlan::new(rolled) {
        Some(plan) => compile_planned(rolled, &plan, opts, None).map(Some),
        None => Ok(None),
    }
}

/// Cranelift's pseudo-assembly (VCode after register allocation) of the function
/// [`compile_templates`] compiles `rolled` to; `None` where it compiles none.
pub fn asm_text_rolled(rolled: &Rolled, opts: &JitOptions) -> Result<Option<String>, JitError> {
    rolled.verify()?;
    if rolled.n_template_insts() > ROLLED_MAX_HELD {
        return Ok(None);
    }
    let Some(plan) = RolledPlan::new(rolled) else {
        return Ok(None);
    };
    let mut text = String::new();
    compile_planned(rolled, &plan, opts, Some(&mut text))?;
    Ok(Some(text))
}

/// Lower `rolled` (verified) as planned into one function and compile it; with `disasm`,
/// write its pseudo-assembly there.
fn compile_planned(
    rolled: &Rolled,
    plan: &RolledPlan,
    opts: &JitOptions,
    disasm: Option<&mut String>,
) -> Result<CompiledFunction, JitError> {
    let insts = rolled.n_values() - rolled.n_params();
    let lowered = plan.live.iter().flatten().filter(|&&live| live).count();
    let mut owned = new_module(lowered, opts)?;
    let module = owned.module_mut();
    let names = RolledNames {
        function: "rolled",
        linkage: Linkage::Local,
        constants: "rolled.constants",
        math: MathNames::Wrappers,
    };
    let (id, code_bytes) = define_rolled(module, rolled, plan, opts, &names, disasm)?;
    module
        .finalize_definitions()
        .map_err(|e| JitError::cranelift("finalizing definitions", e))?;
    let ptr = module.get_finalized_function(id);
    // SAFETY: `ptr` is the finalized code of a function declared with `kernel_signature`,
    // i.e. `extern "C" fn(*const f64, *mut f64, *mut f64)` in the host's default calling
    // convention; it stays valid while `owned` lives, and `Kernels` owns both.
    let kernel = unsafe { std::mem::transmute::<*const u8, KernelFn>(ptr) };
    // A reverse loop fused into its forward loop is not a loop of its own.
    let fused = plan.fused.iter().flatten().count();
    let loops = rolled.loops().iter().filter(|l| l.trips > 1).count() - fused;
    let kernels = Kernels {
        module: owned,
        chunks: vec![kernel],
        n_slots: plan.n_slots,
        code_bytes,
        loops,
        // A loop's body runs once per trip: as much code as the expanded program.
        executed_bytes: code_bytes.saturating_mul(insts.max(1)) / lowered.max(1),
    };
    Ok(CompiledFunction::new(
        kernels,
        None,
        rolled.n_params(),
        rolled.header().rets.len(),
    ))
}

/// The names a rolled program's function is defined under: the function, its linkage, its
/// constant table, and how math routines are imported.
pub(crate) struct RolledNames<'a> {
    pub function: &'a str,
    pub linkage: Linkage,
    pub constants: &'a str,
    pub math: MathNames,
}

/// Define `rolled` (verified), lowered as `plan` says, in `module` under `names`; with
/// `disasm`, write its pseudo-assembly there. Returns the function and its bytes of code.
pub(crate) fn define_rolled<M: Module>(
    module: &mut M,
    rolled: &Rolled,
    plan: &RolledPlan,
    opts: &JitOptions,
    names: &RolledNames<'_>,
    disasm: Option<&mut String>,
) -> Result<(cranelift_module::FuncId, usize), JitError> {
    let mut consts = ConstTable::build_rolled(rolled, &plan.live, opts.const_table_above);
    consts.define(module, names.constants)?;
    let empty = Plan::empty();
    let input = LowerInput {
        func: rolled.header(),
        plan: &empty,
        runs: &[],
        consts: &consts,
        lanes: Lanes::One,
        math: opts.math,
        mask_selects: opts.mask_selects
            && module.isa().triple().architecture == target_lexicon::Architecture::X86_64,
        pair_loops: opts.pair_loops,
    };
    let mut imports = Imports::new(names.math);
    let sig = kernel_signature(module);
    let id = module
        .declare_function(names.function, names.linkage, &sig)
        .map_err(|e| JitError::cranelift(format!("declaring `{}`", names.function), e))?;
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    lower_rolled(
        module,
        &mut imports,
        &input,
        rolled,
        plan,
        &mut ctx.func,
        &mut fctx,
    )?;
    ctx.set_disasm(disasm.is_some());
    module.define_function(id, &mut ctx).map_err(|e| {
        JitError::cranelift(format!("compiling the rolled @{}", rolled.header().name), e)
    })?;
    if let Some(text) = disasm {
        let vcode = ctx.compiled_code().and_then(|c| c.vcode.clone());
        let _ = writeln!(
            text,
            "; rolled @{}\n{}",
            rolled.header().name,
            vcode.unwrap_or_default()
        );
    }
    let code_bytes = ctx.compiled_code().map_or(0, |c| c.code_buffer().len());
    module.clear_context(&mut ctx);
    Ok((id, code_bytes))
}

/// Lower, compile and finalize every chunk of `func` (verified) for `lanes` points per call.
fn compile_kernels(
    func: &Function,
    opts: &JitOptions,
    runs: &[Run],
    lanes: Lanes,
) -> Result<Kernels, JitError> {
    let mut owned = new_module(lowered_insts(func, runs), opts)?;
    let mut code_bytes = 0usize;
    let lowered = lower_function(
        owned.module_mut(),
        func,
        opts,
        MathNames::Wrappers,
        |i, _| (chunk_name(i), Linkage::Local),
        lanes,
        runs,
        |module, id, ctx, chunk| {
            module.define_function(id, ctx).map_err(|e| {
                JitError::cranelift(format!("compiling chunk {chunk} of @{}", func.name), e)
            })?;
            code_bytes += ctx.compiled_code().map_or(0, |c| c.code_buffer().len());
            Ok(())
        },
    )?;
    let module = owned.module_mut();
    module
        .finalize_definitions()
        .map_err(|e| JitError::cranelift("finalizing definitions", e))?;
    let chunks: Vec<KernelFn> = lowered
        .chunk_ids
        .iter()
        .map(|&id| {
            let ptr = module.get_finalized_function(id);
            // SAFETY: `ptr` is the finalized code of a function declared with
            // `kernel_signature`, i.e. `extern "C" fn(*const f64, *mut f64, *mut f64)` in the
            // host's default calling convention; it stays valid while `owned` lives, and
            // `Kernels` owns both.
            unsafe { std::mem::transmute::<*const u8, KernelFn>(ptr) }
        })
        .collect();
    Ok(Kernels {
        module: owned,
        chunks,
        n_slots: lowered.plan.n_slots,
        code_bytes,
        loops: runs.len(),
        // A loop's body runs once per trip: as much code as the unrolled program.
        executed_bytes: code_bytes.saturating_mul(func.n_insts().max(1))
            / lowered_insts(func, runs).max(1),
    })
}

/// The kernels the text dumps print: the two-point kernels when `opts` asks for them.
fn dump_lanes(opts: &JitOptions) -> Lanes {
    if opts.batch_lanes >= 2 {
        Lanes::Two
    } else {
        Lanes::One
    }
}

/// The Cranelift IR of every chunk function, before Cranelift's optimisations (of the
/// two-point kernels when [`JitOptions::batch_lanes`] is 2).
pub fn clif_text(func: &Function, opts: &JitOptions) -> Result<String, JitError> {
    verify(func)?;
    let prepared = prepare(func, opts);
    let (func, runs) = (prepared.program(func), prepared.runs());
    let mut owned = new_module(lowered_insts(func, runs), opts)?;
    let mut text = String::new();
    lower_function(
        owned.module_mut(),
        func,
        opts,
        MathNames::Wrappers,
        |i, _| (chunk_name(i), Linkage::Local),
        dump_lanes(opts),
        runs,
        |module, _, ctx, chunk| {
            let calls = called_names(module, ctx);
            let legend: Vec<String> = calls
                .iter()
                .enumerate()
                .map(|(k, name)| format!("fn{k} = {name}"))
                .collect();
            let _ = writeln!(text, "; chunk {chunk} of @{}", func.name);
            if !legend.is_empty() {
                let _ = writeln!(text, "; calls: {}", legend.join(", "));
            }
            let _ = writeln!(text, "{}", ctx.func.display());
            Ok(())
        },
    )?;
    Ok(text)
}

/// The symbol of every function a lowered chunk imports, in `fnK` order (`sin`, `exp`, …), so
/// dumps name math calls instead of printing `u0:1` / `userextname0`.
fn called_names<M: Module>(module: &M, ctx: &cranelift_codegen::Context) -> Vec<String> {
    use cranelift_codegen::ir::ExternalName;
    ctx.func
        .dfg
        .ext_funcs
        .values()
        .map(|ext| match &ext.name {
            ExternalName::User(r) => symbol(module, &ctx.func.params.user_named_funcs()[*r]),
            other => other.display(None).to_string(),
        })
        .collect()
}

/// The linkage name of a module symbol: namespace 0 holds functions, 1 data objects (the
/// constant table).
fn symbol<M: Module>(module: &M, user: &cranelift_codegen::ir::UserExternalName) -> String {
    let decls = module.declarations();
    if user.namespace == 1 {
        let id = cranelift_module::DataId::from_u32(user.index);
        return decls.get_data_decl(id).linkage_name(id).into_owned();
    }
    let id = cranelift_module::FuncId::from_u32(user.index);
    decls.get_function_decl(id).linkage_name(id).into_owned()
}

/// Cranelift's pseudo-assembly (VCode after register allocation) of every chunk function
/// (of the two-point kernels when [`JitOptions::batch_lanes`] is 2).
pub fn asm_text(func: &Function, opts: &JitOptions) -> Result<String, JitError> {
    verify(func)?;
    let prepared = prepare(func, opts);
    let (func, runs) = (prepared.program(func), prepared.runs());
    let mut owned = new_module(lowered_insts(func, runs), opts)?;
    let mut text = String::new();
    lower_function(
        owned.module_mut(),
        func,
        opts,
        MathNames::Wrappers,
        |i, _| (chunk_name(i), Linkage::Local),
        dump_lanes(opts),
        runs,
        |module, id, ctx, chunk| {
            ctx.set_disasm(true);
            module.define_function(id, ctx).map_err(|e| {
                JitError::cranelift(format!("compiling chunk {chunk} of @{}", func.name), e)
            })?;
            let mut vcode = ctx
                .compiled_code()
                .and_then(|c| c.vcode.clone())
                .unwrap_or_default();
            // `userextnameK` is the chunk's K-th user external name: print its symbol.
            let names: Vec<String> = ctx
                .func
                .params
                .user_named_funcs()
                .values()
                .map(|user| symbol(module, user))
                .collect();
            for (k, name) in names.iter().enumerate().rev() {
                vcode = vcode.replace(&format!("userextname{k}"), name);
            }
            let _ = writeln!(text, "; chunk {chunk} of @{}\n{vcode}", func.name);
            Ok(())
        },
    )?;
    Ok(text)
}
