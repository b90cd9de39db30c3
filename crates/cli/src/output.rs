//! Printing results: JSON objects whose numbers round-trip exactly, and human-readable lines.
//!
//! JSON numbers use Rust's shortest round-trip representation (`{:?}`: `0.1`, `2.0`, `1e-7`);
//! the non-finite values, which JSON cannot spell, are the strings `"nan"`, `"inf"`, `"-inf"`.
//! Human output uses the same shortest digits without a trailing `.0` (`outputs: 1.5, 2`).

use std::fmt::Write;

/// A JSON number, or the string `"nan"`/`"inf"`/`"-inf"` for a non-finite value.
pub fn json_number(x: f64) -> String {
    if x.is_nan() {
        "\"nan\"".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "\"inf\"".into()
        } else {
            "\"-inf\"".into()
        }
    } else {
        format!("{x:?}")
    }
}

/// A JSON array of numbers.
pub fn json_array(xs: &[f64]) -> String {
    let items: Vec<String> = xs.iter().map(|&x| json_number(x)).collect();
    format!("[{}]", items.join(", "))
}

/// A JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `{"key": [..], ...}` for named number vectors, in the order given.
pub fn json_vectors(fields: &[(&str, &[f64])]) -> String {
    let items: Vec<String> = fields
        .iter()
        .map(|(key, xs)| format!("{}: {}", json_string(key), json_array(xs)))
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// A number for people: shortest round-trip digits, `2` rather than `2.0`, exponent notation
/// for very large or small magnitudes, `nan`/`inf`/`-inf`.
pub fn human_number(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let magnitude = x.abs();
    if magnitude == 0.0 || (1e-5..1e16).contains(&magnitude) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// `label: a, b, c`.
pub fn human_line(label: &str, xs: &[f64]) -> String {
    let items: Vec<String> = xs.iter().map(|&x| human_number(x)).collect();
    format!("{label}: {}", items.join(", "))
}

/// Named vectors as JSON or as one human line each.
pub fn render_vectors(fields: &[(&str, &[f64])], json: bool) -> String {
    if json {
        let mut s = json_vectors(fields);
        s.push('\n');
        s
    } else {
        let mut s = String::new();
        for (label, xs) in fields {
            s.push_str(&human_line(label, xs));
            s.push('\n');
        }
        s
    }
}

/// A row-major `rows × cols` matrix of numbers.
#[derive(Clone, Copy, Debug)]
pub struct Matrix<'a> {
    pub rows: usize,
    pub cols: usize,
    pub entries: &'a [f64],
}

impl Matrix<'_> {
    fn row(&self, r: usize) -> &[f64] {
        &self.entries[r * self.cols..(r + 1) * self.cols]
    }
}

/// A JSON array of rows: `[[a, b], [c, d]]`.
pub fn json_matrix(m: Matrix<'_>) -> String {
    let rows: Vec<String> = (0..m.rows).map(|r| json_array(m.row(r))).collect();
    format!("[{}]", rows.join(", "))
}

/// A matrix for people, like numpy prints it: `[[a  b]` / ` [c  d]]`, every column aligned
/// on its decimal points (numbers in [`human_number`]'s digits).
pub fn human_matrix(m: Matrix<'_>) -> String {
    if m.rows == 0 {
        return "[]".into();
    }
    let cells: Vec<String> = m.entries.iter().map(|&x| human_number(x)).collect();
    // Integer part (sign, digits, or the whole of `nan`/`1e300`) and the rest from the point.
    let split = |s: &str| s.find('.').map_or((s.len(), 0), |i| (i, s.len() - i));
    let mut widths = vec![(0, 0); m.cols];
    for (k, cell) in cells.iter().enumerate() {
        let (int, frac) = split(cell);
        let w = &mut widths[k % m.cols];
        *w = (w.0.max(int), w.1.max(frac));
    }
    let mut text = String::new();
    for r in 0..m.rows {
        text.push_str(if r == 0 { "[[" } else { " [" });
        let row: Vec<String> = (0..m.cols)
            .map(|c| {
                let cell = &cells[r * m.cols + c];
                let (int, _) = split(cell);
                let (int_w, frac_w) = widths[c];
                let lead = " ".repeat(int_w - int);
                format!("{lead}{cell:<width$}", width = int + frac_w)
            })
            .collect();
        text.push_str(&row.join("  "));
        text.push_str(if r + 1 == m.rows { "]]" } else { "]" });
        text.push('\n');
    }
    text
}

/// Named vectors and then one named matrix, as one JSON object or as human lines (the matrix
/// under a `label (ROWS×COLS):` line).
pub fn render_with_matrix(
    vectors: &[(&str, &[f64])],
    (label, matrix): (&str, Matrix<'_>),
    json: bool,
) -> String {
    if json {
        let mut items: Vec<String> = vectors
            .iter()
            .map(|(key, xs)| format!("{}: {}", json_string(key), json_array(xs)))
            .collect();
        items.push(format!("{}: {}", json_string(label), json_matrix(matrix)));
        format!("{{{}}}\n", items.join(", "))
    } else {
        let mut text = render_vectors(vectors, false);
        text.push_str(&format!("{label} ({}×{}):\n", matrix.rows, matrix.cols));
        let body = human_matrix(matrix);
        text.push_str(&body);
        if !body.ends_with('\n') {
            text.push('\n');
        }
        text
    }
}

/// An error message as printed on standard error: `error: ` before the first line, unless the
/// message is already made of `FILE:LINE:COL: error: ...` diagnostics; always newline-terminated.
pub fn error_report(message: &str) -> String {
    let mut text = String::new();
    for (i, line) in message.lines().enumerate() {
        if i == 0 && !line.contains(": error: ") {
            text.push_str("error: ");
        }
        text.push_str(line);
        text.push('\n');
    }
    if text.is_empty() {
        text.push_str("error: unknown failure\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_round_trip() {
        for x in [
            0.1,
            2.0,
            -0.0,
            1e-7,
            1e300,
            f64::MIN_POSITIVE,
            5e-324,
            123456789.125,
        ] {
            let s = json_number(x);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{s}");
        }
        assert_eq!(json_number(f64::NAN), "\"nan\"");
        assert_eq!(json_number(f64::INFINITY), "\"inf\"");
        assert_eq!(json_number(f64::NEG_INFINITY), "\"-inf\"");
        assert_eq!(
            json_vectors(&[("outputs", &[1.5, 2.0])]),
            "{\"outputs\": [1.5, 2.0]}"
        );
        assert_eq!(json_string("a\"b\\\n\u{1}"), "\"a\\\"b\\\\\\n\\u0001\"");
    }

    #[test]
    fn error_reports_are_prefixed_once() {
        assert_eq!(error_report("bad thing"), "error: bad thing\n");
        assert_eq!(
            error_report("f.ir: @f: 1 error\n  detail"),
            "error: f.ir: @f: 1 error\n  detail\n"
        );
        assert_eq!(
            error_report("f.ir:2:3: error: oops"),
            "f.ir:2:3: error: oops\n"
        );
        assert_eq!(error_report(""), "error: unknown failure\n");
    }

    #[test]
    fn matrices_align_on_decimal_points() {
        let m = |rows, cols, entries| Matrix {
            rows,
            cols,
            entries,
        };
        let entries = [1330.0000000000002, 480.0, -0.5, f64::NAN, 2.25, 1e300];
        assert_eq!(
            human_matrix(m(3, 2, &entries)),
            "[[1330.0000000000002    480]\n [  -0.5                nan]\n [   2.25             1e300]]\n"
        );
        assert_eq!(
            json_matrix(m(2, 2, &entries[..4])),
            "[[1330.0000000000002, 480.0], [-0.5, \"nan\"]]"
        );
        assert_eq!(human_matrix(m(0, 2, &[])), "[]");
        assert_eq!(json_matrix(m(0, 2, &[])), "[]");
        assert_eq!(human_matrix(m(1, 0, &[])), "[[]]\n");
        assert_eq!(
            render_with_matrix(
                &[("outputs", &[1.0])],
                ("jacobian", m(1, 2, &[3.0, -4.5])),
                false
            ),
            "outputs: 1\njacobian (1×2):\n[[3  -4.5]]\n"
        );
        assert_eq!(
            render_with_matrix(
                &[("outputs", &[1.0])],
                ("jacobian", m(1, 2, &[3.0, -4.5])),
                true
            ),
            "{\"outputs\": [1.0], \"jacobian\": [[3.0, -4.5]]}\n"
        );
    }

    #[test]
    fn human_numbers_are_short_and_exact() {
        assert_eq!(human_line("outputs", &[1.5, 2.0]), "outputs: 1.5, 2");
        assert_eq!(human_number(-0.0), "-0");
        assert_eq!(human_number(1e300), "1e300");
        assert_eq!(human_number(1.5e-9), "1.5e-9");
        assert_eq!(human_number(f64::NAN), "nan");
        for x in [0.1, 1e300, 1.5e-9, 1.0 / 3.0, 12345.678] {
            assert_eq!(human_number(x).parse::<f64>().unwrap(), x);
        }
    }
}
