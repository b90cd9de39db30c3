//! Derived programs with their layouts: [`derive()`] applies one [`Mode`]'s transforms, simplifies
//! the result and returns it with its [`Layout`], so that compile-once objects, the CLI and the
//! tests read named parts instead of offsets.
//!
//! It re-exports [`vjp_seeded_with_one`] (from `seeded.rs`), the one place where a VJP's cotangent parameters
//! become the constant 1 (the gradient of a scalar function, and the inner program of an HVP).

use std::fmt;
use std::str::FromStr;

use adjit_ir::Function;

use crate::hessian::DiffError;
use crate::layout::{Kind, Layout};
pub use crate::seeded::vjp_seeded_with_one;
use crate::simplify::simplify_owned;

/// Which program to derive from a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// The function itself: `(x) -> (y)`.
    #[default]
    Primal,
    /// Forward mode: `(x, ẋ) -> (y, ẏ)`.
    Jvp,
    /// Forward mode with `k` directions: `(x, ẋ₁ … ẋₖ) -> (y, ẏ₁ … ẏₖ)`.
    JvpVector(usize),
    /// Reverse mode with a tape: `(x, ȳ) -> (y, x̄)`.
    Vjp,
    /// Value and gradient of a scalar function: `(x) -> (y, ∇y)`.
    Gradient,
    /// Hessian-vector product of a scalar function: `(x, v) -> (y, ∇y, H·v)`.
    Hvp,
}

impl Mode {
    /// The modes that have a name of their own (`JvpVector` is spelled `jvpK`).
    pub const NAMED: [Mode; 5] = [
        Mode::Primal,
        Mode::Jvp,
        Mode::Vjp,
        Mode::Gradient,
        Mode::Hvp,
    ];

    /// One line saying what the mode derives (command-line help).
    pub fn help(self) -> &'static str {
        match self {
            Mode::Primal => "The function itself: (x) -> (y)",
            Mode::Jvp => "Forward mode: (x, ẋ) -> (y, ẏ)",
            Mode::JvpVector(_) => "Forward mode with K directions: (x, ẋ1 … ẋK) -> (y, ẏ1 … ẏK)",
            Mode::Vjp => "Reverse mode with a tape: (x, ȳ) -> (y, x̄)",
            Mode::Gradient => "Value and gradient of a one-output function: (x) -> (y, ∇y)",
            Mode::Hvp => "Hessian-vector product of a one-output function: (x, v) -> (y, ∇y, H·v)",
        }
    }

    /// The layout kind of the program this mode derives.
    pub fn kind(self) -> Kind {
        match self {
            Mode::Primal => Kind::Primal,
            Mode::Jvp => Kind::Jvp(1),
            Mode::JvpVector(k) => Kind::Jvp(k),
            Mode::Vjp => Kind::Vjp,
            Mode::Gradient => Kind::Gradient,
            Mode::Hvp => Kind::Hvp,
        }
    }
}

impl Mode {
    /// The mode's keyword: `primal`, `jvp`, `vjp`, `gradient` or `hvp` (`jvp` for a vector JVP
    /// too, whose [`Display`](fmt::Display) adds the number of directions: `jvp4`).
    pub fn keyword(self) -> &'static str {
        match self {
            Mode::Primal => "primal",
            Mode::Jvp | Mode::JvpVector(_) => "jvp",
            Mode::Vjp => "vjp",
            Mode::Gradient => "gradient",
            Mode::Hvp => "hvp",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::JvpVector(k) => write!(f, "jvp{k}"),
            other => f.write_str(other.keyword()),
        }
    }
}

/// A name that is not one of a fixed set (a mode, a stage, …).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{name}`: expected {expected}")]
pub struct UnknownName {
    pub what: &'static str,
    pub name: String,
    pub expected: String,
}

impl FromStr for Mode {
    type Err = UnknownName;

    /// `primal`, `jvp`, `vjp`, `gradient`, `hvp`, or `jvpK` for `K ≥ 1` directions.
    fn from_str(s: &str) -> Result<Mode, UnknownName> {
        if let Some(m) = Mode::NAMED.iter().find(|m| m.to_string() == s) {
            return Ok(*m);
        }
        match s.strip_prefix("jvp").map(str::parse::<usize>) {
            Some(Ok(k)) if k >= 1 => Ok(Mode::JvpVector(k)),
            _ => Err(UnknownName {
                what: "mode",
                name: s.to_string(),
                expected: "primal, jvp, jvpK (K directions), vjp, gradient or hvp".into(),
            }),
        }
    }
}

/// Why a mode cannot be derived from a function.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DeriveError {
    /// The gradient and the HVP need exactly one float output (`bool` outputs may sit beside
    /// it): [`DiffError::NotScalar`] naming the mode, the one error for that condition.
    #[error(transparent)]
    Diff(#[from] DiffError),
    #[error("a vector JVP needs at least one direction")]
    NoDirections,
    /// A vector JVP whose program would not fit: `directions × values` beyond
    /// [`MAX_DERIVED_VALUES`].
    #[error("a vector JVP of @{func} with {directions} directions would have about {estimate} values, more than {max}; use fewer directions (a Jacobian object splits its columns into calls of 8)", max = MAX_DERIVED_VALUES)]
    TooManyDirections {
        func: String,
        directions: usize,
        estimate: u128,
    },
}

/// The most values a derived program may be expected to hold (its values are numbered by
/// `u32`; long before that, memory runs out).
pub const MAX_DERIVED_VALUES: u128 = 1 << 28;

/// A derived program and the layout of its inputs and outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    pub func: Function,
    pub layout: Layout,
}

/// The simplified program of `mode` applied to the verified `func`, with its layout.
///
/// ```
/// use adjit_diff::{derive, layout::Part, Mode};
/// let f = adjit_ir::trace::trace(2, |x| x[0] * x[1]);
/// let g = derive(&f, Mode::Gradient).unwrap();
/// let out = adjit_ir::interpret(&g.func, &[3.0, 5.0]).unwrap();
/// assert_eq!(&out[g.layout.output(Part::Gradient)], &[5.0, 3.0]);
/// ```
pub fn derive(func: &Function, mode: Mode) -> Result<Derived, DeriveError> {
    let derived = match mode {
        Mode::Primal => func.clone(),
        Mode::Jvp => crate::forward::jvp(func),
        Mode::JvpVector(0) => return Err(DeriveError::NoDirections),
        Mode::JvpVector(k) if (k as u128 + 1) * func.n_values() as u128 > MAX_DERIVED_VALUES => {
            return Err(DeriveError::TooManyDirections {
                func: func.name.clone(),
                directions: k,
                estimate: (k as u128 + 1) * func.n_values() as u128,
            })
        }
        Mode::JvpVector(k) => crate::forward::jvp_vector(func, k),
        Mode::Vjp => crate::reverse::vjp(func),
        Mode::Gradient => {
            scalar_output(func, mode)?;
            let mut g = vjp_seeded_with_one(func);
            g.name = format!("{}_grad", func.name);
            g
        }
        Mode::Hvp => {
            scalar_output(func, mode)?;
            crate::hessian::hvp(func)
        }
    };
    Ok(Derived {
        func: simplify_owned(derived),
        layout: Layout::of(func, mode.kind()),
    })
}

/// Exactly one float output (any `bool` outputs beside it are returned, not differentiated).
fn scalar_output(func: &Function, mode: Mode) -> Result<(), DeriveError> {
    crate::hessian::scalar_output(func, Some(&mode.to_string()))?;
    Ok(())
}
