//! # adjit
//!
//! Straight-line numeric programs to fast native derivative code. This facade crate is the
//! public API: it re-exports the IR ([`ir`]), the transforms ([`diff`]) and the Cranelift
//! backend ([`jit`]), and offers one-call entry points used by the `adjit` CLI and the tests.
//!
//! This file is only the map: `mod` declarations and the public names. The vocabulary lives
//! in `error.rs` ([`Error`]) and `options.rs` ([`Options`], the named enums), the one-call entry
//! points in `one_call.rs`; no module of the facade imports back up from here
//! (`tests/module_graph.rs`).

pub mod checkpoint;
mod compile;
pub mod compose;
mod error;
pub mod inverse;
mod jacobian;
pub mod map;
pub mod memory;
mod one_call;
mod options;
mod prepared;
mod rows;
mod runner;
mod scratch;
pub mod sparse;
mod sparse_plan;
pub mod steps;
mod timing;

pub use adjit_diff as diff;
pub use adjit_diff::checkpoint::Strategy;
pub use adjit_diff::inverse::InverseOptions;
pub use adjit_diff::layout::{Layout, Part};
pub use adjit_diff::sparsity::{Coloring, SparsityPattern};
pub use adjit_diff::{Derived, Mode, UnknownName};
pub use adjit_ir as ir;
pub use adjit_ir::trace::{
    trace, trace_multi, trace_named, trace_with_data, Bool, Scalar, Tracer, Var,
};
pub use adjit_ir::{Builder, Function, Type, Value};
pub use adjit_jit as jit;
pub use adjit_jit::{threads_for, JitOptions, ObjectCode};
pub use checkpoint::{CheckpointStats, CheckpointedGradient};
pub use compile::{derive, Compiled, Gradient};
pub use compose::ComposedKernel;
pub use error::{Error, Expected, Result};
/// The `faer` linear-algebra crate the sparse objects convert to ([`SparseJacobian::to_faer`]).
pub use faer;
pub use inverse::CompiledInverse;
pub use jacobian::{hessian, jacobian, Hessian, Jacobian};
pub use map::MappedKernel;
pub use one_call::{
    compile_inverse_object, compile_inverse_object_as, compile_object, compile_object_as,
    compile_object_with, dump, eval, hvp, inverse, jvp, jvp_vector, load, load_str, vjp,
};
pub use options::{DumpOptions, Engine, InverseMode, JacobianMode, KeepRolled, Options, Stage};
pub use prepared::Prepared;
pub use sparse::{SparseHessian, SparseJacobian, SparseKind};
pub use steps::{IteratedStep, StepStats, SummedLoss};
pub use timing::time_per_call;

/// The Rust examples of `docs/straight_line.md`, run as doc tests so the page stays true.
#[doc = include_str!("../docs/straight_line.md")]
#[cfg(doctest)]
pub struct StraightLineDoc;
