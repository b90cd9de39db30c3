//! The structure of a lump's square block `A = ∂Out/∂In`: a perfect matching and the block
//! triangular form.
//!
//! `A[i][j]` is structurally nonzero when output `i` of the lump depends on input `j` through the
//! lump's derivative-carrying operands. Without a perfect row↔column matching (augmenting paths,
//! Kuhn's algorithm) `A` is singular for every input: a compile-time error. With one, the strongly
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

/// Which inputs of `lump` every active value of the lump depends on (bitsets over input indices).
fn dependence(func: &Function, active: &[bool], lump: &Lump) -> HashMap<Value, Vec<u64>> {
    let words = lump.inputs.len().div_ceil(64).max(1);
    let mut sets: HashMap<Value, Vec<u64>> = HashMap::new();
    for (j, &x) in lump.inputs.iter().enumerate() {
        let mut s = vec![0u64; words];
        s[j / 64] |= 1 << (j % 64);
        sets.insert(x, s);
    }
    for &v in &lump.insts {
        let inst = func.inst(v).expect("lump instructions are instructions");
        let mut s = vec![0u64; words];
        for o in derivative_operands(inst) {
            if active[o.index()] {
                if let Some(os) = sets.get(&o) {
                    s.iter_mut().zip(os).for_each(|(a, b)| *a |= b);
                }
            }
        }
        sets.insert(v, s);
    }
    sets
}

/// Kuhn's augmenting path from row `i`; `owner[j]` is the row matched to column `j`.
fn augment(i: usize, deps: &[Vec<usize>], seen: &mut [bool], owner: &mut [Option<usize>]) -> bool {
    for &j in &deps[i] {
        if seen[j] {
            continue;
        }
        seen[j] = true;
        if owner[j].is_none_or(|k| augment(k, deps, seen, owner)) {
            owner[j] = Some(i);
            return true;
        }
    }
    false
}

/// Tarjan's strongly connected components of `succ`, sinks first.
fn components(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for k in 0..s.succ[v].len() {
            let w = s.succ[v][k];
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            comp.sort_unstable();
            s.out.push(comp);
        }
    }
    let n = succ.len();
    let mut s = State {
        succ,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The structure of `lump`'s `A`, or [`InverseError::StructurallySingular`].
pub fn lump_blocks(
    func: &Function,
    active: &[bool],
    lump: &Lump,
) -> Result<LumpBlocks, InverseError> {
    let l = lump.size();
    let sets = dependence(func, active, lump);
    let deps: Vec<Vec<usize>> = lump
        .outputs
        .iter()
        .map(|o| {
            let s = &sets[o];
            (0..l).filter(|&j| s[j / 64] >> (j % 64) & 1 == 1).collect()
        })
        .collect();
    let mut owner: Vec<Option<usize>> = vec![None; l];
    let mut matched = 0;
    for i in 0..l {
        let mut seen = vec![false; l];
        if augment(i, &deps, &mut seen, &mut owner) {
            matched += 1;
        }
    }
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
