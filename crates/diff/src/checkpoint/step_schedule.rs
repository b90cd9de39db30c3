//! Reversal schedules over N identical steps: which states of an iterated step's run are
//! stored, as an action list generated on the fly.
//!
//! Every [`Strategy`] over N steps is an action list (the [`Action`]s Revolve uses: advance =
//! run the step, takeshot/restore = copy a state, firsturn/youturn = reverse a step), streamed
//! so that memory is O(snapshots), never O(N): `tape` is Revolve with N snapshots,
//! `checkpoint:S` Revolve with S (`min_advances(N, S)` re-advanced steps), `bytes:B` Revolve
//! with the most snapshots whose peak ([`StepMemory`]) fits in B, and `uniform` the two-level
//! √N scheme: store every ⌈√N⌉-th state on one forward pass, then the states of one segment at
//! a time (about one extra forward pass, 2√N states).
//!
//! Snapshot and advance counts are closed forms, O(1) in N, so a schedule for 10¹² steps is
//! described without being walked (the streams' own counts agree: tested). This file knows
//! nothing of steps' programs or costs: every step counts as one advance.

use std::num::NonZeroUsize;

use super::revolve::{self, min_advances, Action};
use super::{CheckpointError, Strategy};

/// The bytes one reversal over the steps holds: `fixed_bytes` whatever the schedule, plus
/// `state_bytes` per stored state. A byte budget never buys more stored states than fit in
/// `max_bytes` (a ceiling on what any machine holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepMemory {
    pub fixed_bytes: u64,
    pub state_bytes: u64,
    pub max_bytes: u64,
}

impl StepMemory {
    /// The peak with `snapshots` stored states (saturating).
    pub fn peak_bytes(&self, snapshots: usize) -> u64 {
        self.fixed_bytes
            .saturating_add(self.state_bytes.saturating_mul(snapshots as u64))
    }
}

/// How the states are stored: a Revolve action list with `snapshots` slots, or the two-level
/// √N scheme with segments of `segment` steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheme {
    Revolve { snapshots: usize },
    Uniform { segment: usize },
}

/// A reversal schedule over `n_steps` steps (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepSchedule {
    n_steps: usize,
    scheme: Scheme,
}

impl StepSchedule {
    /// The schedule of `strategy` over `n_steps` steps whose reversal needs `memory`.
    /// `checkpoint:0` is [`CheckpointError::NoSnapshots`]; a byte budget below the peak with
    /// one stored state is [`CheckpointError::BudgetTooSmall`]. More snapshots than steps are
    /// not used.
    ///
    /// ```
    /// use adjit_diff::checkpoint::{StepMemory, StepSchedule, Strategy};
    /// let n = std::num::NonZeroUsize::new(1000).unwrap();
    /// let memory = StepMemory { fixed_bytes: 100, state_bytes: 16, max_bytes: 1 << 40 };
    /// let s = StepSchedule::new(Strategy::CheckpointBytes(260), n, memory).unwrap();
    /// assert_eq!(s.snapshots(), 10); // 100 + 10 × 16 ≤ 260
    /// assert_eq!(s.advances(), adjit_diff::checkpoint::revolve::min_advances(1000, 10));
    /// ```
    pub fn new(
        strategy: Strategy,
        n_steps: NonZeroUsize,
        memory: StepMemory,
    ) -> Result<StepSchedule, CheckpointError> {
        let n_steps = n_steps.get();
        let scheme = match strategy {
            Strategy::Tape => Scheme::Revolve { snapshots: n_steps },
            Strategy::Checkpoint { snapshots: 0 } => return Err(CheckpointError::NoSnapshots),
            Strategy::Checkpoint { snapshots } => Scheme::Revolve {
                snapshots: snapshots.min(n_steps),
            },
            Strategy::CheckpointBytes(budget) => Scheme::Revolve {
                snapshots: snapshots_for_budget(budget, memory)?.min(n_steps),
            },
            Strategy::Uniform => Scheme::Uniform {
                segment: (n_steps as f64).sqrt().ceil().max(1.0) as usize,
            },
        };
        Ok(StepSchedule { n_steps, scheme })
    }

    pub fn n_steps(&self) -> usize {
        self.n_steps
    }

    /// Snapshot slots the actions use (stored states, the initial one included).
    pub fn snapshots(&self) -> usize {
        match self.scheme {
            Scheme::Revolve { snapshots } => snapshots.min(self.n_steps),
            Scheme::Uniform { segment } => uniform_slots(self.n_steps, segment),
        }
    }

    /// Steps advanced (run forward without being reversed) in the action list, re-advances
    /// included, in closed form: `min_advances(N, S)` for Revolve with S < N snapshots, N − 1
    /// with a slot for every state.
    pub fn advances(&self) -> u64 {
        let n_steps = self.n_steps;
        match self.scheme {
            Scheme::Revolve { snapshots } if snapshots >= n_steps => n_steps as u64 - 1,
            Scheme::Revolve { snapshots } => min_advances(n_steps, snapshots),
            Scheme::Uniform { segment } => {
                // One pass to the last segment's start, then each segment's inner states
                // again: (segments − 1)·segment + Σ (length − 1) = (segments − 1)·segment + N
                // − segments.
                let segments = n_steps.div_ceil(segment) as u128;
                let advances = (segments - 1) * segment as u128 + n_steps as u128 - segments;
                u64::try_from(advances).unwrap_or(u64::MAX)
            }
        }
    }

    /// The actions, handed to `f` one by one (from `takeshot 0` to `terminate`). The first
    /// error of `f` stops the stream and is returned.
    pub fn stream<E>(&self, f: &mut impl FnMut(Action) -> Result<(), E>) -> Result<(), E> {
        match self.scheme {
            Scheme::Revolve { snapshots } => revolve::stream(self.n_steps, snapshots, f),
            Scheme::Uniform { segment } => uniform_actions(self.n_steps, segment, f),
        }
    }
}

/// The most stored states whose peak fits in `budget` (and in `memory.max_bytes`).
fn snapshots_for_budget(budget: u64, memory: StepMemory) -> Result<usize, CheckpointError> {
    let smallest = memory.peak_bytes(1);
    if smallest > budget {
        return Err(CheckpointError::BudgetTooSmall { budget, smallest });
    }
    let state_bytes = memory.state_bytes.max(1);
    // A budget is a ceiling: never more states than a machine could hold.
    let slots = ((budget - memory.fixed_bytes) / state_bytes).min(memory.max_bytes / state_bytes);
    Ok(usize::try_from(slots).unwrap_or(usize::MAX))
}

/// Slots of the √N scheme: one per segment start, plus the inner states of one segment.
fn uniform_slots(n_steps: usize, segment: usize) -> usize {
    n_steps.div_ceil(segment) + segment - 1
}

/// The √N scheme as actions: store every `segment`-th state on one forward pass, then for each
/// segment, last first, restore its start, store its states and reverse them.
fn uniform_actions<E>(
    n_steps: usize,
    segment: usize,
    f: &mut impl FnMut(Action) -> Result<(), E>,
) -> Result<(), E> {
    let n_segments = n_steps.div_ceil(segment);
    f(Action::Takeshot { state: 0, slot: 0 })?;
    for b in 1..n_segments {
        f(Action::Advance {
            from: (b - 1) * segment,
            to: b * segment,
        })?;
        f(Action::Takeshot {
            state: b * segment,
            slot: b,
        })?;
    }
    for b in (0..n_segments).rev() {
        let start = b * segment;
        let end = (start + segment).min(n_steps);
        f(Action::Restore {
            state: start,
            slot: b,
        })?;
        let inner = |j: usize| n_segments + (j - start - 1);
        for j in start + 1..end {
            f(Action::Advance { from: j - 1, to: j })?;
            f(Action::Takeshot {
                state: j,
                slot: inner(j),
            })?;
        }
        for j in (start..end).rev() {
            if j + 1 < end {
                let slot = if j == start { b } else { inner(j) };
                f(Action::Restore { state: j, slot })?;
            }
            f(if j + 1 == n_steps {
                Action::Firsturn { stage: j }
            } else {
                Action::Youturn { stage: j }
            })?;
        }
    }
    f(Action::Terminate)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMORY: StepMemory = StepMemory {
        fixed_bytes: 1000,
        state_bytes: 24,
        max_bytes: 1 << 40,
    };

    fn schedule(strategy: Strategy, n: usize) -> StepSchedule {
        let n = NonZeroUsize::new(n).unwrap();
        StepSchedule::new(strategy, n, MEMORY).unwrap()
    }

    /// Walk the actions as a reversal would, checking that every state is current when it is
    /// stored, restored from the slot it was stored in, and reversed exactly once, last step
    /// first; returns (steps advanced, slots touched).
    fn walk(s: &StepSchedule) -> (u64, usize) {
        let n = s.n_steps();
        let (mut current, mut advanced, mut next_turn) = (0usize, 0u64, n);
        let mut slots: Vec<Option<usize>> = vec![None; s.snapshots()];
        let mut used = 0;
        let mut terminated = false;
        s.stream(&mut |a| {
            assert!(!terminated, "{a} after terminate");
            match a {
                Action::Advance { from, to } => {
                    assert!(from == current && to > from && to < next_turn, "{a}");
                    advanced += (to - from) as u64;
                    current = to;
                }
                Action::Takeshot { state, slot } => {
                    assert_eq!(state, current, "{a}");
                    slots[slot] = Some(state);
                    used = used.max(slot + 1);
                }
                Action::Restore { state, slot } => {
                    assert_eq!(slots[slot], Some(state), "{a}");
                    current = state;
                }
                Action::Firsturn { stage } | Action::Youturn { stage } => {
                    assert_eq!((stage, current), (next_turn - 1, next_turn - 1), "{a}");
                    assert_eq!(matches!(a, Action::Firsturn { .. }), stage + 1 == n);
                    next_turn = stage;
                }
                Action::Terminate => {
                    assert_eq!(next_turn, 0, "terminate before every step is reversed");
                    terminated = true;
                }
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        assert!(terminated);
        (advanced, used)
    }

    /// Every strategy's stream is a valid reversal whose advances and slots are the closed
    /// forms', for step counts around the segment and snapshot boundaries.
    #[test]
    fn the_closed_forms_count_the_streams() {
        for n in [1, 2, 3, 7, 16, 17, 100, 1001] {
            for strategy in [
                Strategy::Tape,
                Strategy::Uniform,
                Strategy::Checkpoint { snapshots: 1 },
                Strategy::Checkpoint { snapshots: 3 },
                Strategy::Checkpoint { snapshots: 50 },
                Strategy::CheckpointBytes(1000 + 5 * 24),
            ] {
                let s = schedule(strategy, n);
                let (advanced, used) = walk(&s);
                assert_eq!(advanced, s.advances(), "{strategy} × {n}");
                assert_eq!(used, s.snapshots(), "{strategy} × {n}");
            }
        }
        assert_eq!(schedule(Strategy::Uniform, 100).snapshots(), 10 + 9);
        assert_eq!(
            schedule(Strategy::Checkpoint { snapshots: 3 }, 20).advances(),
            45
        );
    }

    /// Budgets: the most states that fit, never more than the ceiling, and an error naming
    /// the smallest budget that works.
    #[test]
    fn a_byte_budget_buys_the_states_that_fit() {
        let bytes = |b| schedule(Strategy::CheckpointBytes(b), usize::MAX).snapshots();
        assert_eq!(bytes(1000 + 24), 1);
        assert_eq!(bytes(1000 + 24 * 7 + 23), 7);
        assert_eq!(bytes(u64::MAX), ((1u64 << 40) / 24) as usize);
        assert_eq!(
            schedule(Strategy::CheckpointBytes(u64::MAX), 5).snapshots(),
            5
        );
        let one = NonZeroUsize::MIN;
        let err = StepSchedule::new(Strategy::CheckpointBytes(1023), one, MEMORY).unwrap_err();
        assert_eq!(
            err,
            CheckpointError::BudgetTooSmall {
                budget: 1023,
                smallest: 1024
            }
        );
        let err = StepSchedule::new(Strategy::Checkpoint { snapshots: 0 }, one, MEMORY);
        assert_eq!(err, Err(CheckpointError::NoSnapshots));
    }

    /// Step counts beyond memory are described in O(1), never walked.
    #[test]
    fn huge_step_counts_are_counted_not_walked() {
        let s = schedule(Strategy::Uniform, 1_000_000_000_000);
        assert_eq!(s.snapshots(), 2_000_000 - 1);
        assert_eq!(
            s.advances(),
            999_999 * 1_000_000 + 1_000_000_000_000 - 1_000_000
        );
        let s = schedule(Strategy::Tape, usize::MAX);
        assert_eq!(
            (s.snapshots(), s.advances()),
            (usize::MAX, usize::MAX as u64 - 1)
        );
    }
}
