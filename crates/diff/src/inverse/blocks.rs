//! The structure of a lump's square block `A = ∂Out/∂In`: a perfect matching and the block
//! triangular form.
//!
//! `A[i][j]` is structurally nonzero when output `i` of the lump depends on input `j` through the
//! lump's derivative-carrying operands. Without a perfect row↔column matching (a greedy pass, then
//! augmenting paths: Kuhn's algorithm) `A` is singular for every input: a compile-time error. With one, the strongly
//! connected components (Tarjan) of "row `i` needs the column matched to row `i′`" give diagonal
//! blocks that can be solved one after the other, so a coupling layer whose `A` is diagonal costs
//! `l` divisions instead of an `l × l` LU. Nothing is emitted here.

use std::collections::HashMap;

use adjit_ir::{Function, Value};

use super::lumps::Lump;
use super::{label, InverseError};
use crate::rules::derivative_operands;

/// The structure of one lump's `A`.
#[derive(Clone, Debug, PartialEq)]
pub struct LumpBlocks {
    /// `deps[i]`: the inputs (indices into `Lump::inputs`) that output `i` depends on, sorted.
    pub deps: Vec<Vec<usize>>,
    /// `matched_input[i]`: the input matched with output `i`.
    pub matched_input: Vec<usize>,
    /// Diagonal blocks as lists of output indices, in the order that solves `A·x = r`
    /// (a block only needs the unknowns of earlier blocks). `Aᵀ·z = s` goes backwards.
    pub blocks: Vec<Vec<usize>>,
}

impl LumpBlocks {
    /// The size of the largest diagonal block.
    pub fn largest(&self) -> usize {
        self.blocks.iter().map(Vec::len).max().unwrap_or(0)
    }
}

/// Which inputs of `lump` (indices into `Lump::inputs`) every output of the lump depends on,
/// as sorted lists. Sets are sparse and a value's set is dropped after its last use in the lump,
/// so a wide lump whose outputs each depend on a few inputs costs O(lump), not O(lump × l).
fn dependence(func: &Function, active: &[bool], lump: &Lump) -> Vec<Vec<usize>> {
    let mut uses: HashMap<Value, usize> = HashMap::with_capacity(lump.insts.len());
    for &o in &lump.outputs {
        *uses.entry(o).or_default() += 1;
    }
    let operands = |v: Value| {
        let inst = func.inst(v).expect("lump instructions are instructions");
        derivative_operands(inst)
            .into_iter()
            .filter(|o| active[o.index()])
    };
    for &v in &lump.insts {
        for o in operands(v) {
            *uses.entry(o).or_default() += 1;
        }
    }
    let mut sets: HashMap<Value, Vec<usize>> = HashMap::with_capacity(lump.inputs.len());
    for (j, &x) in lump.inputs.iter().enumerate() {
        sets.insert(x, vec![j]);
    }
    for &v in &lump.insts {
        let mut s: Vec<usize> = Vec::new();
        for o in operands(v) {
            let last = uses.get_mut(&o).is_some_and(|u| {
                *u -= 1;
                *u == 0
            });
            let merged = match (last, sets.get(&o)) {
                (_, None) => continue,
                (true, Some(_)) => union(&s, &sets.remove(&o).unwrap_or_default()),
                (false, Some(os)) => union(&s, os),
            };
            s = merged;
        }
        sets.insert(v, s);
    }
    lump.outputs
        .iter()
        .map(|o| sets.get(o).cloned().unwrap_or_default())
        .collect()
}

/// The union of two sorted lists.
fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// A perfect row↔column matching of `deps` as `owner[j]` = the row matched to column `j`, and
/// how many rows are matched. A cheap pass first matches every row it can to a free column; the
/// rows left over search augmenting paths (Kuhn) with an explicit stack, so a long chain of
/// displaced rows neither recurses nor rescans a `seen` array per row (a stamp marks visits).
fn matching(deps: &[Vec<usize>]) -> (Vec<Option<usize>>, usize) {
    let l = deps.len();
    let mut owner: Vec<Option<usize>> = vec![None; l];
    let mut row_matched = vec![false; l];
    let mut matched = 0;
    for (i, d) in deps.iter().enumerate() {
        if let Some(&j) = d.iter().find(|&&j| owner[j].is_none()) {
            owner[j] = Some(i);
            row_matched[i] = true;
            matched += 1;
        }
    }
    let mut seen = vec![0u32; l];
    let mut stamp = 0u32;
    let unmatched: Vec<usize> = (0..l).filter(|&i| !row_matched[i]).collect();
    for root in unmatched {
        stamp += 1;
        // Rows on the current path with the next dependency to try, and the column through
        // which each row after the first was reached.
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        let mut via: Vec<usize> = Vec::new();
        while let Some(top) = stack.last_mut() {
            let (i, k) = *top;
            if k == deps[i].len() {
                stack.pop();
                via.pop();
                continue;
            }
            top.1 += 1;
            let j = deps[i][k];
            if seen[j] == stamp {
                continue;
            }
            seen[j] = stamp;
            via.push(j);
            match owner[j] {
                Some(next) => stack.push((next, 0)),
                None => {
                    // Shift the path: every row on it takes the column after it.
                    for (&(row, _), &col) in stack.iter().zip(&via) {
                        owner[col] = Some(row);
                    }
                    matched += 1;
                    break;
                }
            }
        }
    }
    (owner, matched)
}

/// Tarjan's strongly connected components of `succ`, sinks first. Iterative (an explicit call
/// stack), so a chain as long as the lump does not overflow the native stack.
fn components(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = succ.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    // (vertex, next successor to visit)
    let mut calls: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        calls.push((root, 0));
        while let Some(top) = calls.last_mut() {
            let (v, k) = *top;
            if k < succ[v].len() {
                top.1 += 1;
                let w = succ[v][k];
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                comp.sort_unstable();
                out.push(comp);
            }
            if let Some(&(u, _)) = calls.last() {
                low[u] = low[u].min(low[v]);
            }
        }
    }
    out
}

/// The structure of `lump`'s `A`, or [`InverseError::StructurallySingular`].
pub fn lump_blocks(
    func: &Function,
    active: &[bool],
    lump: &Lump,
) -> Result<LumpBlocks, InverseError> {
    let l = lump.size();
    let deps = dependence(func, active, lump);
    let (owner, matched) = matching(&deps);
    if matched < l {
        return Err(InverseError::StructurallySingular {
            func: func.name.clone(),
            lump: lump.index,
            first: label(func, lump.insts[0]),
            last: label(func, lump.insts[lump.insts.len() - 1]),
            l,
            matched,
        });
    }
    let mut matched_input = vec![0; l];
    for (j, o) in owner.iter().enumerate() {
        matched_input[o.expect("perfect matching")] = j;
    }
    let row_of_input: Vec<usize> = owner.iter().map(|o| o.expect("perfect matching")).collect();
    let succ: Vec<Vec<usize>> = deps
        .iter()
        .enumerate()
        .map(|(i, d)| {
            d.iter()
                .map(|&j| row_of_input[j])
                .filter(|&r| r != i)
                .collect()
        })
        .collect();
    Ok(LumpBlocks {
        deps,
        matched_input,
        blocks: components(&succ),
    })
}
