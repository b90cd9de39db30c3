//! The lexer of the text format, and the literal rules.
//!
//! The format has one instruction per line, so the lexer works a line at a time: it turns one
//! line (comment already stripped) into tokens with 1-based columns counted in characters, and
//! reports a character it does not know as an error instead of guessing. Literals are kept as
//! text; [`parse_literal`] converts them once the type they take is known, so an `f32` literal
//! is rounded once, directly from its decimal or hexadecimal digits (never via `f64`).
//! Tokens are slices of the line (nothing is allocated per token or character), and nothing
//! recurses; any input, including NUL bytes and non-ASCII text, yields tokens or errors, never
//! a panic.
//!
//! Lines end at `\n`, `\r\n` or a lone `\r` ([`source_lines`]), and a byte order mark at the
//! very start of a source is skipped. A character that cannot be seen (a control character, a
//! byte order mark elsewhere, a zero-width space) is named in messages as `U+XXXX`, never
//! printed raw ([`escape_invisible`]).

use std::fmt;

use crate::types::Type;

/// One token of a line, borrowing its text from the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok<'src> {
    /// `%name` (the name without `%`).
    Value(&'src str),
    /// `@name` (the name without `@`).
    Func(&'src str),
    /// A word: keyword, opcode, type, `inf`, `nan`, `true`, `false`.
    Word(&'src str),
    /// A numeric literal as written, sign included (`-1.5`, `0x1p-3`, `-inf`).
    Number(&'src str),
    /// One of `( ) { } , : =`.
    Punct(char),
    /// `->`.
    Arrow,
}

impl fmt::Display for Tok<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Value(n) => write!(f, "'%{n}'"),
            Tok::Func(n) => write!(f, "'@{n}'"),
            Tok::Word(w) | Tok::Number(w) => write!(f, "'{w}'"),
            Tok::Punct(c) => write!(f, "'{c}'"),
            Tok::Arrow => f.write_str("'->'"),
        }
    }
}

/// A token and the 1-based column of its first character.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spanned<'src> {
    pub tok: Tok<'src>,
    pub col: usize,
}

/// A lexing error: column and message.
#[derive(Clone, Debug)]
pub(crate) struct LexError {
    pub col: usize,
    pub message: String,
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
}

/// The lines of a source, as the parser and every error position count them: a leading byte
/// order mark (U+FEFF) is skipped, a line ends at `\n`, `\r\n` or a lone `\r` (the line end is
/// not part of the line), and a line end at the end of the source does not start another line.
///
/// ```
/// use adjit_ir::text::source_lines;
/// let lines: Vec<&str> = source_lines("\u{FEFF}a\rb\r\nc\n\nd\n").collect();
/// assert_eq!(lines, ["a", "b", "c", "", "d"]);
/// ```
pub fn source_lines(src: &str) -> impl Iterator<Item = &str> {
    let text = src.strip_prefix('\u{FEFF}').unwrap_or(src);
    // Byte searches (`memchr`): both line ends are ASCII, so a match is a character boundary.
    // The next `\n` and the next `\r` at or after `pos` (`text.len()`: none) are each searched
    // for again only once passed, so a source with one kind of line end is read once, not once
    // per line.
    let find =
        move |from: usize, end: char| text[from..].find(end).map_or(text.len(), |i| from + i);
    let (mut pos, mut next_lf, mut next_cr) = (0, None, None);
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let lf = *next_lf.get_or_insert_with(|| find(pos, '\n'));
        let lf = if lf < pos {
            *next_lf.insert(find(pos, '\n'))
        } else {
            lf
        };
        let cr = *next_cr.get_or_insert_with(|| find(pos, '\r'));
        let cr = if cr < pos {
            *next_cr.insert(find(pos, '\r'))
        } else {
            cr
        };
        let end = lf.min(cr);
        let line = &text[pos..end];
        pos = if end == cr && lf == cr + 1 {
            end + 2
        } else {
            end + 1
        };
        Some(line)
    })
}

/// The part of `line` before its `;` comment.
pub(crate) fn strip_comment(line: &str) -> &str {
    match line.find(';') {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Tokenize one line (without its comment) into `toks`, which is cleared first. Stops at the
/// first character it cannot lex.
///
/// The lexer walks bytes: every character a token can hold is ASCII, so a token's text is a
/// slice of `line` and only a non-ASCII character (whitespace to skip, or an error) is decoded.
/// Columns still count characters.
pub(crate) fn lex_line<'src>(
    line: &'src str,
    toks: &mut Vec<Spanned<'src>>,
) -> Result<(), LexError> {
    toks.clear();
    let bytes = line.as_bytes();
    let n = bytes.len();
    // `i` is a byte index, always at a character boundary; `col` the column of that character.
    let mut i = 0;
    let mut col = 1;
    let name_end = |start: usize| {
        let mut j = start;
        while j < n && is_name_byte(bytes[j]) {
            j += 1;
        }
        j
    };
    while i < n {
        let b = bytes[i];
        if !b.is_ascii() {
            let Some(c) = line[i..].chars().next() else {
                break;
            };
            if c.is_whitespace() {
                i += c.len_utf8();
                col += 1;
                continue;
            }
            return Err(LexError {
                col,
                message: format!("unexpected character {}", describe_char(Some(c))),
            });
        }
        let next = bytes.get(i + 1).copied();
        // The token's end (exclusive, in bytes); the token is ASCII, so `col` advances by
        // its length.
        let end = match b {
            _ if char::from(b).is_whitespace() => i + 1,
            b'%' | b'@' => {
                let j = name_end(i + 1);
                let name = &line[i + 1..j];
                if name.is_empty() {
                    let what = if b == b'%' { "value" } else { "function" };
                    return Err(LexError {
                        col,
                        message: format!(
                            "expected a {what} name after '{}' (letters, digits, '_', '.'), found {}",
                            char::from(b),
                            describe_char(line[i + 1..].chars().next())
                        ),
                    });
                }
                let tok = if b == b'%' {
                    Tok::Value(name)
                } else {
                    Tok::Func(name)
                };
                toks.push(Spanned { tok, col });
                j
            }
            b'(' | b')' | b'{' | b'}' | b',' | b':' | b'=' => {
                toks.push(Spanned {
                    tok: Tok::Punct(char::from(b)),
                    col,
                });
                i + 1
            }
            b'-' if next == Some(b'>') => {
                toks.push(Spanned {
                    tok: Tok::Arrow,
                    col,
                });
                i + 2
            }
            _ if b.is_ascii_digit()
                || ((b == b'-' || b == b'+')
                    && next.is_some_and(|n| n.is_ascii_alphanumeric() || n == b'.'))
                || (b == b'.' && next.is_some_and(|n| n.is_ascii_digit())) =>
            {
                let mut j = i;
                if b == b'-' || b == b'+' {
                    j += 1;
                }
                let body_start = j;
                let hex =
                    bytes.get(j) == Some(&b'0') && matches!(bytes.get(j + 1), Some(b'x' | b'X'));
                while j < n {
                    let d = bytes[j];
                    let exp_sign = (d == b'+' || d == b'-')
                        && j > body_start
                        && match bytes[j - 1] {
                            b'p' | b'P' => true,
                            b'e' | b'E' => !hex,
                            _ => false,
                        };
                    if is_name_byte(d) || exp_sign {
                        j += 1;
                    } else {
                        break;
                    }
                }
                toks.push(Spanned {
                    tok: Tok::Number(&line[i..j]),
                    col,
                });
                j
            }
            _ if b.is_ascii_alphabetic() || b == b'_' => {
                let j = name_end(i);
                toks.push(Spanned {
                    tok: Tok::Word(&line[i..j]),
                    col,
                });
                j
            }
            _ => {
                return Err(LexError {
                    col,
                    message: format!(
                        "unexpected character {}",
                        describe_char(Some(char::from(b)))
                    ),
                })
            }
        };
        col += end - i;
        i = end;
    }
    Ok(())
}

fn describe_char(c: Option<char>) -> String {
    match c {
        None => "end of line".into(),
        Some(c) if is_invisible(c) => invisible_name(c),
        Some(c) => format!("'{c}'"),
    }
}

/// Whether `c` would be invisible, or garble the message, if printed as is: control and
/// format characters, combining marks, unassigned and private-use code points, every space but
/// the ASCII one, and the Hangul fillers that render as blanks. The test is the standard
/// library's own (`char::escape_debug` escapes exactly the non-printable characters), plus the
/// spaces and fillers it leaves alone.
pub(crate) fn is_invisible(c: char) -> bool {
    if c == ' ' {
        return false;
    }
    let escaped = !matches!(c, '\'' | '"' | '\\') && c.escape_debug().nth(1).is_some();
    escaped || c.is_whitespace() || matches!(c, '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}')
}

/// `U+XXXX`, with a name for the characters most likely to turn up by accident.
fn invisible_name(c: char) -> String {
    let name = match c {
        '\u{0}' => "NUL",
        '\t' => "tab",
        '\n' => "line feed",
        '\r' => "carriage return",
        '\u{A0}' => "no-break space",
        '\u{AD}' => "soft hyphen",
        '\u{200B}' => "zero width space",
        '\u{200C}' => "zero width non-joiner",
        '\u{200D}' => "zero width joiner",
        '\u{2060}' => "word joiner",
        '\u{FEFF}' => "byte order mark",
        _ => return format!("U+{:04X}", u32::from(c)),
    };
    format!("U+{:04X} ({name})", u32::from(c))
}

/// `text` with every invisible character (see the module notes) replaced by its `U+XXXX`
/// name, for quoting user text in messages.
///
/// ```
/// use adjit_ir::text::escape_invisible;
/// assert_eq!(escape_invisible("\u{FEFF}1.5"), "U+FEFF (byte order mark)1.5");
/// assert_eq!(escape_invisible("café ∞"), "café ∞");
/// ```
pub fn escape_invisible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_invisible(c) {
            out.push_str(&invisible_name(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// Why a literal could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LiteralError {
    /// The text is not a literal of the format at all.
    #[error("invalid float literal '{0}' (expected e.g. 1.5, -2e-3, 0x1.8p1, inf, nan)")]
    Syntax(String),
    /// A finite literal too large for the type (it would round to infinity).
    #[error("literal '{text}' is out of range for {ty}")]
    OutOfRange { text: String, ty: Type },
    /// `true`/`false` where a float is expected, or a number where a bool is.
    #[error("literal '{text}' is not a {ty}")]
    WrongKind { text: String, ty: Type },
}

/// Read a literal of the text format as a value of type `ty`, rounded to nearest (for `f32`
/// directly from the digits, so `0.1` becomes `0.1f32` exactly as `"0.1".parse::<f32>()` does).
///
/// Accepted: decimal (`7`, `-1.5`, `2.5e-3`), `inf`, `-inf`, `nan`, hexadecimal floats
/// (`0x1.8p1`, `-0x1p-3`), and for `bool`, `true`/`false`. A finite literal that overflows the
/// type is an error rather than silently infinite.
///
/// ```
/// use adjit_ir::{text::parse_literal, Type};
/// assert_eq!(parse_literal("0x1.8p1", Type::F64), Ok(3.0));
/// assert_eq!(parse_literal("0.1", Type::F32), Ok(0.1f32 as f64));
/// assert!(parse_literal("1e999", Type::F64).is_err());
/// ```
pub fn parse_literal(text: &str, ty: Type) -> Result<f64, LiteralError> {
    if ty == Type::Bool {
        return match text {
            "true" => Ok(1.0),
            "false" => Ok(0.0),
            _ => Err(LiteralError::WrongKind {
                text: text.into(),
                ty,
            }),
        };
    }
    if text == "true" || text == "false" {
        return Err(LiteralError::WrongKind {
            text: text.into(),
            ty,
        });
    }
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = match body {
        "inf" => f64::INFINITY,
        "nan" => return Ok(ty.round(f64::NAN)),
        _ if body.starts_with("0x") || body.starts_with("0X") => {
            parse_hex(&body[2..], ty).ok_or_else(|| LiteralError::Syntax(text.into()))?
        }
        _ => {
            if !is_decimal(body) {
                return Err(LiteralError::Syntax(text.into()));
            }
            let parsed = match ty {
                Type::F32 => body.parse::<f32>().map(f64::from),
                _ => body.parse::<f64>(),
            };
            parsed.map_err(|_| LiteralError::Syntax(text.into()))?
        }
    };
    if magnitude.is_infinite() && body != "inf" {
        return Err(LiteralError::OutOfRange {
            text: text.into(),
            ty,
        });
    }
    Ok(if negative { -magnitude } else { magnitude })
}

/// `digits ('.' digits*)? ([eE] [+-]? digits)?`
fn is_decimal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if digits(&mut i) == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        digits(&mut i);
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// The magnitude of a hexadecimal float body (after `0x`): `hex* ('.' hex*)? ([pP] [+-]? dec+)?`
/// with at least one hex digit, correctly rounded to `ty`. `None` on bad syntax.
fn parse_hex(s: &str, ty: Type) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    // The significand as an integer: at most 30 hex digits kept (120 bits), the rest only
    // marks the value inexact (`sticky`) and scales the exponent.
    let mut mant: u128 = 0;
    let mut exp: i64 = 0;
    let mut sticky = false;
    let mut n_digits = 0usize;
    let mut kept = 0usize;
    let mut seen_point = false;
    while i < b.len() {
        let c = b[i];
        if c == b'.' && !seen_point {
            seen_point = true;
        } else if let Some(d) = (c as char).to_digit(16) {
            n_digits += 1;
            if mant == 0 && d == 0 {
                // Leading zeros carry no bits.
                if seen_point {
                    exp -= 4;
                }
            } else if kept < 30 {
                mant = (mant << 4) | u128::from(d);
                kept += 1;
                if seen_point {
                    exp -= 4;
                }
            } else {
                sticky |= d != 0;
                if !seen_point {
                    exp += 4;
                }
            }
        } else {
            break;
        }
        i += 1;
    }
    if n_digits == 0 {
        return None;
    }
    if i < b.len() {
        if b[i] != b'p' && b[i] != b'P' {
            return None;
        }
        i += 1;
        let negative = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        let mut e: i64 = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            // Saturate: anything beyond ±10^6 is already far outside every type's range.
            e = (e * 10 + i64::from(b[i] - b'0')).min(1_000_000);
            i += 1;
        }
        if i == start || i != b.len() {
            return None;
        }
        exp += if negative { -e } else { e };
    }
    if mant == 0 {
        return Some(0.0);
    }
    Some(round_binary(mant, exp, sticky, ty))
}

/// `mant · 2^exp` (plus a nonzero tail below `mant`'s last bit if `sticky`) rounded to nearest
/// even in `ty` (f32 or f64), returned as an `f64` (exact, since f32 ⊂ f64). Overflow gives
/// infinity; tiny values round into the subnormals or to zero.
fn round_binary(mant: u128, exp: i64, sticky: bool, ty: Type) -> f64 {
    let (precision, min_exp, max_finite): (i64, i64, f64) = match ty {
        Type::F32 => (24, -126, f64::from(f32::MAX)),
        _ => (53, -1022, f64::MAX),
    };
    let bit_len = 128 - i64::from(mant.leading_zeros());
    // The value lies in [2^top, 2^(top+1)).
    let top = exp + bit_len - 1;
    if top > 2000 {
        return f64::INFINITY;
    }
    if top < -2000 {
        return 0.0;
    }
    // The weight of the last kept bit.
    let quantum = (top - (precision - 1)).max(min_exp - (precision - 1));
    let shift = quantum - exp;
    let value = if shift <= 0 {
        // Exact: no more bits than the precision.
        scale(mant as f64, exp)
    } else if shift > 127 {
        // Below half of the smallest quantum: rounds to zero.
        0.0
    } else {
        let kept = mant >> shift;
        let rem = mant & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        let round_up = rem > half || (rem == half && (sticky || kept & 1 == 1));
        scale((kept + u128::from(round_up)) as f64, quantum)
    };
    if value > max_finite {
        f64::INFINITY
    } else {
        value
    }
}

/// `x · 2^e` for an `x` with at most 54 significant bits, exact whenever the result is
/// representable (scaling in steps that stay in the normal range).
fn scale(mut x: f64, mut e: i64) -> f64 {
    while e > 0 {
        let step = e.min(1000);
        x *= f64::powi(2.0, step as i32);
        e -= step;
    }
    while e < 0 {
        let step = (-e).min(1000);
        x /= f64::powi(2.0, step as i32);
        e += step;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `src` one byte at a time: the definition [`source_lines`] implements.
    fn reference_lines(src: &str) -> Vec<&str> {
        let mut rest = src.strip_prefix('\u{FEFF}').unwrap_or(src);
        let mut lines = Vec::new();
        while !rest.is_empty() {
            let Some(i) = rest.bytes().position(|b| b == b'\n' || b == b'\r') else {
                lines.push(rest);
                break;
            };
            lines.push(&rest[..i]);
            let end_len = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
            rest = &rest[i + end_len..];
        }
        lines
    }

    #[test]
    fn source_lines_end_at_every_kind_of_line_end() {
        let pieces = ["a", "%x1", "\n", "\r", "\r\n", "\n\r", "é", "\u{FEFF}", ""];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for n in 0..2000 {
            let mut src = String::new();
            for _ in 0..n % 23 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                src.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            let lines: Vec<&str> = source_lines(&src).collect();
            assert_eq!(lines, reference_lines(&src), "{src:?}");
        }
    }

    #[test]
    fn hex_literals_round_correctly() {
        assert_eq!(parse_literal("0x1.8p1", Type::F64), Ok(3.0));
        assert_eq!(parse_literal("-0x1p-3", Type::F64), Ok(-0.125));
        assert_eq!(parse_literal("0x1p-1074", Type::F64), Ok(f64::from_bits(1)));
        assert_eq!(parse_literal("0x1p-1075", Type::F64), Ok(0.0));
        assert_eq!(
            parse_literal("0x1.8p-1074", Type::F64),
            Ok(f64::from_bits(2))
        );
        assert_eq!(
            parse_literal("0x1.fffffffffffff8p0", Type::F64),
            Ok(2.0),
            "a tie rounds to even"
        );
        assert_eq!(
            parse_literal("0x1.000001p0", Type::F32),
            Ok(1.0),
            "f32 tie rounds to even"
        );
        assert_eq!(
            parse_literal("0x1.0000011p0", Type::F32),
            Ok(f64::from(1.0f32 + f32::EPSILON))
        );
        assert_eq!(
            parse_literal("0x1p-149", Type::F32),
            Ok(f64::from(f32::from_bits(1)))
        );
        assert!(parse_literal("0x1p128", Type::F32).is_err());
        assert!(parse_literal("0x1p1024", Type::F64).is_err());
        assert!(parse_literal("0x", Type::F64).is_err());
        assert!(parse_literal("0x1q3", Type::F64).is_err());
    }

    #[test]
    fn decimal_literals_round_once_to_the_type() {
        assert_eq!(parse_literal("0.1", Type::F32), Ok(f64::from(0.1f32)));
        assert_eq!(parse_literal("-2.5e-3", Type::F64), Ok(-2.5e-3));
        assert_eq!(parse_literal("-inf", Type::F32), Ok(f64::NEG_INFINITY));
        assert!(parse_literal("nan", Type::F64).is_ok_and(f64::is_nan));
        assert!(parse_literal("1e39", Type::F32).is_err());
        assert!(parse_literal("infinity", Type::F64).is_err());
        assert!(parse_literal("1.5.5", Type::F64).is_err());
        assert!(parse_literal("true", Type::F64).is_err());
        assert_eq!(parse_literal("true", Type::Bool), Ok(1.0));
    }
}
