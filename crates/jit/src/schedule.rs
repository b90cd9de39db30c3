//! Instruction scheduling: reorders the instructions of a verified function so that fewer
//! values are live at once, without changing any instruction. The JIT runs it before planning
//! and lowering; Cranelift keeps the order it is given (with `opt_level = none`) or close to it.
//!
//! The order is a depth-first walk from the returned values, interleaved with a *fill*:
//!
//! - Roots are the returned instructions, latest-defined first. In a derivative program the
//!   last-defined outputs are the ones that close the most chains (a VJP's gradient of the
//!   first input), so walking them first lets the fill advance the other chains in step.
//! - The walk visits an instruction's operands in Sethi–Ullman order: the operand whose
//!   subtree needs the most registers (then the deepest) first, so that the short operands
//!   are not held across the long ones (the primal's sum chain `s = a·a + (d·100 + s')`
//!   walks `s'` before `a`).
//! - After every emitted instruction, every *ready* instruction (all operands emitted) that
//!   performs the last use of one of its operands is emitted too, most recent first: it
//!   frees at least as many registers as it takes. This is what lets a VJP compute each
//!   term's forward values, use them in the reverse sweep and drop them, instead of keeping
//!   the whole forward sweep live across the turn.
//!
//! What it leaves alone: parameters keep their positions; instructions not needed by any
//! returned value keep their relative order after all the others; every value keeps its
//! `ValueData` (type, instruction up to renumbering, name; unnamed values print by position).
//! Returned values keep their order, so the calling convention is unchanged.
//!
//! Assumes a verified function (operands point backwards). Linear time and memory in the size
//! of the program, deterministic, and without recursion (explicit stacks), so a program of a
//! million instructions is scheduled in well under a second.

use adjit_ir::{Function, InstData, ValueData, ValueDef};

/// Per value: everything the walk reads or updates about it, in one 32-byte record, so that
/// visiting a value touches one cache line (separate arrays, one per field, cost a cache miss
/// each on programs of millions of values, which is where the time went).
#[derive(Clone, Copy)]
struct Node {
    /// The distinct value operands, in text order (`n_ops` of them, at most three).
    ops: [u32; 3],
    n_ops: u8,
    /// Operands (instructions) not yet emitted.
    pending: u8,
    /// Whether some returned value depends on this value.
    live: bool,
    emitted: bool,
    /// Live users not yet emitted.
    remaining: u32,
    /// Sethi–Ullman register need and depth of the expression it heads ([`priorities`]).
    need: u32,
    depth: u32,
    /// Where its users start in [`Scheduler::users`] (they end where the next value's start).
    user_start: u32,
}

impl Node {
    fn of(inst: Option<&InstData>) -> Node {
        let mut node = Node {
            ops: [0; 3],
            n_ops: 0,
            pending: 0,
            live: false,
            emitted: false,
            remaining: 0,
            need: 1,
            depth: 0,
            user_start: 0,
        };
        if let Some(inst) = inst {
            inst.for_each_value(|v| {
                let v = v.index() as u32;
                if !node.ops().contains(&v) {
                    node.ops[node.n_ops as usize] = v;
                    node.n_ops += 1;
                }
            });
        }
        node
    }

    fn ops(&self) -> &[u32] {
        &self.ops[..self.n_ops as usize]
    }

    fn priority(&self) -> (u32, u32) {
        (self.need, self.depth)
    }
}

/// Scheduler state: what has been emitted and how many uses every value has left.
struct Scheduler<'a> {
    func: &'a Function,
    /// One per value, and one past the last (whose `user_start` ends the last value's users).
    nodes: Vec<Node>,
    /// Users of every value (each user once), as a compressed adjacency list.
    users: Vec<u32>,
    /// Per parameter: whether some emitted instruction has read it (it is in a register).
    touched: Vec<bool>,
    /// Ready instructions that may free a value, most recent last.
    candidates: Vec<u32>,
    order: Vec<u32>,
}

/// Reorder the instructions of `func` (verified) to reduce register pressure. See the module
/// documentation for the heuristic and what is preserved.
pub fn schedule(func: &Function) -> Function {
    reordered(func, &schedule_order(func))
}

/// The order [`schedule`] puts the instructions of `func` (verified) in: every instruction's
/// index once, each after its operands.
pub(crate) fn schedule_order(func: &Function) -> Vec<u32> {
    let mut s = Scheduler::new(func);
    let n_params = func.n_params;

    // Roots: returned instructions, latest-defined first, each once.
    let mut roots: Vec<u32> = func
        .rets
        .iter()
        .map(|r| r.index() as u32)
        .filter(|&r| r as usize >= n_params)
        .collect();
    roots.sort_unstable_by(|a, b| b.cmp(a));
    roots.dedup();

    let mut stack: Vec<(u32, bool)> = Vec::new();
    let mut children: Vec<u32> = Vec::with_capacity(3);
    for root in roots {
        stack.push((root, false));
        while let Some((v, expanded)) = stack.pop() {
            if s.nodes[v as usize].emitted {
                continue;
            }
            if expanded {
                s.emit(v);
                s.fill();
                continue;
            }
            stack.push((v, true));
            children.clear();
            let node = s.nodes[v as usize];
            children.extend(
                node.ops()
                    .iter()
                    .copied()
                    .filter(|&a| a as usize >= n_params && !s.nodes[a as usize].emitted),
            );
            // Visit the most demanding operand first: push it last. The sort is stable, so
            // equal operands are visited in text order.
            children.sort_by_key(|&a| std::cmp::Reverse(s.nodes[a as usize].priority()));
            stack.extend(children.iter().rev().map(|&a| (a, false)));
        }
    }
    // Dead instructions: after everything else, in program order (operands still point back:
    // a dead instruction's operands are live, hence emitted, or dead and earlier).
    for v in n_params..func.n_values() {
        if !s.nodes[v].emitted {
            s.nodes[v].emitted = true;
            s.order.push(v as u32);
        }
    }
    // (The walk's tables go with `s`, before the caller copies the function: at 2.25·10⁷
    // values they are 0.9 GB, which the copy would otherwise hold beside its own 1.6 GB.)
    s.order
}

/// Per value: (Sethi–Ullman register need, depth) of the expression tree it heads, with
/// shared operands counted as if duplicated (an estimate; exact on trees). Parameters and
/// constants need one register and have depth 0.
fn priorities(nodes: &mut [Node], n_params: usize) {
    for v in n_params..nodes.len() {
        let node = nodes[v];
        let ops = node.ops();
        let mut needs = [0u32; 3];
        let mut depth = 0u32;
        for (k, &a) in ops.iter().enumerate() {
            let (need, d) = nodes[a as usize].priority();
            needs[k] = need;
            depth = depth.max(d.saturating_add(1));
        }
        let needs = &mut needs[..ops.len()];
        needs.sort_unstable_by(|a, b| b.cmp(a));
        let need = needs
            .iter()
            .enumerate()
            .map(|(k, &n)| n + k as u32)
            .max()
            .unwrap_or(1);
        nodes[v].need = need;
        nodes[v].depth = depth;
    }
}

impl<'a> Scheduler<'a> {
    fn new(func: &'a Function) -> Scheduler<'a> {
        let n = func.n_values();
        let n_params = func.n_params;
        let mut nodes: Vec<Node> = Vec::with_capacity(n + 1);
        nodes.extend(func.values.iter().map(|d| match &d.def {
            ValueDef::Inst(inst) => Node::of(Some(inst)),
            ValueDef::Param => Node::of(None),
        }));
        nodes.push(Node::of(None));
        priorities(&mut nodes[..n], n_params);

        for r in &func.rets {
            nodes[r.index()].live = true;
        }
        for v in (n_params..n).rev() {
            let node = nodes[v];
            if node.live {
                for &a in node.ops() {
                    nodes[a as usize].live = true;
                }
            }
        }

        for v in n_params..n {
            let node = nodes[v];
            if !node.live {
                continue;
            }
            for &a in node.ops() {
                nodes[a as usize].remaining += 1;
                if a as usize >= n_params {
                    nodes[v].pending += 1;
                }
            }
        }
        let mut start = 0u32;
        for node in nodes.iter_mut() {
            node.user_start = start;
            start += node.remaining;
        }
        // Fill each value's users, advancing a cursor per value kept in `user_start` and
        // restored after.
        let mut users = vec![0u32; start as usize];
        for v in n_params..n {
            let node = nodes[v];
            if !node.live {
                continue;
            }
            for &a in node.ops() {
                let at = &mut nodes[a as usize].user_start;
                users[*at as usize] = v as u32;
                *at += 1;
            }
        }
        for node in &mut nodes[..n] {
            node.user_start -= node.remaining;
        }

        Scheduler {
            func,
            nodes,
            users,
            touched: vec![false; n_params],
            candidates: Vec::new(),
            order: Vec::with_capacity(n - n_params),
        }
    }

    fn users_of(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.users[self.nodes[v].user_start as usize..self.nodes[v + 1].user_start as usize]
    }

    /// Emit `v` (all of whose operands are emitted) and record the fill candidates it creates.
    fn emit(&mut self, v: u32) {
        let node = self.nodes[v as usize];
        debug_assert!(node.live && node.pending == 0);
        self.nodes[v as usize].emitted = true;
        self.order.push(v);
        let n_params = self.func.n_params;
        for &a in node.ops() {
            if (a as usize) < n_params {
                self.touched[a as usize] = true;
            }
            self.nodes[a as usize].remaining -= 1;
            if self.nodes[a as usize].remaining == 1 {
                // The one user left would free `a`: a candidate once it is ready.
                let last = self
                    .users_of(a)
                    .iter()
                    .copied()
                    .find(|&w| !self.nodes[w as usize].emitted);
                if let Some(w) = last {
                    if self.nodes[w as usize].pending == 0 {
                        self.candidates.push(w);
                    }
                }
            }
        }
        let (from, to) = (node.user_start, self.nodes[v as usize + 1].user_start);
        for k in from..to {
            let w = self.users[k as usize] as usize;
            self.nodes[w].pending -= 1;
            if self.nodes[w].pending == 0 {
                self.candidates.push(w as u32);
            }
        }
    }

    /// How many values emitting `v` now would free (operands at their last use that are in
    /// registers: instructions, or parameters already read).
    fn frees(&self, v: u32) -> usize {
        let n_params = self.func.n_params;
        self.nodes[v as usize]
            .ops()
            .iter()
            .filter(|&&a| {
                self.nodes[a as usize].remaining == 1
                    && (a as usize >= n_params || self.touched[a as usize])
            })
            .count()
    }

    /// Emit ready instructions that free a value, most recently enabled first, until none is
    /// left.
    fn fill(&mut self) {
        while let Some(w) = self.candidates.pop() {
            let node = &self.nodes[w as usize];
            if node.emitted || node.pending != 0 || !node.live {
                continue;
            }
            if self.frees(w) > 0 {
                self.emit(w);
            }
        }
    }
}

/// `func` with its values from `from` on (instructions) put in `order` (each of them once,
/// by its index before, after its operands), in place: the values before `from` stay as they
/// are, every value keeps its `ValueData` (operands renumbered), returned values keep their
/// order. Returns the order that puts them back.
pub(crate) fn reorder_tail(func: &mut Function, from: usize, order: &[u32]) -> Vec<u32> {
    debug_assert_eq!(order.len(), func.n_values() - from);
    let mut new_index = vec![0u32; order.len()];
    for (k, &v) in order.iter().enumerate() {
        new_index[v as usize - from] = (from + k) as u32;
    }
    let remap = |v: adjit_ir::Value| match v.index().checked_sub(from) {
        Some(i) => adjit_ir::Value::new(new_index[i] as usize),
        None => v,
    };
    let mut tail: Vec<Option<ValueData>> = func.values.drain(from..).map(Some).collect();
    for &v in order {
        let Some(mut data) = tail[v as usize - from].take() else {
            unreachable!("value {v} is twice in the order");
        };
        if let ValueDef::Inst(inst) = &data.def {
            data.def = ValueDef::Inst(inst.map_values(remap));
        }
        func.values.push(data);
    }
    for r in &mut func.rets {
        *r = remap(*r);
    }
    new_index
}

/// `func` (verified) with its instructions in `order` (every instruction index once, each
/// after its operands): parameters keep their places, names and kinds; every value keeps its
/// `ValueData` (operands renumbered); returned values keep their order.
pub(crate) fn reordered(func: &Function, order: &[u32]) -> Function {
    let n_params = func.n_params;
    debug_assert_eq!(order.len(), func.n_insts());
    let mut new_index = vec![0u32; func.n_values()];
    for (v, slot) in new_index.iter_mut().enumerate().take(n_params) {
        *slot = v as u32;
    }
    for (k, &v) in order.iter().enumerate() {
        new_index[v as usize] = (n_params + k) as u32;
    }
    let remap = |v: adjit_ir::Value| adjit_ir::Value::new(new_index[v.index()] as usize);
    let mut out = Function::new(func.name.clone());
    for p in func.params() {
        let q = out.add_param(func.ty(p), func.name(p).cloned());
        out.set_param_kind(q, func.param_kind(p));
    }
    out.values.reserve(func.n_values() - n_params);
    for &v in order {
        let data = &func.values[v as usize];
        let def = match &data.def {
            ValueDef::Inst(inst) => ValueDef::Inst(inst.map_values(remap)),
            ValueDef::Param => ValueDef::Param,
        };
        out.values.push(ValueData {
            ty: data.ty,
            def,
            name: data.name.clone(),
        });
    }
    out.rets = func.rets.iter().map(|&r| remap(r)).collect();
    out.ret_types = func.ret_types.clone();
    out
}
