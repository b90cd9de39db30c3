//! The corpus harness (being written).
fn main() {}
