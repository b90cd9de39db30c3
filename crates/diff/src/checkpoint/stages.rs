//! Stage partitioning: cut a straight-line function's program order into a chain of stages.
//!
//! The state at cut t is the live set L_t: the values defined before position t and used by an
//! instruction at or after t (returned values stay live to the end). Stage k is an ordinary IR
//! function F_k: L_{c_k} → L_{c_{k+1}} holding the instructions between its two cuts; values of
//! L_{c_k} that are still live at c_{k+1} pass straight through (returned as parameters), so the
//! reverse of the chain carries their adjoints stage to stage exactly as a whole-function reverse
//! sweep accumulates them. The first stage takes every parameter; the last stage returns the
//! function's own `rets` (duplicates included), so chaining the stages reproduces the function.
//!
//! Rule for the cuts: with l stages over N instructions, cut i (1 ≤ i < l) is placed within
//! ±N/(4l) of its even position n_params + i·N/l, at the narrowest live set there (fewest
//! values; ties go to the position nearest the even one). Values live at two or more interior
//! cuts, and the parameters, are "stored once" (one buffer for the whole run) instead of in
//! every snapshot that would contain them.
//!
//! Memory model used for planning: every state slot, snapshot slot and stored-once value is
//! one `f64` (8 bytes), and reversing a stage keeps the tape [`crate::tape_stats`] reports for
//! the stage function (the primal intermediates its adjoint sweep reads). This pass leaves the instructions themselves untouched (no simplification,
//! no reordering); it assumes a verified function.

use std::collections::HashMap;

use adjit_ir::{Function, Value, ValueData, ValueDef};

/// Bytes one state, snapshot or tape slot occupies.
pub const SLOT_BYTES: u64 = 8;

/// A function cut into a chain of stage functions.
#[derive(Clone, Debug)]
pub struct StagePartition {
    /// `bounds[k]..bounds[k + 1]` are the value indices of stage k's instructions;
    /// `bounds[0] = n_params` and `bounds[l] = n_values`.
    pub bounds: Vec<usize>,
    /// `states[k]` is the input of stage k (values of the original function, increasing);
    /// `states[0]` is every parameter and `states[l]` is the function's `rets`.
    pub states: Vec<Vec<Value>>,
    /// Values kept in a single buffer rather than per snapshot (increasing).
    pub stored_once: Vec<Value>,
    /// `stages[k]` = F_k: `states[k]` → `states[k + 1]`, named `NAME.stageK`.
    pub stages: Vec<Function>,
    /// `adjoint_slots[k]`: the positions in `states[k]` whose values carry an adjoint: every
    /// float parameter (k = 0), every float output (k = l), and in between the float values
    /// a float output depends on through a derivative-carrying use at or after the cut
    /// (the whole function's [`crate::activity()`] restricted to the rest of the program).
    pub adjoint_slots: Vec<Vec<usize>>,
    /// `reverse[k]`: `vjp` of stage k restricted to the adjoint-carrying values:
    /// `(states[k]…, ā of adjoint_slots[k + 1]…) → (primal of adjoint_slots[k + 1]…,
    /// ā of adjoint_slots[k]…)`; for the last stage the primal part is every output.
    pub reverse: Vec<Function>,
    /// `tape_bytes[k]`: bytes of the tape `reverse[k]` keeps ([`crate::TapeStats`]).
    pub tape_bytes: Vec<u64>,
}

impl StagePartition {
    pub fn n_stages(&self) -> usize {
        self.stages.len()
    }

    /// Instructions in stage `k`.
    pub fn stage_insts(&self, k: usize) -> usize {
        self.bounds[k + 1] - self.bounds[k]
    }

    /// Slots a snapshot of state `k` needs (its values not stored once).
    pub fn snapshot_len(&self, k: usize) -> usize {
        snapshot_slots(&self.states[k], &self.stored_once)
    }

    /// The largest snapshot, in slots.
    pub fn max_snapshot_len(&self) -> usize {
        (0..self.states.len())
            .map(|k| self.snapshot_len(k))
            .max()
            .unwrap_or(0)
    }

    /// The widest state, in slots.
    pub fn max_state_len(&self) -> usize {
        self.states.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// The largest stage tape, in bytes.
    pub fn max_tape_bytes(&self) -> u64 {
        self.tape_bytes.iter().copied().max().unwrap_or(0)
    }

    /// The most instructions in one stage.
    pub fn max_stage_insts(&self) -> usize {
        (0..self.n_stages())
            .map(|k| self.stage_insts(k))
            .max()
            .unwrap_or(0)
    }
}

/// For every value, the last position that needs it: the index of its last user, `n_values`
/// if it is returned, `None` if nothing uses it.
fn last_uses(func: &Function) -> Vec<Option<usize>> {
    let mut last = vec![None; func.n_values()];
    for (v, inst) in func.insts() {
        inst.for_each_value(|u| last[u.index()] = Some(v.index()));
    }
    for r in &func.rets {
        last[r.index()] = Some(func.n_values());
    }
    last
}

/// Cut `func` into (at most) `n_stages` stages; see the module documentation for the rule.
/// The count is clamped to `1..=max(1, instructions)`.
pub fn partition(func: &Function, n_stages: usize) -> StagePartition {
    build(func, layout(func, n_stages, &Liveness::new(func)))
}

/// Where a partition cuts and what crosses each cut, without the stage functions: enough to
/// size snapshots and states, cheap to compute for many stage counts.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    /// As [`StagePartition::bounds`].
    pub bounds: Vec<usize>,
    /// As [`StagePartition::states`].
    pub states: Vec<Vec<Value>>,
    /// As [`StagePartition::stored_once`].
    pub stored_once: Vec<Value>,
    /// As [`StagePartition::adjoint_slots`].
    pub adjoint_slots: Vec<Vec<usize>>,
}

impl Layout {
    pub fn n_stages(&self) -> usize {
        self.bounds.len() - 1
    }
}

/// What [`layout`] needs of `func` for any stage count, computed once.
#[derive(Clone, Debug)]
pub(crate) struct Liveness {
    /// [`last_uses`] of every value.
    last: Vec<Option<usize>>,
    /// `width[t - n_params]` = |L_t| for t in n_params..=n_values.
    width: Vec<i64>,
    /// For every value, the last instruction that uses it through a derivative-carrying
    /// operand while being useful to an output (`n_values` for returned values, `None` if
    /// none): a value carries an adjoint across cut t exactly when this is at or after t.
    last_useful_use: Vec<Option<usize>>,
}

impl Liveness {
    pub fn new(func: &Function) -> Liveness {
        let n_params = func.n_params;
        let n_insts = func.n_insts();
        let last = last_uses(func);
        // A difference array over the cuts.
        let mut delta = vec![0i64; n_insts + 2];
        for (v, lu) in last.iter().enumerate() {
            if let Some(lu) = *lu {
                let from = (v + 1).max(n_params);
                if lu >= from {
                    delta[from - n_params] += 1;
                    delta[lu - n_params + 1] -= 1;
                }
            }
        }
        let mut width = Vec::with_capacity(n_insts + 1);
        let mut running = 0i64;
        for d in &delta[..=n_insts] {
            running += d;
            width.push(running);
        }

        let activity = crate::activity(func);
        let mut last_useful_use: Vec<Option<usize>> = vec![None; func.n_values()];
        for (u, inst) in func.insts() {
            if activity.is_useful(u) {
                for (pos, op) in inst.operands().into_iter().enumerate() {
                    if let Some(v) = op.as_value() {
                        if crate::rules::carries_derivative(inst, pos) {
                            last_useful_use[v.index()] = Some(u.index());
                        }
                    }
                }
            }
        }
        for &r in &func.rets {
            last_useful_use[r.index()] = Some(func.n_values());
        }
        Liveness {
            last,
            width,
            last_useful_use,
        }
    }
}

/// The cuts of [`partition`] for `n_stages` stages, given the [`Liveness`] of `func`.
pub(crate) fn layout(func: &Function, n_stages: usize, liveness: &Liveness) -> Layout {
    let n_params = func.n_params;
    let n_values = func.n_values();
    let n_insts = func.n_insts();
    let l = n_stages.clamp(1, n_insts.max(1));
    let (last, width) = (&liveness.last, &liveness.width);

    let mut bounds = vec![n_params];
    let window = n_insts / (4 * l);
    for i in 1..l {
        let even = n_params + i * n_insts / l;
        let prev = *bounds.last().expect("bounds starts non-empty");
        let lo = even.saturating_sub(window).max(prev + 1);
        let hi = (even + window).min(n_values - (l - i));
        let mut best = lo.max(even.min(hi));
        for t in lo..=hi {
            let (wt, wb) = (width[t - n_params], width[best - n_params]);
            if wt < wb || (wt == wb && t.abs_diff(even) < best.abs_diff(even)) {
                best = t;
            }
        }
        bounds.push(best);
    }
    bounds.push(n_values);

    // states[k] for interior cuts: every value whose live interval [v + 1, last use] holds
    // bounds[k]. Values are visited in increasing order, so each state comes out sorted.
    let mut states: Vec<Vec<Value>> = vec![Vec::new(); l + 1];
    states[0] = func.params().collect();
    states[l] = func.rets.clone();
    let mut stored_once: Vec<Value> = func.params().collect();
    // Interior cuts k in first..end are those with v < bounds[k] ≤ lu; `first` only grows
    // with v, and `end` is found by stepping over the cuts the value crosses.
    let mut first = 1;
    for (v, lu) in last.iter().enumerate() {
        while first < l && bounds[first] <= v {
            first += 1;
        }
        let Some(lu) = *lu else { continue };
        let mut end = first;
        while end < l && bounds[end] <= lu {
            end += 1;
        }
        for state in &mut states[first..end] {
            state.push(Value::new(v));
        }
        if end >= first + 2 && v >= n_params {
            stored_once.push(Value::new(v));
        }
    }

    let act = crate::activity(func);
    let adjoint_slots: Vec<Vec<usize>> = states
        .iter()
        .enumerate()
        .map(|(k, state)| {
            (0..state.len())
                .filter(|&i| {
                    let v = state[i];
                    func.ty(v).is_float()
                        && (k == l || act.is_varied(v))
                        && (k == 0
                            || k == l
                            || liveness.last_useful_use[v.index()].is_some_and(|u| u >= bounds[k]))
                })
                .collect()
        })
        .collect();
    Layout {
        bounds,
        states,
        stored_once,
        adjoint_slots,
    }
}

/// The stage functions and their reverses for `layout`.
pub(crate) fn build(func: &Function, layout: Layout) -> StagePartition {
    let Layout {
        bounds,
        states,
        stored_once,
        adjoint_slots,
    } = layout;
    let l = bounds.len() - 1;
    let act = crate::activity(func);
    let stages: Vec<Function> = (0..l)
        .map(|k| stage_function(func, &act, k, &bounds, &states))
        .collect();
    let (reverse, tape_bytes) = (0..l)
        .map(|k| {
            stage_reverse(
                &stages[k],
                &adjoint_slots[k],
                &adjoint_slots[k + 1],
                k + 1 == l,
            )
        })
        .unzip();
    StagePartition {
        bounds,
        states,
        stored_once,
        stages,
        adjoint_slots,
        reverse,
        tape_bytes,
    }
}

/// Slots a snapshot of `state` needs (its values not in `stored_once`, which is sorted).
pub(crate) fn snapshot_slots(state: &[Value], stored_once: &[Value]) -> usize {
    state
        .iter()
        .filter(|v| stored_once.binary_search(v).is_err())
        .count()
}

/// The reverse of stage function `stage` (see [`StagePartition::reverse`]) and its tape bytes.
///
/// Outputs that carry no adjoint are dropped before `vjp`, so that the stage's reverse has
/// exactly the activity the whole function's reverse has (a value used only through
/// non-differentiable edges, or only by dead code, gets no adjoint lines); adjoints of inputs
/// that carry none are dropped after (they are `const 0.0`).
fn stage_reverse(
    stage: &Function,
    adjoint_in: &[usize],
    adjoint_out: &[usize],
    last: bool,
) -> (Function, u64) {
    let mut restricted = stage.clone();
    if !last {
        restricted.rets = adjoint_out.iter().map(|&i| stage.rets[i]).collect();
        restricted.ret_types = adjoint_out.iter().map(|&i| stage.ret_types[i]).collect();
    }
    let (mut reverse, tape) = crate::reverse::vjp_with_tape(&restricted);
    let n_primal = restricted.rets.len();
    // Position of each differentiated parameter among them (vjp's adjoint order).
    let mut float_index = vec![usize::MAX; stage.n_params];
    for (n, p) in stage.differentiated_params().enumerate() {
        float_index[p.index()] = n;
    }
    let keep: Vec<usize> = (0..n_primal)
        .chain(adjoint_in.iter().map(|&i| n_primal + float_index[i]))
        .collect();
    reverse.rets = keep.iter().map(|&i| reverse.rets[i]).collect();
    reverse.ret_types = keep.iter().map(|&i| reverse.ret_types[i]).collect();
    (reverse, tape.stats.bytes as u64)
}

/// F_k: parameters `states[k]`, the instructions `bounds[k]..bounds[k + 1]`, returns
/// `states[k + 1]`.
fn stage_function(
    func: &Function,
    varied: &crate::activity::Activity,
    k: usize,
    bounds: &[usize],
    states: &[Vec<Value>],
) -> Function {
    let inputs = &states[k];
    let (start, end) = (bounds[k], bounds[k + 1]);
    let param_of: HashMap<Value, Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, &v)| (v, Value::new(i)))
        .collect();
    let map = |v: Value| -> Value {
        if v.index() >= start {
            Value::new(inputs.len() + v.index() - start)
        } else {
            *param_of
                .get(&v)
                .unwrap_or_else(|| panic!("{v} is used in stage {k} but not live at its cut"))
        }
    };
    let mut out = Function::new(format!("{}.stage{k}", func.name));
    // A stage input that is not varied in the whole function (a `data` input, `ceil`'s
    // result, …) is `data` in the stage, so the stage sees the whole function's activity.
    for &v in inputs {
        let data = func.data(v);
        let p = out.add_param(data.ty, data.name.clone());
        if !varied.is_varied(v) {
            out.set_param_kind(p, adjit_ir::ParamKind::Data);
        }
    }
    for data in &func.values[start..end] {
        let ValueDef::Inst(inst) = &data.def else {
            unreachable!("stage bounds start after the parameters")
        };
        out.values.push(ValueData {
            ty: data.ty,
            def: ValueDef::Inst(inst.map_values(map)),
            name: data.name.clone(),
        });
    }
    for &v in &states[k + 1] {
        out.push_ret(map(v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_ir::random::{random_function, RandomOptions, Rng};

    #[test]
    fn chained_stages_reproduce_the_function() {
        for seed in 0..20 {
            let opts = RandomOptions {
                n_insts: 300,
                non_smooth: seed % 2 == 1,
                ..RandomOptions::default()
            };
            let func = random_function(seed, &opts);
            let x = Rng::new(seed).vector(func.n_params, -2.0, 2.0);
            let expected = adjit_ir::interpret(&func, &x).unwrap();
            for n_stages in [1, 2, 7, 17, 300, 1000] {
                let part = partition(&func, n_stages);
                assert_eq!(part.n_stages(), n_stages.min(func.n_insts()));
                let mut state = x.clone();
                for (k, stage) in part.stages.iter().enumerate() {
                    adjit_ir::verify(stage).unwrap_or_else(|e| panic!("after pass partition: {e}"));
                    assert_eq!(stage.n_insts(), part.stage_insts(k));
                    state = adjit_ir::interpret(stage, &state).unwrap();
                }
                let same = state
                    .iter()
                    .zip(&expected)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "seed {seed}, {n_stages} stages");
            }
        }
    }

    #[test]
    fn states_are_exactly_the_live_sets() {
        let func = random_function(
            3,
            &RandomOptions {
                n_insts: 200,
                ..RandomOptions::default()
            },
        );
        let part = partition(&func, 9);
        let last = last_uses(&func);
        for k in 1..part.n_stages() {
            let cut = part.bounds[k];
            let live: Vec<Value> = (0..cut)
                .filter(|&v| last[v].is_some_and(|lu| lu >= cut))
                .map(Value::new)
                .collect();
            assert_eq!(part.states[k], live, "cut {k}");
        }
    }

    #[test]
    fn cuts_prefer_narrow_live_sets() {
        // A chain that is narrow (one value) every fourth instruction and wide elsewhere.
        let mut b = adjit_ir::Builder::new("comb");
        let mut x = b.param(adjit_ir::Type::F64, "x");
        for _ in 0..50 {
            let a = b.unary(adjit_ir::UnaryOp::Sin, x);
            let c = b.unary(adjit_ir::UnaryOp::Cos, x);
            let d = b.mul(a, c);
            x = b.add(d, x);
        }
        let func = b.finish(&[x]);
        let part = partition(&func, 10);
        for k in 1..part.n_stages() {
            assert_eq!(part.states[k].len(), 1, "cut {k} at {}", part.bounds[k]);
        }
        assert_eq!(part.stored_once, vec![Value::new(0)]);
    }
}
