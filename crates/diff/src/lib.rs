//! # adjit-diff
//!
//! Derivative transforms as IR-to-IR passes: every pass takes a verified `&Function` and
//! returns a new `Function`, which is ordinary IR (printable, verifiable, differentiable again).
//!
//! Architecture invariant: this crate never depends on a code generator. Runtime drivers
//! (checkpoint schedules) are generic over how a stage function is evaluated.

// Forward and reverse mode, activity analysis, simplification, Hessians.
pub mod activity;
pub mod derive;
pub mod forward;
pub mod forward_rolled;
pub mod hessian;
pub mod layout;
pub mod reverse;
pub mod reverse_rolled;
pub mod rules;
pub mod seeded;
mod segments;
pub mod simplify;

// Iterated steps: pass-through and running-sum transforms of a step function.
pub mod steps;

// Recompute-checkpointing: Revolve schedules and stage partitioning.
pub mod checkpoint;

// Sparse Jacobians and Hessians: patterns, colourings, seed-baked programs.
pub mod sparsity;

// Inverse accumulation (Pearlmutter & Siskind): lumps, reverse-inverse, forward-inverse.
pub mod inverse;

pub use activity::{activity, activity_rolled, Activity};
pub use derive::{derive, DeriveError, Derived, Mode, UnknownName};
pub use forward::{jvp, jvp_along, jvp_unit_seeded, jvp_vector};
pub use forward_rolled::{jvp_rolled, jvp_vector_rolled};
pub use hessian::{hessian, hvp, hvp_along, hvp_rolled, DiffError};
pub use layout::{Layout, Part};
pub use reverse::{tape_stats, vjp, vjp_with_tape, Tape, TapeStats};
pub use reverse_rolled::vjp_rolled;
pub use seeded::{vjp_rolled_seeded_with_one, vjp_seeded_with_one};
pub use simplify::{simplify, simplify_owned};
