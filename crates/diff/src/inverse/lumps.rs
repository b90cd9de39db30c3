//! Activity, live counts and the lump partition of a square program.
//!
//! A value is *active* when a derivative can flow from an input to it and from it to an output:
//! derivatives flow through float operands, except a `select`'s condition, and not out of
//! `fcmp`, `floor`, `ceil` or `const`. Along an order of the instructions (see [`super::greedy_order`]),
//! an active value is live from its definition to its last use by an active instruction (outputs
//! stay live to the end). Every output is a function of the live set at any cut, so a cut with
//! fewer than `n` live values proves `J` singular; the cuts with exactly `n` live values split the
//! program into lumps. This file only analyses; it emits no code and leaves passive values alone.

use adjit_ir::{Function, Value};

use super::active::active_flags;
use super::{label, order, InverseError};
use crate::rules::derivative_operands;

/// One lump: the active instructions between two consecutive cuts of width `n`.
#[derive(Clone, Debug, PartialEq)]
pub struct Lump {
    /// 1-based, in program order (the number `status` outputs report).
    pub index: usize,
    /// Positions in [`Analysis::order`]: the lump holds `order[start..end]`.
    pub start: usize,
    pub end: usize,
    /// The active instructions of the lump, in order.
    pub insts: Vec<Value>,
    /// In: live at the opening cut, dead at the closing one (sorted).
    pub inputs: Vec<Value>,
    /// Out: produced inside, live at the closing cut (sorted).
    pub outputs: Vec<Value>,
    /// The values of P (live across the whole lump) that the lump's instructions read (sorted).
    /// The others pass through untouched and are only counted, so that a program with many
    /// lumps and a wide cut costs O(program), not O(lumps × n).
    pub pass_read: Vec<Value>,
    /// `|P|`, the number of values live across the whole lump (`n − l`).
    pub n_pass: usize,
}

impl Lump {
    /// `l`, the size of the lump's square block `A = ∂Out/∂In`.
    pub fn size(&self) -> usize {
        self.inputs.len()
    }
}

/// The result of the lump analysis of a square program.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// Number of inputs = number of outputs.
    pub n: usize,
    /// Per value: is it active?
    pub active: Vec<bool>,
    /// Every instruction, in a topological order.
    pub order: Vec<Value>,
    /// `widths[t]` = live active values after the first `t` instructions of the order.
    pub widths: Vec<usize>,
    /// The lumps, first to last (lumps without active instructions are dropped).
    pub lumps: Vec<Lump>,
    /// How the order was chosen (`greedy` or `program`).
    pub order_name: &'static str,
}

impl Analysis {
    /// The largest `l` over the lumps (0 for a program without active instructions).
    pub fn largest_lump(&self) -> usize {
        self.lumps.iter().map(Lump::size).max().unwrap_or(0)
    }
}

/// Check that `func` is a verified square program without `data` inputs; returns `n`.
pub(crate) fn check_square(func: &Function) -> Result<usize, InverseError> {
    adjit_ir::verify(func).map_err(|e| InverseError::NotVerified {
        func: func.name.clone(),
        message: e.to_string(),
    })?;
    if func.has_data_params() {
        let names = adjit_ir::text::printed_names(func);
        return Err(InverseError::DataInputs {
            func: func.name.clone(),
            inputs: func
                .data_params()
                .map(|p| format!("%{}", names[p.index()]))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let inputs = func.params().filter(|&p| func.ty(p).is_float()).count();
    let outputs = func.rets.iter().filter(|&&r| func.ty(r).is_float()).count();
    if inputs != func.n_params || outputs != func.rets.len() || inputs != outputs {
        return Err(InverseError::NotSquare {
            func: func.name.clone(),
            inputs,
            outputs,
        });
    }
    Ok(inputs)
}

/// Per value: uses by active instructions through derivative operands (each instruction counted
/// once), plus one for being an output.
fn remaining_uses(func: &Function, active: &[bool]) -> Vec<u32> {
    let mut remaining = vec![0u32; func.n_values()];
    for (v, inst) in func.insts() {
        if active[v.index()] {
            for o in derivative_operands(inst) {
                remaining[o.index()] += 1;
            }
        }
    }
    for r in &func.rets {
        remaining[r.index()] += 1;
    }
    remaining
}

/// Errors that make `J` singular whatever the order: unused inputs, passive or duplicated
/// outputs. Returns the activity.
pub(crate) fn check_structure(func: &Function) -> Result<Vec<bool>, InverseError> {
    let active = active_flags(func);
    for p in func.params() {
        if !active[p.index()] {
            return Err(InverseError::UnusedInput {
                func: func.name.clone(),
                input: label(func, p),
            });
        }
    }
    // The first output index of every value returned so far.
    let mut first_ret: Vec<Option<usize>> = vec![None; func.n_values()];
    for (index, r) in func.rets.iter().enumerate() {
        if let Some(first) = first_ret[r.index()] {
            return Err(InverseError::DuplicatedOutput {
                func: func.name.clone(),
                value: label(func, *r),
                first,
                second: index,
            });
        }
        first_ret[r.index()] = Some(index);
        if !active[r.index()] {
            return Err(InverseError::PassiveOutput {
                func: func.name.clone(),
                index,
                value: label(func, *r),
            });
        }
    }
    Ok(active)
}

/// The lump partition of a square program along a given topological `order` of all its
/// instructions (to study orders: [`analyze`] picks one itself). `order_name` labels it in dumps.
pub fn analyze_order(
    func: &Function,
    order: Vec<Value>,
    order_name: &'static str,
) -> Result<Analysis, InverseError> {
    check_square(func)?;
    let active = check_structure(func)?;
    partition(func, active, order, order_name)
}

/// [`analyze_order`] of a function already checked, with its activity.
///
/// One walk along `order` keeps the live active values as flags and, for the lump being built,
/// what it kills (In), what it creates (Out candidates) and which older live values it reads (the
/// P it touches). Every value is born and killed once, so the walk is linear in the program; no
/// live set is ever copied, which would cost O(cuts × n).
fn partition(
    func: &Function,
    active: Vec<bool>,
    order: Vec<Value>,
    order_name: &'static str,
) -> Result<Analysis, InverseError> {
    let n = func.n_params;
    let mut remaining = remaining_uses(func, &active);
    let mut live = vec![false; func.n_values()];
    // The lump (counted from 1) in which a value was born; parameters are born in lump 0.
    let mut born_in = vec![0u32; func.n_values()];
    // The last lump whose `pass_read` holds a value (0: none yet).
    let mut read_in = vec![0u32; func.n_values()];
    let mut width = 0;
    for p in func.params() {
        live[p.index()] = true;
        width += 1;
    }
    let mut widths = Vec::with_capacity(order.len() + 1);
    widths.push(width);
    let mut lumps = Vec::new();
    // The lump being built: its number, first position and sets so far.
    let mut current = 1u32;
    let mut start = 0;
    let mut insts = Vec::new();
    let mut inputs = Vec::new();
    let mut created = Vec::new();
    let mut pass_read = Vec::new();
    for (pos, &v) in order.iter().enumerate() {
        if !active[v.index()] {
            widths.push(width);
            continue;
        }
        let inst = func.inst(v).expect("the order holds instructions only");
        for o in derivative_operands(inst) {
            if !active[o.index()] {
                continue;
            }
            let older = born_in[o.index()] < current;
            remaining[o.index()] -= 1;
            if remaining[o.index()] == 0 {
                live[o.index()] = false;
                width -= 1;
                if older {
                    inputs.push(o);
                }
            } else if older && read_in[o.index()] != current {
                read_in[o.index()] = current;
                pass_read.push(o);
            }
        }
        live[v.index()] = true;
        born_in[v.index()] = current;
        width += 1;
        insts.push(v);
        created.push(v);
        widths.push(width);
        if width < n {
            return Err(InverseError::NarrowCut {
                func: func.name.clone(),
                live: width,
                n,
                after: label(func, v),
            });
        }
        if width == n {
            // A read value killed later in the same lump is In, not P.
            pass_read.retain(|p: &Value| live[p.index()]);
            let mut outputs: Vec<Value> = created.drain(..).filter(|c| live[c.index()]).collect();
            inputs.sort_unstable();
            outputs.sort_unstable();
            pass_read.sort_unstable();
            lumps.push(Lump {
                index: lumps.len() + 1,
                start,
                end: pos + 1,
                insts: std::mem::take(&mut insts),
                n_pass: n - outputs.len(),
                inputs: std::mem::take(&mut inputs),
                outputs,
                pass_read: std::mem::take(&mut pass_read),
            });
            current += 1;
            start = pos + 1;
        }
    }
    Ok(Analysis {
        n,
        active,
        order,
        widths,
        lumps,
        order_name,
    })
}

/// The lump partition of a square program. The order is the greedy one ([`super::greedy_order`])
/// unless the program's own order gives a smaller largest lump (then that one).
pub fn analyze(func: &Function) -> Result<Analysis, InverseError> {
    check_square(func)?;
    let active = check_structure(func)?;
    let greedy = partition(
        func,
        active.clone(),
        order::greedy_order_with(func, &active),
        "greedy",
    )?;
    let program = partition(
        func,
        active,
        func.insts().map(|(v, _)| v).collect(),
        "program",
    )?;
    let key = |a: &Analysis| (a.largest_lump(), usize::MAX - a.lumps.len());
    Ok(if key(&program) < key(&greedy) {
        program
    } else {
        greedy
    })
}
