//! Greedy list scheduling of a program's instructions for the lump partition.
//!
//! Among the ready instructions (all operands scheduled), pick the one that changes the number of
//! live active values the least: `+1` if its result is active, `−1` for every active operand whose
//! last use it is. Ties go to the most recently readied instruction (depth first), which keeps a
//! chain together. The order respects every operand, including `select` conditions, so the primal
//! can be emitted in it; only derivative-carrying uses count for liveness. Leaves the function
//! alone and assumes it verified.

use std::collections::BTreeSet;

use adjit_ir::{Function, Value};

use super::active::active_flags;
use crate::rules::derivative_operands;

/// A topological order of all instructions of `func` (parameters excluded), chosen greedily to
/// keep the live active count low.
pub fn greedy_order(func: &Function) -> Vec<Value> {
    greedy_order_with(func, &active_flags(func))
}

/// [`greedy_order`] with the activity already computed.
pub(crate) fn greedy_order_with(func: &Function, active: &[bool]) -> Vec<Value> {
    let n_values = func.n_values();
    let mut remaining = vec![0u32; n_values];
    let mut pending = vec![0u32; n_values];
    let mut users: Vec<Vec<Value>> = vec![Vec::new(); n_values];
    let mut active_operands: Vec<Vec<Value>> = vec![Vec::new(); n_values];
    for (v, inst) in func.insts() {
        let mut operands: Vec<Value> = Vec::new();
        inst.for_each_value(|o| {
            if !operands.contains(&o) {
                operands.push(o)
            }
        });
        for &o in &operands {
            if !func.is_param(o) {
                pending[v.index()] += 1;
                users[o.index()].push(v);
            }
        }
        if active[v.index()] {
            let ops: Vec<Value> = derivative_operands(inst)
                .into_iter()
                .filter(|o| active[o.index()])
                .collect();
            for o in &ops {
                remaining[o.index()] += 1;
            }
            active_operands[v.index()] = ops;
        }
    }
    for r in &func.rets {
        remaining[r.index()] += 1;
    }
    // Instructions that have `o` among their active operands: when `o` is down to its last use,
    // the one of them that is ready gets cheaper.
    let mut active_users: Vec<Vec<Value>> = vec![Vec::new(); n_values];
    for (v, ops) in active_operands.iter().enumerate() {
        for o in ops {
            active_users[o.index()].push(Value::new(v));
        }
    }
    let delta = |v: Value, remaining: &[u32]| -> i64 {
        let born = i64::from(active[v.index()]);
        let freed = active_operands[v.index()]
            .iter()
            .filter(|o| remaining[o.index()] == 1)
            .count() as i64;
        born - freed
    };
    // The ready instructions by key: smallest delta, then latest readied, then program order.
    // A priority set rather than a scan of the ready list, which is O(n) per step when a whole
    // layer is ready at once (n parallel chains).
    type Key = (i64, usize, usize);
    let key = |v: Value, time: usize, remaining: &[u32]| -> Key {
        (delta(v, remaining), usize::MAX - time, v.index())
    };
    let mut ready_key: Vec<Option<Key>> = vec![None; n_values];
    let mut ready: BTreeSet<Key> = BTreeSet::new();
    for (v, _) in func.insts() {
        if pending[v.index()] == 0 {
            let k = key(v, 0, &remaining);
            ready_key[v.index()] = Some(k);
            ready.insert(k);
        }
    }
    let mut order = Vec::with_capacity(func.n_insts());
    let mut clock = 0usize;
    while let Some(best) = ready.pop_first() {
        let v = Value::new(best.2);
        ready_key[v.index()] = None;
        order.push(v);
        clock += 1;
        for &o in &active_operands[v.index()] {
            remaining[o.index()] -= 1;
            if remaining[o.index()] == 1 {
                for &u in &active_users[o.index()] {
                    if let Some(old) = ready_key[u.index()] {
                        let new = (delta(u, &remaining), old.1, old.2);
                        if new != old {
                            ready.remove(&old);
                            ready.insert(new);
                            ready_key[u.index()] = Some(new);
                        }
                    }
                }
            }
        }
        for &u in &users[v.index()] {
            pending[u.index()] -= 1;
            if pending[u.index()] == 0 {
                let k = key(u, clock, &remaining);
                ready_key[u.index()] = Some(k);
                ready.insert(k);
            }
        }
    }
    order
}
