//! The calling conventions the generated code relies on: the signature of every generated
//! function, and the math routines it imports.
//!
//! Every generated function (entry or chunk) is
//! `extern "C" fn(inputs: *const f64, outputs: *mut f64, work: *mut f64)`. Transcendentals
//! without an inline routine (see [`crate::inline_math`]; all of them under
//! `MathImpl::Libm`), `pow` and `atan2` are calls to `extern "C" fn(x) -> x` routines: in the JIT, to
//! the wrappers below, which call exactly [`adjit_ir::math`] so that JIT and interpreter agree
//! bit for bit; in object files, to the C library names (`sin`, `sinf`, `erf`, ...) so that C
//! programs link with `-lm`.

use adjit_ir::math;
use adjit_ir::{BinaryOp, Type, UnaryOp};
use cranelift_codegen::ir::{types, AbiParam, Signature};
use cranelift_module::Module;

/// A math routine the generated code calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum MathCall {
    Unary(UnaryOp, Type),
    Binary(BinaryOp, Type),
}

/// Which symbols math calls resolve to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MathNames {
    /// `adjit_`-prefixed wrappers registered with the JIT (see [`jit_math_symbols`]).
    Wrappers,
    /// The C math library.
    Libm,
}

impl MathCall {
    /// The C math library name, e.g. `sin` or `atan2f`.
    pub fn libm_name(self) -> String {
        let (base, ty) = match self {
            MathCall::Unary(op, ty) => (unary_libm_base(op), ty),
            MathCall::Binary(BinaryOp::Pow, ty) => ("pow", ty),
            MathCall::Binary(BinaryOp::Atan2, ty) => ("atan2", ty),
            MathCall::Binary(op, ty) => (op.name(), ty),
        };
        match ty {
            Type::F32 => format!("{base}f"),
            _ => base.to_string(),
        }
    }

    /// The symbol the generated code imports.
    pub fn symbol(self, names: MathNames) -> String {
        match names {
            MathNames::Wrappers => format!("adjit_{}", self.libm_name()),
            MathNames::Libm => self.libm_name(),
        }
    }

    /// The float type of the arguments and result.
    pub fn ty(self) -> Type {
        match self {
            MathCall::Unary(_, ty) | MathCall::Binary(_, ty) => ty,
        }
    }

    pub fn arity(self) -> usize {
        match self {
            MathCall::Unary(..) => 1,
            MathCall::Binary(..) => 2,
        }
    }
}

fn unary_libm_base(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Log => "log",
        UnaryOp::Log1p => "log1p",
        UnaryOp::Expm1 => "expm1",
        other => other.name(),
    }
}

/// The Cranelift type carrying an IR type in registers (`bool` as `i8`, like `fcmp` results).
pub(crate) fn clif_type(ty: Type) -> types::Type {
    match ty {
        Type::F32 => types::F32,
        Type::F64 => types::F64,
        Type::Bool => types::I8,
    }
}

/// `fn(*const f64, *mut f64, *mut f64)` in the module's default calling convention.
pub(crate) fn kernel_signature<M: Module>(module: &M) -> Signature {
    let ptr = module.target_config().pointer_type();
    let mut sig = module.make_signature();
    sig.params.extend([AbiParam::new(ptr); 3]);
    sig
}

/// `fn(x[, y]) -> x` for a math routine.
pub(crate) fn math_signature<M: Module>(module: &M, call: MathCall) -> Signature {
    let ty = clif_type(call.ty());
    let mut sig = module.make_signature();
    sig.params
        .extend(std::iter::repeat_n(AbiParam::new(ty), call.arity()));
    sig.returns.push(AbiParam::new(ty));
    sig
}

macro_rules! unary_wrappers {
    ($($op:ident => $f64:ident, $f32:ident;)*) => {
        $(
            extern "C" fn $f64(x: f64) -> f64 {
                math::unary_f64_libm(UnaryOp::$op, x)
            }
            extern "C" fn $f32(x: f32) -> f32 {
                math::unary_f32_libm(UnaryOp::$op, x)
            }
        )*
        /// Every unary wrapper: (operation, f64 routine, f32 routine).
        const UNARY_WRAPPERS: &[(UnaryOp, extern "C" fn(f64) -> f64, extern "C" fn(f32) -> f32)] =
            &[$((UnaryOp::$op, $f64, $f32)),*];
    };
}

unary_wrappers! {
    Exp => exp_f64, exp_f32;
    Log => log_f64, log_f32;
    Log1p => log1p_f64, log1p_f32;
    Expm1 => expm1_f64, expm1_f32;
    Sin => sin_f64, sin_f32;
    Cos => cos_f64, cos_f32;
    Tan => tan_f64, tan_f32;
    Asin => asin_f64, asin_f32;
    Acos => acos_f64, acos_f32;
    Atan => atan_f64, atan_f32;
    Sinh => sinh_f64, sinh_f32;
    Cosh => cosh_f64, cosh_f32;
    Tanh => tanh_f64, tanh_f32;
    Erf => erf_f64, erf_f32;
    // Native instructions on most hosts; wrappers for completeness.
    Sqrt => sqrt_f64, sqrt_f32;
    Floor => floor_f64, floor_f32;
    Ceil => ceil_f64, ceil_f32;
}

extern "C" fn pow_f64(a: f64, b: f64) -> f64 {
    math::binary_f64_libm(BinaryOp::Pow, a, b)
}
extern "C" fn pow_f32(a: f32, b: f32) -> f32 {
    math::binary_f32_libm(BinaryOp::Pow, a, b)
}
extern "C" fn atan2_f64(a: f64, b: f64) -> f64 {
    math::binary_f64_libm(BinaryOp::Atan2, a, b)
}
extern "C" fn atan2_f32(a: f32, b: f32) -> f32 {
    math::binary_f32_libm(BinaryOp::Atan2, a, b)
}

/// Every `(symbol, address)` pair the JIT registers for [`MathNames::Wrappers`].
pub(crate) fn jit_math_symbols() -> Vec<(String, *const u8)> {
    let mut out = Vec::new();
    for &(op, f64_fn, f32_fn) in UNARY_WRAPPERS {
        out.push((
            MathCall::Unary(op, Type::F64).symbol(MathNames::Wrappers),
            f64_fn as *const u8,
        ));
        out.push((
            MathCall::Unary(op, Type::F32).symbol(MathNames::Wrappers),
            f32_fn as *const u8,
        ));
    }
    let binary: [(
        BinaryOp,
        extern "C" fn(f64, f64) -> f64,
        extern "C" fn(f32, f32) -> f32,
    ); 2] = [
        (BinaryOp::Pow, pow_f64, pow_f32),
        (BinaryOp::Atan2, atan2_f64, atan2_f32),
    ];
    for (op, f64_fn, f32_fn) in binary {
        out.push((
            MathCall::Binary(op, Type::F64).symbol(MathNames::Wrappers),
            f64_fn as *const u8,
        ));
        out.push((
            MathCall::Binary(op, Type::F32).symbol(MathNames::Wrappers),
            f32_fn as *const u8,
        ));
    }
    out
}
