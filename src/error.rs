//! The facade's error type: everything that can go wrong in a facade call.

use adjit_diff::layout::Part;
use adjit_diff::UnknownName;

use crate::options::InverseMode;

/// Everything that can go wrong in a facade call. Messages speak of arguments and layout parts
/// (`x`, `ẋ`, `ȳ`, …), never of command-line flags; the CLI adds its flag names.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// Parse errors, each already formatted as `FILE:LINE:COL: error: MESSAGE`.
    #[error("{0}")]
    Parse(String),
    /// Verifier errors of a source text, located like parse errors
    /// (`FILE:LINE:COL: error: MESSAGE` then `    in: ` and the user's line).
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Verify(#[from] adjit_ir::VerifyErrors),
    #[error(transparent)]
    Interp(#[from] adjit_ir::InterpError),
    #[error(transparent)]
    Jit(#[from] adjit_jit::JitError),
    /// The mode cannot be derived (e.g. a gradient of a function with two outputs).
    #[error(transparent)]
    Derive(#[from] adjit_diff::DeriveError),
    #[error(transparent)]
    Diff(#[from] adjit_diff::DiffError),
    /// The program cannot be inverted (not square, a narrow cut, a structurally singular or
    /// oversized lump).
    #[error(transparent)]
    Inverse(#[from] adjit_diff::inverse::InverseError),
    /// A numerically singular pivot at run time.
    #[error("{mode} of @{func}: {lump} has a numerically singular pivot: |pivot| relative to the largest entry of its row of J is {}, not above {threshold:e} (pivot_tol), condition estimate ≥ {:e}; J is singular or too ill-conditioned there; {}", pivot_ratio(*pivot), condition_estimate(*pivot, *threshold, *pivot_tol), advice(*mode))]
    Singular {
        mode: InverseMode,
        func: String,
        /// The lump, as `lump 2 (%a..%b, l = 3)`, or `the dense Jacobian`.
        lump: String,
        /// The ratio that failed the pivot test, as compared: a pivot's magnitude relative to
        /// the largest entry of its row of J (pivots are judged on the row-equilibrated lump,
        /// so scaling J changes nothing); NaN when that row is zero at the point (`0 / 0`).
        /// The dense mode reports its smallest pivot.
        pivot: f64,
        /// The threshold it was judged against: `pivot_tol`.
        threshold: f64,
        pivot_tol: f64,
    },
    /// An inverse product that is infinite or NaN although no pivot test failed.
    #[error("{mode} of @{func}: the product is not finite (inf or NaN): J is singular or too ill-conditioned at this point, or the vector is not finite; {}", advice(*mode))]
    NotFinite { mode: InverseMode, func: String },
    /// No checkpointing plan fits (e.g. a byte budget below the smallest that works).
    #[error(transparent)]
    Checkpoint(#[from] adjit_diff::checkpoint::CheckpointError),
    /// A buffer or vector whose length does not match its part of the layout.
    #[error("@{func}: {} has {got} numbers, expected {expected} (layout {layout})", part.symbol(false))]
    Length {
        func: String,
        part: Part,
        expected: usize,
        got: usize,
        /// The whole layout, e.g. `(x (2) ++ ẋ (2)) -> (y (1) ++ ẏ (1))`.
        layout: String,
    },
    /// Flat buffers whose lengths do not match the layout.
    #[error("@{func} takes {expected_inputs} inputs and returns {expected_outputs} outputs, got buffers of {inputs} and {outputs} (layout {layout})")]
    Arity {
        func: String,
        expected_inputs: usize,
        expected_outputs: usize,
        inputs: usize,
        outputs: usize,
        layout: String,
    },
    /// A call with one slice per part that has too few or too many slices.
    #[error("@{func}: expected {expected} slices, one per part, got {got} (layout {layout})")]
    Parts {
        func: String,
        expected: usize,
        got: usize,
        layout: String,
    },
    /// A value for a `bool` input that is neither 0 nor 1.
    #[error("@{func}: input {index} (%{name}) is a bool: give 0 or 1, not {value}")]
    NotBool {
        func: String,
        index: usize,
        name: String,
        value: f64,
    },
    /// The object or mode needs float inputs only.
    #[error("{what} needs float inputs; input {index} of @{func} is bool")]
    BoolInput {
        what: &'static str,
        func: String,
        index: usize,
    },
    #[error(transparent)]
    UnknownName(#[from] UnknownName),
    /// An argument of a driver ([`crate::map::MappedKernel`], [`crate::compose::ComposedKernel`],
    /// [`crate::steps::IteratedStep`]) whose length does not fit; `what` names it (`θ`,
    /// `the data`, `the output x̄`, …).
    #[error("@{func}: {what} has {got} numbers, expected {expected}")]
    ArgumentLength {
        func: String,
        what: String,
        expected: Expected,
        got: usize,
    },
    /// A count argument below the least that works (`0` steps, `0` components).
    #[error("@{func}: {what} must be at least {least}, not {got}")]
    TooFew {
        func: String,
        /// What is counted, e.g. `the number of steps N`.
        what: &'static str,
        least: usize,
        got: usize,
    },
    /// A function with more of something than the object supports.
    #[error("@{func}: {what}; {got} {counted} are more than this object supports ({limit})")]
    Limit {
        func: String,
        /// Why there is a limit, e.g. `a gradient returns the value and x̄`.
        what: &'static str,
        /// What is counted, e.g. `outputs`.
        counted: &'static str,
        limit: usize,
        got: usize,
    },
    /// A function without the shape a driver needs (a mapped kernel without `data` inputs, an
    /// objective whose parameters differ from the step's); `needs` says what it needs.
    #[error("@{func}: {needs}")]
    Signature { func: String, needs: String },
    /// A broken invariant of adjit itself (a bug to report), never a user's mistake.
    #[error("@{func}: internal error: {what}")]
    Internal { func: String, what: &'static str },
    /// An array sized from the inputs that this machine cannot hold, refused before it is
    /// allocated ([`crate::memory`]); `alternative` says what to use instead.
    #[error("@{func}: {what} needs {}, more than this machine can hold ({} available); {alternative}", human_bytes(*bytes), human_bytes(*available))]
    Memory {
        func: String,
        /// The array, e.g. `the dense Jacobian (100000 × 100000)`.
        what: String,
        bytes: u128,
        available: u128,
        alternative: String,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The length an [`Error::ArgumentLength`] expected, with its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// Exactly this many numbers.
    Count(usize),
    /// Exactly `count` numbers, `each` saying what they are: `3 (one per row)`.
    CountOf { count: usize, each: &'static str },
    /// Whole rows: a multiple of the row length.
    MultipleOf(usize),
    /// `rows` blocks of `len` numbers: `6 (3 rows × 2)`, `rows_are` naming the blocks.
    Grid {
        rows: usize,
        len: usize,
        rows_are: &'static str,
    },
}

impl Expected {
    /// Whether `got` numbers are what is expected.
    pub fn accepts(self, got: usize) -> bool {
        match self {
            Expected::Count(n) | Expected::CountOf { count: n, .. } => got == n,
            Expected::MultipleOf(r) => r > 0 && got.is_multiple_of(r),
            Expected::Grid { rows, len, .. } => rows.checked_mul(len) == Some(got),
        }
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Expected::Count(n) => write!(f, "{n}"),
            Expected::CountOf { count, each } => write!(f, "{count} ({each})"),
            Expected::MultipleOf(r) => write!(f, "a multiple of the row length {r}"),
            Expected::Grid {
                rows,
                len,
                rows_are,
            } => match rows.checked_mul(len) {
                Some(total) => write!(f, "{total} ({rows} {rows_are} × {len})"),
                None => write!(
                    f,
                    "{rows} {rows_are} × {len} (more than memory can address)"
                ),
            },
        }
    }
}

/// What to try after a singular or non-finite inverse product.
fn advice(mode: InverseMode) -> &'static str {
    match mode {
        InverseMode::Dense => "try another point",
        _ => "try the dense mode (pivoting across the whole Jacobian) or another point",
    }
}

/// One over the smallest relative pivot: a lower bound on the equilibrated lump's condition
/// number.
/// The failing pivot ratio as the message prints it: NaN says why it failed.
fn pivot_ratio(pivot: f64) -> String {
    if pivot.is_nan() {
        "NaN (0/0: its row of J is zero at this point)".into()
    } else {
        format!("{pivot:e}")
    }
}

fn condition_estimate(pivot: f64, threshold: f64, pivot_tol: f64) -> f64 {
    let scale = threshold / pivot_tol;
    if pivot > 0.0 {
        scale / pivot
    } else {
        f64::INFINITY
    }
}

/// `bytes` in decimal units: `80 GB`, `1.25 MB`, `512 B`.
pub fn human_bytes(bytes: u128) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.3} {}", UNITS[unit]).replace(".000 ", " ")
    }
}
