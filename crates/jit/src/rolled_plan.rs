//! The plan of a rolled program ([`adjit_ir::Rolled`]) for [`crate::compile_rolled`], made
//! per template and never per value: which template positions are live, where the values read
//! outside their own iteration live in `work`, and how each returned value reaches `outputs`.
//!
//! The rolled lowering ([`crate::lower::rolled`]) emits every loop of the program as one
//! counted loop (a loop of one trip as straight code) in a single function, in program order.
//! A value read by a later loop at an index that moves with that loop's counter, or read at an
//! iteration other than its loop's last, needs memory; everything else passes in registers (a
//! loop's last iteration's values dominate all code after the loop). So:
//!
//! - **Liveness** is per template position: a position is live when a return or a live
//!   position reads some iteration of it (marked through the [`Source`] rules, to a fixed
//!   point within a loop for carried values).
//! - **Homes**: a position read at a counter-moving index whose step is a multiple of its
//!   loop's period, or read at a fixed iteration before the last, gets an array of one slot
//!   per trip; a loop read at any other stride (walking across positions, a loop of one trip
//!   read as a vector) gets a *dense* home, every position in value order; so do all loops
//!   a read at a moving index walks across (a reverse sweep reading a forward loop that an
//!   exception interrupts), one after the other as their values are.
//! - **Returns**: a returned position whose iterations go to outputs `first + step·j` (one or
//!   several such streams) is stored in the loop; parameters are copied first; any other
//!   returned value is copied after the last loop, from its register or its home.
//!
//! [`RolledPlan::new`] refuses (`None`) what this form does not hold, and the caller compiles
//! the expanded program instead: a read whose indices cross from the parameters into the
//! loops, and more than [`MAX_LATE_COPIES`] scattered returns.

use adjit_ir::roll::Source;
use adjit_ir::Rolled;

/// Most returned values copied one by one after the last loop; past it the expanded program
/// is compiled (its plan stores each at its definition).
pub(crate) const MAX_LATE_COPIES: usize = 4096;

/// Where one template position's values live in `work`: iteration `j` in slot
/// `first + stride·j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Home {
    pub first: u32,
    pub stride: u32,
}

/// One output stream of a template position: iteration `j` is stored to output
/// `first + step·j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stream {
    pub first: usize,
    pub step: i64,
}

/// Where a value read at a fixed place comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Parameter `index` (in `inputs`).
    Param(usize),
    /// The value of loop `k`'s position `t` in iteration `j`.
    Loop { k: usize, t: usize, j: usize },
}

/// The storage decisions for one rolled program.
#[derive(Clone, Debug)]
pub(crate) struct RolledPlan {
    /// Per loop, per template position: whether any return depends on it.
    pub live: Vec<Vec<bool>>,
    /// Per loop, per template position: its home, if it has one.
    pub homes: Vec<Vec<Option<Home>>>,
    /// Number of 8-byte workspace slots one call needs.
    pub n_slots: usize,
    /// Per loop, per template position: the output streams it is stored to in the loop.
    pub streams: Vec<Vec<Vec<Stream>>>,
    /// `(place, output)` of returned parameters and of returns copied after the last loop.
    pub copies: Vec<(Place, usize)>,
}

impl RolledPlan {
    /// The plan of `rolled` (verified), or `None` when it has a read or returns this form
    /// does not hold (see the module docs).
    pub fn new(rolled: &Rolled) -> Option<RolledPlan> {
        let loops = rolled.loops();
        let n_params = rolled.n_params();
        let place = |v: usize| -> Option<Place> {
            if v < n_params {
                return Some(Place::Param(v));
            }
            let (k, t, j) = rolled.locate(v)?;
            Some(Place::Loop { k, t, j })
        };
        // The loops every value of an affine read falls in (`None`: the parameters), if they
        // are all parameters or all loops' values.
        let span_of = |base: u32, step: i64, trips: usize| -> Option<Option<(usize, usize)>> {
            let first = i64::from(base);
            let last = first.checked_add(step.checked_mul(trips as i64 - 1)?)?;
            let (lo, hi) = (first.min(last) as usize, first.max(last) as usize);
            match (place(lo)?, place(hi)?) {
                (Place::Param(_), Place::Param(_)) => Some(None),
                (Place::Loop { k, .. }, Place::Loop { k: k2, .. }) => Some(Some((k, k2))),
                _ => None,
            }
        };

        // Liveness, loops last to first; within a loop to a fixed point (carried reads go
        // from a position to any position of the previous iteration).
        let mut live: Vec<Vec<bool>> = loops.iter().map(|l| vec![false; l.period()]).collect();
        for r in &rolled.header().rets {
            if let Some(Place::Loop { k, t, .. }) = place(r.index()) {
                live[k][t] = true;
            }
        }
        for k in (0..loops.len()).rev() {
            let l = &loops[k];
            let mut changed = true;
            while changed {
                changed = false;
                for t in (0..l.period()).rev() {
                    if !live[k][t] {
                        continue;
                    }
                    for &src in &l.sources[t] {
                        match src {
                            Source::Same { pos } | Source::Carried { pos, .. } => {
                                let pos = pos as usize;
                                changed |= !live[k][pos];
                                live[k][pos] = true;
                            }
                            Source::Affine { .. } => {}
                        }
                    }
                }
            }
            // Reads of earlier loops, once the loop's live positions are known.
            for t in 0..l.period() {
                if !live[k][t] {
                    continue;
                }
                for &src in &l.sources[t] {
                    let (base, step, trips) = match src {
                        Source::Same { .. } => continue,
                        Source::Carried { init, .. } => (init, 0, 1),
                        Source::Affine { base, step } => (base, step, l.trips),
                    };
                    let Some(Some((from, to))) = span_of(base, step, trips) else {
                        continue;
                    };
                    if from != to {
                        // Across loops (a reverse sweep reading a forward loop that an
                        // exception interrupts): every position of each.
                        for row in &mut live[from..=to] {
                            row.fill(true);
                        }
                        continue;
                    }
                    let m = &loops[from];
                    let rel = base as usize - m.start;
                    // The positions visited repeat after `period` iterations.
                    let visits = if step == 0 { 1 } else { trips.min(m.period()) };
                    for i in 0..visits {
                        let at = rel as i64 + step * i as i64;
                        live[from][(at as usize) % m.period()] = true;
                    }
                }
            }
        }

        // What the reads from outside an iteration need.
        // Per loop, per position: whether it needs an array of one slot per trip.
        let mut needs: Vec<Vec<bool>> = loops.iter().map(|l| vec![false; l.period()]).collect();
        let mut dense = vec![false; loops.len()];

        // A read of `v` at a fixed place after its loop: a register unless it is an
        // iteration before the last.
        let need_fixed = |v: usize, needs: &mut Vec<Vec<bool>>| -> Option<()> {
            if let Place::Loop { k, t, j } = place(v)? {
                if j + 1 < loops[k].trips {
                    needs[k][t] = true;
                }
            }
            Some(())
        };
        for (k, l) in loops.iter().enumerate() {
            for t in (0..l.period()).filter(|&t| live[k][t]) {
                for &src in &l.sources[t] {
                    match src {
                        Source::Same { .. } => {}
                        Source::Carried { init, .. } => need_fixed(init as usize, &mut needs)?,
                        Source::Affine { base, step } if step == 0 || l.trips == 1 => {
                            need_fixed(base as usize, &mut needs)?
                        }
                        Source::Affine { base, step } => {
                            let Some((from, to)) = span_of(base, step, l.trips)? else {
                                continue; // parameters, read from `inputs`
                            };
                            if from != to {
                                dense[from..=to].fill(true);
                                continue;
                            }
                            let m = &loops[from];
                            if m.trips > 1 && step % m.period() as i64 == 0 {
                                let t = (base as usize - m.start) % m.period();
                                needs[from][t] = true;
                            } else {
                                dense[from] = true;
                            }
                        }
                    }
                }
            }
        }

        // Returns: parameters copied first, streams in the loops, the rest copied last.
        let mut copies = Vec::new();
        let mut returned: Vec<Vec<Vec<(usize, usize)>>> =
            loops.iter().map(|l| vec![Vec::new(); l.period()]).collect();
        for (out, r) in rolled.header().rets.iter().enumerate() {
            match place(r.index())? {
                p @ Place::Param(_) => copies.push((p, out)),
                Place::Loop { k, t, j } => returned[k][t].push((j, out)),
            }
        }
        let mut streams: Vec<Vec<Vec<Stream>>> =
            loops.iter().map(|l| vec![Vec::new(); l.period()]).collect();
        for (k, l) in loops.iter().enumerate() {
            for t in 0..l.period() {
                let outs = std::mem::take(&mut returned[k][t]);
                if outs.is_empty() {
                    continue;
                }
                match as_streams(outs.clone(), l.trips) {
                    Some(s) => streams[k][t] = s,
                    None => {
                        for (j, out) in outs {
                            need_fixed(l.value(t, j), &mut needs)?;
                            copies.push((Place::Loop { k, t, j }, out));
                        }
                    }
                }
            }
        }
        if copies.len() > MAX_LATE_COPIES {
            return None;
        }

        // Slots, in program order: a dense loop's values in value order (so joined loops,
        // all dense and consecutive, hold theirs one after the other, as the values are), else an array of one slot per trip for each
        // position that needs one.
        let mut n_slots = 0usize;
        let mut homes: Vec<Vec<Option<Home>>> = Vec::with_capacity(loops.len());
        for (k, l) in loops.iter().enumerate() {
            let period = l.period();
            if dense[k] {
                let first = n_slots;
                n_slots = n_slots.checked_add(period.checked_mul(l.trips)?)?;
                homes.push(
                    (0..period)
                        .map(|t| {
                            Some(Home {
                                first: (first + t) as u32,
                                stride: period as u32,
                            })
                        })
                        .collect(),
                );
                continue;
            }
            let row = needs[k].iter().map(|&needed| {
                needed.then(|| {
                    let first = n_slots as u32;
                    n_slots += l.trips;
                    Home { first, stride: 1 }
                })
            });
            homes.push(row.collect());
        }
        // Slot offsets are 32-bit immediates of 8-byte slots.
        if n_slots > (i32::MAX as usize) / 16 {
            return None;
        }
        Some(RolledPlan {
            live,
            homes,
            n_slots,
            streams,
            copies,
        })
    }
}

/// `outs` (`(iteration, output)` of one position, over `trips` iterations) as streams
/// `first + step·j`, if every iteration is returned equally often and the `s`-th smallest
/// output of each iteration moves by one step.
fn as_streams(mut outs: Vec<(usize, usize)>, trips: usize) -> Option<Vec<Stream>> {
    if !outs.len().is_multiple_of(trips) {
        return None;
    }
    let per = outs.len() / trips;
    outs.sort_unstable();
    // Iteration `j`'s outputs are `outs[j·per .. (j+1)·per]`, sorted.
    let mut streams = Vec::with_capacity(per);
    for s in 0..per {
        let first = outs[s];
        if first.0 != 0 {
            return None;
        }
        let step = match trips {
            1 => 0,
            _ => outs[per + s].1 as i64 - first.1 as i64,
        };
        for j in 0..trips {
            let (jj, out) = outs[j * per + s];
            if jj != j || out as i64 != first.1 as i64 + step * j as i64 {
                return None;
            }
        }
        streams.push(Stream {
            first: first.1,
            step,
        });
    }
    Some(streams)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_split_outputs_by_rank() {
        // Iterations 0..3, each returned twice: at 10 + j and at 20 − 2j.
        let outs = vec![(0, 10), (0, 20), (1, 11), (1, 18), (2, 12), (2, 16)];
        let s = as_streams(outs, 3).unwrap();
        assert_eq!(
            s,
            [
                Stream { first: 10, step: 1 },
                Stream {
                    first: 20,
                    step: -2
                }
            ]
        );
        // An iteration missing, or outputs out of step, are not streams.
        assert!(as_streams(vec![(0, 1), (2, 3)], 3).is_none());
        assert!(as_streams(vec![(0, 1), (1, 2), (2, 4)], 3).is_none());
    }
}
