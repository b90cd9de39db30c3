//! Rendering benchmark rows: the JSON contract, an aligned table and an SVG bar chart.
//!
//! Rendering only; the measurements come from the facade.

use std::fmt::Write;

use crate::output::{json_number, json_string};
use adjit::BenchMeasurement;

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
/// "peak_bytes": N, "recomputed_ops": N}, ...]}` (strategy is `null` for non-vjp rows).
pub fn rows_json(rows: &[BenchRow]) -> String {
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            let m = &r.measurement;
            format!(
                "{{\"mode\": {}, \"strategy\": {}, \"compile_ms\": {}, \"ns_per_call\": {}, \
                 \"peak_bytes\": {}, \"recomputed_ops\": {}}}",
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
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            let m = &r.measurement;
            [
                r.mode.clone(),
                r.strategy.clone().unwrap_or_else(|| "-".into()),
                format!("{:.2}", m.compile_ms),
                format!("{:.1}", m.ns_per_call),
                m.peak_bytes.to_string(),
                m.recomputed_ops.to_string(),
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
    let mut line = |items: [&str; 6]| {
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
        line([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]].map(|s| s.as_str()));
    }
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A horizontal bar chart of nanoseconds per call, one bar per row, titled `title`.
pub fn rows_svg(title: &str, rows: &[BenchRow]) -> String {
    const LABEL_W: f64 = 200.0;
    const BAR_W: f64 = 420.0;
    const ROW_H: f64 = 26.0;
    const TOP: f64 = 40.0;
    let width = LABEL_W + BAR_W + 110.0;
    let height = TOP + ROW_H * rows.len() as f64 + 20.0;
    let longest = rows
        .iter()
        .map(|r| r.measurement.ns_per_call)
        .filter(|x| x.is_finite())
        .fold(0.0f64, f64::max);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"13\">"
    );
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"10\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{} — ns per call</text>",
        xml_escape(title)
    );
    for (i, row) in rows.iter().enumerate() {
        let y = TOP + ROW_H * i as f64;
        let ns = row.measurement.ns_per_call;
        let bar = if longest > 0.0 && ns.is_finite() && ns > 0.0 {
            (ns / longest * BAR_W).max(1.0)
        } else {
            0.0
        };
        let _ = writeln!(
            svg,
            "<text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LABEL_W - 8.0,
            y + 17.0,
            xml_escape(&row.label())
        );
        let _ = writeln!(
            svg,
            "<rect x=\"{LABEL_W}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{:.1}\" fill=\"#4a7ab5\"/>",
            y + 4.0,
            ROW_H - 8.0
        );
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\">{:.1}</text>",
            LABEL_W + bar + 6.0,
            y + 17.0,
            ns
        );
    }
    svg.push_str("</svg>\n");
    svg
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
    fn svg_has_one_bar_per_row_scaled_to_the_slowest() {
        let svg = rows_svg("f <1>", &rows());
        assert_eq!(svg.matches("fill=\"#4a7ab5\"").count(), 3);
        assert!(svg.contains("width=\"420.0\""), "{svg}");
        assert!(svg.contains("f &lt;1&gt;"));
    }
}
