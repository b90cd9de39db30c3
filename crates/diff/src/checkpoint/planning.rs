//! Planning: the stage chain and snapshot count of each [`Strategy`], the Revolve action list
//! and the plan's cost and memory figures.

use adjit_ir::Function;

use super::memory::{Footprint, TapeBound};
use super::revolve::{self, Action, RevolveError};
use super::stages::{self, partition, StagePartition};
use super::{CheckpointError, Strategy};

/// Static cost and memory figures of a plan (memory model: see [`stages`]). The one memory
/// model: `adjit bench` reports `peak_bytes`, `bytes:N` accepts a plan when `peak_bytes ≤ N`,
/// and `dump --stage schedule` prints the same sum part by part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PlanCost {
    /// `stored_once_bytes + buffer_bytes + snapshot_bytes + tape_bytes`.
    pub peak_bytes: u64,
    /// Values stored once for the whole run (inputs and long-lived values).
    pub stored_once_bytes: u64,
    /// The working state and adjoint buffers (two of each, the widest).
    pub buffer_bytes: u64,
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
    let footprint = Footprint::of_partition(&partition);
    let (peak_bytes, snapshot_bytes, tape_bytes) = footprint.peak_bytes(snapshots);
    let (stored_once_bytes, buffer_bytes) = footprint.fixed_bytes();
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
        stored_once_bytes,
        buffer_bytes,
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

/// The stage count of [`Strategy::Checkpoint`] and [`Strategy::Uniform`]: ⌈√N⌉ for N
/// instructions, but at most N / n_params. Every stage program takes the live state as its
/// parameters, and the inputs are usually live across the whole program, so with a wide input
/// (Rosenbrock with 10,000 parameters) √N stages would build ~√N programs of 10,000 parameters
/// each: more interface than program, slower than the tape and no memory saved. The bound
/// keeps the stage interfaces within the program's own size.
fn stage_count(func: &Function) -> usize {
    let n = func.n_insts();
    sqrt_stages(n).min((n / func.n_params.max(1)).max(1))
}

/// The stage counts [`Strategy::CheckpointBytes`] considers for `n` instructions:
/// 1, 2, 4, … up to n/4, and ⌈√n⌉.
fn budget_candidates(n: usize) -> Vec<usize> {
    let mut counts: Vec<usize> =
        std::iter::successors(Some(1usize), |&l| (l * 2 <= n / 4).then_some(l * 2)).collect();
    counts.push(sqrt_stages(n));
    counts.sort_unstable();
    counts.dedup();
    counts
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
    match strategy {
        Strategy::Tape => make_plan(func, strategy, partition(func, 1), 1),
        Strategy::Checkpoint { snapshots: 0 } => Err(CheckpointError::NoSnapshots),
        Strategy::Checkpoint { snapshots } => make_plan(
            func,
            strategy,
            partition(func, stage_count(func)),
            snapshots,
        ),
        Strategy::Uniform => {
            let l = stage_count(func);
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
    let counts = budget_candidates(n);
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
            "; strategy {}: {} stages, {} snapshot slots, {} values stored once",
            self.strategy,
            part.n_stages(),
            self.snapshots,
            part.stored_once.len()
        );
        let _ = writeln!(
            out,
            "; peak {} bytes = stored once {} + buffers {} + snapshots {} + largest stage tape {}",
            c.peak_bytes, c.stored_once_bytes, c.buffer_bytes, c.snapshot_bytes, c.tape_bytes
        );
        let _ = writeln!(
            out,
            "; forward insts {} ({} recomputed, {} stage advances)",
            c.forward_insts, c.recomputed_insts, c.advances
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
        let counts = budget_candidates(n);
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
    fn wide_inputs_bound_the_stage_count() {
        // 200 inputs, ~1,000 instructions: √N would give ~32 stage programs of ~200
        // parameters each; the bound keeps the interfaces within the program's size.
        let func = random_function(
            3,
            &RandomOptions {
                n_params: 200,
                n_insts: 1000,
                window: 400,
                ..RandomOptions::default()
            },
        );
        let n = crate::simplify::dce(&func).n_insts();
        for strategy in [Strategy::Checkpoint { snapshots: 2 }, Strategy::Uniform] {
            let p = plan(&func, strategy).unwrap();
            let stages = p.partition.n_stages();
            assert!(
                stages <= (n / 200).max(1),
                "{strategy}: {stages} stages for {n} insts"
            );
        }
        // Narrow programs keep √N stages.
        let narrow = random_function(
            3,
            &RandomOptions {
                n_insts: 1000,
                ..RandomOptions::default()
            },
        );
        let p = plan(&narrow, Strategy::Uniform).unwrap();
        assert!(p.partition.n_stages() >= 20, "{}", p.partition.n_stages());
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
