//! Layouts of derived functions: which input and output slots hold which named part.
//!
//! A derived function is ordinary IR with a flat parameter list and a flat return list, e.g.
//! `jvp(f)` takes `(x…, ẋ…)` and returns `(y…, ẏ…)`. The [`Layout`] names those ranges, so a
//! consumer asks for `layout.output(Part::Gradient)` instead of computing `1 + n`, and a wrong
//! buffer length can say which part it expected. Every transform's layout is built here from the
//! primal signature, once ([`Layout::of`]); `tests/layout.rs` checks it against the programs the
//! transforms build.
//!
//! Seeds and adjoints exist per **differentiated float parameter**
//! ([`Function::differentiated_params`]): a `bool` parameter and a `data` parameter
//! ([`adjit_ir::ParamKind::Data`]) have a slot in `x` (in their place) and nowhere else.

use std::fmt;
use std::ops::Range;

use adjit_ir::Function;

/// A named part of a derived function's inputs or outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// `x`: the primal inputs (every parameter, `bool` and `data` included, in signature order).
    Inputs,
    /// `ẋ` of one direction (0-based): one per differentiated float parameter.
    Tangent(usize),
    /// `ȳ`: one cotangent per float output.
    Cotangent,
    /// `v`: the direction of a Hessian-vector product (one per differentiated float parameter)
    /// or the vector an inverse mode multiplies (one per input).
    Vector,
    /// `y`: the primal outputs (every return value, `bool` included).
    Outputs,
    /// `ẏ = J·ẋ` of one direction: one per float output.
    OutputTangent(usize),
    /// `x̄ = Jᵀ·ȳ` (the gradient when ȳ = 1): one per differentiated float parameter.
    Gradient,
    /// `H·v`: one per differentiated float parameter.
    HessianVector,
    /// The inverse product `J⁻¹·v` or `J⁻ᵀ·v`: one per input (inverse modes reject functions
    /// with `data` inputs).
    Product,
    /// The status word of an inverse program: 0, a lump index, or
    /// [`crate::inverse::NOT_FINITE`].
    Status,
    /// With a singular lump: its smallest pivot magnitude and the threshold (`tol · scale`) it
    /// was judged against; 0, 0 otherwise.
    Pivot,
    /// `J`: the dense Jacobian, row-major, one row per float output and one column per
    /// differentiated float parameter (an object's result, not a derived program's slots).
    Jacobian,
    /// `H`: the dense Hessian of a scalar function, row-major, one row and one column per
    /// differentiated float parameter (an object's result, not a derived program's slots).
    Hessian,
    /// `nz`: the structurally nonzero entries of a sparse Jacobian or Hessian (its lower
    /// triangle), in the CSR order of its pattern ([`crate::sparsity`]).
    Nonzeros,
}

impl Part {
    /// The part's symbol in messages and docs: `x`, `ẋ`, `ȳ`, `v`, `y`, `ẏ`, `x̄`, `H·v`, …;
    /// with `numbered`, directions carry their 1-based number (`ẋ2`).
    pub fn symbol(self, numbered: bool) -> String {
        let number = |d: usize| {
            if numbered {
                (d + 1).to_string()
            } else {
                String::new()
            }
        };
        match self {
            Part::Inputs => "x".into(),
            Part::Tangent(d) => format!("ẋ{}", number(d)),
            Part::Cotangent => "ȳ".into(),
            Part::Vector => "v".into(),
            Part::Outputs => "y".into(),
            Part::OutputTangent(d) => format!("ẏ{}", number(d)),
            Part::Gradient => "x̄".into(),
            Part::HessianVector => "H·v".into(),
            Part::Product => "product".into(),
            Part::Status => "status".into(),
            Part::Pivot => "pivot".into(),
            Part::Jacobian => "J".into(),
            Part::Hessian => "H".into(),
            Part::Nonzeros => "nz".into(),
        }
    }
}

/// Which derived program a [`Layout`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The function itself.
    Primal,
    /// Forward mode with `k` directions ([`crate::jvp`] is `k = 1`).
    Jvp(usize),
    /// Reverse mode ([`crate::vjp`]).
    Vjp,
    /// Value and gradient of a scalar function (the VJP with ȳ = 1).
    Gradient,
    /// Hessian-vector product ([`crate::hvp`]).
    Hvp,
    /// An inverse mode (reverse-, forward- or dense-inverse).
    Inverse,
    /// A dense Jacobian `(x) -> (y, J)`, assembled from JVPs or VJPs (no single program).
    Jacobian,
    /// A dense Hessian of a scalar function `(x) -> (y, x̄, H)`, assembled from HVPs.
    Hessian,
    /// A sparse Jacobian or Hessian program with this many nonzeros: `(x) -> (nz)`
    /// ([`crate::sparsity::sparse_jacobian`], [`crate::sparsity::sparse_hessian`]).
    Nonzeros(usize),
}

/// The named input and output ranges of a derived function, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    inputs: Vec<(Part, usize)>,
    outputs: Vec<(Part, usize)>,
}

impl Layout {
    /// The layout of the `kind` program derived from `func`.
    ///
    /// ```
    /// use adjit_diff::layout::{Kind, Layout, Part};
    /// let f = adjit_ir::trace::trace(2, |x| x[0] * x[1]);
    /// let layout = Layout::of(&f, Kind::Vjp);
    /// assert_eq!(layout.input(Part::Cotangent), 2..3);
    /// assert_eq!(layout.output(Part::Gradient), 1..3);
    /// assert_eq!(layout.describe_inputs(), "x (2) ++ ȳ (1)");
    ///
    /// // Two fitted parameters and three data inputs: two adjoints.
    /// let fit = adjit_ir::trace::trace_with_data(2, 3, |p, d| p[0] * d[0] + p[1] * d[1] - d[2]);
    /// let layout = Layout::of(&fit, Kind::Gradient);
    /// assert_eq!(layout.to_string(), "(x (5)) -> (y (1) ++ x̄ (2))");
    /// ```
    pub fn of(func: &Function, kind: Kind) -> Layout {
        let n = func.n_params;
        let m = func.n_outputs();
        let nf = func.differentiated_params().count();
        let mf = func.ret_types.iter().filter(|t| t.is_float()).count();
        let (inputs, outputs) = match kind {
            Kind::Primal => (vec![(Part::Inputs, n)], vec![(Part::Outputs, m)]),
            Kind::Jvp(k) => {
                let mut inputs = vec![(Part::Inputs, n)];
                let mut outputs = vec![(Part::Outputs, m)];
                for d in 0..k {
                    inputs.push((Part::Tangent(d), nf));
                    outputs.push((Part::OutputTangent(d), mf));
                }
                (inputs, outputs)
            }
            Kind::Vjp => (
                vec![(Part::Inputs, n), (Part::Cotangent, mf)],
                vec![(Part::Outputs, m), (Part::Gradient, nf)],
            ),
            Kind::Gradient => (
                vec![(Part::Inputs, n)],
                vec![(Part::Outputs, m), (Part::Gradient, nf)],
            ),
            Kind::Hvp => (
                vec![(Part::Inputs, n), (Part::Vector, nf)],
                vec![
                    (Part::Outputs, m),
                    (Part::Gradient, nf),
                    (Part::HessianVector, nf),
                ],
            ),
            Kind::Inverse => (
                vec![(Part::Inputs, n), (Part::Vector, n)],
                vec![
                    (Part::Outputs, m),
                    (Part::Product, n),
                    (Part::Status, 1),
                    (Part::Pivot, 2),
                ],
            ),
            Kind::Jacobian => (
                vec![(Part::Inputs, n)],
                vec![(Part::Outputs, m), (Part::Jacobian, mf * nf)],
            ),
            Kind::Hessian => (
                vec![(Part::Inputs, n)],
                vec![
                    (Part::Outputs, m),
                    (Part::Gradient, nf),
                    (Part::Hessian, nf * nf),
                ],
            ),
            Kind::Nonzeros(nnz) => (vec![(Part::Inputs, n)], vec![(Part::Nonzeros, nnz)]),
        };
        Layout { inputs, outputs }
    }

    /// The input slots of `part`. A part the layout does not hold gives an empty range at the
    /// end.
    pub fn input(&self, part: Part) -> Range<usize> {
        find(&self.inputs, part)
    }

    /// The output slots of `part` (an empty range at the end when the layout has no such part).
    pub fn output(&self, part: Part) -> Range<usize> {
        find(&self.outputs, part)
    }

    pub fn n_inputs(&self) -> usize {
        self.inputs.iter().map(|(_, len)| len).sum()
    }

    pub fn n_outputs(&self) -> usize {
        self.outputs.iter().map(|(_, len)| len).sum()
    }

    /// This layout with only its first `parts` output parts: what an object fills of a
    /// program it runs (an inverse's `y ++ product`, without the status words it checks).
    pub fn keep_outputs(&self, parts: usize) -> Layout {
        Layout {
            inputs: self.inputs.clone(),
            outputs: self.outputs[..parts.min(self.outputs.len())].to_vec(),
        }
    }

    /// The parts of the inputs with their lengths, in order.
    pub fn input_parts(&self) -> &[(Part, usize)] {
        &self.inputs
    }

    /// The parts of the outputs with their lengths, in order.
    pub fn output_parts(&self) -> &[(Part, usize)] {
        &self.outputs
    }

    /// `x (2) ++ ẋ (2)`: the inputs as their parts, for messages.
    pub fn describe_inputs(&self) -> String {
        describe(&self.inputs)
    }

    /// `y (1) ++ ẏ (1)`: the outputs as their parts, for messages.
    pub fn describe_outputs(&self) -> String {
        describe(&self.outputs)
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "({}) -> ({})",
            describe(&self.inputs),
            describe(&self.outputs)
        )
    }
}

fn find(parts: &[(Part, usize)], part: Part) -> Range<usize> {
    let mut start = 0;
    for &(p, len) in parts {
        if p == part {
            return start..start + len;
        }
        start += len;
    }
    start..start
}

fn describe(parts: &[(Part, usize)]) -> String {
    let directions = parts
        .iter()
        .filter(|(p, _)| matches!(p, Part::Tangent(_) | Part::OutputTangent(_)))
        .count();
    parts
        .iter()
        .map(|(p, len)| format!("{} ({len})", p.symbol(directions > 1)))
        .collect::<Vec<_>>()
        .join(" ++ ")
}
