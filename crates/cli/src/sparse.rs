//! `--sparse` for `adjit jacobian` and `adjit hessian`: the nonzeros from one compiled
//! program ([`adjit::SparseJacobian`], [`adjit::SparseHessian`]), printed for people, as JSON,
//! as a Matrix Market file and as a spy-plot SVG coloured by colour class.

use std::fmt::Write as _;

use adjit::diff::sparsity::{star_recovery, ColoringKind};
use adjit::{Coloring, Engine, Function, Options, SparseHessian, SparseJacobian, SparsityPattern};

use crate::args::SparseArgs;
use crate::output::{human_number, json_number};
use crate::CliError;

/// Human output lists at most this many entries (all of them are in `--json` and `--mtx`).
const HUMAN_ENTRIES: usize = 1000;

/// What both commands print: a pattern with its values and colouring.
struct SparseResult<'a> {
    what: &'static str,
    func: &'a str,
    pattern: &'a SparsityPattern,
    values: &'a [f64],
    coloring: &'a Coloring,
    /// The colour class each entry was read from.
    classes: Vec<u32>,
}

pub fn jacobian(
    func: &Function,
    x: &[f64],
    engine: Engine,
    args: &SparseArgs,
    json: bool,
) -> Result<String, CliError> {
    let jac = SparseJacobian::with_options(func, &Options::on(engine))?;
    let mut values = vec![0.0; jac.nnz()];
    jac.eval(x, &mut values)?;
    let coloring = jac.coloring();
    let classes = jac
        .pattern()
        .entries()
        .map(|(i, j)| match coloring.kind {
            ColoringKind::Rows => coloring.colors[i],
            _ => coloring.colors[j],
        })
        .collect();
    let result = SparseResult {
        what: "Jacobian",
        func: &func.name,
        pattern: jac.pattern(),
        values: &values,
        coloring,
        classes,
    };
    finish(&result, args, json, false)
}

pub fn hessian(
    func: &Function,
    x: &[f64],
    engine: Engine,
    args: &SparseArgs,
    json: bool,
) -> Result<String, CliError> {
    let hess = SparseHessian::with_options(func, &Options::on(engine))?;
    let mut lower = vec![0.0; hess.nnz()];
    hess.eval(x, &mut lower)?;
    let full = hess.full_pattern();
    let mut values = vec![0.0; full.nnz()];
    hess.expand(&lower, &mut values)?;
    let coloring = hess.coloring();
    // The product each lower entry is read from, mirrored to the upper triangle.
    let recovery = star_recovery(full, &coloring.colors).unwrap_or_default();
    let lower_pattern = hess.pattern();
    let classes = full
        .entries()
        .map(|(i, j)| {
            let (r, c) = if j <= i { (i, j) } else { (j, i) };
            let k = lower_pattern.indptr()[r]
                + lower_pattern
                    .row(r)
                    .partition_point(|&col| (col as usize) < c);
            recovery.get(k).map_or(0, |&(_, color)| color)
        })
        .collect();
    let result = SparseResult {
        what: "Hessian",
        func: &func.name,
        pattern: full,
        values: &values,
        coloring,
        classes,
    };
    finish(&result, args, json, true)
}

/// The files `--mtx` and `--spy` write, for [`crate::paths::check_files`].
pub fn outputs(args: &SparseArgs) -> Vec<crate::paths::Named<'_>> {
    [("--mtx", &args.mtx), ("--spy", &args.spy)]
        .into_iter()
        .filter_map(|(option, path)| Some(crate::paths::Named::new(option, path.as_deref()?)))
        .collect()
}

fn finish(
    result: &SparseResult<'_>,
    args: &SparseArgs,
    json: bool,
    symmetric: bool,
) -> Result<String, CliError> {
    if let Some(path) = &args.mtx {
        write(path, &matrix_market(result, symmetric))?;
    }
    if let Some(path) = &args.spy {
        write(path, &spy_svg(result))?;
    }
    Ok(if json {
        render_json(result)
    } else {
        render_human(result)
    })
}

fn write(path: &std::path::Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|e| CliError::input(format!("cannot write {}: {e}", path.display())))
}

fn render_json(r: &SparseResult<'_>) -> String {
    let p = r.pattern;
    let list = |items: Vec<String>| items.join(", ");
    format!(
        "{{\"shape\": [{}, {}], \"nnz\": {}, \"colors\": {}, \"coloring\": \"{}\", \
         \"format\": \"csr\", \"indptr\": [{}], \"indices\": [{}], \"values\": [{}]}}\n",
        p.nrows(),
        p.ncols(),
        p.nnz(),
        r.coloring.n_colors,
        r.coloring.kind.name(),
        list(p.indptr().iter().map(|v| v.to_string()).collect()),
        list(p.indices().iter().map(|v| v.to_string()).collect()),
        list(r.values.iter().map(|&v| json_number(v)).collect()),
    )
}

fn render_human(r: &SparseResult<'_>) -> String {
    let p = r.pattern;
    let c = r.coloring;
    let mut out = format!(
        "sparse {} of @{}: {}×{}, {} nonzeros, {} colours ({}, {} order; densest row {})\n",
        r.what,
        r.func,
        p.nrows(),
        p.ncols(),
        p.nnz(),
        c.n_colors,
        c.kind.name(),
        c.ordering,
        // The pattern's, as `adjit dump --stage sparsity` prints it (the colouring's `densest`
        // is the densest column when it colours rows).
        p.max_row_len()
    );
    for ((i, j), &v) in p.entries().zip(r.values).take(HUMAN_ENTRIES) {
        let _ = writeln!(out, "  ({i}, {j})  {}", human_number(v));
    }
    if p.nnz() > HUMAN_ENTRIES {
        let _ = writeln!(
            out,
            "  … {} more entries (all of them with --json or --mtx FILE)",
            p.nnz() - HUMAN_ENTRIES
        );
    }
    out
}

/// Matrix Market coordinate format, 1-based; a Hessian as `symmetric` (lower triangle).
fn matrix_market(r: &SparseResult<'_>, symmetric: bool) -> String {
    let p = r.pattern;
    let entries: Vec<((usize, usize), f64)> = p
        .entries()
        .zip(r.values.iter().copied())
        .filter(|((i, j), _)| !symmetric || j <= i)
        .collect();
    let mut out = format!(
        "%%MatrixMarket matrix coordinate real {}\n% {} of @{} by adjit ({} colours)\n{} {} {}\n",
        if symmetric { "symmetric" } else { "general" },
        r.what,
        r.func,
        r.coloring.n_colors,
        p.nrows(),
        p.ncols(),
        entries.len()
    );
    for ((i, j), v) in entries {
        let _ = writeln!(out, "{} {} {}", i + 1, j + 1, human_number(v));
    }
    out
}

/// A palette of distinguishable colours for colour classes (cycled beyond its length).
const PALETTE: [&str; 12] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939",
];

/// The largest side of the plot, in pixels; bigger matrices shrink their cells below one
/// pixel (the SVG stays exact, viewers blend).
const SPY_SIDE: f64 = 640.0;

/// A spy plot: one square per entry, coloured by the colour class it was read from, with a
/// legend of the classes.
fn spy_svg(r: &SparseResult<'_>) -> String {
    let p = r.pattern;
    let (rows, cols) = (p.nrows().max(1) as f64, p.ncols().max(1) as f64);
    let cell = (SPY_SIDE / rows.max(cols)).clamp(0.05, 24.0);
    let (width, height) = (cols * cell, rows * cell);
    let margin = 40.0;
    let legend_rows = r.coloring.n_colors.min(PALETTE.len() * 4);
    let total_w = width + 2.0 * margin + 160.0;
    let total_h = (height + 2.0 * margin).max(margin * 2.0 + 18.0 * legend_rows as f64);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{total_w:.0}\" height=\"{total_h:.0}\" \
         viewBox=\"0 0 {total_w:.1} {total_h:.1}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{margin}\" y=\"{:.1}\">{} of @{}: {}×{}, {} nonzeros, {} colours ({})</text>\n\
         <rect x=\"{margin}\" y=\"{margin}\" width=\"{width:.2}\" height=\"{height:.2}\" \
         fill=\"none\" stroke=\"#444\" stroke-width=\"0.5\"/>\n",
        margin - 12.0,
        r.what,
        xml_escape(r.func),
        p.nrows(),
        p.ncols(),
        p.nnz(),
        r.coloring.n_colors,
        r.coloring.kind.name(),
    );
    for ((i, j), &class) in p.entries().zip(&r.classes) {
        let _ = writeln!(
            out,
            "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{cell:.2}\" height=\"{cell:.2}\" fill=\"{}\"/>",
            margin + j as f64 * cell,
            margin + i as f64 * cell,
            PALETTE[class as usize % PALETTE.len()]
        );
    }
    let lx = margin + width + 20.0;
    for c in 0..legend_rows {
        let y = margin + 18.0 * c as f64;
        let _ = writeln!(
            out,
            "<rect x=\"{lx:.1}\" y=\"{y:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">colour {c}</text>",
            PALETTE[c % PALETTE.len()],
            lx + 18.0,
            y + 10.0
        );
    }
    out.push_str("</svg>\n");
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
