//! Inverse accumulation (Pearlmutter & Siskind): products with the inverse Jacobian of a square
//! program, `J⁻¹·ẏ` (reverse-inverse) and `J⁻ᵀ·x̄` (forward-inverse), computed lump by lump.
//!
//! The active part of the program (values that depend on an input and reach an output) is put in
//! an order ([`greedy_order`]); along it, every cut where exactly `n` active values are live
//! splits the program into lumps ([`analyze`]). Each lump maps `l` consumed values (In) to `l` produced values
//! (Out), with pass-through values (P) untouched, so its Jacobian is `[[A, B], [0, I]]` and the
//! whole inverse product needs only `l × l` solves. Inside a lump, `A` is further split into
//! diagonal blocks by structure (matching + strongly connected components) and each block is
//! solved by Gaussian elimination with partial pivoting emitted as straight-line IR. The
//! transforms return ordinary IR: printable, verifiable, compilable. The local partials come from
//! the one rulebook, [`crate::rules`], so J here is the J that jvp/vjp differentiate.
//!
//! Module graph (a DAG, checked by `tests/module_graph.rs`): analysis (`lumps`, `order`,
//! `blocks`) → emission (`arith`, `lu`, `lump_derivatives`, `scaffold`) → the transforms
//! (`reverse_inverse`, `forward_inverse`, `dense`) and rendering (`render`).
//!
//! Functions with `data` parameters ([`adjit_ir::ParamKind::Data`]) are rejected with
//! [`InverseError::DataInputs`]: square would mean n *differentiated* inputs, which the lump
//! analysis does not model yet.
//!
//! Everything here assumes a verified input function (the transforms check it) and does all
//! derivative arithmetic in `f64`, whatever the program's float type; tangent inputs and outputs
//! have the types of the corresponding program inputs and outputs.

// Analysis: which values are active, the order, the cuts, the lumps and their block structure.
mod active;
mod blocks;
mod lumps;
mod order;
// Emission: f64 arithmetic, the rulebook's partials per lump, dense solves, the programs.
mod arith;
mod dense;
mod forward_inverse;
mod lu;
mod lump_derivatives;
mod reverse_inverse;
mod scaffold;
// Rendering of the analysis as text and Graphviz.
mod render;

pub use dense::{check_dense, dense_inverse};
pub use forward_inverse::forward_inverse;
pub use lump_derivatives::NOT_FINITE;
pub use lumps::{analyze, analyze_order, Analysis, Lump};
pub use order::greedy_order;
pub use render::{dot, lumps_text};
pub use reverse_inverse::reverse_inverse;

use adjit_ir::{Function, Value};

/// Options shared by the inverse transforms.
#[derive(Clone, Debug, PartialEq)]
pub struct InverseOptions {
    /// Largest diagonal block of a lump's `A` solved by emitted LU (`l × l`); larger blocks are a
    /// compile-time error suggesting the dense mode.
    pub max_lump: usize,
    /// A pivot `p` of a block is numerically singular when `|p| ≤ pivot_tol · scale`, `scale` being
    /// the largest magnitude in the lump's Jacobian `[[A, B], [0, I]]` (the entries of `A`, and 1
    /// when values pass through): max|entry| / |p| estimates the lump's condition number from
    /// below. Non-finite pivots count as singular too.
    pub pivot_tol: f64,
}

impl Default for InverseOptions {
    fn default() -> InverseOptions {
        InverseOptions {
            max_lump: 16,
            pivot_tol: 1e-12,
        }
    }
}

/// Why an inverse transform cannot be built. Every variant names the place in the program.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InverseError {
    #[error("@{func} is not verified: {message}")]
    NotVerified { func: String, message: String },
    #[error("@{func} is not square: {inputs} float inputs, {outputs} float outputs (inverse modes need n inputs and n outputs, all f32/f64)")]
    NotSquare {
        func: String,
        inputs: usize,
        outputs: usize,
    },
    /// Inverse modes do not support `data` inputs yet: every input must have a slot in the
    /// vector and the product.
    #[error("@{func} has data inputs ({inputs}); inverse modes need every input differentiated (drop the `data` attribute, or bake the data in as literals)")]
    DataInputs { func: String, inputs: String },
    #[error("@{func}: input {input} does not reach any output, so J is singular")]
    UnusedInput { func: String, input: String },
    #[error("@{func}: output {second} returns {value}, already returned as output {first}, so J is singular")]
    DuplicatedOutput {
        func: String,
        value: String,
        first: usize,
        second: usize,
    },
    #[error("@{func}: output {index} ({value}) does not depend on any input, so J is singular")]
    PassiveOutput {
        func: String,
        index: usize,
        value: String,
    },
    #[error("@{func}: J is singular: only {live} of {n} values are live after {after}")]
    NarrowCut {
        func: String,
        live: usize,
        n: usize,
        after: String,
    },
    #[error("@{func}: lump {lump} ({first}..{last}) is structurally singular: its {l} outputs cannot be matched to its {l} inputs ({matched} matched)")]
    StructurallySingular {
        func: String,
        lump: usize,
        first: String,
        last: String,
        l: usize,
        matched: usize,
    },
    #[error("@{func}: lump {lump} ({first}..{last}) needs a dense {size}×{size} solve, above max_lump = {max}; use --mode dense or raise max_lump")]
    LumpTooLarge {
        func: String,
        lump: usize,
        first: String,
        last: String,
        size: usize,
        max: usize,
    },
}

/// The text spelling of `v` in messages, as the printer writes it (`%name`, `%vN`). Computes
/// the printed names of the whole function: for error messages only.
pub(crate) fn label(func: &Function, v: Value) -> String {
    format!("%{}", adjit_ir::text::printed_names(func)[v.index()])
}
