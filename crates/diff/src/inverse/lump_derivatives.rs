//! Derivative code for one lump: partials, forward sweeps (columns of `A`, `B·ṗ`), the reverse
//! sweep (`Bᵀ·ȳ`) and block-triangular solves with `A` and `Aᵀ`.
//!
//! Tangents and adjoints are kept sparse at emission time: a value that no seeded direction
//! reaches has no tangent at all, so a direction seeded on one input of a coupling layer only
//! touches that input's chain. Reads primal values through `map` (values of the source function
//! to values of the function being built); emits nothing but `f64` arithmetic, `fcmp` and
//! `select`.

use std::collections::{HashMap, HashSet};

use adjit_ir::{CmpPred, Function, Value};

use super::arith::{Arith, Num};
use super::blocks::LumpBlocks;
use super::lu::{self, PivotCheck};
use super::lumps::Lump;
use crate::rules::{carries_derivative, partials, Emitter, Partial};

/// The partials of every instruction of a lump: for each active operand through which a
/// derivative flows, the operand (a value of the source function) and ∂y/∂it (an operand used
/// twice appears twice); and, for every value the lump reads, the positions of the lump's
/// instructions that read it, so that sweeps visit only what a seed reaches.
pub struct LumpPartials {
    parts: HashMap<Value, Vec<(Value, Partial<Num>)>>,
    users: HashMap<Value, Vec<usize>>,
}

impl LumpPartials {
    fn of(&self, v: Value) -> &[(Value, Partial<Num>)] {
        self.parts.get(&v).map_or(&[], Vec::as_slice)
    }

    /// Positions in `lump.insts` of the instructions a tangent seeded on `seeds` reaches, in
    /// order.
    fn reached<'a>(&self, lump: &Lump, seeds: impl Iterator<Item = &'a Value>) -> Vec<usize> {
        let mut seen: HashSet<usize> = HashSet::new();
        let mut todo: Vec<usize> = Vec::new();
        for s in seeds {
            todo.extend(self.users.get(s).into_iter().flatten());
        }
        while let Some(k) = todo.pop() {
            if seen.insert(k) {
                todo.extend(self.users.get(&lump.insts[k]).into_iter().flatten());
            }
        }
        let mut reached: Vec<usize> = seen.into_iter().collect();
        reached.sort_unstable();
        reached
    }
}

/// Emit the partials of every instruction of `lump` with the rulebook ([`crate::rules`]), in
/// `f64`. `map` sends values of `func` to values of the function being built.
pub fn lump_partials(
    ar: &mut Arith,
    func: &Function,
    active: &[bool],
    map: &[Value],
    lump: &Lump,
) -> LumpPartials {
    let mut parts = HashMap::with_capacity(lump.insts.len());
    let mut users: HashMap<Value, Vec<usize>> = HashMap::new();
    for (k, &v) in lump.insts.iter().enumerate() {
        let p = inst_partials(ar, func, active, map, v);
        for &(o, _) in &p {
            let list = users.entry(o).or_default();
            if list.last() != Some(&k) {
                list.push(k);
            }
        }
        parts.insert(v, p);
    }
    LumpPartials { parts, users }
}

fn inst_partials(
    ar: &mut Arith,
    func: &Function,
    active: &[bool],
    map: &[Value],
    v: Value,
) -> Vec<(Value, Partial<Num>)> {
    let Some(inst) = func.inst(v) else {
        return Vec::new();
    };
    let operands = inst.operands();
    let mut wanted = [false; 3];
    for (pos, op) in operands.iter().enumerate() {
        wanted[pos] =
            carries_derivative(inst, pos) && op.as_value().is_some_and(|u| active[u.index()]);
    }
    if !wanted.contains(&true) {
        return Vec::new();
    }
    let mapped = inst.map_values(|u| map[u.index()]);
    let y = Num::Val(ar.f64_of(map[v.index()]));
    partials(ar, &mapped, y, &wanted)
        .into_iter()
        .filter_map(|(pos, p)| Some((operands[pos].as_value()?, p)))
        .collect()
}

/// Forward sweep: tangents of the lump's values given tangents `seeds` of values defined before
/// it (missing seeds are zero). Returns the tangents of the lump's instructions that are nonzero.
pub fn tangent_sweep(
    ar: &mut Arith,
    lump: &Lump,
    parts: &LumpPartials,
    seeds: &HashMap<Value, Num>,
) -> HashMap<Value, Num> {
    let mut tangents: HashMap<Value, Num> = HashMap::new();
    for k in parts.reached(lump, seeds.keys()) {
        let v = lump.insts[k];
        let mut acc = None;
        for &(o, p) in parts.of(v) {
            if let Some(&t) = seeds.get(&o).or_else(|| tangents.get(&o)) {
                acc = Some(p.apply_to(ar, acc, t));
            }
        }
        if let Some(t) = acc {
            tangents.insert(v, t);
        }
    }
    tangents
}

/// Reverse sweep seeded with adjoints of some lump instructions; returns the adjoints reaching
/// the values defined before the lump, except those in `skip`.
pub fn adjoint_sweep(
    ar: &mut Arith,
    lump: &Lump,
    parts: &LumpPartials,
    seeds: HashMap<Value, Num>,
    skip: &[Value],
) -> HashMap<Value, Num> {
    let skip: HashSet<Value> = skip.iter().copied().collect();
    let mut adjoints = seeds;
    for &v in lump.insts.iter().rev() {
        let Some(a) = adjoints.remove(&v) else {
            continue;
        };
        for &(o, p) in parts.of(v) {
            if skip.contains(&o) {
                continue;
            }
            let acc = adjoints.get(&o).copied();
            let sum = p.apply_to(ar, acc, a);
            adjoints.insert(o, sum);
        }
    }
    adjoints
}

/// A lump's `A = ∂Out/∂In`, stored by rows and by columns with only the entries a forward
/// direction reaches (a wide lump is mostly structural zeros).
pub struct BlockMatrix {
    /// `rows[i]`: `(j, A[i][j])`, sorted by `j`.
    rows: Vec<Vec<(usize, Num)>>,
    /// `cols[j]`: `(i, A[i][j])`, sorted by `i`.
    cols: Vec<Vec<(usize, Num)>>,
}

impl BlockMatrix {
    /// `A[i][j]` (a literal 0 where no direction reaches).
    pub fn get(&self, i: usize, j: usize) -> Num {
        let row = &self.rows[i];
        match row.binary_search_by_key(&j, |&(c, _)| c) {
            Ok(k) => row[k].1,
            Err(_) => Num::Lit(0.0),
        }
    }
}

/// `A[i][j] = ∂Out_i/∂In_j` from one forward direction per input (structural zeros are literal 0).
pub fn jacobian_block(ar: &mut Arith, lump: &Lump, parts: &LumpPartials) -> BlockMatrix {
    let l = lump.size();
    let out_index: HashMap<Value, usize> = lump
        .outputs
        .iter()
        .enumerate()
        .map(|(i, &o)| (o, i))
        .collect();
    let mut rows: Vec<Vec<(usize, Num)>> = vec![Vec::new(); l];
    let mut cols: Vec<Vec<(usize, Num)>> = vec![Vec::new(); l];
    for (j, &x) in lump.inputs.iter().enumerate() {
        let seeds = HashMap::from([(x, Num::Lit(1.0))]);
        let tangents = tangent_sweep(ar, lump, parts, &seeds);
        for (out, &t) in &tangents {
            if let Some(&i) = out_index.get(out) {
                rows[i].push((j, t));
                cols[j].push((i, t));
            }
        }
        cols[j].sort_unstable_by_key(|&(i, _)| i);
    }
    BlockMatrix { rows, cols }
}

/// The size of each row (by output index) of the lump's Jacobian `[A B]`, where `B` holds the
/// partials of the outputs with respect to the values that pass through the lump: the largest
/// `|A_ij|`, or `Σⱼ |B_ij|` when that is larger (one sweep of absolute values seeded with 1 on
/// every pass-through value; between the largest `|B_ij|` and the number of pass-through values
/// times it). The identity block of the pass-through values is not counted, so scaling J
/// scales every row and leaves the pivot tests alone, while a row whose `A` entry is tiny next
/// to its `B` entries (y = (a·b, b) at b → 0: cond J ≈ 1/b) is still numerically singular.
pub fn output_scales(
    ar: &mut Arith,
    lump: &Lump,
    parts: &LumpPartials,
    a: &BlockMatrix,
) -> Vec<Num> {
    let mut scales = lu::row_scales(ar, a.rows.iter().map(Vec::as_slice));
    if lump.pass_read.is_empty() {
        return scales;
    }
    let seeds: HashMap<Value, Num> = lump.pass_read.iter().map(|&p| (p, Num::Lit(1.0))).collect();
    let mut sums: HashMap<Value, Num> = HashMap::new();
    for k in parts.reached(lump, seeds.keys()) {
        let v = lump.insts[k];
        let mut acc: Option<Num> = None;
        for &(o, p) in parts.of(v) {
            if let Some(&t) = seeds.get(&o).or_else(|| sums.get(&o)) {
                // |∂v/∂o · t| for t ≥ 0.
                let magnitude = match p {
                    Partial::One | Partial::MinusOne => t,
                    Partial::Mul(c) | Partial::NegMul(c) => {
                        let c = ar.abs(c);
                        ar.mul(c, t)
                    }
                    Partial::Div(c) | Partial::NegDiv(c) => {
                        let c = ar.abs(c);
                        ar.div(t, c)
                    }
                    other => {
                        let term = other.apply(ar, t);
                        ar.abs(term)
                    }
                };
                acc = Some(match acc {
                    None => magnitude,
                    Some(acc) => ar.add(acc, magnitude),
                });
            }
        }
        if let Some(t) = acc {
            sums.insert(v, t);
        }
    }
    for (scale, o) in scales.iter_mut().zip(&lump.outputs) {
        if let Some(&b) = sums.get(o) {
            *scale = match *scale {
                Num::Lit(0.0) => b,
                s => ar.max(s, b),
            };
        }
    }
    scales
}

/// `x` (by input index) with `A·x = r` (`r` by output index), block by block. Each pivot is
/// judged against the size of its row of the lump's Jacobian (`scales` by output index, from
/// [`output_scales`]): row equilibration, so a lump whose entries are all tiny
/// (J = 1e-20·I) is as regular as one of ones.
pub fn solve_a(
    ar: &mut Arith,
    a: &BlockMatrix,
    scales: &[Num],
    structure: &LumpBlocks,
    r: &[Num],
    tol: f64,
) -> (Vec<Num>, PivotCheck) {
    let l = a.rows.len();
    let mut check = PivotCheck::new(tol);
    let mut x: Vec<Option<Num>> = vec![None; l];
    for block in &structure.blocks {
        let cols: Vec<usize> = block.iter().map(|&i| structure.matched_input[i]).collect();
        let mut rhs = Vec::with_capacity(block.len());
        for &i in block {
            let mut acc = r[i];
            for &(j, aij) in &a.rows[i] {
                if cols.contains(&j) || aij == Num::Lit(0.0) {
                    continue;
                }
                let xj = x[j].expect("earlier blocks are solved first");
                let neg = ar.neg(xj);
                acc = ar.fma(aij, neg, acc);
            }
            rhs.push(acc);
        }
        let sub: Vec<Vec<Num>> = block
            .iter()
            .map(|&i| cols.iter().map(|&j| a.get(i, j)).collect())
            .collect();
        let block_scales = block.iter().map(|&i| scales[i]).collect();
        let xs = lu::solve(ar, sub, rhs, lu::Scales::Rows(block_scales), &mut check);
        for (&j, xj) in cols.iter().zip(xs) {
            x[j] = Some(xj);
        }
    }
    (
        x.into_iter()
            .map(|v| v.expect("every column is in a block"))
            .collect(),
        check,
    )
}

/// `z` (by output index) with `Aᵀ·z = s` (`s` by input index), blocks in reverse order; pivots
/// as in [`solve_a`]: the rows of `A` are the columns of `Aᵀ`, so the output scales are column
/// scales here (`(D·A)ᵀ = Aᵀ·D`).
pub fn solve_at(
    ar: &mut Arith,
    a: &BlockMatrix,
    scales: &[Num],
    structure: &LumpBlocks,
    s: &[Num],
    tol: f64,
) -> (Vec<Num>, PivotCheck) {
    let l = a.rows.len();
    let mut check = PivotCheck::new(tol);
    let mut z: Vec<Option<Num>> = vec![None; l];
    for block in structure.blocks.iter().rev() {
        let cols: Vec<usize> = block.iter().map(|&i| structure.matched_input[i]).collect();
        let mut rhs = Vec::with_capacity(block.len());
        for &j in &cols {
            let mut acc = s[j];
            for &(i, aij) in &a.cols[j] {
                let (Some(zi), false) = (z[i], aij == Num::Lit(0.0)) else {
                    continue;
                };
                let neg = ar.neg(zi);
                acc = ar.fma(aij, neg, acc);
            }
            rhs.push(acc);
        }
        // Transposed block: row c (column j = cols[c]) , column r (row i = block[r]).
        let sub: Vec<Vec<Num>> = cols
            .iter()
            .map(|&j| block.iter().map(|&i| a.get(i, j)).collect())
            .collect();
        let block_scales = block.iter().map(|&i| scales[i]).collect();
        let zs = lu::solve(ar, sub, rhs, lu::Scales::Cols(block_scales), &mut check);
        for (&i, zi) in block.iter().zip(zs) {
            z[i] = Some(zi);
        }
    }
    (
        z.into_iter()
            .map(|v| v.expect("every row is in a block"))
            .collect(),
        check,
    )
}

/// The `status` output and the pivot report: status is the smallest index of a lump whose
/// singular-pivot flag is set (`checks` are `(lump index, check)`); otherwise [`NOT_FINITE`]
/// when an entry of the `product` is infinite or NaN (an ill-conditioned J that no pivot test
/// caught, or a non-finite seed); otherwise 0. With a singular lump, the report is that lump's
/// failing pivot ratio as compared (see `PivotCheck`) and the tolerance it was judged
/// against (0, 0 otherwise).
pub fn status_output(
    ar: &mut Arith,
    checks: &[(usize, PivotCheck)],
    product: &[Num],
) -> [Value; 3] {
    let mut status = Num::Lit(0.0);
    for &p in product {
        status = match p {
            Num::Lit(c) if c.is_finite() => status,
            Num::Lit(_) => Num::Lit(NOT_FINITE),
            Num::Val(_) => {
                let mag = ar.abs(p);
                let finite = Emitter::fcmp(ar, CmpPred::Lt, mag, Num::Lit(f64::INFINITY));
                ar.select(finite, status, Num::Lit(NOT_FINITE))
            }
        };
    }
    let (mut pivot, mut threshold) = (Num::Lit(0.0), Num::Lit(0.0));
    let mut sorted: Vec<(usize, PivotCheck)> = checks.to_vec();
    sorted.sort_by_key(|&(k, _)| std::cmp::Reverse(k));
    for (k, check) in sorted {
        match check.flag {
            Num::Lit(0.0) => {}
            Num::Lit(_) => {
                status = Num::Lit(k as f64);
                pivot = check.smallest;
                threshold = check.threshold;
            }
            Num::Val(fv) => {
                let set = ar.fcmp(CmpPred::Gt, fv, Num::Lit(0.5));
                status = ar.select(set, Num::Lit(k as f64), status);
                pivot = ar.select(set, check.smallest, pivot);
                threshold = ar.select(set, check.threshold, threshold);
            }
        }
    }
    [ar.value(status), ar.value(pivot), ar.value(threshold)]
}

/// The `status` an inverse program returns when its product is not finite.
pub const NOT_FINITE: f64 = -1.0;
