//! Activity analysis: which values get derivative code.
//!
//! A value is *varied* when it is a float and depends on a differentiated float parameter (not
//! a `data` one, see [`adjit_ir::ParamKind`]) through an edge that carries a derivative, and *useful* when a float output depends on it through such
//! edges. It is *active* when it is both; only active values get tangent lines (forward
//! mode) or adjoint lines (reverse mode). Edges that carry no derivative (see
//! [`crate::rules::carries_derivative`]): the condition of `select`, both operands of `fcmp`
//! (its result is a `bool`), and the argument of `floor`/`ceil` (derivative zero wherever it
//! exists). Literal operands and `const` instructions are never varied.
//!
//! The analysis is one forward and one backward sweep, O(number of values). It assumes a
//! verified function and leaves it alone.

use adjit_ir::{Function, Value, ValueDef};

use crate::rules::for_each_derivative_value;

/// Flag bits of one value in [`Activity`].
const VARIED: u8 = 1;
const USEFUL: u8 = 2;
/// The value is a float (only float operands become useful).
const FLOAT: u8 = 4;

/// The result of [`activity`]: per-value flags, indexed by [`Value::index`].
///
/// One byte per value holds all flags (two `Vec<bool>` were twice the memory, and the
/// backward sweep read each operand's type from the function's 64-byte value records: one
/// cache miss per operand at 10⁷ values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    flags: Vec<u8>,
}

impl Activity {
    /// Whether `v` depends on a differentiated float parameter through derivative-carrying
    /// edges.
    pub fn is_varied(&self, v: Value) -> bool {
        self.flags[v.index()] & VARIED != 0
    }

    /// Whether a float output depends on `v` through derivative-carrying edges.
    pub fn is_useful(&self, v: Value) -> bool {
        self.flags[v.index()] & USEFUL != 0
    }

    /// Whether `v` gets derivative code: varied and useful.
    pub fn is_active(&self, v: Value) -> bool {
        self.flags[v.index()] & (VARIED | USEFUL) == VARIED | USEFUL
    }

    /// Number of active values (parameters included).
    pub fn n_active(&self) -> usize {
        self.flags
            .iter()
            .filter(|&&f| f & (VARIED | USEFUL) == VARIED | USEFUL)
            .count()
    }
}

/// Compute the activity of every value of a verified function.
///
/// ```
/// use adjit_ir::{Builder, Type, UnaryOp};
/// let mut b = Builder::new("f");
/// let x = b.param(Type::F64, "x");
/// let fl = b.unary(UnaryOp::Floor, x); // derivative zero: not varied
/// let y = b.mul(x, fl);
/// let f = b.finish(&[y]);
/// let act = adjit_diff::activity(&f);
/// assert!(act.is_active(x) && act.is_active(y) && !act.is_active(fl));
/// ```
pub fn activity(func: &Function) -> Activity {
    let n = func.n_values();
    let mut flags = vec![0u8; n];
    let any_data = func.has_data_params();
    for (i, data) in func.values.iter().enumerate() {
        if !data.ty.is_float() {
            continue;
        }
        let varied = match &data.def {
            ValueDef::Param => !(any_data && func.is_data(Value::new(i))),
            ValueDef::Inst(inst) => {
                let mut any = false;
                for_each_derivative_value(inst, |u| any |= flags[u.index()] & VARIED != 0);
                any
            }
        };
        flags[i] = FLOAT | if varied { VARIED } else { 0 };
    }
    for (&r, ty) in func.rets.iter().zip(&func.ret_types) {
        if ty.is_float() {
            flags[r.index()] |= USEFUL;
        }
    }
    for i in (func.n_params..n).rev() {
        if flags[i] & USEFUL == 0 {
            continue;
        }
        if let ValueDef::Inst(inst) = &func.values[i].def {
            for_each_derivative_value(inst, |u| {
                let f = &mut flags[u.index()];
                if *f & FLOAT != 0 {
                    *f |= USEFUL;
                }
            });
        }
    }
    Activity { flags }
}
