//! Ahead-of-time compilation: an ELF object file for x86-64 or AArch64 Linux plus a C header.
//!
//! The object exports one function, `void SYMBOL(const double *inputs, double *outputs,
//! double *work)`, position-independent, importing math routines by their C library names
//! (link with `-lm`). With `MathImpl::Inline` every transcendental, `pow` and `atan2` is inline
//! code (its tables local read-only data of the object), and the object imports no math routine. x86-64 objects target the
//! baseline ISA (SSE2), so `fma` (also inside those routines), `floor` and `ceil` become calls
//! to the correctly rounded libm routines; AArch64 has them natively.
//! A program split into chunks gets local chunk functions that the exported entry calls in
//! order on the same buffers. With [`JitOptions::batch_lanes`] = 2 the object also exports
//! `SYMBOL_x2`, the two-point (SIMD) kernels on interleaved buffers.

use std::str::FromStr;

use adjit_ir::{verify, Function, Rolled};
use cranelift_codegen::ir::{InstBuilder, UserFuncName};
use cranelift_codegen::isa;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{default_libcall_names, Linkage, Module};
use cranelift_object::{ObjectBuilder, ObjectModule};
use target_lexicon::{Architecture, OperatingSystem, Triple};

use crate::abi::{kernel_signature, MathNames};
use crate::error::JitError;
use crate::jit::{define_rolled, RolledNames, ROLLED_MAX_HELD};
use crate::lanes::Lanes;
use crate::options::JitOptions;
use crate::pipeline::{lower_function, lowered_insts, prepare, shared_flags};
use crate::roll::Run;
use crate::rolled_plan::RolledPlan;

/// An object file and the C header declaring its function.
#[derive(Clone, Debug)]
pub struct ObjectCode {
    /// The relocatable object (ELF).
    pub bytes: Vec<u8>,
    /// A C header declaring the function and its buffer sizes.
    pub header: String,
    /// The exported symbol (the function name made a C identifier).
    pub symbol: String,
    pub n_inputs: usize,
    pub n_outputs: usize,
    /// Number of `f64`s the `work` buffer must hold (may be 0; then `work` may be NULL).
    pub work_len: usize,
    /// Bytes of machine code over all functions.
    pub code_bytes: usize,
    /// With [`JitOptions::batch_lanes`] = 2: the exported two-point entry `SYMBOL_x2`, the
    /// same signature on interleaved buffers (input `i` of the first point at `[2i]`, of the
    /// second at `[2i + 1]`; outputs likewise; `2 × work_len` doubles of work), all aligned
    /// to 16 bytes.
    pub pair_symbol: Option<String>,
}

/// The function name as a C identifier: every other character becomes `_`, and a leading
/// digit gets a `_` prefix.
pub fn c_symbol(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

fn target_isa(
    lowered: usize,
    triple: &str,
    opts: &JitOptions,
) -> Result<isa::OwnedTargetIsa, JitError> {
    let unknown = |reason: String| JitError::UnknownTriple {
        triple: triple.to_string(),
        reason,
    };
    let parsed = Triple::from_str(triple).map_err(|e| unknown(e.to_string()))?;
    if !matches!(
        parsed.architecture,
        Architecture::X86_64 | Architecture::Aarch64(_)
    ) {
        return Err(unknown("only x86_64 and aarch64 are supported".into()));
    }
    if parsed.operating_system != OperatingSystem::Linux {
        return Err(unknown("only Linux (ELF) objects are supported".into()));
    }
    let builder = isa::lookup(parsed).map_err(|e| unknown(e.to_string()))?;
    builder
        .finish(shared_flags(lowered, opts, true)?)
        .map_err(|e| JitError::cranelift(format!("building the {triple} ISA"), e))
}

/// The symbol an object of the program `name` exports unless told otherwise: `adjit_` and the
/// name made a C identifier (`adjit_rosen_vjp`), so that no program name (`@dlopen`, `@sin`,
/// `@main`) can clash with the C runtime or the C headers.
pub fn default_symbol(name: &str) -> String {
    format!("adjit_{}", c_symbol(name).trim_start_matches('_'))
}

/// Compile `func` to an object file for `triple` (`x86_64-unknown-linux-gnu` or
/// `aarch64-unknown-linux-gnu`), exported as [`default_symbol`] of its name.
pub fn compile_object(
    func: &Function,
    triple: &str,
    opts: &JitOptions,
) -> Result<ObjectCode, JitError> {
    compile_object_as(func, triple, opts, &default_symbol(&func.name))
}

/// Every name an object exported as `symbol` defines, for the linker or in its header: the
/// entry, `SYMBOL_x2` with two lanes, and the header's macros.
fn defined_names(symbol: &str, pairs: bool) -> Vec<String> {
    let macros = HeaderMacros::of(symbol);
    let mut names = vec![symbol.to_string()];
    if pairs {
        names.push(format!("{symbol}_x2"));
    }
    names.extend([
        macros.n_inputs,
        macros.n_outputs,
        macros.work_len,
        macros.guard,
    ]);
    names
}

/// The macros of the header of `symbol`.
struct HeaderMacros {
    n_inputs: String,
    n_outputs: String,
    work_len: String,
    guard: String,
}

impl HeaderMacros {
    fn of(symbol: &str) -> HeaderMacros {
        let upper = symbol.to_ascii_uppercase();
        let guard = if upper.starts_with("ADJIT_") {
            format!("{upper}_H")
        } else {
            format!("ADJIT_{upper}_H")
        };
        HeaderMacros {
            n_inputs: format!("{upper}_N_INPUTS"),
            n_outputs: format!("{upper}_N_OUTPUTS"),
            work_len: format!("{upper}_WORK_LEN"),
            guard,
        }
    }
}

/// [`compile_object`] exported as `symbol`, which must be a C identifier that is no C or C++
/// keyword, no reserved identifier and no C library name ([`crate::symbol_problem`]): the
/// generated code calls `sin`, `exp`, … itself, and a program linking the object must keep its
/// own `memcpy`.
pub fn compile_object_as(
    func: &Function,
    triple: &str,
    opts: &JitOptions,
    symbol: &str,
) -> Result<ObjectCode, JitError> {
    verify(func)?;
    check_symbol(symbol, opts.batch_lanes >= 2)?;
    let prepared = prepare(func, opts);
    let (program, runs) = (prepared.program(func), prepared.runs());
    let isa = target_isa(lowered_insts(program, runs), triple, opts)?;
    let symbol = symbol.to_string();
    let builder = ObjectBuilder::new(isa, symbol.clone(), default_libcall_names())
        .map_err(|e| JitError::cranelift("creating the object module", e))?;
    let mut module = ObjectModule::new(builder);
    let (plan, mut code_bytes) =
        define_kernels(&mut module, program, opts, runs, &symbol, Lanes::One)?;
    let pair_symbol = if opts.batch_lanes >= 2 {
        let pair = format!("{symbol}_x2");
        code_bytes += define_kernels(&mut module, program, opts, runs, &pair, Lanes::Two)?.1;
        Some(pair)
    } else {
        None
    };
    let bytes = module
        .finish()
        .emit()
        .map_err(|e| JitError::cranelift("writing the object file", e))?;
    let header = c_header(func, &symbol, plan.n_slots, pair_symbol.is_some());
    Ok(ObjectCode {
        bytes,
        header,
        symbol,
        n_inputs: func.n_params,
        n_outputs: func.n_outputs(),
        work_len: plan.n_slots,
        code_bytes,
        pair_symbol,
    })
}

/// [`compile_object_as`] of a rolled program (the program of `Rolled::from_function`, or a
/// rolled derivative of `adjit_diff`) compiled from its templates as
/// [`compile_templates`](crate::compile_templates) compiles it, never expanded: its loops are
/// the object's loops, simplified and paired alike. Where the rolled plan does not hold the
/// program, and for two-point kernels ([`JitOptions::batch_lanes`] = 2, made from
/// straight-line code only), the expansion is compiled, with the same results.
///
/// ```
/// use adjit_ir::{trace::trace, Rolled};
/// let f = trace(1000, |x| {
///     let mut s = x[0] * 0.0;
///     for i in 0..999 {
///         let a = x[i + 1] - x[i] * x[i];
///         s = s + a * a;
///     }
///     s
/// });
/// let g = adjit_diff::vjp_rolled_seeded_with_one(&Rolled::from_function(&f));
/// let opts = adjit_jit::JitOptions::default();
/// let obj = adjit_jit::compile_object_rolled(&g, "aarch64-unknown-linux-gnu", &opts, "rosen_grad")
///     .unwrap();
/// assert_eq!((obj.n_inputs, obj.n_outputs), (1000, 1001));
/// assert!(obj.code_bytes < 4096); // one loop, not 10⁴ instructions
/// ```
pub fn compile_object_rolled(
    rolled: &Rolled,
    triple: &str,
    opts: &JitOptions,
    symbol: &str,
) -> Result<ObjectCode, JitError> {
    rolled.verify()?;
    // SAFETY: `rolled` was just verified.
    unsafe { compile_object_rolled_verified(rolled, triple, opts, symbol) }
}

/// [`compile_object_rolled`] without the verifier, for rolled programs a transform built from
/// a verified program (the facade's rolled derivatives), as
/// [`compile_templates_verified`](crate::compile_templates_verified) is for the JIT. Builds
/// with debug assertions verify anyway.
///
/// # Safety
/// `rolled` must be accepted by [`Rolled::verify`]: the lowering trusts what it checks, and
/// code lowered from a program that breaks it may read or write outside its buffers.
#[doc(hidden)]
pub unsafe fn compile_object_rolled_verified(
    rolled: &Rolled,
    triple: &str,
    opts: &JitOptions,
    symbol: &str,
) -> Result<ObjectCode, JitError> {
    if cfg!(debug_assertions) {
        rolled.verify()?;
    }
    check_symbol(symbol, opts.batch_lanes >= 2)?;
    let plan = match opts.batch_lanes < 2 && rolled.n_template_insts() <= ROLLED_MAX_HELD {
        true => RolledPlan::new(rolled),
        false => None,
    };
    let Some(plan) = plan else {
        return compile_object_as(&rolled.expand(), triple, opts, symbol);
    };
    let lowered = plan.live.iter().flatten().filter(|&&live| live).count();
    let isa = target_isa(lowered, triple, opts)?;
    let builder = ObjectBuilder::new(isa, symbol.to_string(), default_libcall_names())
        .map_err(|e| JitError::cranelift("creating the object module", e))?;
    let mut module = ObjectModule::new(builder);
    let names = RolledNames {
        function: symbol,
        linkage: Linkage::Export,
        constants: &format!("{symbol}.constants"),
        math: MathNames::Libm,
    };
    let (_, code_bytes) = define_rolled(&mut module, rolled, &plan, opts, &names, None)?;
    let bytes = module
        .finish()
        .emit()
        .map_err(|e| JitError::cranelift("writing the object file", e))?;
    let header = rolled.header();
    Ok(ObjectCode {
        bytes,
        header: c_header(header, symbol, plan.n_slots, false),
        symbol: symbol.to_string(),
        n_inputs: rolled.n_params(),
        n_outputs: header.rets.len(),
        work_len: plan.n_slots,
        code_bytes,
        pair_symbol: None,
    })
}

/// An error unless `symbol`, and every other name an object exported as `symbol` defines
/// (with `pairs`, the two-point entry), may be defined (see [`compile_object_as`]).
fn check_symbol(symbol: &str, pairs: bool) -> Result<(), JitError> {
    for name in defined_names(symbol, pairs) {
        if let Some(reason) = crate::symbols::symbol_problem(&name) {
            let reason = if name == symbol {
                reason
            } else {
                format!("it also defines `{name}`, and {reason}")
            };
            return Err(JitError::Symbol {
                symbol: symbol.to_string(),
                reason,
            });
        }
    }
    Ok(())
}

/// The kernels of `func` for `lanes` exported as `symbol`: the one chunk itself, or local
/// chunks `SYMBOL_chunkI` and an exported entry calling them in order. Returns the storage plan
/// and the bytes of code.
fn define_kernels(
    module: &mut ObjectModule,
    func: &Function,
    opts: &JitOptions,
    runs: &[Run],
    symbol: &str,
    lanes: Lanes,
) -> Result<(crate::plan::Plan, usize), JitError> {
    let mut code_bytes = 0usize;
    let lowered = lower_function(
        module,
        func,
        opts,
        MathNames::Libm,
        |i, n| match n {
            1 => (symbol.to_string(), Linkage::Export),
            _ => (format!("{symbol}_chunk{i}"), Linkage::Local),
        },
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
    if lowered.chunk_ids.len() > 1 {
        code_bytes += define_entry(module, symbol, &lowered.chunk_ids)?;
    }
    Ok((lowered.plan, code_bytes))
}

/// The exported entry of a chunked program: calls every chunk with its own arguments.
fn define_entry(
    module: &mut ObjectModule,
    symbol: &str,
    chunks: &[cranelift_module::FuncId],
) -> Result<usize, JitError> {
    let sig = kernel_signature(module);
    let id = module
        .declare_function(symbol, Linkage::Export, &sig)
        .map_err(|e| JitError::cranelift(format!("declaring `{symbol}`"), e))?;
    let mut ctx = module.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(1, 0);
    let refs: Vec<_> = chunks
        .iter()
        .map(|&c| module.declare_func_in_func(c, &mut ctx.func))
        .collect();
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    b.seal_block(block);
    let args = b.block_params(block).to_vec();
    for r in refs {
        b.ins().call(r, &args);
    }
    b.ins().return_(&[]);
    b.finalize(module.target_config());
    module
        .define_function(id, &mut ctx)
        .map_err(|e| JitError::cranelift(format!("compiling entry `{symbol}`"), e))?;
    Ok(ctx.compiled_code().map_or(0, |c| c.code_buffer().len()))
}

/// The C header for `func` compiled as `symbol`.
fn c_header(func: &Function, symbol: &str, work_len: usize, pairs: bool) -> String {
    let HeaderMacros {
        n_inputs,
        n_outputs,
        work_len: work_len_macro,
        guard,
    } = HeaderMacros::of(symbol);
    let params: Vec<String> = func
        .params()
        .map(|v| {
            format!(
                "{} {}",
                func.ty(v),
                func.name_of(v).map_or_else(|| v.to_string(), String::from)
            )
        })
        .collect();
    let rets: Vec<String> = func.ret_types.iter().map(|t| t.to_string()).collect();
    format!(
        "/* Generated by adjit from @{name}({params}) -> ({rets}).\n\
         *\n\
         * ABI: {symbol}(inputs, outputs, work) reads {n_in} doubles from `inputs` (one per\n\
         * parameter, in order; f32 parameters are rounded to float, bool parameters read\n\
         * nonzero as true) and writes {n_out} doubles to `outputs` (bools as 0.0/1.0).\n\
         * `work` is scratch memory of {work_len_macro} doubles (NULL when that is 0),\n\
         * uninitialised on entry; buffers must not overlap. The function is reentrant and\n\
         * thread-safe given separate buffers. Link with -lm.{pairs_doc}\n\
         */\n\
         #ifndef {guard}\n\
         #define {guard}\n\
         \n\
         #define {n_inputs} {n_in}\n\
         #define {n_outputs} {n_out}\n\
         #define {work_len_macro} {work_len}\n\
         \n\
         #ifdef __cplusplus\n\
         extern \"C\" {{\n\
         #endif\n\
         \n\
         void {symbol}(const double *inputs, double *outputs, double *work);\n\
         {pairs_decl}\
         \n\
         #ifdef __cplusplus\n\
         }}\n\
         #endif\n\
         \n\
         #endif /* {guard} */\n",
        pairs_doc = if pairs {
            format!(
                "\n *\n * {symbol}_x2(inputs, outputs, work) evaluates two points at once, in SIMD\n \
                 * lanes, with the same results: `inputs` holds 2 * {n_in} doubles interleaved\n \
                 * (input i of the first point at [2i], of the second at [2i + 1]), `outputs`\n \
                 * 2 * {n_out} likewise, `work` 2 * {work_len_macro} doubles; all three aligned\n \
                 * to 16 bytes.",
                n_in = func.n_params,
                n_out = func.n_outputs(),
            )
        } else {
            String::new()
        },
        pairs_decl = if pairs {
            format!("void {symbol}_x2(const double *inputs, double *outputs, double *work);\n")
        } else {
            String::new()
        },
        name = func.name,
        params = params.join(", "),
        rets = rets.join(", "),
        n_in = func.n_params,
        n_out = func.n_outputs(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_ir::random::{random_function, RandomOptions};
    use adjit_ir::{BinaryOp, Builder, CmpPred, Type, UnaryOp};

    /// An object for `triple` exporting `func`'s two-point kernels (`SYMBOL_x2`) beside the scalar
    /// entry.
    fn compile_pairs(func: &Function, triple: &str, opts: &JitOptions) -> Result<(), JitError> {
        let opts = JitOptions {
            batch_lanes: 2,
            ..opts.clone()
        };
        let object = compile_object(func, triple, &opts)?;
        assert!(object.pair_symbol.is_some());
        Ok(())
    }

    /// Every opcode, in `f64` and `f32`, with a bool parameter.
    fn every_opcode(ty: Type) -> Function {
        let mut b = Builder::new("every");
        let x = b.param(ty, "x");
        let y = b.param(ty, "y");
        let flag = b.param(Type::Bool, "flag");
        let mut outs = vec![flag];
        for &op in UnaryOp::ALL {
            outs.push(b.unary(op, x));
        }
        for &op in BinaryOp::ALL {
            outs.push(b.binary(op, x, y));
            outs.push(b.binary(op, y, 0.75));
        }
        outs.push(b.fma(x, y, 0.5));
        outs.push(b.powi(x, -7));
        for &pred in CmpPred::ALL {
            let c = b.fcmp(pred, x, y);
            outs.push(b.select(c, x, y));
            outs.push(c);
        }
        outs.push(b.select(flag, x, 2.5));
        let t = b.constant(Type::Bool, 1.0);
        outs.push(b.select(t, y, x));
        match ty {
            Type::F64 => {
                let d = b.fdemote(x);
                outs.push(b.fpromote(d));
            }
            _ => {
                let p = b.fpromote(x);
                outs.push(b.fdemote(p));
            }
        }
        b.finish(&outs)
    }

    /// The two-point lowering compiles for both object targets (AArch64 cannot be run
    /// in-process here; `tests/batch_lanes.rs` checks the results on the x86-64 host).
    #[test]
    fn two_point_kernels_compile_for_aarch64_and_x86_64() {
        let spill = JitOptions {
            registers: 4,
            chunk_insts: 13,
            ..JitOptions::default()
        };
        for triple in ["aarch64-unknown-linux-gnu", "x86_64-unknown-linux-gnu"] {
            for ty in [Type::F64, Type::F32] {
                for opts in [&JitOptions::default(), &spill] {
                    compile_pairs(&every_opcode(ty), triple, opts)
                        .unwrap_or_else(|e| panic!("{triple} {ty}: {e}"));
                }
                for seed in 0..20 {
                    let func = random_function(
                        seed,
                        &RandomOptions {
                            ty,
                            non_smooth: true,
                            n_insts: 60,
                            ..RandomOptions::default()
                        },
                    );
                    compile_pairs(&func, triple, &JitOptions::default())
                        .unwrap_or_else(|e| panic!("{triple} seed {seed}: {e}"));
                }
            }
        }
    }
}
