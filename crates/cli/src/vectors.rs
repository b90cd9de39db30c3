//! Vector arguments: `1,2.5,-3` inline, or `@PATH` (a file of numbers, `@-` for standard
//! input), and the length checks against the chosen function.
//!
//! Numbers are separated by commas and/or whitespace; `#` starts a comment running to the end
//! of the line; empty entries (`1,,2`) are skipped. Each number is parsed by Rust's `f64` parser, so `nan`, `inf` and `1e-3` work.

use std::io::Read;

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

/// Check that `flag`'s vector has `expected` numbers: one per input of `@func`.
pub fn expect_inputs(flag: &str, got: usize, func: &str, expected: usize) -> Result<(), CliError> {
    if got == expected {
        return Ok(());
    }
    Err(CliError::input(format!(
        "{flag} has {}, @{func} takes {}",
        plural(got, "number"),
        plural(expected, "input")
    )))
}

/// Check that `flag`'s vector has `expected` numbers: one per output of `@func`.
pub fn expect_outputs(flag: &str, got: usize, func: &str, expected: usize) -> Result<(), CliError> {
    if got == expected {
        return Ok(());
    }
    Err(CliError::input(format!(
        "{flag} has {}, @{func} returns {}",
        plural(got, "number"),
        plural(expected, "output")
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
        let e = expect_inputs("--at", 2, "rosen", 3).unwrap_err();
        assert_eq!(e.to_string(), "--at has 2 numbers, @rosen takes 3 inputs");
        let e = expect_outputs("--cotangent", 1, "two", 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--cotangent has 1 number, @two returns 2 outputs"
        );
        assert!(expect_inputs("--at", 3, "rosen", 3).is_ok());
    }
}
