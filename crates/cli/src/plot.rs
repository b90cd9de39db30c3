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
    let mut placed: Vec<Label> = Vec::new();
    for (label, bytes, ns) in &points {
        let (x, y) = (x_of(*bytes), y_of(*ns));
        let at = place_label(label, x, y, &placed);
        let _ = writeln!(
            svg,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="steelblue"/><text x="{:.1}" y="{:.1}" text-anchor="{}">{}</text>"#,
            at.anchor_x,
            at.baseline,
            if at.end { "end" } else { "start" },
            escape(label)
        );
        placed.push(at);
    }
    svg.push_str("</svg>\n");
    svg
}

/// Approximate advance of one character at font-size 12 (sans-serif), for label boxes.
const CHAR_WIDTH: f64 = 7.0;
/// Height of a label line.
const LINE: f64 = 14.0;

/// Where a point's label goes: its text anchor, baseline and side.
#[derive(Clone, Copy, Debug)]
struct Label {
    anchor_x: f64,
    baseline: f64,
    end: bool,
    /// The box it covers: left, top, right, bottom.
    bbox: (f64, f64, f64, f64),
}

/// The first of the spots around `(x, y)` (above right, below right, above left, below left,
/// then further up and down) where the label stays inside the picture and overlaps no label
/// placed before it; the first spot inside the picture if none is free.
fn place_label(text: &str, x: f64, y: f64, placed: &[Label]) -> Label {
    let width = text.chars().count() as f64 * CHAR_WIDTH;
    let spot = |right: bool, dy: f64| -> Label {
        let baseline = y + dy;
        let (left, anchor_x) = if right {
            (x + 6.0, x + 6.0)
        } else {
            (x - 6.0 - width, x - 6.0)
        };
        Label {
            anchor_x,
            baseline,
            end: !right,
            bbox: (left, baseline - LINE + 3.0, left + width, baseline + 3.0),
        }
    };
    let inside = |l: &Label| {
        l.bbox.0 >= 2.0 && l.bbox.2 <= WIDTH - 2.0 && l.bbox.1 >= 2.0 && l.bbox.3 <= HEIGHT - 2.0
    };
    let overlaps = |a: &Label, b: &Label| {
        a.bbox.0 < b.bbox.2 && b.bbox.0 < a.bbox.2 && a.bbox.1 < b.bbox.3 && b.bbox.1 < a.bbox.3
    };
    let candidates = [
        spot(true, -6.0),
        spot(true, 16.0),
        spot(false, -6.0),
        spot(false, 16.0),
        spot(true, -20.0),
        spot(true, 30.0),
        spot(false, -20.0),
        spot(false, 30.0),
    ];
    candidates
        .iter()
        .find(|c| inside(c) && placed.iter().all(|p| !overlaps(c, p)))
        .or_else(|| candidates.iter().find(|c| inside(c)))
        .copied()
        .unwrap_or(candidates[0])
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

    /// Labels stay inside the picture and do not cover each other, even for points close
    /// together or at the right edge (a bench of seven strategies clipped "vjp tape").
    #[test]
    fn labels_neither_clip_nor_overlap() {
        let rows: Vec<(String, f64, f64)> = [
            ("vjp tape", 99_000.0, 26_000.0),
            ("vjp checkpoint:2", 630.0, 216_000.0),
            ("vjp checkpoint:4", 680.0, 113_000.0),
            ("vjp checkpoint:8", 780.0, 93_000.0),
            ("vjp checkpoint:16", 980.0, 85_000.0),
            ("vjp uniform", 6_100.0, 69_000.0),
            ("vjp bytes:5000", 4_000.0, 49_000.0),
        ]
        .iter()
        .map(|&(l, b, n)| (l.to_string(), b, n))
        .collect();
        let svg = time_memory_svg("lorenz", &rows);
        let mut boxes = Vec::new();
        for text in svg.split("<text").skip(1).filter(|t| t.contains(">vjp ")) {
            let attr = |name: &str| -> String {
                let start = text.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
                let end = start + text[start..].find('"').unwrap();
                text[start..end].to_string()
            };
            let label = &text[text.find('>').unwrap() + 1..text.find("</text>").unwrap()];
            let (x, y): (f64, f64) = (attr("x").parse().unwrap(), attr("y").parse().unwrap());
            let width = label.chars().count() as f64 * CHAR_WIDTH;
            let left = if attr("text-anchor") == "end" {
                x - width
            } else {
                x
            };
            assert!(
                left >= 0.0 && left + width <= WIDTH,
                "{label} clipped at x {left}"
            );
            assert!(y - LINE >= 0.0 && y <= HEIGHT, "{label} clipped at y {y}");
            boxes.push((
                label.to_string(),
                left,
                y - LINE + 3.0,
                left + width,
                y + 3.0,
            ));
        }
        assert_eq!(boxes.len(), 7);
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                let apart = a.3 <= b.1 || b.3 <= a.1 || a.4 <= b.2 || b.4 <= a.2;
                assert!(apart, "{} overlaps {}", a.0, b.0);
            }
        }
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
