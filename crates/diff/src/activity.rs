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

use adjit_ir::{Function, Operand, Value, ValueDef};

use crate::rules::carries_derivative;

/// The result of [`activity`]: per-value flags, indexed by [`Value::index`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    varied: Vec<bool>,
    useful: Vec<bool>,
}

impl Activity {
    /// Whether `v` depends on a differentiated float parameter through derivative-carrying
    /// edges.
    pub fn is_varied(&self, v: Value) -> bool {
        self.varied[v.index()]
    }

    /// Whether a float output depends on `v` through derivative-carrying edges.
    pub fn is_useful(&self, v: Value) -> bool {
        self.useful[v.index()]
    }

    /// Whether `v` gets derivative code: varied and useful.
    pub fn is_active(&self, v: Value) -> bool {
        self.varied[v.index()] && self.useful[v.index()]
    }

    /// Number of active values (parameters included).
    pub fn n_active(&self) -> usize {
        self.varied
            .iter()
            .zip(&self.useful)
            .filter(|(a, b)| **a && **b)
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
    let mut varied = vec![false; n];
    for (i, data) in func.values.iter().enumerate() {
        varied[i] = data.ty.is_float()
            && match &data.def {
                ValueDef::Param => !func.is_data(Value::new(i)),
                ValueDef::Inst(inst) => {
                    let mut any = false;
                    for (pos, op) in inst.operands().into_iter().enumerate() {
                        if let Operand::Value(u) = op {
                            any |= carries_derivative(inst, pos) && varied[u.index()];
                        }
                    }
                    any
                }
            };
    }
    let mut useful = vec![false; n];
    for (&r, ty) in func.rets.iter().zip(&func.ret_types) {
        if ty.is_float() {
            useful[r.index()] = true;
        }
    }
    for i in (func.n_params..n).rev() {
        if !useful[i] {
            continue;
        }
        if let ValueDef::Inst(inst) = &func.values[i].def {
            for (pos, op) in inst.operands().into_iter().enumerate() {
                if let Operand::Value(u) = op {
                    if carries_derivative(inst, pos) && func.ty(u).is_float() {
                        useful[u.index()] = true;
                    }
                }
            }
        }
    }
    Activity { varied, useful }
}
