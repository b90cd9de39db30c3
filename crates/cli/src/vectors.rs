//! Vector arguments: `1,2.5,-3` inline, or `@PATH` (a file of numbers, `@-` for standard
//! input), and the length checks against the chosen function.
//!
//! Numbers are separated by commas and/or whitespace; `#` starts a comment running to the end
//! of the line. Every comma sits between two numbers (a comma may end a line of a file, the
//! next number following on a later line): an empty entry (`1,,2`, `,1`, `1,`) is an error at
//! its column, as is a number too large for `f64` (`1e400`), which Rust's parser would
//! silently turn into infinity. `inf`, `-inf`, `nan` (in any case) and `1e-3` are numbers.
//! Files are read like `.ir` files: UTF-8 (a bad byte is reported at its line and column), an
//! optional byte order mark, lines ended by `\n`, `\r\n` or `\r`.

use std::io::Read;

use adjit::ir::text::{decode_source, escape_invisible, source_lines};
use adjit::{Function, Type};

use crate::CliError;

/// Read the vector given to `flag` (e.g. `--at`).
pub fn read_vector(flag: &str, arg: &str) -> Result<Vec<f64>, CliError> {
    match arg.strip_prefix('@') {
        Some(path) => {
            let bytes = read_bytes(flag, path)?;
            let at = |line: usize, col: usize, message: &str| {
                CliError::input(format!(
                    "{flag} @{path}: line {line}, column {col}: {message}"
                ))
            };
            let text = decode_source(&bytes).map_err(|e| at(e.line, e.col, &e.message))?;
            parse_numbers(text).map_err(|e| at(e.line, e.col, &e.message))
        }
        None => parse_numbers(arg).map_err(|e| {
            let place = if e.line == 1 {
                format!("column {}", e.col)
            } else {
                format!("line {}, column {}", e.line, e.col)
            };
            CliError::input(format!("{flag}: {place}: {}", e.message))
        }),
    }
}

/// The bytes of `@path` (`-` is standard input).
pub fn read_bytes(flag: &str, path: &str) -> Result<Vec<u8>, CliError> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::input(format!("{flag} @-: cannot read standard input: {e}")))?;
        Ok(bytes)
    } else {
        std::fs::read(path)
            .map_err(|e| CliError::input(format!("{flag} @{path}: cannot read: {e}")))
    }
}

/// One vector of [`read_vectors`] and where it was: `--tangents @t.txt: line 3`.
pub struct PlacedVector {
    pub place: String,
    pub numbers: Vec<f64>,
}

/// Read the vectors given to `flag`, one per line: `@PATH` (a file, `@-` standard input) or
/// inline text, where `;` also ends a line. Lines with no numbers (blank, comments) are skipped;
/// a comma does not continue a vector on the next line.
pub fn read_vectors(flag: &str, arg: &str) -> Result<Vec<PlacedVector>, CliError> {
    let (lines, origin): (Vec<String>, String) = match arg.strip_prefix('@') {
        Some(path) => {
            let bytes = read_bytes(flag, path)?;
            let origin = format!("{flag} @{path}");
            let text = decode_source(&bytes).map_err(|e| {
                CliError::input(format!(
                    "{origin}: line {}, column {}: {}",
                    e.line, e.col, e.message
                ))
            })?;
            (source_lines(text).map(str::to_string).collect(), origin)
        }
        None => (
            arg.split([';', '\n']).map(str::to_string).collect(),
            flag.to_string(),
        ),
    };
    let mut vectors = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let place = format!("{origin}: line {}", i + 1);
        let numbers = parse_numbers(line)
            .map_err(|e| CliError::input(format!("{place}, column {}: {}", e.col, e.message)))?;
        if !numbers.is_empty() {
            vectors.push(PlacedVector { place, numbers });
        }
    }
    if vectors.is_empty() {
        return Err(CliError::input(format!(
            "{origin}: no vectors (give one per line)"
        )));
    }
    Ok(vectors)
}

/// Why a list of numbers could not be read.
#[derive(Debug, PartialEq, Eq)]
pub struct NumberError {
    /// 1-based line of the offending token.
    pub line: usize,
    /// 1-based column of the offending token, in characters.
    pub col: usize,
    pub message: String,
}

/// Parse numbers separated by commas and/or whitespace, with `#` comments.
pub fn parse_numbers(text: &str) -> Result<Vec<f64>, NumberError> {
    let mut out = Vec::new();
    // Where the last comma was, while no number has followed it.
    let mut open_comma: Option<(usize, usize)> = None;
    for (i, line) in source_lines(text).enumerate() {
        let line_no = i + 1;
        let content = line.split('#').next().unwrap_or("");
        let mut word_start: Option<(usize, usize)> = None; // (byte, column)
                                                           // One step past the end closes the last word.
        let chars = content.char_indices().map(Some).chain([None]);
        for (col0, c) in chars.enumerate() {
            let col = col0 + 1;
            let is_separator = c.is_none_or(|(_, c)| c == ',' || c.is_whitespace());
            if !is_separator {
                if word_start.is_none() {
                    word_start = c.map(|(byte, _)| (byte, col));
                }
                continue;
            }
            if let Some((start, word_col)) = word_start.take() {
                let end = c.map_or(content.len(), |(byte, _)| byte);
                let x = parse_number(&content[start..end]).map_err(|message| NumberError {
                    line: line_no,
                    col: word_col,
                    message,
                })?;
                out.push(x);
                open_comma = None;
            }
            if let Some((_, ',')) = c {
                let why = if open_comma.is_some() {
                    "two commas with no number between them"
                } else if out.is_empty() {
                    "a comma before the first number"
                } else {
                    open_comma = Some((line_no, col));
                    continue;
                };
                return Err(NumberError {
                    line: line_no,
                    col,
                    message: format!("empty entry ({why})"),
                });
            }
        }
    }
    match open_comma {
        Some((line, col)) => Err(NumberError {
            line,
            col,
            message: "empty entry (a comma after the last number)".into(),
        }),
        None => Ok(out),
    }
}

/// One number: what Rust's `f64` parser reads, except that a finite number too large for
/// `f64` is an error rather than infinity (as for literals in `.ir` files).
fn parse_number(word: &str) -> Result<f64, String> {
    let x = word
        .parse::<f64>()
        .map_err(|_| format!("`{}` is not a number", escape_invisible(word)))?;
    let magnitude = word.trim_start_matches(['+', '-']);
    let spells_infinity =
        magnitude.eq_ignore_ascii_case("inf") || magnitude.eq_ignore_ascii_case("infinity");
    if x.is_infinite() && !spells_infinity {
        return Err(format!("`{word}` is out of range for f64"));
    }
    Ok(x)
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Check that `flag`'s vector has one number per input of `func` (per float input when
/// `floats_only`: the tangent and inverse slots skip `bool` parameters).
pub fn expect_inputs(
    flag: &str,
    got: usize,
    func: &Function,
    floats_only: bool,
) -> Result<(), CliError> {
    if floats_only && func.has_data_params() {
        // Seeds exist for the differentiated float inputs only; data inputs get none.
        let expected = func.differentiated_params().count();
        if got == expected {
            return Ok(());
        }
        return Err(CliError::input(format!(
            "{flag} has {}, @{} takes {} (its {} data inputs get none)",
            plural(got, "number"),
            func.name,
            plural(expected, "differentiated input"),
            func.data_params().len()
        )));
    }
    let types = func.param_types();
    check_count(flag, got, &func.name, "takes", "input", &types, floats_only)
}

/// Check that every number of `values` meant for an `f32` input of `func` (one value per
/// input, in order) fits in `f32`: `1e39` would round to infinity there, as `1e400` would in
/// `f64`, which the parser already refuses.
pub fn expect_f32_range(flag: &str, values: &[f64], func: &Function) -> Result<(), CliError> {
    let names = adjit::ir::text::printed_names(func);
    for ((i, p), &v) in func.params().enumerate().zip(values) {
        if func.ty(p) == adjit::Type::F32 && v.is_finite() && v.abs() > f64::from(f32::MAX) {
            return Err(CliError::input(format!(
                "{flag}: number {} ({v:e}) is for the f32 input %{}, and it overflows f32 \
                 (the largest finite f32 is {:e})",
                i + 1,
                names[p.index()],
                f32::MAX
            )));
        }
    }
    Ok(())
}

/// Check that `flag`'s vector has one number per float output of `func`.
pub fn expect_outputs(flag: &str, got: usize, func: &Function) -> Result<(), CliError> {
    check_count(
        flag,
        got,
        &func.name,
        "returns",
        "output",
        &func.ret_types,
        true,
    )
}

fn check_count(
    flag: &str,
    got: usize,
    name: &str,
    verb: &str,
    noun: &str,
    types: &[Type],
    floats_only: bool,
) -> Result<(), CliError> {
    let n_floats = types.iter().filter(|t| t.is_float()).count();
    let (expected, noun) = if floats_only && n_floats != types.len() {
        (n_floats, format!("float {noun}"))
    } else {
        (types.len(), noun.to_string())
    };
    if got == expected {
        return Ok(());
    }
    Err(CliError::input(format!(
        "{flag} has {}, @{name} {verb} {}",
        plural(got, "number"),
        plural(expected, &noun)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_and_comments() {
        assert_eq!(parse_numbers("1,2.5,-3").unwrap(), vec![1.0, 2.5, -3.0]);
        assert_eq!(
            parse_numbers("1 2\n3\t4").unwrap(),
            vec![1.0, 2.0, 3.0, 4.0]
        );
        assert_eq!(
            parse_numbers("1, 2 ,\n3 # three\n# all comment\n").unwrap(),
            vec![1.0, 2.0, 3.0]
        );
        assert_eq!(parse_numbers("").unwrap(), Vec::<f64>::new());
        let special = parse_numbers("nan,inf,-inf,1e-3").unwrap();
        assert!(special[0].is_nan());
        assert_eq!(&special[1..], &[f64::INFINITY, f64::NEG_INFINITY, 1e-3]);
    }

    /// `Ok(numbers)` as text, or `LINE:COL: MESSAGE`.
    fn check(text: &str, expected: &str) {
        let actual = match parse_numbers(text) {
            Ok(xs) => format!("{xs:?}"),
            Err(e) => format!("{}:{}: {}", e.line, e.col, e.message),
        };
        assert_eq!(actual, expected, "{text:?}");
    }

    #[test]
    fn bad_numbers_say_where() {
        check("1\n2, x3", "2:4: `x3` is not a number");
        check("1 ∞ 2", "1:3: `∞` is not a number");
        check(
            "1,\u{200B}2",
            "1:3: `U+200B (zero width space)2` is not a number",
        );
        check("1e400", "1:1: `1e400` is out of range for f64");
        check("2, -1e309", "1:4: `-1e309` is out of range for f64");
        check("1e-400, INF, -Infinity", "[0.0, inf, -inf]");
    }

    #[test]
    fn every_comma_sits_between_two_numbers() {
        check(
            "1,,2",
            "1:3: empty entry (two commas with no number between them)",
        );
        check(
            "1,,2,3",
            "1:3: empty entry (two commas with no number between them)",
        );
        check(
            "1 , , 2",
            "1:5: empty entry (two commas with no number between them)",
        );
        check(",1", "1:1: empty entry (a comma before the first number)");
        check(
            "# x\n  ,1",
            "2:3: empty entry (a comma before the first number)",
        );
        check("1,2,", "1:4: empty entry (a comma after the last number)");
        check(
            "1,2, # done\n\n",
            "1:4: empty entry (a comma after the last number)",
        );
        check(",,,", "1:1: empty entry (a comma before the first number)");
        check("1,\n2,\r3", "[1.0, 2.0, 3.0]");
        check(
            "1,\n,2",
            "2:1: empty entry (two commas with no number between them)",
        );
    }

    #[test]
    fn line_ends_and_byte_order_marks() {
        // A CR-only file: the comment ends at the CR instead of swallowing the numbers.
        check("# point\r1.5 # x\r-2\r", "[1.5, -2.0]");
        check(
            "\u{FEFF}1\r\n2 # two\r\n3 x\r\n",
            "3:3: `x` is not a number",
        );
    }

    #[test]
    fn vectors_one_per_line() {
        let read = |arg: &str| match read_vectors("--tangents", arg) {
            Ok(vs) => vs
                .iter()
                .map(|v| format!("{}: {:?}", v.place, v.numbers))
                .collect::<Vec<_>>()
                .join("; "),
            Err(e) => e.to_string(),
        };
        assert_eq!(
            read("1,0; 0 1"),
            "--tangents: line 1: [1.0, 0.0]; --tangents: line 2: [0.0, 1.0]"
        );
        assert_eq!(
            read("1,0;;2"),
            "--tangents: line 1: [1.0, 0.0]; --tangents: line 3: [2.0]"
        );
        assert_eq!(
            read("1,0; 0,"),
            "--tangents: line 2, column 3: empty entry (a comma after the last number)"
        );
        assert_eq!(read(" ; "), "--tangents: no vectors (give one per line)");
    }

    #[test]
    fn length_messages() {
        let mut b = adjit::Builder::new("rosen");
        let x = b.param(Type::F64, "x");
        let _ = b.param(Type::F64, "y");
        let _ = b.param(Type::F64, "z");
        let rosen = b.finish(&[x]);
        let e = expect_inputs("--at", 2, &rosen, false).unwrap_err();
        assert_eq!(e.to_string(), "--at has 2 numbers, @rosen takes 3 inputs");
        let e = expect_outputs("--cotangent", 2, &rosen).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--cotangent has 2 numbers, @rosen returns 1 output"
        );
        assert!(expect_inputs("--at", 3, &rosen, false).is_ok());

        let mut b = adjit::Builder::new("flagged");
        let x = b.param(Type::F64, "x");
        let flag = b.param(Type::Bool, "flag");
        let y = b.select(flag, x, 0.0);
        let flagged = b.finish(&[y, flag]);
        assert!(expect_inputs("--at", 2, &flagged, false).is_ok());
        let e = expect_inputs("--tangent", 2, &flagged, true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--tangent has 2 numbers, @flagged takes 1 float input"
        );
        let e = expect_outputs("--cotangent", 2, &flagged).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--cotangent has 2 numbers, @flagged returns 1 float output"
        );
    }
}
