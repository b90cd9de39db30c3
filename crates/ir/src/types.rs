//! Scalar types of the IR.

use std::fmt;
use std::str::FromStr;

/// The type of an IR value. Floats are IEEE binary32/binary64; `bool` is the result of `fcmp`
/// and the condition of `select`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Type {
    F32,
    F64,
    Bool,
}

impl Type {
    /// All types, in text-format order.
    pub const ALL: [Type; 3] = [Type::F32, Type::F64, Type::Bool];

    pub fn is_float(self) -> bool {
        matches!(self, Type::F32 | Type::F64)
    }

    /// Bytes one value of this type occupies in native storage.
    pub fn bytes(self) -> usize {
        match self {
            Type::F32 => 4,
            Type::F64 => 8,
            Type::Bool => 1,
        }
    }

    /// Text-format spelling.
    pub fn name(self) -> &'static str {
        match self {
            Type::F32 => "f32",
            Type::F64 => "f64",
            Type::Bool => "bool",
        }
    }

    /// Round an `f64` to this type's precision (identity for `f64`; `bool` maps to 0.0/1.0).
    ///
    /// Every scalar is carried as an `f64` at API boundaries; this is the one place that says
    /// how a boundary value becomes a value of the type.
    pub fn round(self, x: f64) -> f64 {
        match self {
            Type::F64 => x,
            Type::F32 => x as f32 as f64,
            Type::Bool => {
                if x != 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Type {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        Type::ALL.into_iter().find(|t| t.name() == s).ok_or(())
    }
}
