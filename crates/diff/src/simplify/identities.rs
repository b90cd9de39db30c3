//! IEEE-exact algebraic identities: rewrites that give the same bits for every input
//! (NaN payloads aside):
//! `x·1 → x`, `x/1 → x`, `x − (+0) → x`, `x + (−0) → x`, `neg (neg x) → x`,
//! `x·(−1) → neg x`, `x/(−1) → neg x`, `(−0) − x → neg x`, `fdemote (fpromote x) → x`,
//! `select c, a, a → a`, `powi x, 1 → x`, `fma a, 1, c → add a, c`, `fma a, b, −0 → mul a, b`.
//! Deliberately absent: `x + 0 → x` (wrong for x = −0), `x·0 → 0` (wrong for inf, NaN and
//! negative x), `x − x → 0`. Commuted forms are matched for `add`, `mul` and `fma`'s
//! factors. A value rewritten to another one loses its name.

use adjit_ir::{BinaryOp, Function, InstData, Operand, UnaryOp, Value};

use super::{copy_params, finish};

/// The result of rewriting one instruction.
enum Rewrite {
    Alias(Value),
    Inst(InstData),
}

fn is_lit(o: Operand, x: f64) -> bool {
    o == Operand::Const(x)
}

/// Apply the identities; see the module docs.
pub fn identities(func: &Function) -> Function {
    let (mut out, mut map) = copy_params(func);
    for (v, inst) in func.insts() {
        let data = func.data(v);
        let inst = inst.map_values(|u| map[u.index()]);
        let def_of = |o: Operand| o.as_value().and_then(|u| out.inst(u));
        let rewrite = match inst {
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
                    None
                }
            }
            _ => None,
        };
        match rewrite {
            Some(Rewrite::Alias(u)) => map.push(u),
            Some(Rewrite::Inst(new)) => map.push(out.push_inst(data.ty, new, data.name.clone())),
            None => map.push(out.push_inst(data.ty, inst, data.name.clone())),
        }
    }
    finish(out, func, &map)
}
