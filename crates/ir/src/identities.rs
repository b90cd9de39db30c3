//! The IEEE-exact algebraic identities, one rule per instruction: rewrites that give the same
//! bits for every input (NaN payloads aside). [`rewrite`] is the rulebook of the simplifier's
//! `identities` pass (`adjit_diff::simplify`), which documents each identity and why the
//! others are absent, and of the JIT's lowering of rolled programs, which applies it to
//! registers whose definitions and constants it knows.

use crate::function::{InstData, Operand, Value};
use crate::opcode::{BinaryOp, UnaryOp};

/// The result of rewriting one instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum Rewrite {
    /// The instruction's value is this operand.
    Alias(Value),
    /// The instruction becomes this one.
    Inst(InstData),
}

fn is_lit(o: Operand, x: f64) -> bool {
    o == Operand::Const(x)
}

/// The rewrite of `inst` given the instructions that define its operands (`def_of`, `None`
/// for a parameter or an unknown definition); `None` to keep it. With `literals_are_data`,
/// the rules that depend on a literal's value (`x·1`, `fma a, 1, c`, …) are not applied: the
/// literal is one entry of data that happens to be special here (a data block of
/// `adjit_diff::simplify`, a table of a rolled loop).
pub fn rewrite<'f>(
    inst: &InstData,
    literals_are_data: bool,
    def_of: impl Fn(Operand) -> Option<&'f InstData>,
) -> Option<Rewrite> {
    // Data's literals are not special values.
    let is_lit = |o: Operand, x: f64| !literals_are_data && is_lit(o, x);
    // `x` is `neg y`: y.
    let negated = |x: Operand| match def_of(x) {
        Some(InstData::Unary {
            op: UnaryOp::Neg,
            arg,
        }) => Some(Operand::Value(*arg)),
        _ => None,
    };
    match *inst {
        InstData::Binary { op, args: [a, b] } => {
            let neg = |x: Operand| {
                x.as_value().map(|arg| {
                    Rewrite::Inst(InstData::Unary {
                        op: UnaryOp::Neg,
                        arg,
                    })
                })
            };
            let alias = |x: Operand| x.as_value().map(Rewrite::Alias);
            let binary = |op, args| Some(Rewrite::Inst(InstData::Binary { op, args }));
            let negated_lit = |x: Operand| match x {
                Operand::Const(k) => Some(Operand::Const(-k)),
                Operand::Value(_) => None,
            };
            match op {
                BinaryOp::Mul if is_lit(b, 1.0) => alias(a),
                BinaryOp::Mul if is_lit(a, 1.0) => alias(b),
                BinaryOp::Mul if is_lit(b, -1.0) => neg(a),
                BinaryOp::Mul if is_lit(a, -1.0) => neg(b),
                BinaryOp::Div if is_lit(b, 1.0) => alias(a),
                BinaryOp::Div if is_lit(b, -1.0) => neg(a),
                BinaryOp::Sub if is_lit(b, 0.0) => alias(a),
                BinaryOp::Sub if is_lit(a, -0.0) => neg(b),
                BinaryOp::Add if is_lit(b, -0.0) => alias(a),
                BinaryOp::Add if is_lit(a, -0.0) => alias(b),
                BinaryOp::Add => match (negated(a), negated(b)) {
                    (_, Some(nb)) => binary(BinaryOp::Sub, [a, nb]),
                    (Some(na), None) => binary(BinaryOp::Sub, [b, na]),
                    (None, None) => None,
                },
                BinaryOp::Sub => negated(b).and_then(|nb| binary(BinaryOp::Add, [a, nb])),
                BinaryOp::Mul => match (negated(a), negated_lit(b), negated_lit(a), negated(b)) {
                    (Some(na), Some(k), _, _) => binary(BinaryOp::Mul, [na, k]),
                    (_, _, Some(k), Some(nb)) => binary(BinaryOp::Mul, [k, nb]),
                    _ => None,
                },
                _ => None,
            }
        }
        InstData::Unary {
            op: UnaryOp::Neg,
            arg,
        } => match def_of(arg.into()) {
            Some(InstData::Unary {
                op: UnaryOp::Neg,
                arg: inner,
            }) => Some(Rewrite::Alias(*inner)),
            _ => None,
        },
        InstData::Fdemote { arg } => match def_of(arg.into()) {
            Some(InstData::Fpromote { arg: inner }) => Some(Rewrite::Alias(*inner)),
            _ => None,
        },
        InstData::Select {
            args: [Operand::Value(a), Operand::Value(b)],
            ..
        } if a == b => Some(Rewrite::Alias(a)),
        InstData::Powi { arg, exp: 1 } => Some(Rewrite::Alias(arg)),
        InstData::Fma { args: [a, b, c] } => {
            if is_lit(b, 1.0) && (a.as_value().is_some() || c.as_value().is_some()) {
                Some(Rewrite::Inst(InstData::Binary {
                    op: BinaryOp::Add,
                    args: [a, c],
                }))
            } else if is_lit(a, 1.0) && (b.as_value().is_some() || c.as_value().is_some()) {
                Some(Rewrite::Inst(InstData::Binary {
                    op: BinaryOp::Add,
                    args: [b, c],
                }))
            } else if is_lit(c, -0.0) {
                Some(Rewrite::Inst(InstData::Binary {
                    op: BinaryOp::Mul,
                    args: [a, b],
                }))
            } else {
                let fma = |args| Some(Rewrite::Inst(InstData::Fma { args }));
                match (a, b) {
                    (_, Operand::Const(k)) => {
                        negated(a).and_then(|na| fma([na, Operand::Const(-k), c]))
                    }
                    (Operand::Const(k), _) => {
                        negated(b).and_then(|nb| fma([Operand::Const(-k), nb, c]))
                    }
                    _ => None,
                }
            }
        }
        _ => None,
    }
}

/// `inst` with its float operands whose value `known` gives (never NaN) written as literals,
/// provided one float operand stays a value (an instruction has a value operand); the
/// operands of a `const`, unary or `powi` instruction are values only and stay.
pub fn inline_literals(inst: InstData, known: impl Fn(Operand) -> Option<f64>) -> InstData {
    let known = |o: Operand| known(o).filter(|c| !c.is_nan());
    let lit = |o: Operand| match known(o) {
        Some(c) => Operand::Const(c),
        None => o,
    };
    let inline = |args: &[Operand]| args.iter().any(|&o| matches!(lit(o), Operand::Value(_)));
    match inst {
        InstData::Binary { op, args } if inline(&args) => InstData::Binary {
            op,
            args: args.map(lit),
        },
        InstData::Fma { args } if inline(&args) => InstData::Fma {
            args: args.map(lit),
        },
        InstData::Fcmp { pred, args } if inline(&args) => InstData::Fcmp {
            pred,
            args: args.map(lit),
        },
        InstData::Select { cond, args } if inline(&args) => InstData::Select {
            cond,
            args: args.map(lit),
        },
        other => other,
    }
}
