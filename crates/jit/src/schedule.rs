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

/// The distinct value operands of an instruction, in text order (at most three).
#[derive(Clone, Copy)]
struct Operands {
    values: [u32; 3],
    len: u8,
}

impl Operands {
    fn of(inst: &InstData) -> Operands {
        let mut ops = Operands {
            values: [0; 3],
            len: 0,
        };
        inst.for_each_value(|v| {
            let v = v.index() as u32;
            if !ops.as_slice().contains(&v) {
                ops.values[ops.len as usize] = v;
                ops.len += 1;
            }
        });
        ops
    }

    fn as_slice(&self) -> &[u32] {
        &self.values[..self.len as usize]
    }
}

/// Scheduler state: what has been emitted and how many uses every value has left.
struct Scheduler<'a> {
    func: &'a Function,
    operands: Vec<Operands>,
    /// Users of every value (each user once), as a compressed adjacency list.
    user_start: Vec<u32>,
    users: Vec<u32>,
    /// Per value: whether some returned value depends on it.
    live: Vec<bool>,
    /// Per value: live users not yet emitted.
    remaining: Vec<u32>,
    /// Per instruction: operands (instructions) not yet emitted.
    pending: Vec<u32>,
    emitted: Vec<bool>,
    /// Per parameter: whether some emitted instruction has read it (it is in a register).
    touched: Vec<bool>,
    /// Ready instructions that may free a value, most recent last.
    candidates: Vec<u32>,
    order: Vec<u32>,
}

/// Reorder the instructions of `func` (verified) to reduce register pressure. See the module
/// documentation for the heuristic and what is preserved.
pub fn schedule(func: &Function) -> Function {
    let mut s = Scheduler::new(func);
    let n_params = func.n_params;
    let priority = priorities(func, &s.operands);

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
            if s.emitted[v as usize] {
                continue;
            }
            if expanded {
                s.emit(v);
                s.fill();
                continue;
            }
            stack.push((v, true));
            children.clear();
            children.extend(
                s.operands[v as usize]
                    .as_slice()
                    .iter()
                    .copied()
                    .filter(|&a| a as usize >= n_params && !s.emitted[a as usize]),
            );
            // Visit the most demanding operand first: push it last. The sort is stable, so
            // equal operands are visited in text order.
            children.sort_by_key(|&a| std::cmp::Reverse(priority[a as usize]));
            stack.extend(children.iter().rev().map(|&a| (a, false)));
        }
    }
    // Dead instructions: after everything else, in program order (operands still point back:
    // a dead instruction's operands are live, hence emitted, or dead and earlier).
    for v in n_params..func.n_values() {
        if !s.emitted[v] {
            s.emitted[v] = true;
            s.order.push(v as u32);
        }
    }
    s.build()
}

/// Per value: (Sethi–Ullman register need, depth) of the expression tree it heads, with
/// shared operands counted as if duplicated (an estimate; exact on trees). Parameters and
/// constants need one register and have depth 0.
fn priorities(func: &Function, operands: &[Operands]) -> Vec<(u32, u32)> {
    let mut priority = vec![(1u32, 0u32); func.n_values()];
    for v in func.n_params..func.n_values() {
        let ops = operands[v].as_slice();
        let mut needs = [0u32; 3];
        let mut depth = 0u32;
        for (k, &a) in ops.iter().enumerate() {
            let (need, d) = priority[a as usize];
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
        priority[v] = (need, depth);
    }
    priority
}

impl<'a> Scheduler<'a> {
    fn new(func: &'a Function) -> Scheduler<'a> {
        let n = func.n_values();
        let n_params = func.n_params;
        let operands: Vec<Operands> = func
            .values
            .iter()
            .map(|d| match &d.def {
                ValueDef::Inst(inst) => Operands::of(inst),
                ValueDef::Param => Operands {
                    values: [0; 3],
                    len: 0,
                },
            })
            .collect();

        let mut live = vec![false; n];
        for r in &func.rets {
            live[r.index()] = true;
        }
        for v in (n_params..n).rev() {
            if live[v] {
                for &a in operands[v].as_slice() {
                    live[a as usize] = true;
                }
            }
        }

        let mut remaining = vec![0u32; n];
        let mut pending = vec![0u32; n];
        for v in (n_params..n).filter(|&v| live[v]) {
            for &a in operands[v].as_slice() {
                remaining[a as usize] += 1;
                if a as usize >= n_params {
                    pending[v] += 1;
                }
            }
        }
        let mut user_start = vec![0u32; n + 1];
        for v in 0..n {
            user_start[v + 1] = user_start[v] + remaining[v];
        }
        let mut fill_at: Vec<u32> = user_start[..n].to_vec();
        let mut users = vec![0u32; user_start[n] as usize];
        for v in (n_params..n).filter(|&v| live[v]) {
            for &a in operands[v].as_slice() {
                users[fill_at[a as usize] as usize] = v as u32;
                fill_at[a as usize] += 1;
            }
        }

        Scheduler {
            func,
            operands,
            user_start,
            users,
            live,
            remaining,
            pending,
            emitted: vec![false; n],
            touched: vec![false; n_params],
            candidates: Vec::new(),
            order: Vec::with_capacity(n - n_params),
        }
    }

    fn users_of(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.users[self.user_start[v] as usize..self.user_start[v + 1] as usize]
    }

    /// Emit `v` (all of whose operands are emitted) and record the fill candidates it creates.
    fn emit(&mut self, v: u32) {
        debug_assert!(self.live[v as usize] && self.pending[v as usize] == 0);
        self.emitted[v as usize] = true;
        self.order.push(v);
        let n_params = self.func.n_params;
        let ops = self.operands[v as usize];
        for &a in ops.as_slice() {
            if (a as usize) < n_params {
                self.touched[a as usize] = true;
            }
            self.remaining[a as usize] -= 1;
            if self.remaining[a as usize] == 1 {
                // The one user left would free `a`: a candidate once it is ready.
                let last = self
                    .users_of(a)
                    .iter()
                    .copied()
                    .find(|&w| !self.emitted[w as usize]);
                if let Some(w) = last {
                    if self.pending[w as usize] == 0 {
                        self.candidates.push(w);
                    }
                }
            }
        }
        for k in self.user_start[v as usize]..self.user_start[v as usize + 1] {
            let w = self.users[k as usize];
            self.pending[w as usize] -= 1;
            if self.pending[w as usize] == 0 {
                self.candidates.push(w);
            }
        }
    }

    /// How many values emitting `v` now would free (operands at their last use that are in
    /// registers: instructions, or parameters already read).
    fn frees(&self, v: u32) -> usize {
        let n_params = self.func.n_params;
        self.operands[v as usize]
            .as_slice()
            .iter()
            .filter(|&&a| {
                self.remaining[a as usize] == 1
                    && (a as usize >= n_params || self.touched[a as usize])
            })
            .count()
    }

    /// Emit ready instructions that free a value, most recently enabled first, until none is
    /// left.
    fn fill(&mut self) {
        while let Some(w) = self.candidates.pop() {
            let i = w as usize;
            if self.emitted[i] || self.pending[i] != 0 || !self.live[i] {
                continue;
            }
            if self.frees(w) > 0 {
                self.emit(w);
            }
        }
    }

    /// The function in the new order.
    fn build(self) -> Function {
        let func = self.func;
        let n_params = func.n_params;
        let mut new_index = vec![0u32; func.n_values()];
        for (v, slot) in new_index.iter_mut().enumerate().take(n_params) {
            *slot = v as u32;
        }
        for (k, &v) in self.order.iter().enumerate() {
            new_index[v as usize] = (n_params + k) as u32;
        }
        let remap = |v: adjit_ir::Value| adjit_ir::Value::new(new_index[v.index()] as usize);
        // Parameters keep their places, names and kinds (data or differentiated).
        let mut out = Function::new(func.name.clone());
        for p in func.params() {
            let q = out.add_param(func.ty(p), func.name(p).cloned());
            out.set_param_kind(q, func.param_kind(p));
        }
        out.values.reserve(func.n_values() - n_params);
        for &v in &self.order {
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
}
