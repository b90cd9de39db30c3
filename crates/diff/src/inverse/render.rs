//! Rendering of the lump analysis: the readable `lumps` dump and a Graphviz (`dot`) picture of
//! the program with its lumps drawn as clusters. Analysis only; nothing is emitted.
//!
//! In the picture,
//! nodes are values (parameters as boxes, outputs with a double border, passive values grey),
//! edges go from operand to user. When the lump analysis succeeds each lump is a cluster
//! labelled with its index and size `l`; otherwise (non-square or singular programs) the graph is
//! drawn without clusters and the reason is a comment at the top. Never fails.

use std::fmt::Write as _;

use adjit_ir::{Function, InstData, Operand, Value, ValueDef};

use super::InverseError;

use super::active::active_flags;
use super::blocks;
use super::lumps::analyze;
use super::InverseOptions;

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The Graphviz source of `func`, lumps as clusters when there are lumps.
///
/// ```
/// let f = adjit_testkit::fig2();
/// let text = adjit_diff::inverse::dot(&f, &Default::default());
/// assert!(text.starts_with("digraph"));
/// assert!(text.contains("subgraph cluster_lump2"));
/// ```
pub fn dot(func: &Function, opts: &InverseOptions) -> String {
    let _ = opts;
    let names = adjit_ir::text::printed_names(func);
    let analysis = analyze(func);
    let active = match &analysis {
        Ok(a) => a.active.clone(),
        Err(_) => active_flags(func),
    };
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", escape(&func.name));
    if let Err(e) = &analysis {
        let _ = writeln!(out, "  // no lumps: {}", e.to_string().replace('\n', " "));
    }
    let _ = writeln!(
        out,
        "  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];"
    );
    let mut is_ret = vec![false; func.n_values()];
    for r in &func.rets {
        is_ret[r.index()] = true;
    }
    let node = |v: adjit_ir::Value| -> String {
        let data = func.data(v);
        let text = match &data.def {
            ValueDef::Param => format!("%{}: {}", names[v.index()], data.ty),
            ValueDef::Inst(inst) => {
                let mut t = format!("%{} = {}", names[v.index()], inst.opcode_name());
                if let InstData::Const { bits, .. } = inst {
                    let _ = write!(t, " {}", f64::from_bits(*bits));
                }
                t
            }
        };
        let mut attrs = format!("label=\"{}\"", escape(&text));
        if func.is_param(v) {
            attrs.push_str(", shape=box");
        }
        if is_ret[v.index()] {
            attrs.push_str(", peripheries=2");
        }
        if !active[v.index()] {
            attrs.push_str(", color=grey, fontcolor=grey");
        }
        format!("  n{} [{}];", v.index(), attrs)
    };
    let mut in_lump = vec![false; func.n_values()];
    if let Ok(a) = &analysis {
        for lump in &a.lumps {
            let _ = writeln!(
                out,
                "  subgraph cluster_lump{} {{\n    label=\"lump {} (l = {})\";\n    style=rounded;",
                lump.index,
                lump.index,
                lump.size()
            );
            for &v in &lump.insts {
                in_lump[v.index()] = true;
                let _ = writeln!(out, "  {}", node(v));
            }
            let _ = writeln!(out, "  }}");
        }
    }
    for v in func.all_values() {
        if !in_lump[v.index()] {
            let _ = writeln!(out, "{}", node(v));
        }
    }
    for (v, inst) in func.insts() {
        inst.for_each_operand(|o| {
            if let Operand::Value(src) = o {
                let _ = writeln!(out, "  n{} -> n{};", src.index(), v.index());
            }
        });
    }
    out.push_str("}\n");
    out
}

/// A readable dump of the lump analysis: cuts, widths, and every lump with its In/Out sets, the
/// values of P it reads (`+ k untouched` counts the rest of P), instruction count and diagonal
/// block sizes. Its size is linear in the program: untouched pass-through values are counted,
/// not listed, as listing them would print O(lumps × n) names.
pub fn lumps_text(func: &Function, opts: &InverseOptions) -> Result<String, InverseError> {
    let analysis = analyze(func)?;
    let printed = adjit_ir::text::printed_names(func);
    let label = |v: Value| format!("%{}", printed[v.index()]);
    let names = |vs: &[Value]| vs.iter().map(|&v| label(v)).collect::<Vec<_>>().join(", ");
    let pass_text = |lump: &super::Lump| {
        let untouched = lump.n_pass - lump.pass_read.len();
        let read = format!("{{{}}}", names(&lump.pass_read));
        if untouched == 0 {
            read
        } else {
            format!("{read} + {untouched} untouched")
        }
    };
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
            "lump {}: l = {}, {} instructions ({}..{}), widest {}\n  In  {{{}}}\n  Out {{{}}}\n  P   {}\n  blocks [{}]",
            lump.index,
            lump.size(),
            lump.insts.len(),
            label(lump.insts[0]),
            label(lump.insts[lump.insts.len() - 1]),
            widest,
            names(&lump.inputs),
            names(&lump.outputs),
            pass_text(lump),
            block_sizes
        );
    }
    Ok(out)
}
