//! Rendering benchmark rows: the JSON contract, an aligned table and an SVG bar chart.
//!
//! Rendering only; the measurements come from the facade.

use std::fmt::Write;

use crate::measure::BenchMeasurement;
use crate::output::{json_number, json_string};

/// One measured (mode, strategy) pair.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRow {
    /// `primal`, `jvp`, `vjp`, `reverse-inverse`, `forward-inverse` or `dense`.
    pub mode: String,
    /// The strategy spelling (`tape`, `checkpoint:2`, …) for vjp rows; `None` otherwise.
    pub strategy: Option<String>,
    pub measurement: BenchMeasurement,
}

impl BenchRow {
    fn label(&self) -> String {
        match &self.strategy {
            Some(s) => format!("{} {s}", self.mode),
            None => self.mode.clone(),
        }
    }
}

/// `{"rows": [{"mode": ..., "strategy": ..., "compile_ms": F, "ns_per_call": F,
/// "peak_bytes": N, "recomputed_ops": N}, ...]}` (strategy is `null` for non-vjp rows; the
/// sparse rows add `"nnz": N, "colors": N`; `--batch` rows `"points": N, "lanes": N, "threads": N,
/// "ns_per_point": F`; rows of one compiled program `"code_bytes": N, "loops": N`).
pub fn rows_json(rows: &[BenchRow]) -> String {
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            let m = &r.measurement;
            let mut sparse = m.sparse.map_or(String::new(), |s| {
                format!(", \"nnz\": {}, \"colors\": {}", s.nnz, s.colors)
            });
            if let Some(c) = m.code {
                sparse.push_str(&format!(
                    ", \"code_bytes\": {}, \"loops\": {}",
                    c.bytes, c.loops
                ));
            }
            if let Some(b) = m.batch {
                sparse.push_str(&format!(
                    ", \"points\": {}, \"lanes\": {}, \"threads\": {}, \"ns_per_point\": {}",
                    b.batch.points,
                    b.batch.lanes,
                    b.batch.threads,
                    json_number(b.ns_per_point)
                ));
            }
            format!(
                "{{\"mode\": {}, \"strategy\": {}, \"compile_ms\": {}, \"ns_per_call\": {}, \
                 \"peak_bytes\": {}, \"recomputed_ops\": {}{sparse}}}",
                json_string(&r.mode),
                r.strategy.as_deref().map_or("null".into(), json_string),
                json_number(m.compile_ms),
                json_number(m.ns_per_call),
                m.peak_bytes,
                m.recomputed_ops
            )
        })
        .collect();
    format!("{{\"rows\": [{}]}}\n", items.join(", "))
}

/// An aligned text table, one line per row.
pub fn rows_table(rows: &[BenchRow]) -> String {
    let header = [
        "mode",
        "strategy",
        "compile ms",
        "ns/call",
        "peak bytes",
        "recomputed",
        "code bytes",
        "loops",
    ];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            let m = &r.measurement;
            [
                r.mode.clone(),
                match (&r.strategy, m.sparse, m.batch) {
                    (Some(s), _, _) => s.clone(),
                    (None, Some(s), _) => format!("nnz {}, {} colours", s.nnz, s.colors),
                    (None, None, Some(b)) => format!(
                        "batch {}×{} lane(s), {} thread(s): {:.2} ns/point",
                        b.batch.points,
                        b.batch.lanes,
                        if b.batch.threads == 0 {
                            "all".to_string()
                        } else {
                            b.batch.threads.to_string()
                        },
                        b.ns_per_point
                    ),
                    (None, None, None) => "-".into(),
                },
                format!("{:.2}", m.compile_ms),
                format!("{:.1}", m.ns_per_call),
                m.peak_bytes.to_string(),
                m.recomputed_ops.to_string(),
                m.code.map_or("-".into(), |c| c.bytes.to_string()),
                m.code.map_or("-".into(), |c| c.loops.to_string()),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |items: [&str; 8]| {
        let mut s = String::new();
        for (i, (item, w)) in items.iter().zip(widths).enumerate() {
            // Text columns align left, numbers right.
            if i < 2 {
                let _ = write!(s, "{item:<w$}  ");
            } else {
                let _ = write!(s, "{item:>w$}  ");
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(header);
    for row in &cells {
        line(row.each_ref().map(|s| s.as_str()));
    }
    out
}

/// The `--plot` picture: time per call against peak memory, one labelled point per row (the
/// trade-off a strategy is chosen by).
pub fn rows_svg(title: &str, rows: &[BenchRow]) -> String {
    let points: Vec<(String, f64, f64)> = rows
        .iter()
        .map(|r| {
            (
                r.label(),
                r.measurement.peak_bytes as f64,
                r.measurement.ns_per_call,
            )
        })
        .collect();
    crate::plot::time_memory_svg(title, &points)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<BenchRow> {
        let m = |ns: f64, peak: u64, rec: u64| BenchMeasurement {
            compile_ms: 1.25,
            ns_per_call: ns,
            peak_bytes: peak,
            recomputed_ops: rec,
            sparse: None,
            batch: None,
            code: None,
        };
        vec![
            BenchRow {
                mode: "primal".into(),
                strategy: None,
                measurement: m(10.0, 0, 0),
            },
            BenchRow {
                mode: "vjp".into(),
                strategy: Some("tape".into()),
                measurement: m(40.5, 800, 0),
            },
            BenchRow {
                mode: "vjp".into(),
                strategy: Some("checkpoint:2".into()),
                measurement: m(55.0, 96, 120),
            },
        ]
    }

    #[test]
    fn json_rows_follow_the_contract() {
        let json = rows_json(&rows());
        assert!(json.starts_with("{\"rows\": [{\"mode\": \"primal\", \"strategy\": null, "));
        assert!(json.contains(
            "{\"mode\": \"vjp\", \"strategy\": \"checkpoint:2\", \"compile_ms\": 1.25, \
             \"ns_per_call\": 55.0, \"peak_bytes\": 96, \"recomputed_ops\": 120}"
        ));
    }

    #[test]
    fn table_is_aligned() {
        let table = rows_table(&rows());
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("mode    strategy"), "{table}");
        assert!(lines[3].starts_with("vjp     checkpoint:2"), "{table}");
        // Right-aligned numbers end in the same column.
        assert_eq!(lines[1].len(), lines[3].len(), "{table}");
    }

    #[test]
    fn svg_has_one_point_per_row_with_memory() {
        let svg = rows_svg("f <1>", &rows());
        // The primal row has no stored intermediates (0 bytes): no point on a log axis.
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
        assert!(
            svg.contains("vjp checkpoint:2") || svg.contains("checkpoint:2"),
            "{svg}"
        );
        assert!(svg.contains("f &lt;1&gt;"), "{svg}");
    }
}
