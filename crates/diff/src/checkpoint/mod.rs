//! Recompute-checkpointing for reverse mode: trade memory for recomputation.
//!
//! A whole-function reverse sweep keeps every intermediate value (the tape). A checkpointed
//! plan instead cuts the program into a chain of stages ([`stages`]), stores only some stage
//! boundary states (snapshots), and re-runs stages forward from the nearest snapshot when their
//! values are needed; Revolve ([`revolve`]) says which states to store and when. Each stage is
//! an ordinary IR function F_k, and its reverse is `vjp(F_k)` (taped within the stage), so
//! generated code stays O(program size): one forward and one reverse function per stage,
//! driven at run time by the [`executor`].
//!
//! Stage counts: [`Strategy::Checkpoint`] and [`Strategy::Uniform`] use l = ⌈√N⌉ stages for N
//! instructions (Uniform stores every boundary: one extra forward pass).
//! [`Strategy::CheckpointBytes`] tries l ∈ {1, 2, 4, …, N/4} ∪ {⌈√N⌉}, for each the most snapshots
//! whose peak fits the budget, and keeps the plan with the fewest executed instructions
//! (estimated as t(l, s)·N/l + N); [`Strategy::Tape`] is one stage, nothing recomputed.
//! Only the candidates that can win are built (stage functions and reverses): the others are
//! ruled out from their cuts and a lower bound on their stage tapes taken from one
//! whole-function reverse, so planning a 530k-instruction program takes about a second.
//!
//! This module never depends on a code generator and never changes the instructions it is
//! given; it assumes a verified function.

//!
//! Files, in dependency order: [`strategy`] (the text forms), [`revolve`] (schedules),
//! [`step_schedule`] (the schedules over N identical steps of an iterated step: Revolve or the
//! √N scheme, their counts, and bytes → snapshots), [`stages`] (the stage chain and its memory
//! model per value), `memory` (the peak of a chain under a snapshot count, and a lower bound on
//! stage tapes from the tape set `vjp` reports), `planning` (the stage count and snapshot count
//! of each strategy), [`executor`] (the one run-time driver of an action list, for a planned
//! stage chain or a step chain) and [`interp_runner`] (the interpreter as a stage runner).

pub mod executor;
pub mod interp_runner;
mod memory;
mod planning;
pub mod revolve;
pub mod stages;
pub mod step_schedule;
pub mod strategy;

pub use executor::{ExecBuffers, ExecError, Executor, StageProgram, StageRunner, StepShape};
pub use interp_runner::InterpRunner;
pub use planning::{plan, Plan, PlanCost};
pub use revolve::{Action, RevolveError};
pub use stages::{partition, StagePartition, SLOT_BYTES};
pub use step_schedule::{StepMemory, StepSchedule};
pub use strategy::{ParseStrategyError, Strategy};

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpointing needs at least one snapshot")]
    NoSnapshots,
    #[error("no checkpointing schedule fits in {budget} bytes; the smallest that works needs {smallest} bytes")]
    BudgetTooSmall { budget: u64, smallest: u64 },
}
