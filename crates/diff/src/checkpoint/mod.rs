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
//! Only the candidates that can win are built (stage functions and reverses): the others are
//! ruled out from their cuts and a lower bound on their stage tapes taken from one
//! whole-function reverse, so planning a 530k-instruction program takes about a second.
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

pub use executor::{ExecBuffers, ExecError, Executor, StageProgram, StageRunner};
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

/// The memory figures of a stage chain that do not depend on the snapshot count.
#[derive(Clone, Copy, Debug)]
struct Footprint {
    /// Stored-once values + two states + two adjoint buffers, in slots.
    fixed_slots: u64,
    /// The largest snapshot, in slots.
    snapshot_slots: u64,
    /// The largest stage tape, in bytes.
    tape_bytes: u64,
}

impl Footprint {
    fn new(
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
            snapshot_slots: snapshot_slots as u64,
            tape_bytes,
        }
    }

    fn of_partition(part: &StagePartition) -> Footprint {
        Footprint::new(
            &part.states,
            &part.stored_once,
            &part.adjoint_slots,
            part.max_tape_bytes(),
        )
    }

    /// (peak, snapshot, tape) bytes with `snapshots` snapshots (memory model of [`stages`]).
    fn peak_bytes(&self, snapshots: usize) -> (u64, u64, u64) {
        let snapshot_bytes = snapshots as u64 * self.snapshot_slots * SLOT_BYTES;
        (
            self.fixed_slots * SLOT_BYTES + snapshot_bytes + self.tape_bytes,
            snapshot_bytes,
            self.tape_bytes,
        )
    }

    /// The most snapshots in `1..=n_stages` whose peak fits `budget`, if one does (the peak
    /// grows with the snapshot count).
    fn most_snapshots_within(&self, n_stages: usize, budget: u64) -> Option<usize> {
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
struct TapeBound {
    on_tape: Vec<u64>,
}

impl TapeBound {
    fn new(func: &Function) -> TapeBound {
        let out = crate::reverse::vjp(func);
        let mut on_tape = vec![0u64; func.n_values()];
        let n_float_rets = func.rets.iter().filter(|&&r| func.ty(r).is_float()).count();
        let first_inst = out.n_params;
        let forward_end = first_inst + func.n_insts();
        // `vjp` copies the instructions first, one for one, after its parameters (the
        // function's own, then one seed per float output).
        if out.n_params != func.n_params + n_float_rets || out.n_values() < forward_end {
            return TapeBound { on_tape };
        }
        for data in &out.values[forward_end..] {
            if let adjit_ir::ValueDef::Inst(inst) = &data.def {
                inst.for_each_value(|u| {
                    if (first_inst..forward_end).contains(&u.index()) {
                        let v = u.index() - first_inst + func.n_params;
                        on_tape[v] = func.values[v].ty.bytes() as u64;
                    }
                });
            }
        }
        TapeBound { on_tape }
    }

    /// The bound on the largest stage tape of `layout`, in bytes.
    fn max_stage_tape(&self, layout: &stages::Layout) -> u64 {
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
    let (peak_bytes, snapshot_bytes, tape_bytes) =
        Footprint::of_partition(&partition).peak_bytes(snapshots);
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
            let (part, snapshots) = plan_for_budget(func, budget)?;
            make_plan(func, strategy, part, snapshots)
        }
    }
}

/// Executed-instruction estimate of `snapshots` snapshots over `n_stages` stages of an
/// `n`-instruction function: t(l, s)·N/l + N.
fn estimated_work(n: usize, n_stages: usize, snapshots: usize) -> u64 {
    revolve::min_advances(n_stages, snapshots) * (n / n_stages) as u64 + n as u64
}

/// The stage chain and snapshot count of [`Strategy::CheckpointBytes`]: the least estimated
/// work among the candidate stage counts whose measured peak fits `budget`.
///
/// Building a stage chain means reversing every stage, so candidates are first sized from
/// their cuts and a lower bound on their tapes ([`TapeBound`]); that gives an upper bound on
/// their snapshot count and so a lower bound on their work. Candidates are then built
/// cheapest-bound first, each replaced by its measured figures, until a built one is no more
/// work than every remaining bound: the same choice as building them all, when the bounds
/// hold. The smallest workable budget of a refusal is likewise measured on built chains.
fn plan_for_budget(
    func: &Function,
    budget: u64,
) -> Result<(StagePartition, usize), CheckpointError> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    let n = func.n_insts();
    let mut counts: Vec<usize> =
        std::iter::successors(Some(1usize), |&l| (l * 2 <= n / 4).then_some(l * 2)).collect();
    counts.push(sqrt_stages(n));
    counts.sort_unstable();
    counts.dedup();
    let useful = stages::Liveness::new(func);
    let bound = TapeBound::new(func);
    let layouts: Vec<(stages::Layout, Footprint)> = counts
        .iter()
        .map(|&l| {
            let layout = stages::layout(func, l, &useful);
            let footprint = Footprint::new(
                &layout.states,
                &layout.stored_once,
                &layout.adjoint_slots,
                bound.max_stage_tape(&layout),
            );
            (layout, footprint)
        })
        .collect();

    // Min-heap of (work, candidate index, built chain and its snapshot count if measured).
    let mut measured_footprint: Vec<Option<Footprint>> = vec![None; layouts.len()];
    let mut built: Vec<Option<(StagePartition, usize)>> =
        (0..layouts.len()).map(|_| None).collect();
    let mut queue: BinaryHeap<Reverse<(u64, usize, bool)>> = BinaryHeap::new();
    for (i, (layout, footprint)) in layouts.iter().enumerate() {
        let l = layout.n_stages();
        if let Some(s) = footprint.most_snapshots_within(l, budget) {
            queue.push(Reverse((estimated_work(n, l, s), i, false)));
        }
    }
    while let Some(Reverse((_, i, measured))) = queue.pop() {
        if measured {
            let chosen = built[i].take().expect("a measured candidate was built");
            return Ok(chosen);
        }
        let part = stages::build(func, layouts[i].0.clone());
        let l = part.n_stages();
        let footprint = Footprint::of_partition(&part);
        measured_footprint[i] = Some(footprint);
        if let Some(s) = footprint.most_snapshots_within(l, budget) {
            queue.push(Reverse((estimated_work(n, l, s), i, true)));
            built[i] = Some((part, s));
        }
    }

    // Nothing fits: measure the smallest one-snapshot peak, lowest bound first, stopping once
    // no remaining bound is below the best measured peak.
    let mut order: Vec<usize> = (0..layouts.len()).collect();
    order.sort_by_key(|&i| (layouts[i].1.peak_bytes(1).0, i));
    let mut smallest = u64::MAX;
    for i in order {
        if layouts[i].1.peak_bytes(1).0 >= smallest {
            break;
        }
        let measured = match measured_footprint[i] {
            Some(footprint) => footprint,
            None => Footprint::of_partition(&stages::build(func, layouts[i].0.clone())),
        };
        smallest = smallest.min(measured.peak_bytes(1).0);
    }
    Err(CheckpointError::BudgetTooSmall { budget, smallest })
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
    fn tape_bound_never_exceeds_the_measured_stage_tapes() {
        for seed in 0..12 {
            let func = crate::simplify::dce(&random_function(
                seed,
                &RandomOptions {
                    n_insts: 400,
                    non_smooth: seed % 2 == 1,
                    ..RandomOptions::default()
                },
            ));
            let bound = TapeBound::new(&func);
            let useful = stages::Liveness::new(&func);
            for l in [1, 2, 5, 20, 100] {
                let layout = stages::layout(&func, l, &useful);
                let estimate = bound.max_stage_tape(&layout);
                let part = stages::build(&func, layout);
                assert!(
                    estimate <= part.max_tape_bytes(),
                    "seed {seed}, {l} stages: bound {estimate} > measured {}",
                    part.max_tape_bytes()
                );
                if l == 1 {
                    // One stage is the whole function: the bound is its tape exactly.
                    assert_eq!(estimate, crate::tape_stats(&func).bytes as u64);
                }
            }
        }
    }

    /// The byte-budget choice made by building every candidate (the rule of the module docs).
    fn exhaustive_choice(func: &Function, budget: u64) -> Option<(usize, usize, u64)> {
        let func = crate::simplify::dce(func);
        let n = func.n_insts();
        let mut counts: Vec<usize> =
            std::iter::successors(Some(1usize), |&l| (l * 2 <= n / 4).then_some(l * 2)).collect();
        counts.push(sqrt_stages(n));
        counts.sort_unstable();
        counts.dedup();
        let mut best: Option<(u64, usize, usize)> = None;
        for l in counts {
            let part = partition(&func, l);
            let l = part.n_stages();
            let Some(s) = Footprint::of_partition(&part).most_snapshots_within(l, budget) else {
                continue;
            };
            let work = estimated_work(n, l, s);
            if best.is_none_or(|b| work < b.0) {
                best = Some((work, l, s));
            }
        }
        best.map(|(work, l, s)| (l, s, work))
    }

    #[test]
    fn byte_budget_picks_what_building_every_candidate_picks() {
        let mut refused = 0;
        for seed in 0..6 {
            let func = random_function(
                seed,
                &RandomOptions {
                    n_insts: 600,
                    non_smooth: seed % 2 == 0,
                    ..RandomOptions::default()
                },
            );
            let tape = plan(&func, Strategy::Tape).unwrap().cost.peak_bytes;
            for divisor in [1, 3, 8, 30, 100] {
                let budget = tape / divisor;
                let expected = exhaustive_choice(&func, budget);
                match plan(&func, Strategy::CheckpointBytes(budget)) {
                    Ok(p) => {
                        let (l, s, work) = expected.expect("exhaustive search finds a plan too");
                        let n = p.partition.stages.iter().map(Function::n_insts).sum();
                        // Equal work; the stage count may differ only on a tie.
                        assert_eq!(
                            estimated_work(n, p.partition.n_stages(), p.snapshots),
                            work,
                            "seed {seed}, 1/{divisor}: ({}, {}) vs ({l}, {s})",
                            p.partition.n_stages(),
                            p.snapshots
                        );
                    }
                    Err(CheckpointError::BudgetTooSmall { smallest, .. }) => {
                        refused += 1;
                        assert_eq!(expected, None, "seed {seed}, 1/{divisor}");
                        assert!(plan(&func, Strategy::CheckpointBytes(smallest)).is_ok());
                        assert!(plan(&func, Strategy::CheckpointBytes(smallest - 1)).is_err());
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
        assert!(refused > 0, "some budget should be too small");
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
