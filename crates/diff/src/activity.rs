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

use adjit_ir::{Function, Rolled, Type, Value, ValueDef};

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
    let any_data = func.has_data_params();
    sweep(
        func,
        func.n_values(),
        func.n_params,
        |p| !(any_data && func.is_data(Value::new(p))),
        func.rets.iter().zip(&func.ret_types),
    )
}

/// [`activity`] of a rolled program's expansion, read iteration by iteration without
/// expanding it (one byte per value).
pub fn activity_rolled(r: &Rolled) -> Activity {
    let header = r.header();
    let any_data = header.has_data_params();
    sweep(
        &RolledValues::new(r),
        r.n_values(),
        r.n_params(),
        |p| !(any_data && header.is_data(Value::new(p))),
        header.rets.iter().zip(&header.ret_types),
    )
}

/// What the sweeps read of a program: each value's type, and the operands of its
/// instruction that carry a derivative.
trait Values {
    fn ty(&self, i: usize) -> Type;
    fn derivative_operands(&self, i: usize, f: impl FnMut(Value));
}

impl Values for Function {
    fn ty(&self, i: usize) -> Type {
        self.values[i].ty
    }
    fn derivative_operands(&self, i: usize, f: impl FnMut(Value)) {
        if let ValueDef::Inst(inst) = &self.values[i].def {
            for_each_derivative_value(inst, f);
        }
    }
}

/// A rolled program as the sweeps read it: per loop and template position, which of its
/// value operands carry a derivative (the same in every iteration: it depends on the shape),
/// and the loop the last read fell in (the sweeps go value by value).
struct RolledValues<'a> {
    r: &'a Rolled,
    carrying: Vec<Vec<Vec<u8>>>,
    last: std::cell::Cell<usize>,
}

impl<'a> RolledValues<'a> {
    fn new(r: &'a Rolled) -> RolledValues<'a> {
        let carrying = r
            .loops()
            .iter()
            .map(|l| {
                l.template
                    .iter()
                    .map(|d| {
                        let ValueDef::Inst(inst) = &d.def else {
                            return Vec::new();
                        };
                        // Number the value operands 0, 1, 2 and see which come back.
                        let mut k = 0u8;
                        let mut out = Vec::new();
                        let marked = inst.map_values(|_| {
                            k += 1;
                            Value::new(usize::from(k) - 1)
                        });
                        for_each_derivative_value(&marked, |v| out.push(v.index() as u8));
                        out
                    })
                    .collect()
            })
            .collect();
        RolledValues {
            r,
            carrying,
            last: std::cell::Cell::new(0),
        }
    }

    /// The loop holding instruction `i`, its position and iteration.
    fn locate(&self, i: usize) -> (usize, usize, usize) {
        let loops = self.r.loops();
        let k = self.last.get();
        let k = if loops[k].start <= i && i < loops[k].end() {
            k
        } else {
            self.r.locate(i).expect("an instruction of the program").0
        };
        self.last.set(k);
        let l = &loops[k];
        (k, (i - l.start) % l.period(), (i - l.start) / l.period())
    }
}

impl Values for RolledValues<'_> {
    fn ty(&self, i: usize) -> Type {
        if i < self.r.n_params() {
            return self.r.header().values[i].ty;
        }
        let (k, t, _) = self.locate(i);
        self.r.loops()[k].template[t].ty
    }
    fn derivative_operands(&self, i: usize, mut f: impl FnMut(Value)) {
        if i < self.r.n_params() {
            return;
        }
        let (k, t, j) = self.locate(i);
        let l = &self.r.loops()[k];
        for &n in &self.carrying[k][t] {
            f(Value::new(l.source_value(l.sources[t][n as usize], j)));
        }
    }
}

/// The two sweeps over `n` values, the first `n_params` of them parameters
/// (`differentiated(p)` for parameter `p`).
fn sweep<'a>(
    prog: &impl Values,
    n: usize,
    n_params: usize,
    differentiated: impl Fn(usize) -> bool,
    rets: impl Iterator<Item = (&'a Value, &'a Type)>,
) -> Activity {
    let mut flags = vec![0u8; n];
    for i in 0..n {
        if !prog.ty(i).is_float() {
            continue;
        }
        let varied = if i < n_params {
            differentiated(i)
        } else {
            let mut any = false;
            prog.derivative_operands(i, |u| any |= flags[u.index()] & VARIED != 0);
            any
        };
        flags[i] = FLOAT | if varied { VARIED } else { 0 };
    }
    for (&r, ty) in rets {
        if ty.is_float() {
            flags[r.index()] |= USEFUL;
        }
    }
    for i in (n_params..n).rev() {
        if flags[i] & USEFUL == 0 {
            continue;
        }
        prog.derivative_operands(i, |u| {
            let f = &mut flags[u.index()];
            if *f & FLOAT != 0 {
                *f |= USEFUL;
            }
        });
    }
    Activity { flags }
}
