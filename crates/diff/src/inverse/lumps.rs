//! Activity, live counts and the lump partition of a square program.
//!
//! A value is *active* when a derivative can flow from an input to it and from it to an output:
//! derivatives flow through float operands, except a `select`'s condition, and not out of
//! `fcmp`, `floor`, `ceil` or `const`. Along an order of the instructions (see [`super::order`]),
//! an active value is live from its definition to its last use by an active instruction (outputs
//! stay live to the end). Every output is a function of the live set at any cut, so a cut with
//! fewer than `n` live values proves `J` singular; the cuts with exactly `n` live values split the
//! program into lumps. This file only analyses; it emits no code and leaves passive values alone.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use adjit_ir::{Function, InstData, UnaryOp, Value};

use super::{blocks, label, order, InverseError, InverseOptions};

/// The distinct operands of `inst` through which a derivative flows, in text order.
pub fn derivative_operands(inst: &InstData) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(3);
    let push = |v: Value| {
        if !out.contains(&v) {
            out.push(v)
        }
    };
    match inst {
        InstData::Const { .. } | InstData::Fcmp { .. } => {}
        InstData::Unary {
            op: UnaryOp::Floor | UnaryOp::Ceil,
            ..
        } => {}
        InstData::Select { args, .. } => args.iter().filter_map(|a| a.as_value()).for_each(push),
        other => other.for_each_value(push),
    }
    out
}

/// Which values are active: reachable from a float input and reaching an output, both along
/// derivative-carrying operands. Indexed by value.
pub fn activity(func: &Function) -> Vec<bool> {
    let n_values = func.n_values();
    let mut varied = vec![false; n_values];
    for p in func.params() {
        varied[p.index()] = func.ty(p).is_float();
    }
    let mut operands: Vec<Vec<Value>> = vec![Vec::new(); n_values];
    for (v, inst) in func.insts() {
        let ops = derivative_operands(inst);
        varied[v.index()] = ops.iter().any(|o| varied[o.index()]);
        operands[v.index()] = ops;
    }
    let mut useful = vec![false; n_values];
    for r in &func.rets {
        useful[r.index()] = func.ty(*r).is_float();
    }
    for i in (0..n_values).rev() {
        if useful[i] && varied[i] {
            for o in &operands[i] {
                useful[o.index()] = true;
            }
        }
    }
    (0..n_values).map(|i| varied[i] && useful[i]).collect()
}

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
    /// P: live across the whole lump (sorted).
    pub pass: Vec<Value>,
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

/// Check that `func` is a verified square program; returns `n`.
pub fn check_square(func: &Function) -> Result<usize, InverseError> {
    adjit_ir::verify(func).map_err(|e| InverseError::NotVerified {
        func: func.name.clone(),
        message: e.to_string(),
    })?;
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
pub fn check_structure(func: &Function) -> Result<Vec<bool>, InverseError> {
    let active = activity(func);
    for p in func.params() {
        if !active[p.index()] {
            return Err(InverseError::UnusedInput {
                func: func.name.clone(),
                input: label(func, p),
            });
        }
    }
    for (index, r) in func.rets.iter().enumerate() {
        if let Some(first) = func.rets[..index].iter().position(|q| q == r) {
            return Err(InverseError::DuplicatedOutput {
                func: func.name.clone(),
                value: label(func, *r),
                first,
                second: index,
            });
        }
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

/// A cut of width `n`: its position in the order and the live set there.
pub type Cut = (usize, BTreeSet<Value>);

/// The live widths along `order` (length `order.len() + 1`) and the live set at every cut of
/// width `n` (position, set). Stops with [`InverseError::NarrowCut`] at the first cut narrower
/// than `n`.
pub fn live_cuts(
    func: &Function,
    active: &[bool],
    order: &[Value],
    n: usize,
) -> Result<(Vec<usize>, Vec<Cut>), InverseError> {
    let mut remaining = remaining_uses(func, active);
    let mut live: BTreeSet<Value> = func.params().collect();
    let mut widths = Vec::with_capacity(order.len() + 1);
    widths.push(live.len());
    let mut cuts = vec![(0, live.clone())];
    for (pos, &v) in order.iter().enumerate() {
        if !active[v.index()] {
            widths.push(live.len());
            continue;
        }
        let inst = func.inst(v).expect("the order holds instructions only");
        for o in derivative_operands(inst) {
            if active[o.index()] {
                remaining[o.index()] -= 1;
                if remaining[o.index()] == 0 {
                    live.remove(&o);
                }
            }
        }
        live.insert(v);
        widths.push(live.len());
        if live.len() < n {
            return Err(InverseError::NarrowCut {
                func: func.name.clone(),
                live: live.len(),
                n,
                after: label(func, v),
            });
        }
        if live.len() == n {
            cuts.push((pos + 1, live.clone()));
        }
    }
    Ok((widths, cuts))
}

/// The lump partition along a given topological `order` of all instructions.
pub fn analyze_order(
    func: &Function,
    active: Vec<bool>,
    order: Vec<Value>,
    order_name: &'static str,
) -> Result<Analysis, InverseError> {
    let n = func.n_params;
    let (widths, cuts) = live_cuts(func, &active, &order, n)?;
    let mut lumps = Vec::new();
    for pair in cuts.windows(2) {
        let ((start, before), (end, after)) = (&pair[0], &pair[1]);
        let insts: Vec<Value> = order[*start..*end]
            .iter()
            .copied()
            .filter(|v| active[v.index()])
            .collect();
        if insts.is_empty() {
            continue;
        }
        lumps.push(Lump {
            index: lumps.len() + 1,
            start: *start,
            end: *end,
            insts,
            inputs: before.difference(after).copied().collect(),
            outputs: after.difference(before).copied().collect(),
            pass: before.intersection(after).copied().collect(),
        });
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

/// The lump partition of a square program. The order is the greedy one ([`order::greedy_order`])
/// unless the program's own order gives a smaller largest lump (then that one).
pub fn analyze(func: &Function) -> Result<Analysis, InverseError> {
    check_square(func)?;
    let active = check_structure(func)?;
    let greedy = analyze_order(
        func,
        active.clone(),
        order::greedy_order(func, &active),
        "greedy",
    )?;
    let program = analyze_order(
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

/// A readable dump of the lump analysis: cuts, widths, and every lump with its In/Out/P sets,
/// instruction count and diagonal block sizes.
pub fn lumps_text(func: &Function, opts: &InverseOptions) -> Result<String, InverseError> {
    let analysis = analyze(func)?;
    let printed = adjit_ir::text::printed_names(func);
    let label = |v: Value| format!("%{}", printed[v.index()]);
    let names = |vs: &[Value]| vs.iter().map(|&v| label(v)).collect::<Vec<_>>().join(", ");
    let mut out = String::new();
    let max_width = analysis.widths.iter().copied().max().unwrap_or(0);
    let _ = writeln!(
        out,
        "lumps of @{}: n = {}, {} order, {} lump{}, largest l = {}, widest cut {}",
        func.name,
        analysis.n,
        analysis.order_name,
        analysis.lumps.len(),
        if analysis.lumps.len() == 1 { "" } else { "s" },
        analysis.largest_lump(),
        max_width
    );
    for lump in &analysis.lumps {
        let block_sizes = match blocks::lump_blocks(func, &analysis.active, lump) {
            Ok(b) => {
                let sizes = b
                    .blocks
                    .iter()
                    .map(|b| b.len().to_string())
                    .collect::<Vec<_>>()
                    .join(" ");
                if b.largest() > opts.max_lump {
                    format!(
                        "{sizes}] (a block exceeds max_lump = {}: use the dense mode",
                        opts.max_lump
                    )
                } else {
                    sizes
                }
            }
            Err(e) => format!("error: {e}"),
        };
        let widest = analysis.widths[lump.start..=lump.end]
            .iter()
            .max()
            .copied()
            .unwrap_or(0);
        let _ = writeln!(
            out,
            "lump {}: l = {}, {} instructions ({}..{}), widest {}\n  In  {{{}}}\n  Out {{{}}}\n  P   {{{}}}\n  blocks [{}]",
            lump.index,
            lump.size(),
            lump.insts.len(),
            label(lump.insts[0]),
            label(lump.insts[lump.insts.len() - 1]),
            widest,
            names(&lump.inputs),
            names(&lump.outputs),
            names(&lump.pass),
            block_sizes
        );
    }
    Ok(out)
}
