//! # adjit-ir
//!
//! The intermediate representation of adjit: typed straight-line SSA programs over `f32`,
//! `f64` and `bool` scalars, with a text format, a verifier, a reference interpreter, a
//! tracing front end and the search for repetition ([`roll`]) that compiled code and
//! [`rolled`] programs keep as loops.
//!
//! A [`Function`] is a vector of values whose operands always point backwards: parameters
//! first, then one value per instruction, in program order. Entities are `u32` indices
//! ([`Value`]); there are no pointers in the IR.
//!
//! Architecture invariant: this crate depends on no code generator; it knows nothing of
//! Cranelift or of derivatives (it stores the `data` attribute of a parameter, [`ParamKind`],
//! without giving it a meaning).

mod builder;
mod function;
pub mod identities;
mod interp;
pub mod math;
pub mod mathlib;
mod opcode;
pub mod random;
pub mod roll;
pub mod rolled;
pub mod text;
pub mod trace;
mod types;
mod verify;

pub use builder::Builder;
pub use function::{
    literal_type_with, Function, InstData, Name, Operand, Operands, ParamKind, Value, ValueData,
    ValueDef,
};
pub use interp::{interpret, InterpError, Interpreter};
pub use opcode::{BinaryOp, CmpPred, UnaryOp};
pub use rolled::{Loop, Rolled, RolledError};
pub use text::{parse, parse_function, ParseError, ParseErrors};
pub use types::Type;
pub use verify::{verify, VerifyError, VerifyErrors};
