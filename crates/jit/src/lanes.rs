//! How many points one generated function evaluates, and the vector types that carry them
//! (shared by the lowering and the inline math emitter).

use adjit_ir::Type;
use cranelift_codegen::ir::{types, Endianness, MemFlagsData};

/// How many points one generated function evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Lanes {
    /// One point: every value a scalar.
    One,
    /// Two consecutive points of a point-major batch, one per vector lane.
    Two,
}

impl Lanes {
    /// Number of points, which is also the number of 8-byte words per workspace slot.
    pub fn count(self) -> usize {
        match self {
            Lanes::One => 1,
            Lanes::Two => 2,
        }
    }
}

/// The 128-bit vector carrying an IR type in [`Lanes::Two`] code: the point in lane 0 and the
/// next point in lane 1.
pub(crate) fn lane_type(ty: Type) -> types::Type {
    match ty {
        Type::F32 => types::F32X4,
        Type::F64 => types::F64X2,
        Type::Bool => types::I64X2,
    }
}

/// Reinterpretation between vector types (little-endian lane order, as on both targets).
pub(crate) fn lane_bitcast() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}
