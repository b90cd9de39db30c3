//! # adjit-jit
//!
//! The Cranelift backend of adjit: lowers any verified [`adjit_ir::Function`] to machine code,
//! either JIT-compiled into the running process ([`compile`] → [`CompiledFunction`]) or as an
//! object file with a C header for x86-64 or AArch64 Linux ([`compile_object`]).
//!
//! Every generated function has the ABI
//! `extern "C" fn(inputs: *const f64, outputs: *mut f64, work: *mut f64)`: every scalar
//! crosses the boundary as an `f64`, and `work` holds values that live too long to stay in
//! registers, or that cross from one chunk function to the next. The scalar semantics are
//! exactly those of [`adjit_ir::math`]: the JIT agrees with [`adjit_ir::interpret`] bit for
//! bit. Compiled with [`JitOptions::batch_lanes`] = 2, batches also get two-point kernels of
//! the same ABI that evaluate two consecutive points per instruction in vector lanes, with the
//! same bits.
//!
//! Code map: `schedule` reorders instructions to lower register pressure, `plan` decides chunks and workspace slots, `constants` the constant
//! table, `lower` turns one chunk into Cranelift IR, `inline_math` emits adjit's math routines into it, `abi` holds signatures and math symbols,
//! `roll` finds repeated instruction groups that `lower` emits as loops, `regroup` moves runs apart next to each other so they fuse, `pipeline` drives lowering for both back ends, `jit`/`compiled` are the in-process back end
//! and its safe handle, `object` the AOT back end.

mod abi;
mod compiled;
mod constants;
mod error;
mod inline_math;
mod jit;
mod lanes;
mod lower;
mod object;
mod options;
mod pair_batch;
mod pipeline;
mod plan;
mod regroup;
mod roll;
mod rolled_plan;
mod schedule;
mod symbols;

pub use compiled::{threads_for, CompiledFunction, RawEntry, PARALLEL_CODE_BYTES, STREAM_BYTES};
pub use error::JitError;
pub use jit::{
    asm_text, asm_text_rolled, clif_text, compile, compile_rolled, compile_templates,
    compile_templates_verified, compile_verified, ROLLED_MAX_HELD,
};
pub use object::{
    c_symbol, compile_object, compile_object_as, compile_object_rolled,
    compile_object_rolled_verified, default_symbol, ObjectCode,
};
pub use options::{JitOptions, MathImpl, OptLevel, Pairing, RegAlloc};
pub use pair_batch::{PairBatch, PointOutputs};
pub use pipeline::{regions, rolled_program};
pub use roll::Region;
pub use schedule::schedule;
pub use symbols::symbol_problem;
