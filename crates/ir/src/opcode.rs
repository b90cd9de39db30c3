//! Operation codes and their text spellings.

use std::fmt;

macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($variant),*
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// Text-format spelling.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }

            /// Parse a text-format spelling.
            pub fn from_name(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum! {
    /// Unary float operations: one value operand, result of the same type.
    UnaryOp {
        Neg => "neg",
        Abs => "abs",
        Sqrt => "sqrt",
        Exp => "exp",
        Log => "log",
        Log1p => "log1p",
        Expm1 => "expm1",
        Sin => "sin",
        Cos => "cos",
        Tan => "tan",
        Asin => "asin",
        Acos => "acos",
        Atan => "atan",
        Sinh => "sinh",
        Cosh => "cosh",
        Tanh => "tanh",
        Erf => "erf",
        Floor => "floor",
        Ceil => "ceil",
    }
}

named_enum! {
    /// Binary float operations: two operands of one float type, result of that type.
    BinaryOp {
        Add => "add",
        Sub => "sub",
        Mul => "mul",
        Div => "div",
        Pow => "pow",
        Atan2 => "atan2",
        Min => "min",
        Max => "max",
    }
}

named_enum! {
    /// Ordered comparison predicates of `fcmp`. All are false when an operand is NaN, except
    /// `ne`, which is true.
    CmpPred {
        Eq => "eq",
        Ne => "ne",
        Lt => "lt",
        Le => "le",
        Gt => "gt",
        Ge => "ge",
    }
}

impl UnaryOp {
    /// Whether the operation is a call to a math library routine (as opposed to a native
    /// instruction) on typical targets. Used by backends and cost models.
    pub fn is_transcendental(self) -> bool {
        !matches!(
            self,
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sqrt | UnaryOp::Floor | UnaryOp::Ceil
        )
    }
}

impl BinaryOp {
    /// Whether swapping the operands never changes the result's value. `min`/`max` are not:
    /// on a tie (`-0.0` vs `+0.0`) they return their first operand.
    pub fn is_commutative(self) -> bool {
        matches!(self, BinaryOp::Add | BinaryOp::Mul)
    }
}
