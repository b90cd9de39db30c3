//! # adjit-testkit
//!
//! Programs that tests, benchmarks, examples and doc tests share. Dev-only: no library crate
//! of adjit depends on it, so none of this is public API.
//!
//! Architecture invariant: this crate depends on `adjit-ir` only; it builds ordinary IR and
//! never differentiates.

mod programs;
pub mod source;

pub use programs::{
    bratu, chained_rosenbrock, chained_rosenbrock_text, coupling_network, fig2, grid_energy,
    lorenz_rk4, random_triangular, staged_rosenbrock,
};
