//! Graphviz (`dot`) rendering of a program with its lumps drawn as clusters.
//!
//! Nodes are values (parameters as boxes, outputs with a double border, passive values grey),
//! edges go from operand to user. When the lump analysis succeeds each lump is a cluster
//! labelled with its index and size `l`; otherwise (non-square or singular programs) the graph is
//! drawn without clusters and the reason is a comment at the top. Never fails.

use std::fmt::Write as _;

use adjit_ir::{Function, InstData, Operand, ValueDef};

use super::lumps::{activity, analyze};
use super::InverseOptions;

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The Graphviz source of `func`, lumps as clusters when there are lumps.
///
/// ```
/// let f = adjit_diff::inverse::examples::fig2();
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
        Err(_) => activity(func),
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
        if func.rets.contains(&v) {
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
