//! Criterion benchmarks (being written).
fn main() {}
