//! Recompute-checkpointing for reverse mode.
//!
//! (Module documentation: see below, written with the stage partitioner.)

pub mod revolve;
