//! Simplification (being written).
use adjit_ir::Function;
/// Placeholder.
pub fn simplify(f: &Function) -> Function {
    f.clone()
}
