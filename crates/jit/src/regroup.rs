//! Regrouping: reorders a program so that runs of (nearly) equal trips that lie a few straight
//! instructions apart become adjacent, where [`find_runs`](crate::roll::find_runs) fuses them
//! into one loop.
//!
//! The case it is for: a gradient's reductions. The reverse sweep of a model fitted to data
//! sums, for each weight, one contribution per data row; each sum is a chain of `fma`s that
//! the program computes whole before starting the next, with its first terms (the sum starts
//! from a contribution, not from 0) and its last ones (rows the loop did not cover) straight
//! around it. Rolled one by one, a 3→8→1 MLP's weight gradient is 40 loops, every one bound by
//! the latency of its chain. Side by side they are one loop whose iteration advances every
//! chain: the chains overlap, and each is still summed in its own order.
//!
//! A *group* is a sequence of runs (not nests) in program order, each with at most
//! [`MAX_EXCESS`] more trips than the group's fewest, `T`. A group *peels* its first `P ≤`
//! [`MAX_PEEL`] iterations. Every instruction from the group's first run to its last falls in
//! one of three parts:
//!
//! - the *prologue*: the runs' first `P` iterations, and the straight instructions between the
//!   runs (the *gaps*) that read only the prologue and values before the group (a sum's first
//!   terms);
//! - the *loop*: iterations `P .. T` of every run;
//! - the *epilogue*: the runs' iterations from `T` on, and every other gap instruction (the
//!   end of a sum, after its run's last iteration).
//!
//! The program becomes the prologue (in program order), the loop (run after run, each whole:
//! `find_runs` then sees adjacent runs of equal trips and fuses them) and the epilogue (in
//! program order). A run joins a group only when this order computes every operand before its
//! use: it reads earlier runs of the group only at its own iteration, and the prologue only
//! where the prologue comes first. Regrouping checks the final order too and gives up on a
//! mistake. No instruction changes, so every value is computed exactly as before: it moves
//! work, it never re-associates it.

use std::ops::Range;

use adjit_ir::{Function, Value};
use rustc_hash::FxHashMap;

use crate::roll::{Run, Source};

/// Most iterations of a run of a group outside the group's loop, before it (peeled, or to
/// align the run with the others) or after it (beyond the shortest run).
pub(crate) const MAX_OUTSIDE: usize = 3;

/// Most iterations a group peels in front of its loop ([`Group::grow`] tries each).
pub(crate) const MAX_PEEL: usize = 2;

/// Where an instruction of a group goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Prologue,
    Loop,
    Epilogue,
}

/// Where each run of a group starts and how long the loop runs.
#[derive(Clone, Debug)]
struct Layout {
    /// Per member, its first iteration in the loop: the loop's trip `i` runs iteration
    /// `first + i` of it.
    firsts: Vec<usize>,
    /// Trips of the loop.
    trips: usize,
}

/// A group being formed (see the module docs).
struct Group {
    /// The runs (indices into the run list).
    members: Vec<usize>,
    /// The value ranges of the members, in order.
    ranges: Vec<Range<usize>>,
    layout: Layout,
    /// The part of every gap instruction.
    gaps: FxHashMap<u32, Part>,
}

impl Group {
    fn start(&self) -> usize {
        self.ranges[0].start
    }

    /// The member holding value `v`, if one does.
    fn member_of(&self, v: usize) -> Option<usize> {
        let k = self
            .ranges
            .partition_point(|r| r.start <= v)
            .checked_sub(1)?;
        self.ranges[k].contains(&v).then_some(k)
    }

    /// The part of value `v` under `layout` (members beyond [`Group::members`] have no
    /// value yet), with `gap` the parts of a gap not yet added; `None` before the group.
    fn part(
        &self,
        runs: &[Run],
        layout: &Layout,
        v: usize,
        gap: &FxHashMap<u32, Part>,
    ) -> Option<Part> {
        if v < self.start() {
            return None;
        }
        if let Some(m) = self.member_of(v) {
            // A member covers its range with its segments; were one not to, nothing could
            // be placed before that value.
            let Some((j, _)) = runs[self.members[m]].iteration_of(v) else {
                return Some(Part::Epilogue);
            };
            let first = layout.firsts[m];
            return Some(if j < first {
                Part::Prologue
            } else if j < first + layout.trips {
                Part::Loop
            } else {
                Part::Epilogue
            });
        }
        let v = v as u32;
        self.gaps.get(&v).or_else(|| gap.get(&v)).copied()
    }

    /// The layout with `b` added, from where `b` reads the members (at its own trip of the
    /// loop), if one fits.
    fn layout_with(&self, runs: &[Run], b: &Run, lead: usize) -> Option<Layout> {
        // Where b's loop must start for each member it reads: iteration j of b reads
        // iteration j + d of member m, so b starts at m's first − d.
        let mut want: Option<i64> = None;
        for src in b.sources.iter().flatten() {
            let Source::Affine { base, step } = *src else {
                continue;
            };
            let Some(m) = self.member_of(base as usize) else {
                continue;
            };
            let member = &runs[self.members[m]];
            let (d, period) = member.iteration_of(base as usize)?;
            if step != period as i64 || b.trips + d > member.trips {
                return None;
            }
            let first = self.layout.firsts[m] as i64 - d as i64;
            if want.is_some_and(|w| w != first) {
                return None;
            }
            want = Some(first);
        }
        let first = want.unwrap_or(lead as i64);
        // A negative start moves every member's start later by as much.
        let shift = (-first).max(0) as usize;
        let mut firsts: Vec<usize> = self.layout.firsts.iter().map(|f| f + shift).collect();
        firsts.push((first + shift as i64) as usize);
        let mut all = self.members.iter().map(|&m| &runs[m]).chain([b]);
        let trips = firsts
            .iter()
            .zip(all.clone())
            .map(|(&f, r)| r.trips.checked_sub(f))
            .min()??;
        let fits = firsts
            .iter()
            .zip(&mut all)
            .all(|(&f, r)| f <= MAX_OUTSIDE && r.trips - f - trips <= MAX_OUTSIDE);
        (fits && trips >= 2).then_some(Layout { firsts, trips })
    }

    /// `b`, the run after the last member, with the gap before it, if it may join: the new
    /// layout and the gap's parts (its instructions that read only the prologue and values
    /// before the group go to the prologue, the others to the epilogue).
    fn admit(
        &self,
        func: &Function,
        runs: &[Run],
        b: &Run,
        gap: Range<usize>,
        lead: usize,
    ) -> Option<(Layout, FxHashMap<u32, Part>)> {
        if b.outer.is_some() {
            return None;
        }
        let layout = self.layout_with(runs, b, lead)?;
        let mut parts: FxHashMap<u32, Part> = FxHashMap::default();
        for v in gap {
            let mut part = Part::Prologue;
            if let Some(inst) = func.inst(Value::new(v)) {
                inst.for_each_value(|a| {
                    if self
                        .part(runs, &layout, a.index(), &parts)
                        .is_some_and(|p| p != Part::Prologue)
                    {
                        part = Part::Epilogue;
                    }
                });
            }
            parts.insert(v as u32, part);
        }
        let ok = b
            .sources
            .iter()
            .flatten()
            .all(|&src| self.source_ok(runs, &layout, b, src, &parts));
        ok.then_some((layout, parts))
    }

    /// Whether operand rule `src` of `b` reads values placed before it: the members only at
    /// `b`'s own trip (fixed by [`Group::layout_with`]), gap instructions only in the prologue
    /// and one value for every iteration, anything before the group.
    fn source_ok(
        &self,
        runs: &[Run],
        layout: &Layout,
        b: &Run,
        src: Source,
        gap: &FxHashMap<u32, Part>,
    ) -> bool {
        let in_prologue = |v: u32| {
            self.part(runs, layout, v as usize, gap)
                .is_none_or(|p| p == Part::Prologue)
        };
        match src {
            Source::Same { .. } => true,
            // Iteration 0 reads `init`, in the prologue or in the loop's first trip.
            Source::Carried { init, .. } => in_prologue(init),
            Source::Affine { base, step } => {
                let base = base as usize;
                if self.member_of(base).is_some() {
                    return true; // checked by `layout_with`
                }
                if base >= self.start() {
                    // In a gap: a fixed value computed before the loop.
                    return step == 0 && in_prologue(base as u32);
                }
                // Before the group: every iteration's value must be.
                let last = base as i64 + step * (b.trips as i64 - 1);
                last < self.start() as i64
            }
        }
    }

    /// The group of the runs from `runs[first]` on, as many as may join, its first run's
    /// loop starting at iteration `lead`.
    fn grow(func: &Function, runs: &[Run], first: usize, lead: usize) -> Group {
        let mut group = Group {
            members: vec![first],
            ranges: vec![runs[first].range()],
            layout: Layout {
                firsts: vec![lead],
                trips: runs[first].trips.saturating_sub(lead),
            },
            gaps: FxHashMap::default(),
        };
        for k in first + 1..runs.len() {
            let gap = runs[k - 1].range().end..runs[k].start;
            let Some((layout, parts)) = group.admit(func, runs, &runs[k], gap, lead) else {
                break;
            };
            group.members.push(k);
            group.ranges.push(runs[k].range());
            group.layout = layout;
            group.gaps.extend(parts);
        }
        group
    }

    /// Append the group's instructions in their new order (value indices) to `order`, and
    /// return where in it the loop lies.
    fn order(&self, runs: &[Run], order: &mut Vec<u32>) -> Range<usize> {
        let span = self.start()..self.ranges[self.ranges.len() - 1].end;
        let none = FxHashMap::default();
        let part = |v: usize| self.part(runs, &self.layout, v, &none);
        order.extend(
            span.clone()
                .filter(|&v| part(v) == Some(Part::Prologue))
                .map(|v| v as u32),
        );
        let first = order.len();
        for (&m, &f) in self.members.iter().zip(&self.layout.firsts) {
            for seg in &runs[m].segments {
                let from = seg.start + seg.period * f;
                order.extend((from..from + seg.period * self.layout.trips).map(|v| v as u32));
            }
        }
        let loop_end = order.len();
        order.extend(
            span.filter(|&v| part(v) == Some(Part::Epilogue))
                .map(|v| v as u32),
        );
        first..loop_end
    }
}

/// How [`regroup`] reorders a program: the values from `from` on (the first group's first)
/// go in `order`, each named by its index in the old program; the values before stay.
pub(crate) struct Regrouping {
    pub from: usize,
    pub order: Vec<u32>,
    /// The value ranges of the new program where carried values may start anywhere before
    /// their run (sorted): each group's loop, and the earlier such ranges that lie outside
    /// every group, where nothing moved.
    pub loose: Vec<Range<usize>>,
}

/// The order that puts each group of `runs` (the runs of `func`, in order) together (see the
/// module docs), or `None` when no two runs form a group. `loose` are the ranges of `func`
/// where carried values may start anywhere, from an earlier regrouping.
pub(crate) fn regroup(func: &Function, runs: &[Run], loose: &[Range<usize>]) -> Option<Regrouping> {
    let mut groups: Vec<Group> = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        if runs[i].outer.is_some() {
            i += 1;
            continue;
        }
        // The lead that lets the most runs join (the least, among equals).
        let group = (1..=MAX_PEEL)
            .map(|lead| Group::grow(func, runs, i, lead))
            .fold(Group::grow(func, runs, i, 0), |best, g| {
                if g.members.len() > best.members.len() {
                    g
                } else {
                    best
                }
            });
        i += group.members.len();
        if group.members.len() >= 2 {
            groups.push(group);
        }
    }
    let from = groups.first()?.start();
    let mut order: Vec<u32> = Vec::with_capacity(func.n_values() - from);
    let mut loops = Vec::with_capacity(groups.len());
    let mut cursor = from;
    for group in &groups {
        order.extend((cursor..group.start()).map(|v| v as u32));
        let at = group.order(runs, &mut order);
        loops.push(from + at.start..from + at.end);
        cursor = group.ranges[group.ranges.len() - 1].end;
    }
    order.extend((cursor..func.n_values()).map(|v| v as u32));
    let spans: Vec<Range<usize>> = groups
        .iter()
        .map(|g| g.start()..g.ranges[g.ranges.len() - 1].end)
        .collect();
    let apart = |r: &Range<usize>| spans.iter().all(|s| r.end <= s.start || s.end <= r.start);
    loops.extend(loose.iter().filter(|r| apart(r)).cloned());
    loops.sort_unstable_by_key(|r| r.start);
    operands_first(func, from, &order).then_some(Regrouping {
        from,
        order,
        loose: loops,
    })
}

/// Whether `order` holds the values of `func` from `from` on, each once, and puts every instruction
/// after the instructions it reads (what the rules above guarantee; checked, so that a
/// mistake costs fusion, never a result).
fn operands_first(func: &Function, from: usize, order: &[u32]) -> bool {
    if order.len() != func.n_values() - from {
        return false;
    }
    let mut place = vec![u32::MAX; order.len()];
    for (k, &v) in order.iter().enumerate() {
        match (v as usize)
            .checked_sub(from)
            .and_then(|i| place.get_mut(i))
        {
            Some(slot) if *slot == u32::MAX => *slot = k as u32,
            _ => return false, // not in the tail, or twice
        }
    }
    order.iter().enumerate().all(|(k, &v)| {
        let mut before = true;
        if let Some(inst) = func.inst(Value::new(v as usize)) {
            inst.for_each_value(|a| {
                let a = a.index();
                before &= a < from || (place[a - from] as usize) < k;
            });
        }
        before
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_ir::{Builder, Type};

    #[test]
    fn an_order_that_reads_a_value_before_its_definition_is_refused() {
        let mut b = Builder::new("chain");
        let x = b.param(Type::F64, "x");
        let y = b.mul(x, 2.0);
        let z = b.add(y, 1.0);
        let func = b.finish(&[z]);
        let (y, z) = (y.index() as u32, z.index() as u32);
        let from = func.n_params;
        assert!(operands_first(&func, from, &[y, z]));
        assert!(!operands_first(&func, from, &[z, y]));
        assert!(!operands_first(&func, from, &[y]));
        assert!(!operands_first(&func, from, &[y, y]));
    }

    #[test]
    fn a_tail_reordered_in_place_computes_the_same_and_its_undo_restores_the_program() {
        // Two independent chains after a shared head; the tail swaps them.
        let mut b = Builder::new("two");
        let x = b.param(Type::F64, "x");
        let h = b.mul(x, 3.0);
        let a1 = b.add(h, 1.0);
        let a2 = b.mul(a1, a1);
        let b1 = b.sub(h, 2.0);
        let b2 = b.mul(b1, x);
        let func = b.finish(&[a2, b2, h]);
        let from = a1.index();
        let order: Vec<u32> = [b1, b2, a1, a2].iter().map(|v| v.index() as u32).collect();
        assert!(operands_first(&func, from, &order));
        let mut moved = func.clone();
        let undo = crate::schedule::reorder_tail(&mut moved, from, &order);
        adjit_ir::verify(&moved).expect("the reordered program verifies");
        assert_ne!(moved.to_string(), func.to_string());
        let at = [0.7];
        assert_eq!(
            adjit_ir::interpret(&moved, &at).unwrap(),
            adjit_ir::interpret(&func, &at).unwrap()
        );
        crate::schedule::reorder_tail(&mut moved, from, &undo);
        assert_eq!(moved.to_string(), func.to_string());
    }
}
