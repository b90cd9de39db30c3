//! Parser for the text format. (Being written.)

use crate::function::Function;

/// One parse error with its position (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: error: {message}")]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// Every error found in a source text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
pub struct ParseErrors {
    pub errors: Vec<ParseError>,
}

/// Parse every function in `src`.
pub fn parse(src: &str) -> Result<Vec<Function>, ParseErrors> {
    let _ = src;
    Err(ParseErrors {
        errors: vec![ParseError {
            line: 1,
            col: 1,
            message: "the parser is not written yet".into(),
        }],
    })
}

/// Parse a source holding exactly one function.
pub fn parse_function(src: &str) -> Result<Function, ParseErrors> {
    let mut funcs = parse(src)?;
    if funcs.len() != 1 {
        return Err(ParseErrors {
            errors: vec![ParseError {
                line: 1,
                col: 1,
                message: format!("expected exactly one function, found {}", funcs.len()),
            }],
        });
    }
    Ok(funcs.remove(0))
}
