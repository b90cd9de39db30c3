//! IEEE-exact algebraic identities: rewrites that give the same bits for every input
//! (NaN payloads aside):
//! `x·1 → x`, `x/1 → x`, `x − (+0) → x`, `x + (−0) → x`, `neg (neg x) → x`,
//! `x·(−1) → neg x`, `x/(−1) → neg x`, `(−0) − x → neg x`, `fdemote (fpromote x) → x`,
//! `select c, a, a → a`, `powi x, 1 → x`, `fma a, 1, c → add a, c`, `fma a, b, −0 → mul a, b`,
//! and negations absorbed by their user: `a + (neg b) → a − b`, `(neg a) + b → b − a`,
//! `a − (neg b) → a + b`, `(neg a)·k → a·(−k)` and `fma (neg a), k, c → fma a, −k, c` for a
//! literal `k` (IEEE defines `a − b` as `a + (−b)`, and a product's sign is exact). Reverse
//! sweeps are full of these: the adjoint of `sub` is a `neg` (Lorenz RK4's VJP had 4,000).
//! Deliberately absent: `x + 0 → x` (wrong for x = −0), `x·0 → 0` (wrong for inf, NaN and
//! negative x), `x − x → 0`. Commuted forms are matched for `add`, `mul` and `fma`'s
//! factors. A value rewritten to another one loses its name.
//!
//! The identities that depend on a literal's value (`x·1`, `x/1`, `x − 0`, `x + (−0)`,
//! `x·(−1)`, `x/(−1)`, `(−0) − x`, `fma a, 1, c`, `fma a, b, −0`) are not applied inside a
//! data block (see [`super`]): every rewrite here is exact, so keeping one changes no result.

use adjit_ir::identities::{rewrite, Rewrite};
use adjit_ir::{Function, Operand, Value};

use super::{copied, data_blocks, InPlace};

/// Apply the identities; see the module docs.
pub fn identities(func: &Function) -> Function {
    copied(func, identities_in_place)
}

/// [`identities`] in place; whether anything changed.
pub(super) fn identities_in_place(func: &mut Function) -> bool {
    let data = data_blocks(func);
    identities_with(func, &data).0
}

/// [`identities`] in place, given the data blocks of `func` (per value); whether anything
/// changed, and the data blocks of the result.
pub(super) fn identities_with(func: &mut Function, data: &[bool]) -> (bool, Vec<bool>) {
    let in_data = |v: usize| data.get(v).copied().unwrap_or(false);
    let mut data_out = vec![false; data.len()];
    // The instructions before the first one rewritten keep their places: they are only read
    // (with `func`'s own instructions as the operands' definitions, which they are while
    // nothing moved), and the rewrite starts at that one. A program without any (the last
    // round of `simplify`) is not copied instruction by instruction: 40 % of this pass at
    // 30,000 Rosenbrock terms (callgrind).
    let n = func.n_values();
    let start = {
        let func = &*func;
        let def_of = |o: Operand| o.as_value().and_then(|u| func.inst(u));
        (func.n_params..n)
            .find(|&v| {
                let inst = func.inst(Value::new(v));
                inst.is_some_and(|inst| rewrite(inst, in_data(v), def_of).is_some())
            })
            .unwrap_or(n)
    };
    let kept = func.n_params.min(data.len())..start.min(data.len());
    data_out[kept.clone()].copy_from_slice(&data[kept]);
    if start == n {
        data_out.truncate(n);
        return (false, data_out);
    }
    let mut out = InPlace::new_at(func, start);
    for v in start..out.n_values() {
        let in_data = in_data(v);
        let (inst, _) = out.mapped_input(v);
        let def_of = |o: Operand| o.as_value().and_then(|u| out.inst(u));
        let rewrite = rewrite(&inst, in_data, def_of);
        let w = match rewrite {
            Some(Rewrite::Alias(u)) => {
                out.alias(u);
                continue;
            }
            Some(Rewrite::Inst(new)) => out.push(v, new),
            None => out.keep(v, inst),
        };
        data_out[w.index()] = in_data;
    }
    let changed = out.finish();
    data_out.truncate(func.n_values());
    (changed, data_out)
}
