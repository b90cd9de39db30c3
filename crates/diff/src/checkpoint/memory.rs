//! The memory model of a stage chain: its peak under a snapshot count (stored-once values,
//! snapshots, working buffers and the largest stage tape, see [`super::stages`]), and a lower
//! bound on every stage's tape taken from the tape set of one whole-function `vjp`, so that
//! byte-budget planning can rule candidates out before building them.

use adjit_ir::Function;

use super::stages::{self, StagePartition, SLOT_BYTES};

/// The memory figures of a stage chain that do not depend on the snapshot count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Footprint {
    /// Stored-once values + two states + two adjoint buffers, in slots.
    fixed_slots: u64,
    /// Of those, the stored-once values.
    pub(crate) stored_once_slots: u64,
    /// The largest snapshot, in slots.
    snapshot_slots: u64,
    /// The largest stage tape, in bytes.
    tape_bytes: u64,
}

impl Footprint {
    pub(crate) fn new(
        states: &[Vec<adjit_ir::Value>],
        stored_once: &[adjit_ir::Value],
        adjoint_slots: &[Vec<usize>],
        tape_bytes: u64,
    ) -> Footprint {
        let max_adjoint = adjoint_slots.iter().map(Vec::len).max().unwrap_or(0);
        let max_state = states.iter().map(Vec::len).max().unwrap_or(0);
        let snapshot_slots = states
            .iter()
            .map(|state| stages::snapshot_slots(state, stored_once))
            .max()
            .unwrap_or(0);
        Footprint {
            fixed_slots: (stored_once.len() + 2 * max_state + 2 * max_adjoint) as u64,
            stored_once_slots: stored_once.len() as u64,
            snapshot_slots: snapshot_slots as u64,
            tape_bytes,
        }
    }

    pub(crate) fn of_partition(part: &StagePartition) -> Footprint {
        Footprint::new(
            &part.states,
            &part.stored_once,
            &part.adjoint_slots,
            part.max_tape_bytes(),
        )
    }

    /// Bytes of the stored-once values and of the working state and adjoint buffers.
    pub(crate) fn fixed_bytes(&self) -> (u64, u64) {
        let once = self.stored_once_slots * SLOT_BYTES;
        (once, self.fixed_slots * SLOT_BYTES - once)
    }

    /// (peak, snapshot, tape) bytes with `snapshots` snapshots (memory model of [`stages`]).
    pub(crate) fn peak_bytes(&self, snapshots: usize) -> (u64, u64, u64) {
        let snapshot_bytes = snapshots as u64 * self.snapshot_slots * SLOT_BYTES;
        (
            self.fixed_slots * SLOT_BYTES + snapshot_bytes + self.tape_bytes,
            snapshot_bytes,
            self.tape_bytes,
        )
    }

    /// The most snapshots in `1..=n_stages` whose peak fits `budget`, if one does (the peak
    /// grows with the snapshot count).
    pub(crate) fn most_snapshots_within(&self, n_stages: usize, budget: u64) -> Option<usize> {
        if self.peak_bytes(1).0 > budget {
            return None;
        }
        let (mut lo, mut hi) = (1usize, n_stages.max(1));
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if self.peak_bytes(mid).0 <= budget {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    }
}

/// A lower bound on every stage's tape, from one whole-function reverse: `on_tape[v]` is the
/// tape bytes of value `v` in `vjp(func)` (0 if the adjoint sweep never reads it).
///
/// A value of stage k that the whole sweep reads and that is not live past the stage's end
/// is read only by adjoint lines of stage k's own instructions, which the stage reverse also
/// emits (it has the whole function's activity), so it is on stage k's tape. Values live past
/// the end (other than the last stage's outputs) may be read only by later stages (where they
/// are parameters, not tape), so they are left out of the bound. The bound is only a guide: plans are accepted on the built
/// partition's measured tapes.
pub(crate) struct TapeBound {
    on_tape: Vec<u64>,
}

impl TapeBound {
    pub(crate) fn new(func: &Function) -> TapeBound {
        let (_, tape) = crate::reverse::vjp_with_tape(func);
        let mut on_tape = vec![0u64; func.n_values()];
        for v in tape.values {
            on_tape[v.index()] = func.ty(v).bytes() as u64;
        }
        TapeBound { on_tape }
    }

    /// The bound on the largest stage tape of `layout`, in bytes.
    pub(crate) fn max_stage_tape(&self, layout: &stages::Layout) -> u64 {
        (0..layout.n_stages())
            .map(|k| {
                let (start, end) = (layout.bounds[k], layout.bounds[k + 1]);
                let inside: u64 = self.on_tape[start..end].iter().sum();
                if k + 1 == layout.n_stages() {
                    // The last stage's outputs are the function's: no later stage reads them.
                    return inside;
                }
                let leaving: u64 = layout.states[k + 1]
                    .iter()
                    .filter(|v| (start..end).contains(&v.index()))
                    .map(|v| self.on_tape[v.index()])
                    .sum();
                inside - leaving
            })
            .max()
            .unwrap_or(0)
    }
}
