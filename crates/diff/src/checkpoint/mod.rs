//! Recompute-checkpointing for reverse mode: trade memory for recomputation.
//!
//! A whole-function reverse sweep keeps every intermediate value (the tape). A checkpointed
//! plan instead cuts the program into a chain of stages ([`stages`]), stores only some stage
//! boundary states (snapshots), and re-runs stages forward from the nearest snapshot when their
//! values are needed; Revolve ([`revolve`]) says which states to store and when. Each stage is
//! an ordinary IR function F_k, and its reverse is `vjp(F_k)` (taped within the stage), so
//! generated code stays O(program size): one forward and one reverse function per stage,
//! driven at run time by the [`executor`].
//!
//! Stage counts: [`Strategy::Checkpoint`] and [`Strategy::Uniform`] use l = ⌈√N⌉ stages for N
//! instructions (Uniform stores every boundary: one extra forward pass).
//! [`Strategy::CheckpointBytes`] tries l ∈ {1, 2, 4, …, N/4} ∪ {⌈√N⌉}, for each the most snapshots
//! whose peak fits the budget, and keeps the plan with the fewest executed instructions
//! (estimated as t(l, s)·N/l + N); [`Strategy::Tape`] is one stage, nothing recomputed.
//!
//! This module never depends on a code generator and never changes the instructions it is
//! given; it assumes a verified function.

pub mod executor;
pub mod interp_runner;
pub mod revolve;
pub mod stages;

use std::fmt;
use std::str::FromStr;

use adjit_ir::Function;

pub use executor::{ExecError, Executor, StageRunner};
pub use interp_runner::InterpRunner;
pub use revolve::{Action, RevolveError};
pub use stages::{partition, StagePartition, SLOT_BYTES};

/// How reverse mode obtains the primal values its adjoint lines read.
///
/// Text forms (`FromStr`/`Display`): `tape`, `checkpoint:S`, `bytes:N`, `uniform`.
///
/// ```
/// use adjit_diff::checkpoint::Strategy;
/// let s: Strategy = "checkpoint:4".parse().unwrap();
/// assert_eq!(s, Strategy::Checkpoint { snapshots: 4 });
/// assert_eq!(s.to_string(), "checkpoint:4");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Store every needed intermediate.
    #[default]
    Tape,
    /// Binomial (Revolve) checkpointing with `snapshots` stored states.
    Checkpoint { snapshots: usize },
    /// The cheapest checkpointing schedule whose peak memory fits the budget (bytes).
    CheckpointBytes(u64),
    /// About √N stages, every stage boundary stored.
    Uniform,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Tape => write!(f, "tape"),
            Strategy::Checkpoint { snapshots } => write!(f, "checkpoint:{snapshots}"),
            Strategy::CheckpointBytes(bytes) => write!(f, "bytes:{bytes}"),
            Strategy::Uniform => write!(f, "uniform"),
        }
    }
}

/// A strategy string that does not parse; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseStrategyError(pub String);

impl FromStr for Strategy {
    type Err = ParseStrategyError;

    /// Parses `tape`, `checkpoint:S` (S ≥ 1), `bytes:N` or `uniform`.
    fn from_str(text: &str) -> Result<Strategy, ParseStrategyError> {
        let text = text.trim();
        let count = |what: &str, n: &str| -> Result<u64, ParseStrategyError> {
            n.trim().parse::<u64>().map_err(|_| {
                ParseStrategyError(format!(
                    "`{text}`: {what} must be a whole number, found `{n}`"
                ))
            })
        };
        match text.split_once(':') {
            None if text == "tape" => Ok(Strategy::Tape),
            None if text == "uniform" => Ok(Strategy::Uniform),
            Some(("checkpoint", n)) => {
                let snapshots = count("the snapshot count", n)?;
                if snapshots == 0 {
                    return Err(ParseStrategyError(format!(
                        "`{text}`: checkpointing needs at least 1 snapshot"
                    )));
                }
                let snapshots = usize::try_from(snapshots)
                    .map_err(|_| ParseStrategyError(format!("`{text}`: too many snapshots")))?;
                Ok(Strategy::Checkpoint { snapshots })
            }
            Some(("bytes", n)) => Ok(Strategy::CheckpointBytes(count("the byte budget", n)?)),
            _ => Err(ParseStrategyError(format!(
                "unknown strategy `{text}`; expected tape, checkpoint:S, bytes:N or uniform"
            ))),
        }
    }
}

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpointing needs at least one snapshot")]
    NoSnapshots,
    #[error("no checkpointing schedule fits in {budget} bytes; the smallest that works needs {smallest} bytes")]
    BudgetTooSmall { budget: u64, smallest: u64 },
}

/// Static cost and memory figures of a plan (memory model: see [`stages`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PlanCost {
    /// Stored-once values + snapshots + working state and adjoint buffers + the largest stage's
    /// tape.
    pub peak_bytes: u64,
    /// Bytes of the snapshots alone (`snapshots × largest snapshot`).
    pub snapshot_bytes: u64,
    /// Bytes of the largest stage's tape.
    pub tape_bytes: u64,
    /// Forward instructions executed per gradient: advances (recomputation) plus the taped
    /// forward inside every stage's reverse.
    pub forward_insts: u64,
    /// Of those, instructions re-run without taping.
    pub recomputed_insts: u64,
    /// Stage advances (Revolve's t(l, s) for this chain).
    pub advances: u64,
}

/// A checkpointing plan: the stage chain, the snapshot count and the action list.
#[derive(Clone, Debug)]
pub struct Plan {
    pub strategy: Strategy,
    pub partition: StagePartition,
    pub snapshots: usize,
    pub actions: Vec<Action>,
    pub cost: PlanCost,
}

/// Peak bytes of `snapshots` snapshots over `part` (memory model of [`stages`]).
fn peak_bytes(func: &Function, part: &StagePartition, snapshots: usize) -> (u64, u64, u64) {
    let _ = func;
    let max_adjoint = part.adjoint_slots.iter().map(Vec::len).max().unwrap_or(0);
    let slots = part.stored_once.len() + 2 * part.max_state_len() + 2 * max_adjoint;
    let snapshot_bytes = (snapshots * part.max_snapshot_len()) as u64 * SLOT_BYTES;
    let tape_bytes = part.max_tape_bytes();
    (
        slots as u64 * SLOT_BYTES + snapshot_bytes + tape_bytes,
        snapshot_bytes,
        tape_bytes,
    )
}

fn make_plan(
    func: &Function,
    strategy: Strategy,
    partition: StagePartition,
    snapshots: usize,
) -> Result<Plan, CheckpointError> {
    let l = partition.n_stages();
    let snapshots = snapshots.min(l);
    let actions = revolve::schedule(l, snapshots).map_err(|e| match e {
        RevolveError::NoSnapshots | RevolveError::NoStages => CheckpointError::NoSnapshots,
    })?;
    let (peak_bytes, snapshot_bytes, tape_bytes) = peak_bytes(func, &partition, snapshots);
    let mut recomputed = 0u64;
    for a in &actions {
        if let Action::Advance { from, to } = *a {
            recomputed += (from..to)
                .map(|k| partition.stage_insts(k) as u64)
                .sum::<u64>();
        }
    }
    let cost = PlanCost {
        peak_bytes,
        snapshot_bytes,
        tape_bytes,
        forward_insts: recomputed + func.n_insts() as u64,
        recomputed_insts: recomputed,
        advances: revolve::count_advances(&actions),
    };
    Ok(Plan {
        strategy,
        partition,
        snapshots,
        actions,
        cost,
    })
}

/// ⌈√n⌉, at least 1.
fn sqrt_stages(n: usize) -> usize {
    let mut r = (n as f64).sqrt() as usize;
    while r * r < n {
        r += 1;
    }
    r.max(1)
}

/// Plan the checkpointed reverse of `func` under `strategy` (see the module documentation for
/// the stage counts). The plan's stages partition `func` after dead-code elimination
/// ([`crate::simplify::dce`]); its signature is unchanged.
///
/// ```
/// use adjit_diff::checkpoint::{plan, Strategy};
/// let func = adjit_ir::random::random_function(1, &Default::default());
/// let p = plan(&func, Strategy::Checkpoint { snapshots: 2 }).unwrap();
/// assert_eq!(p.snapshots, 2);
/// assert!(p.cost.recomputed_insts > 0);
/// ```
pub fn plan(func: &Function, strategy: Strategy) -> Result<Plan, CheckpointError> {
    // Dead instructions get no adjoint lines in `vjp` either, so removing them first changes
    // no gradient bit, and stops the stages from recomputing them.
    let live = crate::simplify::dce(func);
    let func = &live;
    let n = func.n_insts();
    match strategy {
        Strategy::Tape => make_plan(func, strategy, partition(func, 1), 1),
        Strategy::Checkpoint { snapshots: 0 } => Err(CheckpointError::NoSnapshots),
        Strategy::Checkpoint { snapshots } => {
            make_plan(func, strategy, partition(func, sqrt_stages(n)), snapshots)
        }
        Strategy::Uniform => {
            let l = sqrt_stages(n);
            make_plan(func, strategy, partition(func, l), l)
        }
        Strategy::CheckpointBytes(budget) => {
            let mut counts: Vec<usize> =
                std::iter::successors(Some(1usize), |&l| (l * 2 <= n / 4).then_some(l * 2))
                    .collect();
            counts.push(sqrt_stages(n));
            counts.sort_unstable();
            counts.dedup();
            let mut best: Option<(u64, StagePartition, usize)> = None;
            let mut smallest = u64::MAX;
            for l in counts {
                let part = partition(func, l);
                let l = part.n_stages();
                smallest = smallest.min(peak_bytes(func, &part, 1).0);
                // Largest s in 1..=l that fits (peak grows with s).
                if peak_bytes(func, &part, 1).0 > budget {
                    continue;
                }
                let (mut lo, mut hi) = (1usize, l);
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if peak_bytes(func, &part, mid).0 <= budget {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                let estimate = revolve::min_advances(l, lo) * (n / l) as u64 + n as u64;
                if best.as_ref().is_none_or(|b| estimate < b.0) {
                    best = Some((estimate, part, lo));
                }
            }
            match best {
                Some((_, part, s)) => make_plan(func, strategy, part, s),
                None => Err(CheckpointError::BudgetTooSmall { budget, smallest }),
            }
        }
    }
}

impl Plan {
    /// A readable description: stages (instructions, cut widths), snapshot sizes, memory and
    /// cost figures, then the action list. This is `adjit dump --stage schedule`.
    pub fn describe(&self) -> String {
        use std::fmt::Write;
        let part = &self.partition;
        let mut out = String::new();
        let c = &self.cost;
        let _ = writeln!(
            out,
            "; strategy {}: {} stages, {} snapshots, {} stored once",
            self.strategy,
            part.n_stages(),
            self.snapshots,
            part.stored_once.len()
        );
        let _ = writeln!(
            out,
            "; peak {} bytes (snapshots {}, largest stage tape {}), forward insts {} ({} recomputed, {} stage advances)",
            c.peak_bytes, c.snapshot_bytes, c.tape_bytes, c.forward_insts, c.recomputed_insts, c.advances
        );
        for k in 0..part.n_stages() {
            let _ = writeln!(
                out,
                "stage {k}: insts {}..{} ({}), in {} (snapshot {}), out {}",
                part.bounds[k],
                part.bounds[k + 1],
                part.stage_insts(k),
                part.states[k].len(),
                part.snapshot_len(k),
                part.states[k + 1].len()
            );
        }
        let actions: Vec<String> = self.actions.iter().map(|a| a.to_string()).collect();
        let _ = writeln!(out, "actions: {}", actions.join(", "));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_ir::random::{random_function, RandomOptions};

    #[test]
    fn strategy_text_round_trips() {
        for s in [
            Strategy::Tape,
            Strategy::Uniform,
            Strategy::Checkpoint { snapshots: 3 },
            Strategy::CheckpointBytes(123456),
        ] {
            assert_eq!(s.to_string().parse::<Strategy>(), Ok(s));
        }
        for bad in [
            "",
            "tapes",
            "checkpoint:",
            "checkpoint:x",
            "bytes:-1",
            "uniform:2",
        ] {
            assert!(bad.parse::<Strategy>().is_err(), "{bad}");
        }
    }

    #[test]
    fn byte_budget_fits_or_names_the_smallest_budget() {
        let func = random_function(
            5,
            &RandomOptions {
                n_insts: 800,
                ..RandomOptions::default()
            },
        );
        let tape = plan(&func, Strategy::Tape).unwrap().cost;
        for divisor in [1, 2, 5, 10, 20] {
            let budget = tape.peak_bytes / divisor;
            match plan(&func, Strategy::CheckpointBytes(budget)) {
                Ok(p) => assert!(
                    p.cost.peak_bytes <= budget,
                    "1/{divisor}: {}",
                    p.cost.peak_bytes
                ),
                Err(CheckpointError::BudgetTooSmall { smallest, .. }) => {
                    assert!(smallest > budget);
                    let p = plan(&func, Strategy::CheckpointBytes(smallest)).unwrap();
                    assert!(p.cost.peak_bytes <= smallest);
                }
                Err(e) => panic!("{e}"),
            }
        }
        let err = plan(&func, Strategy::CheckpointBytes(10)).unwrap_err();
        let CheckpointError::BudgetTooSmall { smallest, .. } = err else {
            panic!("{err}")
        };
        assert!(plan(&func, Strategy::CheckpointBytes(smallest)).is_ok());
        assert!(plan(&func, Strategy::CheckpointBytes(smallest - 1)).is_err());
    }

    #[test]
    fn more_snapshots_never_recompute_more() {
        let func = random_function(
            8,
            &RandomOptions {
                n_insts: 1500,
                ..RandomOptions::default()
            },
        );
        let mut previous = u64::MAX;
        for s in 1..12 {
            let c = plan(&func, Strategy::Checkpoint { snapshots: s })
                .unwrap()
                .cost;
            assert!(c.recomputed_insts <= previous);
            previous = c.recomputed_insts;
        }
        let uniform = plan(&func, Strategy::Uniform).unwrap().cost;
        let tape = plan(&func, Strategy::Tape).unwrap().cost;
        assert_eq!(tape.recomputed_insts, 0);
        assert!(uniform.recomputed_insts < func.n_insts() as u64);
        assert!(
            uniform.tape_bytes < tape.tape_bytes / 4,
            "{uniform:?} vs {tape:?}"
        );
    }
}
