//! A small hand-written SVG plot of time against memory, for `adjit bench --plot`: the picture
//! a memory strategy is chosen by (tape, `checkpoint:S` for several S, `uniform`, budgets).
//!
//! One point per row (peak bytes on a log₁₀ horizontal axis, nanoseconds on a linear vertical
//! axis from 0), joined by a line in order of increasing memory, each labelled. Rows with a
//! non-finite or non-positive byte count, or a non-finite time, are left out. The output is a
//! self-contained SVG document with no scripts and no external references.

use std::fmt::Write;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;

/// Escape text for an SVG text node or attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick label for a byte count in decimal units: `512 B`, `4 kB`, `1.5 MB`.
fn bytes_label(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if value >= 10.0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A "nice" step (1, 2 or 5 × 10^k) giving about `count` ticks over `0..max`.
fn nice_step(max: f64, count: f64) -> f64 {
    let raw = (max / count).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let residual = raw / magnitude;
    let nice = if residual <= 1.0 {
        1.0
    } else if residual <= 2.0 {
        2.0
    } else if residual <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// An SVG scatter/line plot of `(label, peak bytes, ns)` rows: memory (log scale) across,
/// time down-up, one labelled point per row.
pub fn time_memory_svg(title: &str, rows: &[(String, f64, f64)]) -> String {
    let mut points: Vec<(&str, f64, f64)> = rows
        .iter()
        .filter(|(_, bytes, ns)| bytes.is_finite() && *bytes > 0.0 && ns.is_finite())
        .map(|(label, bytes, ns)| (label.as_str(), *bytes, *ns))
        .collect();
    points.sort_by(|a, b| a.1.total_cmp(&b.1));

    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let lo_exp = points
        .iter()
        .map(|p| p.1.log10())
        .fold(f64::INFINITY, f64::min);
    let hi_exp = points
        .iter()
        .map(|p| p.1.log10())
        .fold(f64::NEG_INFINITY, f64::max);
    let (lo_exp, hi_exp) = if points.is_empty() {
        (0.0, 1.0)
    } else {
        let (lo, hi) = (lo_exp.floor(), hi_exp.ceil());
        (lo, if hi > lo { hi } else { lo + 1.0 })
    };
    let max_ns = points.iter().map(|p| p.2).fold(0.0, f64::max);
    let step = nice_step(if max_ns > 0.0 { max_ns } else { 1.0 }, 5.0);
    let top_ns = (max_ns / step).ceil().max(1.0) * step;
    let x_of = |bytes: f64| LEFT + (bytes.log10() - lo_exp) / (hi_exp - lo_exp) * plot_w;
    let y_of = |ns: f64| TOP + plot_h - ns.max(0.0) / top_ns * plot_h;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">@{}: time per call against peak memory</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    // Axes.
    let (x0, y0, x1, y1) = (LEFT, TOP + plot_h, LEFT + plot_w, TOP);
    let _ = writeln!(
        svg,
        r#"<path d="M{x0},{y1} L{x0},{y0} L{x1},{y0}" fill="none" stroke="black"/>"#
    );
    // Horizontal ticks: powers of ten.
    let mut exp = lo_exp;
    while exp <= hi_exp + 1e-9 {
        let x = x_of(10f64.powf(exp));
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{}" stroke="black"/><line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{y0}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            y0 + 5.0,
            y0 + 20.0,
            bytes_label(10f64.powf(exp))
        );
        exp += 1.0;
    }
    // Vertical ticks.
    let mut ns = 0.0;
    while ns <= top_ns + step * 1e-9 {
        let y = y_of(ns);
        let _ = writeln!(
            svg,
            r##"<line x1="{}" y1="{y:.1}" x2="{x0}" y2="{y:.1}" stroke="black"/><line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            x0 - 5.0,
            x0 - 8.0,
            y + 4.0,
            ns_label(ns)
        );
        ns += step;
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">peak memory (bytes, log scale)</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 15.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">time per call</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    // The line, then the points with their labels.
    if points.len() > 1 {
        let path: Vec<String> = points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x_of(p.1), y_of(p.2)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="steelblue" stroke-width="1.5"/>"#,
            path.join(" ")
        );
    }
    for (label, bytes, ns) in &points {
        let (x, y) = (x_of(*bytes), y_of(*ns));
        let _ = writeln!(
            svg,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="steelblue"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 6.0,
            y - 6.0,
            escape(label)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// A tick label for a duration in nanoseconds: `0`, `500 ns`, `1.5 µs`, `20 ms`.
fn ns_label(ns: f64) -> String {
    if ns == 0.0 {
        return "0".into();
    }
    let (value, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    if value.fract() == 0.0 {
        format!("{value:.0} {unit}")
    } else {
        format!("{value:.1} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<(String, f64, f64)> {
        vec![
            ("tape".into(), 3.2e6, 1.0e6),
            ("checkpoint:2".into(), 4.0e4, 9.0e6),
            ("a<b & \"c\"".into(), 2.0e5, 2.0e6),
            ("skipped".into(), f64::NAN, 1.0),
        ]
    }

    #[test]
    fn every_finite_row_is_a_labelled_point_inside_the_frame() {
        let svg = time_memory_svg("f", &rows());
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains(">tape<") && svg.contains(">checkpoint:2<"));
        assert!(svg.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(!svg.contains("skipped"));
        let mut centres = Vec::new();
        for circle in svg.split("<circle").skip(1) {
            let attr = |name: &str| -> f64 {
                let start = circle.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                let end = start + circle[start..].find('"').unwrap();
                circle[start..end].parse().unwrap()
            };
            let (cx, cy) = (attr("cx"), attr("cy"));
            assert!((LEFT..=WIDTH - RIGHT).contains(&cx), "cx {cx}");
            assert!((TOP..=HEIGHT - BOTTOM).contains(&cy), "cy {cy}");
            centres.push((cx, cy));
        }
        // Points come in order of memory (left to right); the slowest (checkpoint:2, least
        // memory) is the highest; the fastest (tape, most memory) the lowest.
        assert!(centres.windows(2).all(|w| w[0].0 < w[1].0), "{centres:?}");
        assert!(
            centres[0].1 < centres[1].1 && centres[1].1 < centres[2].1,
            "{centres:?}"
        );
        assert!(svg.contains(">10 kB<") && svg.contains(">10 MB<"));
    }

    #[test]
    fn empty_and_single_rows_still_make_a_document() {
        assert!(time_memory_svg("f", &[]).contains("</svg>"));
        let one = time_memory_svg("f", &[("only".into(), 1000.0, 0.0)]);
        assert_eq!(one.matches("<circle").count(), 1);
        assert!(!one.contains("NaN") && !one.contains("inf"));
    }

    #[test]
    fn labels_read_naturally() {
        assert_eq!(bytes_label(1000.0), "1 kB");
        assert_eq!(bytes_label(1500.0), "1.5 kB");
        assert_eq!(bytes_label(100.0), "100 B");
        assert_eq!(ns_label(2.5e6), "2.5 ms");
        assert_eq!(nice_step(9.0e6, 5.0), 2.0e6);
    }
}
