//! Binomial checkpointing schedules (Griewank & Walther, "Algorithm 799: revolve", 2000).
//!
//! [`schedule`] turns a chain of `l` stages and `s` snapshot slots into the action list that
//! reverses the chain with the minimal number of forward re-advances,
//! t(l, s) = r·l − β(s + 1, r − 1) where β(s, r) = C(s + r, s) and r is the unique integer with
//! β(s, r − 1) < l ≤ β(s, r). The schedule is built by the recursion behind
//! p(n, s) = min over 1 ≤ i < n of [ i + p(i, s) + p(n − i, s − 1) ]: advance i stages, store
//! the state, reverse the tail with one slot fewer, restore, reverse the head. Ties between
//! split points go to the largest i (advance as far as possible first), which reproduces the
//! published l = 6, s = 2 trace. The snapshot count includes the slot holding the initial state.
//!
//! This file knows nothing of IR or stages' costs: every stage counts as one step.

use std::fmt;

/// One step of a reversal schedule. States are numbered 0..=l (state k is the input of stage
/// k); `slot` is the snapshot slot (0..s) a state is stored in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Run stages `from..to` forward without taping; the current state becomes `to`.
    Advance { from: usize, to: usize },
    /// Store the current state `state` in `slot`.
    Takeshot { state: usize, slot: usize },
    /// Make the state stored in `slot` (which is state `state`) current.
    Restore { state: usize, slot: usize },
    /// Tape the last stage `stage`, seed the output adjoint and reverse it.
    Firsturn { stage: usize },
    /// Tape stage `stage` and reverse it (its output adjoint is already known).
    Youturn { stage: usize },
    /// The reversal is complete.
    Terminate,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Action::Advance { to, .. } => write!(f, "advance {to}"),
            Action::Takeshot { state, slot } => write!(f, "takeshot {state} in slot {slot}"),
            Action::Restore { state, slot } => write!(f, "restore {state} from slot {slot}"),
            Action::Firsturn { stage } => write!(f, "firsturn {stage}"),
            Action::Youturn { stage } => write!(f, "youturn {stage}"),
            Action::Terminate => write!(f, "terminate"),
        }
    }
}

/// Why no schedule exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RevolveError {
    #[error("a reversal schedule needs at least one stage")]
    NoStages,
    #[error("a reversal schedule needs at least one snapshot (the initial state)")]
    NoSnapshots,
}

/// β(s, r) = C(s + r, s): the most stages `s` snapshots can reverse when no stage is advanced
/// more than `r` times. Saturates at `u128::MAX`; β(s, −1) is 0.
pub fn beta(s: usize, r: i64) -> u128 {
    if r < 0 {
        return 0;
    }
    let r = r as u128;
    let s = s as u128;
    // C(s + r, min(s, r)), multiplying and dividing step by step stays exact.
    let k = s.min(r);
    let mut c: u128 = 1;
    for i in 1..=k {
        let Some(num) = c.checked_mul(s + r - k + i) else {
            return u128::MAX;
        };
        c = num / i;
    }
    c
}

/// The minimal number of forward stage advances needed to reverse `l` stages with `s`
/// snapshots (closed form t(l, s) = r·l − β(s + 1, r − 1)). For `l ≤ 1` it is 0.
///
/// ```
/// use adjit_diff::checkpoint::revolve::min_advances;
/// assert_eq!(min_advances(6, 2), 8);
/// assert_eq!(min_advances(20, 3), 45);
/// ```
pub fn min_advances(l: usize, s: usize) -> u64 {
    if l <= 1 || s == 0 {
        return 0;
    }
    let s = s.min(l);
    let mut r: i64 = 0;
    while beta(s, r) < l as u128 {
        r += 1;
    }
    (r as u128 * l as u128 - beta(s + 1, r - 1)) as u64
}

/// The reversal schedule for `l` stages with `s` snapshot slots (more slots than stages are
/// not used). The list starts with `takeshot 0` and ends with `terminate`.
///
/// ```
/// use adjit_diff::checkpoint::revolve::{schedule, Action};
/// let actions = schedule(2, 1).unwrap();
/// assert_eq!(actions[0], Action::Takeshot { state: 0, slot: 0 });
/// assert_eq!(actions.last(), Some(&Action::Terminate));
/// ```
pub fn schedule(l: usize, s: usize) -> Result<Vec<Action>, RevolveError> {
    if l == 0 {
        return Err(RevolveError::NoStages);
    }
    if s == 0 {
        return Err(RevolveError::NoSnapshots);
    }
    let mut actions = Vec::new();
    stream(l, s, &mut |a| {
        actions.push(a);
        Ok::<(), RevolveError>(())
    })?;
    Ok(actions)
}

/// Revolve's actions for `l` stages and `s` snapshots (`l, s ≥ 1`), handed to `f` one by one
/// instead of collected ([`schedule`] collects them): for 10⁶ steps the list would take ~90 MB.
/// The split point minimises the convex i + t(i, s) + t(n − i, s − 1), so the largest
/// minimiser is found by bisection on its slope instead of a scan. The first error of `f`
/// stops the stream and is returned.
pub fn stream<E>(l: usize, s: usize, f: &mut impl FnMut(Action) -> Result<(), E>) -> Result<(), E> {
    f(Action::Takeshot { state: 0, slot: 0 })?;
    // The reversal recursion with an explicit stack: with many snapshots it
    // nests about as deep as there are snapshots, too deep for a thread's stack.
    let mut tasks = vec![Task::Chain {
        start: 0,
        n: l,
        s: s.min(l).max(1),
        slot: 0,
        last: true,
    }];
    while let Some(task) = tasks.pop() {
        let (start, n, s, slot, last) = match task {
            Task::Emit(action) => {
                f(action)?;
                continue;
            }
            Task::Chain {
                start,
                n,
                s,
                slot,
                last,
            } => (start, n, s, slot, last),
        };
        let turn = |stage: usize| {
            if last && stage == start + n - 1 {
                Action::Firsturn { stage }
            } else {
                Action::Youturn { stage }
            }
        };
        if n == 1 {
            f(turn(start))?;
        } else if s >= n {
            // A slot for every state: the recursion splits off one step at a time.
            for k in 1..n {
                f(Action::Advance {
                    from: start + k - 1,
                    to: start + k,
                })?;
                f(Action::Takeshot {
                    state: start + k,
                    slot: slot + k,
                })?;
            }
            f(turn(start + n - 1))?;
            for k in (0..n - 1).rev() {
                f(Action::Restore {
                    state: start + k,
                    slot: slot + k,
                })?;
                f(turn(start + k))?;
            }
        } else if s == 1 {
            // One slot: re-advance from `start` to every step in turn, last first.
            for k in (0..n).rev() {
                if k + 1 < n {
                    f(Action::Restore { state: start, slot })?;
                }
                if k > 0 {
                    f(Action::Advance {
                        from: start,
                        to: start + k,
                    })?;
                }
                f(turn(start + k))?;
            }
        } else {
            let split = best_split(n, s);
            f(Action::Advance {
                from: start,
                to: start + split,
            })?;
            f(Action::Takeshot {
                state: start + split,
                slot: slot + 1,
            })?;
            // Reverse the tail with one slot fewer, restore, reverse the head: pushed last
            // to first.
            tasks.push(Task::Chain {
                start,
                n: split,
                s,
                slot,
                last: false,
            });
            tasks.push(Task::Emit(Action::Restore { state: start, slot }));
            tasks.push(Task::Chain {
                start: start + split,
                n: n - split,
                s: s - 1,
                slot: slot + 1,
                last,
            });
        }
    }
    f(Action::Terminate)
}

/// Pending work of [`stream`]: reverse a chain (as `revolve::reverse_chain`'s
/// arguments) or hand over one action.
enum Task {
    Chain {
        start: usize,
        n: usize,
        s: usize,
        slot: usize,
        last: bool,
    },
    Emit(Action),
}

/// The largest i in 1..n minimising i + t(i, s) + t(n − i, s − 1) (s ≥ 2). The cost is convex
/// in i (t is convex in the step count), so its slope changes sign once.
fn best_split(n: usize, s: usize) -> usize {
    if s >= n {
        return 1;
    }
    let cost = |i: usize| i as u64 + min_advances(i, s) + min_advances(n - i, s - 1);
    // Largest i with i == 1 or cost(i) ≤ cost(i − 1): true up to the answer, false after.
    let (mut lo, mut hi) = (1, n - 1);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if cost(mid) <= cost(mid - 1) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Number of stage advances (forward re-runs without taping) in an action list.
pub fn count_advances(actions: &[Action]) -> u64 {
    actions
        .iter()
        .map(|a| match *a {
            Action::Advance { from, to } => (to - from) as u64,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reversal recursion as written in the literature (Griewank & Walther), with the
    /// split found by a scan: the oracle the streamed schedule is checked against.
    fn oracle(l: usize, s: usize) -> Vec<Action> {
        fn chain(start: usize, n: usize, s: usize, slot: usize, last: bool, out: &mut Vec<Action>) {
            let turn = |stage: usize, out: &mut Vec<Action>| {
                out.push(if last && stage == start + n - 1 {
                    Action::Firsturn { stage }
                } else {
                    Action::Youturn { stage }
                })
            };
            if n == 1 {
                turn(start, out);
                return;
            }
            if s == 1 {
                for k in (0..n).rev() {
                    if k + 1 < n {
                        out.push(Action::Restore { state: start, slot });
                    }
                    if k > 0 {
                        out.push(Action::Advance {
                            from: start,
                            to: start + k,
                        });
                    }
                    turn(start + k, out);
                }
                return;
            }
            let split = if s >= n {
                1
            } else {
                (1..n)
                    .rev()
                    .min_by_key(|&i| i as u64 + min_advances(i, s) + min_advances(n - i, s - 1))
                    .unwrap_or(1)
            };
            out.push(Action::Advance {
                from: start,
                to: start + split,
            });
            out.push(Action::Takeshot {
                state: start + split,
                slot: slot + 1,
            });
            chain(start + split, n - split, s - 1, slot + 1, last, out);
            out.push(Action::Restore { state: start, slot });
            chain(start, split, s, slot, false, out);
        }
        let mut out = vec![Action::Takeshot { state: 0, slot: 0 }];
        chain(0, l, s.min(l), 0, true, &mut out);
        out.push(Action::Terminate);
        out
    }

    #[test]
    fn the_stream_is_the_recursion() {
        for l in 1..=120 {
            for s in 1..=10 {
                assert_eq!(schedule(l, s).unwrap(), oracle(l, s), "l = {l}, s = {s}");
            }
        }
    }

    #[test]
    fn best_split_is_the_largest_minimiser() {
        for n in 2..300 {
            for s in 2..12 {
                let scan = (1..n)
                    .rev()
                    .min_by_key(|&i| i as u64 + min_advances(i, s) + min_advances(n - i, s - 1))
                    .unwrap_or(1);
                let expected = if s >= n { 1 } else { scan };
                assert_eq!(best_split(n, s), expected, "n = {n}, s = {s}");
            }
        }
    }

    /// p(n, s) by its recursion, memoised; `table[n][s]`.
    fn recursion_table(max_n: usize, max_s: usize) -> Vec<Vec<u64>> {
        let mut p = vec![vec![0u64; max_s + 1]; max_n + 1];
        for n in 1..=max_n {
            for s in 1..=max_s {
                p[n][s] = if n == 1 {
                    0
                } else if s == 1 {
                    (n * (n - 1) / 2) as u64
                } else {
                    (1..n)
                        .map(|i| i as u64 + p[i][s] + p[n - i][s - 1])
                        .min()
                        .expect("n ≥ 2 has a split")
                };
            }
        }
        p
    }

    /// Replays an action list, checking it is well formed: every stage is turned exactly
    /// once, last to first; restores read a slot holding that state; at most `s` slots.
    fn replay(actions: &[Action], l: usize, s: usize) {
        let mut slots: Vec<Option<usize>> = vec![None; s];
        let mut current = Some(0usize);
        let mut next_turn = l; // stages l-1, l-2, … 0 must be turned in that order
        for a in actions {
            match *a {
                Action::Advance { from, to } => {
                    assert_eq!(current, Some(from), "{a}");
                    assert!(to > from && to < next_turn, "{a}");
                    current = Some(to);
                }
                Action::Takeshot { state, slot } => {
                    assert_eq!(current, Some(state), "{a}");
                    slots[slot] = Some(state);
                }
                Action::Restore { state, slot } => {
                    assert_eq!(slots[slot], Some(state), "{a}");
                    current = Some(state);
                }
                Action::Firsturn { stage } | Action::Youturn { stage } => {
                    assert_eq!(current, Some(stage), "{a}");
                    assert_eq!(stage + 1, next_turn, "{a}");
                    assert_eq!(matches!(a, Action::Firsturn { .. }), stage == l - 1);
                    next_turn = stage;
                    current = None;
                }
                Action::Terminate => assert_eq!(next_turn, 0),
            }
        }
        assert_eq!(actions.last(), Some(&Action::Terminate));
    }

    #[test]
    fn advances_match_closed_form_and_recursion() {
        let p = recursion_table(199, 12);
        for (l, row) in p.iter().enumerate().skip(1) {
            for (s, &recursion) in row.iter().enumerate().skip(1) {
                let actions = schedule(l, s).unwrap();
                replay(&actions, l, s);
                let got = count_advances(&actions);
                assert_eq!(got, min_advances(l, s), "t({l}, {s})");
                assert_eq!(got, recursion, "p({l}, {s})");
            }
        }
        assert_eq!(min_advances(20, 3), 45);
        assert_eq!(min_advances(6, 2), 8);
    }

    #[test]
    fn six_stages_two_snapshots_match_published_trace() {
        let actions = schedule(6, 2).unwrap();
        // The published trace names states only; slots are ours (and there are 2 of them).
        let text: Vec<String> = actions
            .iter()
            .map(|a| {
                let t = a.to_string();
                t.split(" in slot")
                    .next()
                    .unwrap_or(&t)
                    .split(" from slot")
                    .next()
                    .unwrap_or(&t)
                    .to_string()
            })
            .collect();
        for a in &actions {
            if let Action::Takeshot { slot, .. } | Action::Restore { slot, .. } = *a {
                assert!(slot < 2, "{a}");
            }
        }
        let expected = "takeshot 0, advance 3, takeshot 3, advance 5, firsturn 5, restore 3, \
            advance 4, youturn 4, restore 3, youturn 3, restore 0, advance 1, takeshot 1, \
            advance 2, youturn 2, restore 1, youturn 1, restore 0, youturn 0, terminate";
        assert_eq!(text.join(", "), expected);
    }

    #[test]
    fn enough_snapshots_is_one_extra_forward_pass() {
        for l in 1..40 {
            let actions = schedule(l, l + 3).unwrap();
            replay(&actions, l, l);
            assert_eq!(count_advances(&actions), l as u64 - 1);
        }
    }

    #[test]
    fn empty_chain_and_no_snapshots_are_errors() {
        assert_eq!(schedule(0, 3), Err(RevolveError::NoStages));
        assert_eq!(schedule(3, 0), Err(RevolveError::NoSnapshots));
    }
}
