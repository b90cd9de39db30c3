//! Exhaustive search for the order with the smallest largest lump, for small programs: the
//! oracle that measures how often the greedy order ([`super::order`]) is optimal (Pearlmutter &
//! Siskind conjecture that a greedy order is).
//!
//! The live set after scheduling a set `S` of instructions does not depend on the order inside
//! `S`, only on `S` (it must be downward closed: every operand of a member is a member or a
//! parameter). So the search is a dynamic programme over downward-closed sets: `best(S)` = the
//! smallest achievable largest lump from cut `S` to the end, over the next cut `S′ ⊋ S` of width
//! `n`. Refining a lump never makes the largest lump larger, so jumping straight between cuts is
//! exact. Leaves the function alone; only for programs of at most [`MAX_ORACLE_INSTS`]
//! instructions.

use std::collections::HashMap;

use adjit_ir::Function;

use adjit_diff::inverse::analyze_order;
use adjit_diff::rules::derivative_operands;

/// The largest program (in instructions) the oracle accepts.
pub const MAX_ORACLE_INSTS: usize = 16;

/// The smallest largest lump over all topological orders of `func`'s instructions, or `None`
/// when `func` is not a square program with active inputs and outputs, has more than
/// [`MAX_ORACLE_INSTS`] instructions (or more than 64 values), or some order has a cut narrower
/// than `n` (then `J` is singular).
pub fn optimal_largest_lump(func: &Function) -> Option<usize> {
    // Squareness, structure and activity; the program's own order having a narrow cut means J is
    // singular, and then every order has one.
    let analysis = analyze_order(func, func.insts().map(|(v, _)| v).collect(), "program").ok()?;
    let (n, active) = (analysis.n, analysis.active);
    let m = func.n_insts();
    if m > MAX_ORACLE_INSTS || func.n_values() > 64 {
        return None;
    }
    let p = func.n_params;
    // Per instruction: all instruction operands (order constraint), as a bitmask over insts.
    let mut preds = vec![0u32; m];
    // Per value: instructions that use it through an active derivative edge.
    let mut active_users = vec![0u32; func.n_values()];
    for (v, inst) in func.insts() {
        let i = v.index() - p;
        inst.for_each_value(|o| {
            if !func.is_param(o) {
                preds[i] |= 1 << (o.index() - p);
            }
        });
        if active[v.index()] {
            for o in derivative_operands(inst) {
                if active[o.index()] {
                    active_users[o.index()] |= 1 << i;
                }
            }
        }
    }
    let mut is_output = vec![false; func.n_values()];
    for r in &func.rets {
        is_output[r.index()] = true;
    }
    // Live set (bitmask over values) after scheduling `s`.
    let live = |s: u32| -> u64 {
        let mut mask = 0u64;
        for v in 0..func.n_values() {
            if !active[v] {
                continue;
            }
            let defined = v < p || s >> (v - p) & 1 == 1;
            let used_later = active_users[v] & !s != 0;
            if defined && (used_later || is_output[v]) {
                mask |= 1 << v;
            }
        }
        mask
    };
    // Enumerate the downward-closed sets.
    let full: u32 = (1u32 << m) - 1;
    let mut seen: HashMap<u32, u64> = HashMap::new();
    let mut stack = vec![0u32];
    seen.insert(0, live(0));
    while let Some(s) = stack.pop() {
        for (i, &pred) in preds.iter().enumerate() {
            if s >> i & 1 == 0 && pred & !s == 0 {
                let t = s | 1 << i;
                if let std::collections::hash_map::Entry::Vacant(e) = seen.entry(t) {
                    e.insert(live(t));
                    stack.push(t);
                }
            }
        }
    }
    if seen.values().any(|l| (l.count_ones() as usize) < n) {
        return None;
    }
    let mut cuts: Vec<(u32, u64)> = seen
        .into_iter()
        .filter(|(_, l)| l.count_ones() as usize == n)
        .collect();
    // Supersets have more members: process from the full set down.
    cuts.sort_by_key(|(s, _)| std::cmp::Reverse(s.count_ones()));
    let mut best: HashMap<u32, usize> = HashMap::new();
    for (k, &(s, ls)) in cuts.iter().enumerate() {
        if s == full {
            best.insert(s, 0);
            continue;
        }
        let mut b = usize::MAX;
        for &(t, lt) in &cuts[..k] {
            if t & s == s && t != s {
                if let Some(&bt) = best.get(&t) {
                    let l = (ls & !lt).count_ones() as usize;
                    b = b.min(l.max(bt));
                }
            }
        }
        best.insert(s, b);
    }
    best.get(&0).copied()
}
