//! Chunk and spill planning: decides, before any code is generated, which instructions go into
//! which chunk function and which values live in the workspace (`work`) rather than only in
//! registers.
//!
//! A value gets a workspace slot when some use lies in a later chunk, or more than
//! [`JitOptions::spill_window`] instructions after its definition; it is stored once at its
//! definition, and the lowering reloads it at a use whose previous touch is outside the window.
//! Parameters never need a slot: their home is the `inputs` buffer. Returned values are stored
//! to `outputs` right at their definition, so `ret` is not a use. Slots are reused once the
//! last use of their value has passed (interval colouring in program order), so the workspace
//! holds at most the number of simultaneously long-lived values. Assumes a verified function.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

use adjit_ir::Function;

use crate::options::JitOptions;

/// Marks a value without a workspace slot.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// The storage and chunking decisions for one function.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Value-index ranges of the instructions of each chunk, in order; never empty (a
    /// function without instructions has one empty chunk, which writes returned parameters).
    pub chunks: Vec<Range<usize>>,
    /// Per value: its workspace slot (in units of 8 bytes), or [`NO_SLOT`].
    pub slots: Vec<u32>,
    /// Number of 8-byte workspace slots one call needs.
    pub n_slots: usize,
    /// `(value index, output index)` for every returned value, sorted by value.
    pub outputs: Vec<(usize, usize)>,
    /// Per value: whether some returned value depends on it. Dead instructions are not
    /// lowered (the IR has no side effects).
    pub live: Vec<bool>,
}

impl Plan {
    /// The output indices `value` is stored to.
    pub fn outputs_of(&self, value: usize) -> impl Iterator<Item = usize> + '_ {
        let start = self.outputs.partition_point(|&(v, _)| v < value);
        self.outputs[start..]
            .iter()
            .take_while(move |&&(v, _)| v == value)
            .map(|&(_, out)| out)
    }
}

/// Plan `func` (verified) under `opts`.
pub(crate) fn plan(func: &Function, opts: &JitOptions) -> Plan {
    let n_values = func.n_values();
    let first_inst = func.n_params;
    let n_insts = n_values - first_inst;

    let chunk_insts = opts.chunk_insts.max(1);
    let n_chunks = n_insts.div_ceil(chunk_insts).max(1);
    // Balanced chunks: sizes differ by at most one instruction.
    let chunks: Vec<Range<usize>> = (0..n_chunks)
        .map(|c| first_inst + c * n_insts / n_chunks..first_inst + (c + 1) * n_insts / n_chunks)
        .collect();
    let mut chunk_of = vec![0u32; n_values];
    for (c, range) in chunks.iter().enumerate() {
        for slot in &mut chunk_of[range.clone()] {
            *slot = c as u32;
        }
    }

    let mut live = vec![false; n_values];
    for r in &func.rets {
        live[r.index()] = true;
    }
    for v in (first_inst..n_values).rev() {
        if live[v] {
            if let Some(inst) = func.inst(adjit_ir::Value::new(v)) {
                inst.for_each_value(|a| live[a.index()] = true);
            }
        }
    }

    let mut last_use = vec![0usize; n_values];
    let mut needs_slot = vec![false; n_values];
    for (v, inst) in func.insts() {
        let pos = v.index();
        if !live[pos] {
            continue;
        }
        inst.for_each_value(|arg| {
            let a = arg.index();
            last_use[a] = pos;
            if a >= first_inst && (pos - a > opts.spill_window || chunk_of[a] != chunk_of[pos]) {
                needs_slot[a] = true;
            }
        });
    }

    let mut slots = vec![NO_SLOT; n_values];
    let mut n_slots = 0usize;
    let mut busy: BinaryHeap<Reverse<(usize, u32)>> = BinaryHeap::new();
    let mut free: Vec<u32> = Vec::new();
    for v in first_inst..n_values {
        if !needs_slot[v] {
            continue;
        }
        while let Some(&Reverse((end, slot))) = busy.peek() {
            if end >= v {
                break;
            }
            busy.pop();
            free.push(slot);
        }
        let slot = free.pop().unwrap_or_else(|| {
            n_slots += 1;
            (n_slots - 1) as u32
        });
        slots[v] = slot;
        busy.push(Reverse((last_use[v], slot)));
    }

    let mut outputs: Vec<(usize, usize)> = func
        .rets
        .iter()
        .enumerate()
        .map(|(out, r)| (r.index(), out))
        .collect();
    outputs.sort_unstable();

    Plan {
        chunks,
        slots,
        n_slots,
        outputs,
        live,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_ir::random::{random_function, RandomOptions};

    #[test]
    fn slots_never_overlap_while_live() {
        let func = random_function(
            7,
            &RandomOptions {
                n_insts: 3000,
                window: 400,
                ..RandomOptions::default()
            },
        );
        let opts = JitOptions {
            spill_window: 50,
            chunk_insts: 700,
            ..JitOptions::default()
        };
        let plan = plan(&func, &opts);
        assert!(plan.chunks.len() == 5 && plan.n_slots > 0);
        let mut last_use = vec![0usize; func.n_values()];
        for (v, inst) in func.insts() {
            inst.for_each_value(|a| last_use[a.index()] = v.index());
        }
        // Simulate: the slot's current owner must be the value read at every use.
        let mut owner = vec![usize::MAX; plan.n_slots];
        for (v, inst) in func.insts().filter(|(v, _)| plan.live[v.index()]) {
            inst.for_each_value(|a| {
                let s = plan.slots[a.index()];
                if s != NO_SLOT {
                    assert_eq!(
                        owner[s as usize],
                        a.index(),
                        "slot {s} clobbered before use"
                    );
                }
            });
            let s = plan.slots[v.index()];
            if s != NO_SLOT {
                owner[s as usize] = v.index();
            }
        }
        assert!(plan.n_slots < func.n_values() / 2, "slots are reused");
    }
}
