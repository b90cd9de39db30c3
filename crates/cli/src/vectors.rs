//! Vector arguments: `1,2.5,-3` inline, or `@PATH` (a file of numbers, `@-` for standard
//! input), and the length checks against the chosen function.
//!
//! Numbers are separated by commas and/or whitespace; `#` starts a comment running to the end
//! of the line; empty entries (`1,,2`) are skipped. Each number is parsed by Rust's `f64` parser, so `nan`, `inf` and `1e-3` work.

use std::io::Read;

use adjit::{Function, Type};

use crate::CliError;

/// Read the vector given to `flag` (e.g. `--at`).
pub fn read_vector(flag: &str, arg: &str) -> Result<Vec<f64>, CliError> {
    match arg.strip_prefix('@') {
        Some(path) => {
            let text = if path == "-" {
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text).map_err(|e| {
                    CliError::input(format!("{flag} @-: cannot read standard input: {e}"))
                })?;
                text
            } else {
                std::fs::read_to_string(path)
                    .map_err(|e| CliError::input(format!("{flag} @{path}: cannot read: {e}")))?
            };
            parse_numbers(&text).map_err(|e| {
                CliError::input(format!("{flag} @{path}: line {}: {}", e.line, e.message))
            })
        }
        None => parse_numbers(arg).map_err(|e| CliError::input(format!("{flag}: {}", e.message))),
    }
}

/// Why a list of numbers could not be read.
#[derive(Debug, PartialEq, Eq)]
pub struct NumberError {
    /// 1-based line of the offending token.
    pub line: usize,
    pub message: String,
}

/// Parse numbers separated by commas and/or whitespace, with `#` comments.
pub fn parse_numbers(text: &str) -> Result<Vec<f64>, NumberError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let content = line.split('#').next().unwrap_or("");
        let words = content
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty());
        for word in words {
            let x = word.parse::<f64>().map_err(|_| NumberError {
                line: line_no,
                message: format!("`{word}` is not a number"),
            })?;
            out.push(x);
        }
    }
    Ok(out)
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
    let types = func.param_types();
    check_count(flag, got, &func.name, "takes", "input", &types, floats_only)
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

    #[test]
    fn bad_numbers_say_where() {
        let e = parse_numbers("1\n2, x3").unwrap_err();
        assert_eq!(
            e,
            NumberError {
                line: 2,
                message: "`x3` is not a number".into()
            }
        );
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
