//! No code: see `Cargo.toml`. This crate only takes part in feature resolution, so that every
//! command of the README builds each dependency once, with the same features.
