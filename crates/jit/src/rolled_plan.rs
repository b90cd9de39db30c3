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
//!   per trip. A read of that kind that also reaches the straight code beside the loop (a
//!   reverse sweep reading a forward loop the run search started a step late) extends the
//!   array over it: each straight value it reads is stored where the loop's iteration −1 (or
//!   `trips`, …) would be. A loop read at any other stride (walking across positions, a loop
//!   of one trip read as a vector) gets a *dense* home, a slot for every value in value order,
//!   of which only the positions some read visits are stored; so do all loops such a read
//!   walks across, one after the other as their values are.
//! - **Slots**: each loop's homes form a block (loops a read walks across share one), in use
//!   from the loop that writes it to the last loop that reads it; blocks reuse the slots of
//!   blocks done, so a 2-D grid's rows hand their adjoints on through a few rows' slots.
//! - **Returns**: a returned position whose iterations go to outputs `first + step·j` (one or
//!   several such streams) is stored in the loop; parameters are copied first; any other
//!   returned value is copied after the last loop, from its register or its home.
//! - **Fusion** (see [`Fusion`]): a reverse sweep (a loop of `n` trips that reads a forward
//!   loop of at least `n` trips backwards, `x̄` of term `n − 1 − j` in its iteration `j`) runs
//!   inside the forward loop, in the forward order, when every instruction can still read
//!   exactly the values it reads in the expanded program: its reads of the forward loop are of
//!   the same term or the ones beside it (registers of the fused loop, so no tape), and a line
//!   that reads a value carried from its previous iteration (an adjoint the next term
//!   finishes, `x̄[i+1]` in Rosenbrock) runs that many terms later than the line it reads
//!   (its *lag*), up to [`MAX_LAG`] (a backward recurrence, whose lags grow without end, is
//!   not fused). The lowering is a software pipeline over the terms; the loops of one trip
//!   between the two run after it, before the last terms' lagging lines, which read their
//!   carried values' first values there. Only the order of independent instructions
//!   changes, so the bits do not.
//!
//! [`RolledPlan::new`] refuses (`None`) what this form does not hold, and the caller compiles
//! the expanded program instead: a read whose indices cross from the parameters into the
//! loops, and more than [`MAX_LATE_COPIES`] scattered returns.

use std::collections::{HashMap, HashSet};

use adjit_ir::roll::Source;
use adjit_ir::{Function, Loop, Rolled, Value};

/// Most returned values copied one by one after the last loop; past it the expanded program
/// is compiled (its plan stores each at its definition).
pub(crate) const MAX_LATE_COPIES: usize = 4096;

/// Where one template position's values live in `work`: iteration `j` in slot
/// `first + stride·j`. A stride of 0 (a fused reverse loop's position read after the loop at
/// its last iteration only) holds that iteration alone.
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

/// A reverse loop run in the forward order inside the forward loop it reads (see the module
/// docs): virtual iteration `v` of the fused loop runs the forward loop's iteration `v` and
/// the reverse loop's positions of lag `g` for term `v − g` (its iteration `n − 1 − v + g`,
/// for its `n` trips); the forward loop's iterations past `n` run after it, then the straight
/// loops between the two, then the virtual iterations past `n − 1` (the last term's lagging
/// positions read a carried value's first value, made there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fusion {
    /// The reverse loop; the loops between it and the forward loop have one trip.
    pub reverse: usize,
    /// Per position of the reverse loop: how many terms late it runs (its *lag*): one more
    /// than a value carried from the next term it reads, at least that of a position of its
    /// own term it reads.
    pub lag: Vec<usize>,
}

/// How a reverse loop's operand is read when it is fused (see [`Fusion`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FusedRead {
    /// Position `q` of the forward loop, of the term `offset` (−1, 0 or 1) from the reverse
    /// line's own: term 0 reads the value before the loop in the place of term −1,
    /// `f.start − period + q`; a line reading the term after runs at least one term late.
    Forward { q: usize, offset: i64 },
    /// Its own rule, as in an unfused loop (same iteration, carried, invariant, or a moving
    /// index into the parameters or a loop before the forward one).
    Rule,
}

/// How the reverse loop `r` (of `n` trips) reads `base + step·j` (its iteration `j`) when
/// fused with the forward loop `f`: `None` if fusing cannot hold that read (a value of the
/// forward loop other than its same term's, or of the loops between the two).
pub(crate) fn fused_read(f: &Loop, n: usize, base: u32, step: i64) -> Option<FusedRead> {
    // (Checked: a rolled program's steps are the user's; one that overflows is not fused.)
    let last = i64::from(base).checked_add(step.checked_mul(n as i64 - 1)?)?;
    if i64::from(base).max(last) < f.start as i64 {
        // Every value it reads is made before the fused loop.
        return Some(FusedRead::Rule);
    }
    let base = base as usize;
    let rel = base.checked_sub(f.start)?;
    let period = f.period();
    if step != -(period as i64) {
        return None;
    }
    // Iteration `j` reads the forward loop's position `q` of term `n − 1 − j`, of the term
    // before, or of the term after (which the forward loop must have: a loop of `n` trips
    // ends before it).
    let (q, first) = (rel % period, rel / period);
    let offset = first as i64 + 1 - n as i64;
    let within = first < f.trips;
    ((-1..=1).contains(&offset) && within).then_some(FusedRead::Forward { q, offset })
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
    /// Per loop: the reverse loop fused into it, if any (see [`Fusion`]).
    pub fused: Vec<Option<Fusion>>,
    /// Per loop: its live positions in the order the lowering runs them (see [`line_order`]).
    pub order: Vec<Vec<u32>>,
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
                        // exception interrupts): the positions the read visits in each.
                        mark_walk(loops, (from, to), (base, step, trips), &mut live);
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

        let fused = fusions(loops, &live);
        // Per loop: the forward loop it is fused into.
        let mut fused_into: Vec<Option<usize>> = vec![None; loops.len()];
        for (k, fusion) in fused.iter().enumerate() {
            if let Some(fusion) = fusion {
                fused_into[fusion.reverse] = Some(k);
            }
        }

        // What the reads from outside an iteration need.
        // Per loop, per position: whether it needs an array of one slot per trip.
        let mut needs: Vec<Vec<bool>> = loops.iter().map(|l| vec![false; l.period()]).collect();
        let mut dense = vec![false; loops.len()];
        // Per loop, per position: whether a read walking across positions visits it (only
        // those of a dense loop are stored; the others' slots are never read).
        let mut walked: Vec<Vec<bool>> = loops.iter().map(|l| vec![false; l.period()]).collect();
        // The reads that walk across positions or loops, resolved below.
        let mut walks: Vec<Walk> = Vec::new();

        // A read of `v` at a fixed place after its loop: a register unless it is an
        // iteration before the last.
        // Per loop, per position of a fused reverse loop: whether its last iteration (the
        // fused loop's first term) is read after the loop: one slot, stored by that term.
        let mut lasts: Vec<Vec<bool>> = loops.iter().map(|l| vec![false; l.period()]).collect();
        // A fused reverse loop ends on its first iteration's term: every value read after it
        // is read from its home.
        let need_fixed = |v: usize, needs: &mut Vec<Vec<bool>>, lasts: &mut Vec<Vec<bool>>| {
            if let Place::Loop { k, t, j } = place(v)? {
                match (j + 1 < loops[k].trips, fused_into[k].is_some()) {
                    (true, _) => needs[k][t] = true,
                    (false, true) => lasts[k][t] = true,
                    (false, false) => {}
                }
            }
            Some(())
        };
        for (k, l) in loops.iter().enumerate() {
            for t in (0..l.period()).filter(|&t| live[k][t]) {
                for &src in &l.sources[t] {
                    if let (Some(f), Source::Affine { base, step }) = (fused_into[k], src) {
                        let f = &loops[f];
                        match fused_read(f, l.trips, base, step) {
                            Some(FusedRead::Rule) => {}
                            // Term 0 reads the value before the forward loop in its place.
                            Some(FusedRead::Forward { q, offset: -1 }) => {
                                let v = (f.start + q).checked_sub(f.period())?;
                                need_fixed(v, &mut needs, &mut lasts)?;
                                continue;
                            }
                            _ => continue, // a register of the fused loop
                        }
                    }
                    match src {
                        Source::Same { .. } => {}
                        Source::Carried { init, .. } => {
                            need_fixed(init as usize, &mut needs, &mut lasts)?
                        }
                        Source::Affine { base, step } if step == 0 || l.trips == 1 => {
                            need_fixed(base as usize, &mut needs, &mut lasts)?
                        }
                        Source::Affine { base, step } => {
                            let Some((from, to)) = span_of(base, step, l.trips)? else {
                                continue; // parameters, read from `inputs`
                            };
                            let m = &loops[from];
                            if from == to && m.trips > 1 && step % m.period() as i64 == 0 {
                                let t = (base as usize - m.start) % m.period();
                                needs[from][t] = true;
                            } else {
                                walks.push(Walk {
                                    loops: (from, to),
                                    base,
                                    step,
                                    trips: l.trips,
                                });
                            }
                        }
                    }
                }
            }
        }

        // Walks: an array of one position of a loop, extended over the straight code beside
        // it, where that holds them all; dense homes otherwise.
        let walks = resolve_walks(loops, &walks, &mut dense);
        // The loop ranges reads walk across: their homes must lie in one block.
        let mut joined: Vec<(usize, usize)> = Vec::new();
        let mut extended: HashMap<(usize, usize), (i64, i64)> = HashMap::new();
        let mut claims: Vec<Claim> = Vec::new();
        for (walk, resolved) in &walks {
            match resolved {
                Resolved::Dense => {
                    let (from, to) = walk.loops;
                    mark_walk(
                        loops,
                        (from, to),
                        (walk.base, walk.step, walk.trips),
                        &mut walked,
                    );
                    if from != to {
                        joined.push((from, to));
                    }
                }
                Resolved::Extended(ext) => {
                    needs[ext.main][ext.pos] = true;
                    let range = extended.entry((ext.main, ext.pos)).or_insert(ext.range);
                    *range = (range.0.min(ext.range.0), range.1.max(ext.range.1));
                    for &(s, u, i) in &ext.straight {
                        claims.push(((s, u), (ext.main, ext.pos, i)));
                    }
                    joined.push(walk.loops);
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
                            need_fixed(l.value(t, j), &mut needs, &mut lasts)?;
                            copies.push((Place::Loop { k, t, j }, out));
                        }
                    }
                }
            }
        }
        if copies.len() > MAX_LATE_COPIES {
            return None;
        }

        // Each loop's homes relative to its own block: a dense loop's values in value order,
        // else an array of one slot per trip for each position that needs one.
        let mut sizes = Vec::with_capacity(loops.len());
        let mut homes: Vec<Vec<Option<Home>>> = Vec::with_capacity(loops.len());
        for (k, l) in loops.iter().enumerate() {
            let period = l.period();
            if dense[k] {
                // Every value has a slot (a walking read's addresses count on that), but only
                // the positions something reads are stored.
                let read = |t: usize| needs[k][t] || lasts[k][t] || walked[k][t];
                homes.push(
                    (0..period)
                        .map(|t| {
                            read(t).then_some(Home {
                                first: t as u32,
                                stride: period as u32,
                            })
                        })
                        .collect(),
                );
                sizes.push(period.checked_mul(l.trips)?);
                continue;
            }
            let mut size = 0usize;
            let mut row = Vec::with_capacity(period);
            for t in 0..period {
                // An array's iterations `lo..=hi`, iteration 0 at `first` (`lo ≤ 0`: a walk's
                // values in the straight code before the loop are its iterations −1, −2, …).
                let (lo, hi) = extended
                    .get(&(k, t))
                    .copied()
                    .unwrap_or((0, l.trips as i64 - 1));
                let (slots, stride, before) = match (needs[k][t], lasts[k][t]) {
                    (true, _) => (usize::try_from(hi - lo + 1).ok()?, 1, -lo as usize),
                    (false, true) => (1, 0, 0),
                    (false, false) => {
                        row.push(None);
                        continue;
                    }
                };
                let first = u32::try_from(size + before).ok()?;
                size += slots;
                row.push(Some(Home { first, stride }));
            }
            homes.push(row);
            sizes.push(size);
        }
        let lives = lifetimes(rolled, &fused, &live, &copies);
        let blocks = blocks(&sizes, &joined, &lives);
        let n_slots = place_blocks(&blocks, &sizes, &mut homes)?;
        // A straight value an extended array holds is stored in its slot there.
        for ((s, u), (main, pos, i)) in claims {
            let array = homes[main][pos]?;
            let first = u32::try_from(i64::from(array.first) + i).ok()?;
            homes[s][u] = Some(Home { first, stride: 1 });
        }
        // Slot offsets are 32-bit immediates of 8-byte slots.
        if n_slots > (i32::MAX as usize) / 16 {
            return None;
        }
        let order = loops
            .iter()
            .zip(&live)
            .zip(&homes)
            .zip(&streams)
            .map(|(((l, live), homes), streams)| {
                let kept = |t: usize| homes[t].is_some() || !streams[t].is_empty();
                line_order(rolled, l, live, kept)
            })
            .collect();
        Some(RolledPlan {
            live,
            homes,
            n_slots,
            streams,
            copies,
            fused,
            order,
        })
    }
}

/// Loop `l`'s live positions (`live`) in the order [`crate::schedule`] gives its template as a
/// program of its own, whose parameters are the values the iteration reads from outside and
/// whose returns are the positions read outside it (`kept`: stored; or carried into the next
/// iteration; or read by no line of its own iteration, hence by later code): the order of the
/// straight-line pipeline, which holds fewer values at once than the order of a trace (the
/// search takes the template as the program gave it). Only independent lines change places,
/// so every iteration computes the same bits.
/// A read at a moving index that walks across template positions or across loops.
#[derive(Clone, Copy, Debug)]
struct Walk {
    /// The loops it reads, first to last.
    loops: (usize, usize),
    base: u32,
    step: i64,
    trips: usize,
}

/// Where a walk reads from.
#[derive(Debug)]
enum Resolved {
    /// The dense homes of its loops, every value in value order.
    Dense,
    /// One array (see [`Extended`]).
    Extended(Extended),
}

/// A walk that reads one position of one loop of several trips, `main`, every `step /
/// period` iterations, and values of the straight code beside it (a loop of one trip before
/// or after: a reverse sweep reading a forward loop that the run search started one step
/// late) where the loop's iterations −1, −2, … or `trips`, … would be: position `pos` gets an
/// array for its iterations `range` (from at most 0 to at least `trips − 1`), and each such
/// straight value, (loop, position, iteration), a slot in it.
#[derive(Debug)]
struct Extended {
    main: usize,
    pos: usize,
    range: (i64, i64),
    straight: Vec<(usize, usize, i64)>,
}

/// A straight value, (loop, position), held in an extended array: (its loop, position,
/// iteration).
type Claim = ((usize, usize), (usize, usize, i64));

/// The walk as one extended array, if it is one (see [`Extended`]).
fn as_extended(loops: &[Loop], walk: &Walk) -> Option<Extended> {
    let (from, to) = walk.loops;
    let mut mains = (from..=to).filter(|&k| loops[k].trips > 1);
    let (main, None) = (mains.next()?, mains.next()) else {
        return None;
    };
    let m = &loops[main];
    let period = m.period() as i64;
    let base = walk.base as usize;
    if walk.step == 0 || walk.step % period != 0 || !(m.start..m.end()).contains(&base) {
        return None;
    }
    let pos = (base - m.start) % m.period();
    // The iteration of `main` whose position `pos` value `v` would be.
    let iteration = |v: i64| (v - (m.start + pos) as i64) / period;
    let last = i64::from(walk.base).saturating_add(walk.step.saturating_mul(walk.trips as i64 - 1));
    let (a, b) = (iteration(i64::from(walk.base)), iteration(last));
    let range = (a.min(b).min(0), a.max(b).max(m.trips as i64 - 1));
    let mut straight = Vec::new();
    for s in (from..=to).filter(|&s| s != main) {
        let l = &loops[s];
        let mut visited = vec![false; l.period()];
        for u in visits(l, (walk.base, walk.step, walk.trips)) {
            visited[u] = true;
        }
        for u in (0..l.period()).filter(|&u| visited[u]) {
            straight.push((s, u, iteration((l.start + u) as i64)));
        }
    }
    Some(Extended {
        main,
        pos,
        range,
        straight,
    })
}

/// Every walk with where it reads from: an extended array where the walk is one and no
/// straight value would need two slots (or lie in a dense loop), dense homes otherwise;
/// `dense` marks the loops dense homes cover. To a fixed point: a walk that falls back to
/// dense homes makes its loops dense for the others.
fn resolve_walks(loops: &[Loop], walks: &[Walk], dense: &mut [bool]) -> Vec<(Walk, Resolved)> {
    let mut resolved: Vec<Option<Extended>> = walks.iter().map(|w| as_extended(loops, w)).collect();
    loop {
        for (w, r) in walks.iter().zip(&resolved) {
            if r.is_none() {
                dense[w.loops.0..=w.loops.1].fill(true);
            }
        }
        // Each straight value's slot, and the values claimed twice over.
        let mut slot: HashMap<(usize, usize), (usize, usize, i64)> = HashMap::new();
        let mut clash: HashSet<(usize, usize)> = HashSet::new();
        for ext in resolved.iter().flatten() {
            for &(s, u, i) in &ext.straight {
                match slot.insert((s, u), (ext.main, ext.pos, i)) {
                    Some(other) if other != (ext.main, ext.pos, i) => {
                        clash.insert((s, u));
                    }
                    _ => {}
                }
            }
        }
        let mut changed = false;
        for (w, r) in walks.iter().zip(resolved.iter_mut()) {
            let Some(ext) = r else { continue };
            let in_dense = dense[w.loops.0..=w.loops.1].iter().any(|&d| d);
            let clashes = ext
                .straight
                .iter()
                .any(|&(s, u, _)| clash.contains(&(s, u)));
            if in_dense || clashes {
                *r = None;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    walks
        .iter()
        .zip(resolved)
        .map(|(&w, r)| (w, r.map_or(Resolved::Dense, Resolved::Extended)))
        .collect()
}

/// When each loop's homes are in use, as loop indices in program order: from the loop that
/// writes them to the last loop that reads them (`usize::MAX`: read after the last loop). A
/// fused pair runs over its forward loop, the loops of one trip between them and its reverse
/// loop's lagging lines, so both take that whole span.
fn lifetimes(
    rolled: &Rolled,
    fused: &[Option<Fusion>],
    live: &[Vec<bool>],
    copies: &[(Place, usize)],
) -> Vec<(usize, usize)> {
    let loops = rolled.loops();
    let mut span: Vec<(usize, usize)> = (0..loops.len()).map(|k| (k, k)).collect();
    for (f, fusion) in fused.iter().enumerate() {
        if let Some(fusion) = fusion {
            span[f] = (f, fusion.reverse);
            span[fusion.reverse] = (f, fusion.reverse);
        }
    }
    let mut lives = span.clone();
    let loop_of = |v: usize| rolled.locate(v).map(|(k, _, _)| k);
    let read = |m: Option<usize>, until: usize, lives: &mut Vec<(usize, usize)>| {
        if let Some(m) = m {
            lives[m].1 = lives[m].1.max(until);
        }
    };
    for (k, l) in loops.iter().enumerate() {
        let until = span[k].1;
        for t in (0..l.period()).filter(|&t| live[k][t]) {
            for &src in &l.sources[t] {
                match src {
                    Source::Same { .. } => {}
                    Source::Carried { init, .. } => read(loop_of(init as usize), until, &mut lives),
                    Source::Affine { base, step } => {
                        // Every loop between the first and the last value it reads.
                        let last =
                            i64::from(base).saturating_add(step.saturating_mul(l.trips as i64 - 1));
                        let (lo, hi) = (i64::from(base).min(last), i64::from(base).max(last));
                        let (Some(a), Some(b)) = (loop_of(lo as usize), loop_of(hi as usize))
                        else {
                            continue; // parameters
                        };
                        for m in a..=b {
                            read(Some(m), until, &mut lives);
                        }
                    }
                }
            }
        }
    }
    for (place, _) in copies {
        if let Place::Loop { k, .. } = *place {
            lives[k].1 = usize::MAX;
        }
    }
    lives
}

/// A piece of `work`: the homes of `loops` (consecutive, laid out one after the other),
/// `size` slots in use from loop `live.0` to loop `live.1`.
struct Block {
    loops: std::ops::Range<usize>,
    size: usize,
    live: (usize, usize),
}

/// The blocks of `work`: one per loop with homes, except that loops a read walks across
/// (`joined`, ranges of loops) share one, their values in value order.
fn blocks(sizes: &[usize], joined: &[(usize, usize)], lives: &[(usize, usize)]) -> Vec<Block> {
    // The end of the joined range each loop starts, merged where ranges share a loop.
    let mut reach: Vec<usize> = (0..sizes.len()).collect();
    for &(from, to) in joined {
        reach[from] = reach[from].max(to);
    }
    let mut out = Vec::new();
    let mut k = 0;
    while k < sizes.len() {
        let mut end = reach[k];
        let mut m = k;
        while m <= end {
            end = end.max(reach[m]);
            m += 1;
        }
        let range = k..end + 1;
        let size = sizes[range.clone()].iter().sum();
        if size > 0 {
            let live = range.clone().fold((usize::MAX, 0), |(a, b), m| {
                (a.min(lives[m].0), b.max(lives[m].1))
            });
            out.push(Block {
                loops: range.clone(),
                size,
                live,
            });
        }
        k = range.end;
    }
    out
}

/// Give every block an offset in `work`, reusing the slots of blocks no longer in use (a
/// 2-D grid's rows hand their adjoints to the next row only: two rows' worth of slots instead
/// of the whole grid's), and move `homes` there. Returns the slots one call needs.
fn place_blocks(
    blocks: &[Block],
    sizes: &[usize],
    homes: &mut [Vec<Option<Home>>],
) -> Option<usize> {
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    order.sort_by_key(|&b| blocks[b].live);
    // In use: (last loop, first slot, size); free: (first slot, size), by first slot.
    let mut in_use: Vec<(usize, usize, usize)> = Vec::new();
    let mut free: Vec<(usize, usize)> = Vec::new();
    let mut n_slots = 0usize;
    for b in order {
        let block = &blocks[b];
        // Blocks whose last reader ran before this block's first writer.
        in_use.retain(|&(last, first, size)| {
            let done = last < block.live.0;
            if done {
                free.push((first, size));
            }
            !done
        });
        free.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(free.len());
        for (first, size) in free.drain(..) {
            match merged.last_mut() {
                Some(last) if last.0 + last.1 == first => last.1 += size,
                _ => merged.push((first, size)),
            }
        }
        free = merged;
        // First fit, else the top of `work` (growing a free piece that ends there).
        let first = match free.iter().position(|&(_, size)| size >= block.size) {
            Some(i) => {
                let (first, size) = free[i];
                if size == block.size {
                    free.remove(i);
                } else {
                    free[i] = (first + block.size, size - block.size);
                }
                first
            }
            None => {
                let first = match free.last() {
                    Some(&(first, size)) if first + size == n_slots => {
                        free.pop();
                        first
                    }
                    _ => n_slots,
                };
                n_slots = first.checked_add(block.size)?;
                first
            }
        };
        in_use.push((block.live.1, first, block.size));
        let mut at = first;
        for k in block.loops.clone() {
            for home in homes[k].iter_mut().flatten() {
                home.first = u32::try_from(at + home.first as usize).ok()?;
            }
            at += sizes[k];
        }
    }
    Some(n_slots)
}

/// Mark in `marks` the template positions of the loops `from..=to` whose values the read
/// `base + step·j` (`j < trips`) visits.
fn mark_walk(
    loops: &[Loop],
    (from, to): (usize, usize),
    read: (u32, i64, usize),
    marks: &mut [Vec<bool>],
) {
    for (k, row) in marks.iter_mut().enumerate().take(to + 1).skip(from) {
        for t in visits(&loops[k], read) {
            row[t] = true;
        }
    }
}

/// The template positions of `l` whose values the read `base + step·j` (`j < trips`) visits,
/// each once or more. Within a loop the positions repeat after `period` visits, so this costs
/// at most the period.
fn visits(l: &Loop, (base, step, trips): (u32, i64, usize)) -> impl Iterator<Item = usize> {
    // ⌊a / b⌋ and ⌈a / b⌉ for b ≠ 0 of either sign.
    let floor = |a: i128, b: i128| {
        let (q, r) = (a / b, a % b);
        if r != 0 && ((r < 0) != (b < 0)) {
            q - 1
        } else {
            q
        }
    };
    let ceil = |a: i128, b: i128| -floor(-a, b);
    let (b, s, last) = (i128::from(base), i128::from(step), trips as i128 - 1);
    let (lo, hi) = (l.start as i128, l.end() as i128 - 1);
    // The iterations j whose value falls in this loop's values lo..=hi (none: j0 > j1).
    let (j0, j1) = match s.signum() {
        0 if (lo..=hi).contains(&b) => (0, 0),
        0 => (1, 0),
        1 => (ceil(lo - b, s).max(0), floor(hi - b, s).min(last)),
        _ => (ceil(hi - b, s).max(0), floor(lo - b, s).min(last)),
    };
    let period = l.period() as i128;
    (j0..=j1.min(j0 + period - 1)).map(move |j| ((b + s * j - lo) % period) as usize)
}

fn line_order(rolled: &Rolled, l: &Loop, live: &[bool], kept: impl Fn(usize) -> bool) -> Vec<u32> {
    let period = l.period();
    let positions: Vec<usize> = (0..period).filter(|&t| live[t]).collect();
    if l.trips < 2 || positions.len() < 3 {
        return positions.iter().map(|&t| t as u32).collect();
    }
    let mut root = vec![false; period];
    let mut read_here = vec![false; period];
    for &t in &positions {
        root[t] |= kept(t);
        for src in &l.sources[t] {
            match *src {
                Source::Same { pos } => read_here[pos as usize] = true,
                Source::Carried { pos, .. } => root[pos as usize] = true,
                Source::Affine { .. } => {}
            }
        }
    }
    // Every operand read from outside the iteration is a parameter of its own; then the
    // lines, in template order (a line reads earlier lines only).
    let mut template = Function::new("template");
    let mut outside: Vec<Vec<Option<Value>>> = Vec::with_capacity(positions.len());
    for &t in &positions {
        let params = l.sources[t].iter().map(|&src| match src {
            Source::Same { .. } => None,
            _ => Some(template.add_param(rolled.ty(l.source_value(src, 0)), None)),
        });
        outside.push(params.collect());
    }
    let n_params = template.n_params;
    let mut index = vec![0usize; period];
    for (k, &t) in positions.iter().enumerate() {
        index[t] = n_params + k;
    }
    for (&t, params) in positions.iter().zip(&outside) {
        let mut c = 0;
        let inst = l.instance(t, 0).map_values(|_| {
            c += 1;
            match (l.sources[t][c - 1], params[c - 1]) {
                (Source::Same { pos }, _) => Value::new(index[pos as usize]),
                (_, Some(param)) => param,
                (_, None) => unreachable!("a parameter per outside read"),
            }
        });
        template.push_inst(l.template[t].ty, inst, None);
    }
    template.rets = positions
        .iter()
        .filter(|&&t| root[t] || !read_here[t])
        .map(|&t| Value::new(index[t]))
        .collect();
    template.ret_types = template.rets.iter().map(|&r| template.ty(r)).collect();
    crate::schedule::schedule_order(&template)
        .into_iter()
        .map(|v| positions[v as usize - n_params] as u32)
        .collect()
}

/// The reverse loops that fuse into their forward loops: a loop of `n > 1` trips after loops
/// of one trip after a loop of at least `n` trips (a reverse sweep whose last term's lines
/// differ, as a sum's first term, is one trip shorter), whose live positions read the forward
/// loop only at the same term or the ones beside it and the loops between only through a carried
/// value's first value, and whose lags stay within [`MAX_LAG`] (see [`Fusion`], [`lags`]).
fn fusions(loops: &[Loop], live: &[Vec<bool>]) -> Vec<Option<Fusion>> {
    let mut fused = vec![None; loops.len()];
    let mut k = 0;
    while k < loops.len() {
        let f = &loops[k];
        let n = f.trips;
        let r = (k + 1..loops.len()).find(|&r| loops[r].trips > 1);
        if let Some(r) = r.filter(|&r| (2..=n).contains(&loops[r].trips)) {
            if let Some(lag) = lags(f, &loops[r], &live[r]) {
                fused[k] = Some(Fusion { reverse: r, lag });
                k = r + 1;
                continue;
            }
        }
        k += 1;
    }
    fused
}

/// Most terms a fused reverse line runs late.
pub(crate) const MAX_LAG: usize = 4;

/// The lag of every position of the reverse loop `r` fused with `f` (see [`Fusion`]), if it
/// can be fused: it reads `f`'s same term (or the term before or after) somewhere, nothing
/// [`fused_read`] refuses, and no lag passes [`MAX_LAG`] (a carried value feeding itself runs
/// later and later: a true backward recurrence, which cannot run forward).
fn lags(f: &Loop, r: &Loop, live: &[bool]) -> Option<Vec<usize>> {
    let mut any_forward = false;
    // A line reading the forward loop's term after its own runs at least one term late.
    let mut lag = vec![0usize; r.period()];
    for t in (0..r.period()).filter(|&t| live[t]) {
        for &src in &r.sources[t] {
            match src {
                Source::Same { .. } => {}
                // The first value is read by term n − 1, after the loops between: one of
                // them or a value before the forward loop.
                Source::Carried { init, .. } => {
                    if (init as usize) >= f.start && (init as usize) < f.end() {
                        return None;
                    }
                }
                Source::Affine { base, step } => {
                    if let FusedRead::Forward { offset, .. } = fused_read(f, r.trips, base, step)? {
                        any_forward = true;
                        lag[t] = lag[t].max(offset.max(0) as usize);
                    }
                }
            }
        }
    }
    if !any_forward {
        return None;
    }
    // lag(t) = the most of lag(p) over its same-term reads p and lag(p) + 1 over its carried
    // reads p (the next term's), to a fixed point.
    let mut changed = true;
    while changed {
        changed = false;
        for t in (0..r.period()).filter(|&t| live[t]) {
            let mut at = lag[t];
            for &src in &r.sources[t] {
                match src {
                    Source::Same { pos } => at = at.max(lag[pos as usize]),
                    Source::Carried { pos, .. } => at = at.max(lag[pos as usize] + 1),
                    Source::Affine { .. } => {}
                }
            }
            if at > MAX_LAG {
                return None;
            }
            changed |= at != lag[t];
            lag[t] = at;
        }
    }
    Some(lag)
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
    fn blocks_in_use_at_once_never_share_a_slot() {
        let mut rng = adjit_ir::random::Rng::new(3);
        let mut reused = 0;
        for case in 0..500 {
            let n = 1 + rng.below(12);
            let sizes: Vec<usize> = (0..n).map(|_| rng.below(20)).collect();
            let blocks: Vec<Block> = (0..n)
                .filter(|&k| sizes[k] > 0)
                .map(|k| {
                    let first = rng.below(10);
                    let last = if rng.chance(0.1) {
                        usize::MAX
                    } else {
                        first + rng.below(6)
                    };
                    Block {
                        loops: k..k + 1,
                        size: sizes[k],
                        live: (first, last),
                    }
                })
                .collect();
            let mut homes: Vec<Vec<Option<Home>>> = (0..n)
                .map(|_| {
                    vec![Some(Home {
                        first: 0,
                        stride: 1,
                    })]
                })
                .collect();
            let n_slots = place_blocks(&blocks, &sizes, &mut homes).expect("fits");
            let at = |b: &Block| homes[b.loops.start][0].expect("placed").first as usize;
            for a in &blocks {
                assert!(at(a) + a.size <= n_slots, "case {case}");
                for b in &blocks {
                    let both_live = a.live.0 <= b.live.1 && b.live.0 <= a.live.1;
                    let apart = at(a) + a.size <= at(b) || at(b) + b.size <= at(a);
                    assert!(
                        std::ptr::eq(a, b) || !both_live || apart,
                        "case {case}: blocks {:?} {:?} at {} and {}",
                        a.live,
                        b.live,
                        at(a),
                        at(b)
                    );
                }
            }
            reused += usize::from(n_slots < sizes.iter().sum());
        }
        assert!(reused > 100, "slots were reused in {reused} cases of 500");
    }

    #[test]
    fn a_fused_pair_is_in_use_from_its_forward_loop_to_its_reverse_loop() {
        // The Rosenbrock gradient: its reverse loop runs inside its forward loop, so what it
        // writes is in use from the forward loop on, and what the forward loop holds until
        // the reverse loop's last lines.
        let f = adjit_testkit::chained_rosenbrock(50);
        let g = adjit_diff::vjp_rolled_seeded_with_one(&Rolled::from_function(&f));
        let plan = RolledPlan::new(&g).expect("held");
        let (fwd, fusion) = (plan.fused.iter().enumerate())
            .find_map(|(k, fusion)| Some((k, fusion.as_ref()?)))
            .expect("a fused pair");
        let rev = fusion.reverse;
        assert!(fwd < rev);
        let lives = lifetimes(&g, &plan.fused, &plan.live, &plan.copies);
        assert_eq!(lives[rev].0, fwd);
        assert!(lives[fwd].1 >= rev);
    }

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
