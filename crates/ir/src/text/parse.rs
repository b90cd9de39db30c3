//! The parser of the text format: source text to [`Function`]s, with every error located.
//!
//! The format has one instruction per line, so the parser reads a line at a time and, after
//! an error, simply resumes at the next line; all errors of a source are collected. The
//! reference reading takes two passes per function: the first records every line's syntax and
//! every definition (name → values), the second resolves operand names, converts literals to
//! the type they take, and builds the [`Function`] directly (no [`crate::Builder`], which would
//! normalise). A source is first read in one pass instead, which builds each instruction as
//! its line is read ([`Eager`]): the same functions when there is no error, and nothing stored
//! per line; at the first error the source is read again the reference way, which reports
//! every error.
//! Names get numbers as they are read ([`super::names`]): most through a dense table per
//! prefix and suffix (`%x12`), the rest through a hash table.
//! Semantic problems are left to [`crate::verify`]: a forward reference becomes an operand
//! pointing forward, a redefinition two values with one name, a type mismatch an instruction
//! whose stored type is a plausible guess. Only a name defined nowhere in the function is a
//! parse error; so is a second function of the same name, since callers pick functions by
//! name. Nothing here recurses or panics, whatever the input.

use std::collections::{HashMap, HashSet};

use super::lexer::{
    is_invisible, lex_line, parse_literal, source_lines, strip_comment, Spanned, Tok,
};
use super::names::Names;
use crate::function::{Function, InstData, Operand, ParamKind, Value, ValueDef};
use crate::opcode::{BinaryOp, CmpPred, UnaryOp};
use crate::types::Type;

/// One parse error with its position (1-based line and column, columns counted in characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: error: {message}")]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters (not bytes).
    pub col: usize,
    /// What was expected and what was found, e.g. `expected ',' after operand, found '%y'`.
    pub message: String,
}

/// Every error found in a source text, in source order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
pub struct ParseErrors {
    /// Never empty when returned by [`parse`]; sorted by line, then column.
    pub errors: Vec<ParseError>,
}

/// Parse every function in `src`.
///
/// ```
/// let funcs = adjit_ir::parse("func @sq(%x: f64) -> f64 {\n    %y = mul %x, %x\n    ret %y\n}\n")
///     .unwrap();
/// assert_eq!(funcs[0].name, "sq");
/// assert_eq!(adjit_ir::interpret(&funcs[0], &[3.0]).unwrap(), vec![9.0]);
/// let err = adjit_ir::parse("func @f(%x: f64) -> f64 {\n    %y = sine %x\n    ret %y\n}\n");
/// assert_eq!(
///     err.unwrap_err().to_string(),
///     "2:10: error: unknown opcode 'sine' (did you mean 'sin'?)"
/// );
/// ```
pub fn parse(src: &str) -> Result<Vec<Function>, ParseErrors> {
    Ok(parse_with_source(src)?
        .into_iter()
        .map(|(func, _)| func)
        .collect())
}

/// Where a parsed function's parts stand in its source: 1-based line and column (in
/// characters) of the header's `@name`, of every value's `%name` (parameters in the header,
/// instructions at the start of their line), and of the `ret`. Used to place verifier errors
/// (`FILE:LINE:COL`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMap {
    pub header: (usize, usize),
    /// Indexed by value.
    pub values: Vec<(usize, usize)>,
    pub ret: (usize, usize),
}

impl SourceMap {
    /// The place of `value`, or of the `ret` line for `None`.
    pub fn place(&self, value: Option<Value>) -> (usize, usize) {
        match value {
            Some(v) => self.values.get(v.index()).copied().unwrap_or(self.header),
            None => self.ret,
        }
    }
}

/// [`parse`], also returning where each function's values stand in `src`.
pub fn parse_with_source(src: &str) -> Result<Vec<(Function, SourceMap)>, ParseErrors> {
    // A name takes at least two bytes (`%` and one character), so a program rarely numbers
    // its names past a quarter of its length; the families' slots (4 bytes each) then take at
    // most as many bytes as the source.
    parse_with_slot_budget(src, src.len() / 4 + 1024)
}

/// [`parse_lines`] building functions line by line, and if that meets an error, again the
/// two-pass way, which reports the errors.
fn parse_with_slot_budget(
    src: &str,
    slot_budget: usize,
) -> Result<Vec<(Function, SourceMap)>, ParseErrors> {
    parse_lines(src, slot_budget, true).or_else(|_| parse_lines(src, slot_budget, false))
}

/// [`parse_with_source`] with at most `slot_budget` slots for the name families (0: every name
/// in the hash table), building functions line by line if `eager` ([`Eager`]).
fn parse_lines(
    src: &str,
    slot_budget: usize,
    eager: bool,
) -> Result<Vec<(Function, SourceMap)>, ParseErrors> {
    let mut parser = Parser {
        // The lines that end in `\n` (all but a few, in practice): only for reserving.
        n_lines: count_byte(src.as_bytes(), b'\n') + 1,
        slot_budget,
        eager,
        ..Parser::default()
    };
    let mut n_lines = 0;
    for (i, line) in source_lines(src).enumerate() {
        n_lines = i + 1;
        parser.line(i + 1, line);
        if eager && !parser.errors.is_empty() {
            // The caller parses again, the two-pass way.
            return Err(ParseErrors {
                errors: parser.errors,
            });
        }
    }
    if let Some(func) = parser.current.take() {
        parser.error(
            n_lines + 1,
            1,
            format!(
                "expected '}}' to close function @{}, found end of file",
                func.name
            ),
        );
    }
    let mut errors = parser.errors;
    if errors.is_empty() {
        Ok(parser.funcs)
    } else {
        errors.sort_by_key(|e| (e.line, e.col));
        Err(ParseErrors { errors })
    }
}

/// How many times `byte` occurs in `bytes`.
fn count_byte(bytes: &[u8], byte: u8) -> usize {
    bytes.iter().filter(|&&b| b == byte).count()
}

/// The text of a source read as bytes (a file), or a located error at the first byte that is
/// not UTF-8. Line and column count as [`parse`] does (lines end at `\n`, `\r\n` or `\r`, a
/// leading byte order mark takes no column), so the position is where an editor shows it.
///
/// ```
/// use adjit_ir::text::decode_source;
/// assert_eq!(decode_source(b"; ok\n"), Ok("; ok\n"));
/// assert_eq!(
///     decode_source(b"; ok\n; caf\xe9\n").unwrap_err().to_string(),
///     "2:6: error: invalid UTF-8: byte 0xE9 is not part of any character"
/// );
/// ```
pub fn decode_source(bytes: &[u8]) -> Result<&str, ParseError> {
    let error = match std::str::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(e) => e,
    };
    let valid = error.valid_up_to();
    // The prefix is valid UTF-8 by definition of `valid_up_to`; the fallback is never taken.
    let prefix = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
    let (mut n_lines, mut last) = (0, "");
    for line in source_lines(prefix) {
        n_lines += 1;
        last = line;
    }
    let (line, col) = if n_lines == 0 || prefix.ends_with(['\n', '\r']) {
        (n_lines + 1, 1)
    } else {
        (n_lines, last.chars().count() + 1)
    };
    let bad_len = error.error_len().unwrap_or(bytes.len() - valid);
    let bad: Vec<String> = bytes[valid..valid + bad_len]
        .iter()
        .map(|b| format!("0x{b:02X}"))
        .collect();
    let plural = if bad.len() == 1 { "" } else { "s" };
    let message = match (error.error_len(), bad.as_slice()) {
        (None, _) => format!(
            "invalid UTF-8: the text ends inside a character (byte{plural} {})",
            bad.join(" ")
        ),
        (Some(_), [one]) => {
            format!("invalid UTF-8: byte {one} is not part of any character")
        }
        (Some(_), _) => format!(
            "invalid UTF-8: bytes {} do not form a character",
            bad.join(" ")
        ),
    };
    Err(ParseError { line, col, message })
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

/// What an instruction line says, before names are resolved.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Const { ty: Type, value: f64 },
    Unary(UnaryOp),
    Binary(BinaryOp),
    Fma,
    Powi(i32),
    Fcmp(CmpPred),
    Select,
    Fpromote,
    Fdemote,
}

/// An operand as written (a slice of the source).
#[derive(Clone, Copy, Debug)]
enum RawOperand<'src> {
    /// `id` numbers the name in its function ([`PendingFunc::name_id`]).
    Value {
        id: usize,
        col: usize,
    },
    Literal {
        text: &'src str,
        col: usize,
    },
}

#[derive(Clone, Debug)]
struct RawInst {
    /// The number of its name in its function.
    id: usize,
    line: usize,
    /// Column of the `%name` that starts the line.
    col: usize,
    kind: Kind,
    /// Where its operands start in [`PendingFunc::operands`] (they end where the next
    /// instruction's start).
    operands_start: usize,
}

/// A function whose lines have been read but whose names are not yet resolved. Names and
/// literals are slices of the source; only the names the [`Function`] keeps are allocated.
#[derive(Default)]
struct PendingFunc<'src> {
    name: &'src str,
    /// Name, type, kind and name number.
    params: Vec<(&'src str, Type, ParamKind, usize)>,
    ret_types: Vec<Type>,
    insts: Vec<RawInst>,
    /// The operands of every instruction, one after another.
    operands: Vec<RawOperand<'src>>,
    /// Column of the `@name` in the header (on `line`).
    name_col: usize,
    /// Line of the header.
    line: usize,
    /// `ret` operands: name, line, column.
    rets: Option<Vec<(&'src str, usize, usize, usize)>>,
    /// Line and column of the `ret` keyword.
    ret_at: (usize, usize),
    /// Column of each parameter's `%name` in the header.
    param_cols: Vec<usize>,
    /// Names defined on lines that had errors: uses of them are not reported again.
    poisoned: HashSet<&'src str>,
    /// Errors in this function so far; if any, it is not built.
    n_errors: usize,
    /// The header had an error, so parameters may be missing: undefined names are not reported.
    header_broken: bool,
    /// Every name the function mentions (defined or used) → its number, given in order of
    /// first mention. Names are looked up here once, as they are read; resolving them later
    /// indexes vectors by number.
    names: Names<'src>,
    /// How many instructions have been read (without error).
    n_insts: usize,
    /// The function built as its lines are read, in a parse that expects no errors
    /// ([`Parser::eager`]); then `insts` and `operands` stay empty.
    eager: Option<Eager>,
}

/// A function built line by line: every operand resolves, as it is read, to the latest
/// definition of its name so far; a name not defined yet is a forward reference (to its
/// first definition, found later) or undefined, and is settled at the closing `}`.
///
/// This is the second pass of [`Parser::finish_two_pass`] done during the first, and agrees
/// with it on every source without errors: there no instruction is dropped, so the values
/// before an instruction are exactly the values of the function built so far, and a name
/// not defined yet stands for a value not built yet, which neither types a literal nor the
/// result. The first error makes the parser start again the two-pass way, which reports
/// every error as it always has.
struct Eager {
    func: Function,
    /// Where each value stands (the [`SourceMap`]'s `values`).
    places: Vec<(usize, usize)>,
    /// Operands naming a value not defined yet: the value whose operand it is, the operand's
    /// position, and the name's number.
    forward: Vec<(usize, usize, usize)>,
}

impl Eager {
    /// The function of `pending`'s header, with room for `guess` instructions; each parameter
    /// is the latest definition of its name.
    fn new(pending: &mut PendingFunc<'_>, guess: usize) -> Eager {
        let n_params = pending.params.len();
        let mut func = Function::new(pending.name);
        func.values.reserve(n_params + guess);
        let mut places = Vec::with_capacity(n_params + guess);
        for (index, &(name, ty, kind, id)) in pending.params.iter().enumerate() {
            let p = func.add_param(ty, Some(name.into()));
            func.set_param_kind(p, kind);
            places.push((
                pending.line,
                pending.param_cols.get(index).copied().unwrap_or(1),
            ));
            pending.names.set_latest(id, index);
        }
        Eager {
            func,
            places,
            forward: Vec::new(),
        }
    }
}

impl<'src> PendingFunc<'src> {
    /// The number of `name`, given it on its first mention.
    fn name_id(&mut self, name: &'src str) -> usize {
        self.names.id(name)
    }

    /// Record that `value` defines `name`; returns the name's number.
    fn define(&mut self, name: &'src str, value: usize) -> usize {
        let id = self.name_id(name);
        self.names.define(id, value);
        id
    }

    /// Add the instruction just read (its operands in `operands`) to the function built line
    /// by line, as value `at` defining name number `id`, placed at `place`.
    fn build_eagerly(
        &mut self,
        id: usize,
        at: usize,
        kind: Kind,
        place: (usize, usize),
    ) -> LineResult<()> {
        let Some(eager) = self.eager.as_mut() else {
            return Ok(());
        };
        let mut values = [None; 3];
        for (k, (o, slot)) in self.operands.iter().zip(&mut values).enumerate() {
            if let RawOperand::Value { id: used, .. } = *o {
                let latest = self.names.latest(used);
                let v = if latest == usize::MAX {
                    // Not defined yet: stands for a value not built yet until the `}`.
                    eager.forward.push((at, k, used));
                    at
                } else {
                    latest
                };
                *slot = Some(Value::new(v));
            }
        }
        self.names.set_latest(id, at);
        let mut errors = Vec::new();
        let values = &values[..self.operands.len().min(3)];
        let built = build_inst(
            &eager.func,
            kind,
            &self.operands,
            values,
            place.0,
            &mut errors,
        );
        match (built, errors.pop()) {
            (Some((ty, inst)), None) => {
                let name = self.names.name(id);
                eager.func.push_inst(ty, inst, Some(name.into()));
                eager.places.push(place);
                Ok(())
            }
            (_, Some(e)) => Err((e.col, e.message)),
            // Not reached: a missing operand comes with its error.
            (None, None) => Err((place.1, "an operand could not be read".into())),
        }
    }

    /// Whether an undefined `name` is explained by an earlier error.
    fn is_poisoned(&self, name: &str) -> bool {
        self.header_broken || self.poisoned.contains(name)
    }
}

#[derive(Default)]
struct Parser<'src> {
    funcs: Vec<(Function, SourceMap)>,
    errors: Vec<ParseError>,
    current: Option<PendingFunc<'src>>,
    /// Every function name seen in a header so far, with its line and column.
    defined: HashMap<&'src str, (usize, usize)>,
    /// The token buffer, reused from line to line.
    toks: Vec<Spanned<'src>>,
    /// The number of lines of the source (an upper bound on a function's instructions).
    n_lines: usize,
    /// The most instructions a function read so far had.
    largest: Option<usize>,
    /// How many slots each function's name families may take ([`Names::new`]).
    slot_budget: usize,
    /// Build each function as its lines are read ([`Eager`]): right for sources without
    /// errors; the first error means parsing again without.
    eager: bool,
}

/// Tokens of one line with a read position; "end of line" is reported at the column after
/// the last non-blank character of `code` (counted only when an error needs it).
struct Cursor<'a, 'src> {
    toks: &'a [Spanned<'src>],
    pos: usize,
    code: &'src str,
}

type LineResult<T> = Result<T, (usize, String)>;

impl<'a, 'src> Cursor<'a, 'src> {
    fn peek(&self) -> Option<&'a Spanned<'src>> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<&'a Spanned<'src>> {
        let t = self.toks.get(self.pos);
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn col(&self) -> usize {
        self.peek()
            .map_or_else(|| self.code.trim_end().chars().count() + 1, |t| t.col)
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(t) => t.tok.to_string(),
            None => "end of line".into(),
        }
    }

    fn fail<T>(&self, expected: &str) -> LineResult<T> {
        Err((
            self.col(),
            format!("expected {expected}, found {}", self.found()),
        ))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if matches!(self.peek(), Some(Spanned { tok: Tok::Punct(p), .. }) if *p == c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char, context: &str) -> LineResult<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.fail(&format!("'{c}' {context}"))
        }
    }

    /// Whether the next token is the bare word `w`.
    fn at_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Spanned { tok: Tok::Word(x), .. }) if *x == w)
    }

    /// Consume the bare word `w` if it is next.
    fn eat_word(&mut self, w: &str) -> bool {
        let at = self.at_word(w);
        if at {
            self.pos += 1;
        }
        at
    }

    fn expect_end(&mut self, after: &str) -> LineResult<()> {
        match self.peek() {
            None => Ok(()),
            Some(t) => Err((t.col, format!("unexpected {} after {after}", t.tok))),
        }
    }

    fn ty(&mut self) -> LineResult<Type> {
        if let Some(Spanned {
            tok: Tok::Word(w), ..
        }) = self.peek()
        {
            if let Ok(ty) = w.parse::<Type>() {
                self.pos += 1;
                return Ok(ty);
            }
        }
        self.fail("a type (f32, f64, bool)")
    }
}

/// The parameter attribute of a data input: `data %t: f64`.
const DATA: &str = "data";

fn missing_close_before_func(name: &str) -> String {
    format!("expected '}}' to close function @{name} before the next 'func'")
}

/// Every opcode spelling, for suggestions.
fn all_opcode_names() -> Vec<String> {
    let mut names: Vec<String> = vec!["const".into()];
    names.extend(UnaryOp::ALL.iter().map(|o| o.name().to_string()));
    names.extend(BinaryOp::ALL.iter().map(|o| o.name().to_string()));
    names.extend(["fma", "powi", "select", "fpromote", "fdemote"].map(String::from));
    names.extend(CmpPred::ALL.iter().map(|p| format!("fcmp.{p}")));
    names
}

/// Levenshtein distance (two-row, iterative).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

fn unknown_opcode(word: &str) -> String {
    let best = all_opcode_names()
        .into_iter()
        .map(|n| (edit_distance(word, &n), n))
        .min_by_key(|(d, _)| *d);
    match best {
        Some((d, n)) if d <= 2 && d < word.chars().count() => {
            format!("unknown opcode '{word}' (did you mean '{n}'?)")
        }
        _ => format!("unknown opcode '{word}'"),
    }
}

/// The opcode named `word` with its operand count, or `None`.
fn opcode(word: &str) -> Option<(Kind, usize)> {
    if let Some(op) = UnaryOp::from_name(word) {
        return Some((Kind::Unary(op), 1));
    }
    if let Some(op) = BinaryOp::from_name(word) {
        return Some((Kind::Binary(op), 2));
    }
    if let Some(pred) = word.strip_prefix("fcmp.").and_then(CmpPred::from_name) {
        return Some((Kind::Fcmp(pred), 2));
    }
    match word {
        "fma" => Some((Kind::Fma, 3)),
        "powi" => Some((Kind::Powi(0), 2)),
        "select" => Some((Kind::Select, 3)),
        "fpromote" => Some((Kind::Fpromote, 1)),
        "fdemote" => Some((Kind::Fdemote, 1)),
        _ => None,
    }
}

impl<'src> Parser<'src> {
    fn error(&mut self, line: usize, col: usize, message: String) {
        if let Some(f) = self.current.as_mut() {
            f.n_errors += 1;
        }
        self.errors.push(ParseError { line, col, message });
    }

    fn line(&mut self, line_no: usize, line: &'src str) {
        // The token buffer is lent to the line and returned, so that lines allocate nothing.
        let mut toks = std::mem::take(&mut self.toks);
        self.line_with(line_no, line, &mut toks);
        self.toks = toks;
    }

    fn line_with(&mut self, line_no: usize, line: &'src str, toks: &mut Vec<Spanned<'src>>) {
        let code = strip_comment(line);
        if let Err(e) = lex_line(code, toks) {
            // An invisible character before the first word (a byte order mark where two files
            // were joined) is the lexing error, not a reason to lose the function structure.
            let first_word = code
                .split_whitespace()
                .next()
                .map(|w| w.trim_start_matches(is_invisible));
            // Still track the structure so one bad character costs one error.
            if first_word == Some("func") {
                if let Some(f) = self.current.take() {
                    self.error(line_no, 1, missing_close_before_func(f.name));
                }
                self.current = Some(PendingFunc {
                    header_broken: true,
                    names: Names::new(self.slot_budget, 0),
                    ..PendingFunc::default()
                });
            } else if first_word.is_some_and(|w| w.starts_with('}')) {
                // A function closed by a line with junk after the `}`: it is closed.
                self.current = None;
            } else if let Some(f) = self.current.as_mut() {
                if let Some(name) = first_word.and_then(|w| w.strip_prefix('%')) {
                    f.poisoned.insert(name);
                }
            }
            self.error(line_no, e.col, e.message);
            return;
        }
        if toks.is_empty() {
            return;
        }
        let mut cur = Cursor { toks, pos: 0, code };
        let is_func = matches!(toks[0].tok, Tok::Word("func"));
        if self.current.is_some() && is_func {
            if let Some(f) = self.current.take() {
                self.error(line_no, 1, missing_close_before_func(f.name));
            }
        }
        if self.current.is_none() {
            if !is_func {
                self.error(
                    line_no,
                    toks[0].col,
                    format!("expected 'func', found {}", toks[0].tok),
                );
                return;
            }
            // Reserve for as many instructions as the largest function so far had or, for
            // the first function, as there are lines left: the name table costs 2.5 times as
            // much to fill when it grows as it goes.
            let n_later = self.n_lines.saturating_sub(line_no);
            let guess = self.largest.map_or(n_later, |n| n.min(n_later));
            let mut func = PendingFunc {
                line: line_no,
                names: Names::new(self.slot_budget, guess),
                ..PendingFunc::default()
            };
            if !self.eager {
                func.insts.reserve(guess);
                func.operands.reserve(3 * guess);
            }
            let result = header(&mut cur, &mut func);
            func.header_broken = result.is_err();
            if self.eager && result.is_ok() {
                func.eager = Some(Eager::new(&mut func, guess));
            }
            let twice = self.redefinition(&func);
            self.current = Some(func);
            if let Some((col, message)) = twice {
                self.error(line_no, col, message);
            }
            if let Err((col, message)) = result {
                self.error(line_no, col, message);
            }
            return;
        }
        if let Err((col, message)) = self.body_line(line_no, &mut cur) {
            if let Some(f) = self.current.as_mut() {
                match toks[0].tok {
                    // The value is defined, if badly: don't also call its uses undefined.
                    Tok::Value(name) => {
                        f.poisoned.insert(name);
                    }
                    // A bad `ret` is still the `ret`: don't also ask for one at the `}`.
                    Tok::Word("ret") if f.rets.is_none() => f.rets = Some(Vec::new()),
                    _ => {}
                }
            }
            self.error(line_no, col, message);
        }
    }

    /// The error for a header naming a function that an earlier header named, or `None`
    /// (and the name is recorded).
    fn redefinition(&mut self, func: &PendingFunc<'src>) -> Option<(usize, String)> {
        if func.name.is_empty() {
            return None;
        }
        match self.defined.get(func.name) {
            Some(&(line, col)) => Some((
                func.name_col,
                format!(
                    "function @{} is defined twice: first at {line}:{col}",
                    func.name
                ),
            )),
            None => {
                self.defined.insert(func.name, (func.line, func.name_col));
                None
            }
        }
    }

    fn body_line(&mut self, line_no: usize, cur: &mut Cursor<'_, 'src>) -> LineResult<()> {
        let Some(func) = self.current.as_mut() else {
            return Ok(());
        };
        let Some(first) = cur.next() else {
            return Ok(());
        };
        match &first.tok {
            Tok::Punct('}') => {
                cur.expect_end("'}'")?;
                let func = self.current.take().unwrap_or_default();
                if func.rets.is_none() {
                    return Err((first.col, "expected 'ret' before '}'".into()));
                }
                self.finish(func);
                Ok(())
            }
            _ if func.rets.is_some() => Err((
                first.col,
                format!("expected '}}' after 'ret', found {}", first.tok),
            )),
            Tok::Word("ret") => {
                func.ret_at = (line_no, first.col);
                let mut rets = Vec::new();
                if cur.peek().is_some() {
                    loop {
                        match cur.peek() {
                            Some(Spanned {
                                tok: Tok::Value(n),
                                col,
                            }) => rets.push((*n, func.name_id(n), line_no, *col)),
                            Some(Spanned {
                                tok: Tok::Number(_),
                                col,
                            }) => return Err((
                                *col,
                                "ret takes values (%name), found a literal; define it with `const`"
                                    .into(),
                            )),
                            _ => return cur.fail("a value (%name) to return"),
                        }
                        cur.next();
                        if cur.peek().is_none() {
                            break;
                        }
                        cur.expect_punct(',', "after returned value")?;
                    }
                }
                func.rets = Some(rets);
                Ok(())
            }
            Tok::Value(name) => {
                if !cur.eat_punct('=') {
                    return cur.fail(&format!("'=' after '%{name}'"));
                }
                let operands_start = func.operands.len();
                let parsed = instruction(cur, func);
                let kind = match parsed {
                    Ok(kind) => kind,
                    Err(e) => {
                        func.operands.truncate(operands_start);
                        return Err(e);
                    }
                };
                let at = func.params.len() + func.n_insts;
                let id = func.define(name, at);
                func.n_insts += 1;
                if func.eager.is_none() {
                    func.insts.push(RawInst {
                        id,
                        line: line_no,
                        col: first.col,
                        kind,
                        operands_start,
                    });
                    return Ok(());
                }
                let result = func.build_eagerly(id, at, kind, (line_no, first.col));
                func.operands.clear();
                result
            }
            other => Err((
                first.col,
                format!(
                    "expected an instruction ('%name = OPCODE ...'), 'ret' or '}}', found {other}"
                ),
            )),
        }
    }

    /// The function is closed: build it (or, if built line by line, settle its forward
    /// references and returns).
    fn finish(&mut self, mut pending: PendingFunc<'src>) {
        self.largest = Some(self.largest.unwrap_or(0).max(pending.n_insts));
        match pending.eager.take() {
            Some(eager) => self.finish_eager(pending, eager),
            None => self.finish_two_pass(pending),
        }
    }

    /// The end of a function built line by line ([`Eager`]): forward references point to
    /// the first definition of their name, returns to the latest. Any error here (a name
    /// defined nowhere) only sends the parse the two-pass way, which reports it.
    fn finish_eager(&mut self, pending: PendingFunc<'src>, eager: Eager) {
        let Eager {
            mut func,
            places,
            forward,
        } = eager;
        let mut errors = Vec::new();
        let undefined = |name: &str, (line, col): (usize, usize)| ParseError {
            line,
            col,
            message: format!("undefined value %{name}"),
        };
        for (value, k, id) in forward {
            let first = pending.names.first_def(id);
            let place = places.get(value).copied().unwrap_or(pending.ret_at);
            match func.values.get_mut(value).map(|data| &mut data.def) {
                Some(ValueDef::Inst(inst)) if first != usize::MAX => {
                    set_operand(inst, k, Value::new(first));
                }
                _ => errors.push(undefined(pending.names.name(id), place)),
            }
        }
        for &(name, id, line, col) in pending.rets.iter().flatten() {
            let latest = pending.names.latest(id);
            match [latest, pending.names.first_def(id)]
                .into_iter()
                .find(|&v| v != usize::MAX)
            {
                Some(v) => func.rets.push(Value::new(v)),
                None => errors.push(undefined(name, (line, col))),
            }
        }
        func.ret_types = pending.ret_types;
        if pending.n_errors > 0 || !errors.is_empty() {
            // Never silent: an error always leaves the parse with errors.
            errors.push(ParseError {
                line: pending.line,
                col: pending.name_col,
                message: format!("function @{} has errors", pending.name),
            });
            self.errors.extend(errors);
            return;
        }
        // Room was reserved for every line left in the source (more than this function had
        // if others follow); a large block shrinks in place.
        func.values.shrink_to_fit();
        let mut places = places;
        places.shrink_to_fit();
        let map = SourceMap {
            header: (pending.line, pending.name_col),
            values: places,
            ret: pending.ret_at,
        };
        self.funcs.push((func, map));
    }

    /// Second pass: resolve names and build the function.
    fn finish_two_pass(&mut self, pending: PendingFunc<'src>) {
        // Per name number, its first definition (`pending.names.first_def`) and its latest one so
        // far (`latest`, updated in program order below): a use refers to the latest
        // definition before it, else to the first one (a forward reference, reported by the
        // verifier), else to nothing (undefined).
        let n_params = pending.params.len();
        let mut latest = vec![usize::MAX; pending.names.len()];
        for (index, &(_, _, _, id)) in pending.params.iter().enumerate() {
            latest[id] = index;
        }
        let resolve = |latest: &[usize], id: usize, at: usize| {
            let (first, latest) = (pending.names.first_def(id), latest[id]);
            let v = if latest < at { latest } else { first };
            (v != usize::MAX).then(|| Value::new(v))
        };
        let mut errors = Vec::new();
        let mut func = Function::new(pending.name);
        func.values.reserve_exact(n_params + pending.insts.len());
        for &(name, ty, kind, _) in &pending.params {
            let p = func.add_param(ty, Some(name.into()));
            func.set_param_kind(p, kind);
        }
        let mut broken = pending.n_errors > 0;
        for (k, raw) in pending.insts.iter().enumerate() {
            let at = n_params + k;
            let operands_end = pending
                .insts
                .get(k + 1)
                .map_or(pending.operands.len(), |next| next.operands_start);
            let raw_operands = &pending.operands[raw.operands_start..operands_end];
            // At most three operands: the parser checked each instruction's arity.
            let mut values = [None; 3];
            for (o, slot) in raw_operands.iter().zip(&mut values) {
                *slot = match *o {
                    RawOperand::Value { id, col } => {
                        let name = pending.names.name(id);
                        let v = resolve(&latest, id, at);
                        if v.is_none() && !pending.is_poisoned(name) {
                            errors.push(ParseError {
                                line: raw.line,
                                col,
                                message: format!("undefined value %{name}"),
                            });
                        }
                        v
                    }
                    RawOperand::Literal { .. } => None,
                };
            }
            let values = &values[..raw_operands.len().min(3)];
            latest[raw.id] = at;
            let Some((ty, inst)) =
                build_inst(&func, raw.kind, raw_operands, values, raw.line, &mut errors)
            else {
                broken = true;
                continue;
            };
            func.push_inst(ty, inst, Some(pending.names.name(raw.id).into()));
        }
        for &(name, id, line, col) in pending.rets.iter().flatten() {
            // The latest definition (every one has been seen by now).
            match resolve(&latest, id, usize::MAX) {
                Some(v) => func.rets.push(v),
                None => {
                    if !pending.is_poisoned(name) {
                        errors.push(ParseError {
                            line,
                            col,
                            message: format!("undefined value %{name}"),
                        });
                    }
                    broken = true;
                }
            }
        }
        func.ret_types = pending.ret_types;
        broken |= !errors.is_empty();
        self.errors.extend(errors);
        if !broken {
            let header = (pending.line, pending.name_col);
            let mut values: Vec<(usize, usize)> = (0..pending.params.len())
                .map(|i| {
                    (
                        pending.line,
                        pending.param_cols.get(i).copied().unwrap_or(1),
                    )
                })
                .collect();
            values.extend(pending.insts.iter().map(|raw| (raw.line, raw.col)));
            let map = SourceMap {
                header,
                values,
                ret: pending.ret_at,
            };
            self.funcs.push((func, map));
        }
    }
}

/// The instruction `kind` with the operands `raw_operands` (resolved to `values`: `None` for a
/// literal, or for a name that resolves to nothing) in `func` as it stands, with its type; or
/// `None` if an operand is missing (a literal error is added to `errors`; an unresolved name
/// was reported by the caller). Literals take the type described at [`Parser::finish`].
fn build_inst(
    func: &Function,
    kind: Kind,
    raw_operands: &[RawOperand<'_>],
    values: &[Option<Value>],
    line: usize,
    errors: &mut Vec<ParseError>,
) -> Option<(Type, InstData)> {
    // The type literal operands take: that of the first earlier float value among the
    // float operands (the select condition excluded), as the printer assumes.
    let float_from = usize::from(matches!(kind, Kind::Select));
    let lit_ty = values[float_from.min(values.len())..]
        .iter()
        .flatten()
        .filter_map(|v| func.values.get(v.index()).map(|d| d.ty))
        .find(|t| t.is_float())
        .unwrap_or(Type::F64);
    let mut operands = [Operand::Const(0.0); 3];
    let mut n_operands = 0;
    for (o, v) in raw_operands.iter().zip(values) {
        let operand = match (*o, *v) {
            (_, Some(v)) => Operand::Value(v),
            (RawOperand::Literal { text, col }, None) => match parse_literal(text, lit_ty) {
                Ok(x) => Operand::Const(x),
                Err(e) => {
                    errors.push(ParseError {
                        line,
                        col,
                        message: e.to_string(),
                    });
                    continue;
                }
            },
            (RawOperand::Value { .. }, None) => continue,
        };
        operands[n_operands] = operand;
        n_operands += 1;
    }
    if n_operands != raw_operands.len() {
        return None;
    }
    let value_at = |k: usize| operands[k].as_value().unwrap_or(Value::new(0));
    let pair = || [operands[0], operands[1]];
    let (inst, fallback) = match kind {
        Kind::Const { ty, value } => (InstData::constant(ty, value), ty),
        Kind::Unary(op) => (
            InstData::Unary {
                op,
                arg: value_at(0),
            },
            lit_ty,
        ),
        Kind::Binary(op) => (InstData::Binary { op, args: pair() }, lit_ty),
        Kind::Fma => (
            InstData::Fma {
                args: [operands[0], operands[1], operands[2]],
            },
            lit_ty,
        ),
        Kind::Powi(exp) => (
            InstData::Powi {
                arg: value_at(0),
                exp,
            },
            lit_ty,
        ),
        Kind::Fcmp(pred) => (InstData::Fcmp { pred, args: pair() }, Type::Bool),
        Kind::Select => (
            InstData::Select {
                cond: value_at(0),
                args: [operands[1], operands[2]],
            },
            lit_ty,
        ),
        Kind::Fpromote => (InstData::Fpromote { arg: value_at(0) }, Type::F64),
        Kind::Fdemote => (InstData::Fdemote { arg: value_at(0) }, Type::F32),
    };
    let ty = func.result_type(&inst).unwrap_or(fallback);
    Some((ty, inst))
}

/// Operand `k` of `inst` (in text order, as [`InstData::operands`] lists them) becomes `v`.
fn set_operand(inst: &mut InstData, k: usize, v: Value) {
    match (inst, k) {
        (
            InstData::Unary { arg, .. }
            | InstData::Powi { arg, .. }
            | InstData::Fpromote { arg }
            | InstData::Fdemote { arg },
            0,
        )
        | (InstData::Select { cond: arg, .. }, 0) => *arg = v,
        (InstData::Binary { args, .. } | InstData::Fcmp { args, .. }, k) => {
            if let Some(o) = args.get_mut(k) {
                *o = Operand::Value(v);
            }
        }
        (InstData::Fma { args }, k) => {
            if let Some(o) = args.get_mut(k) {
                *o = Operand::Value(v);
            }
        }
        (InstData::Select { args, .. }, k) => {
            if let Some(o) = k.checked_sub(1).and_then(|j| args.get_mut(j)) {
                *o = Operand::Value(v);
            }
        }
        _ => {}
    }
}

/// `func @NAME(%p: TYPE, data %q: TYPE, ...) -> RETS {` where RETS is a type or `(TYPE, ...)`.
/// Fills `func` as far as it gets, so the body can still be checked after an error.
fn header<'src>(cur: &mut Cursor<'_, 'src>, func: &mut PendingFunc<'src>) -> LineResult<()> {
    cur.next(); // `func`
    match cur.peek() {
        Some(Spanned {
            tok: Tok::Func(name),
            col,
        }) => {
            func.name = name;
            func.name_col = *col;
            cur.next();
        }
        _ => return cur.fail("a function name ('@name') after 'func'"),
    }
    cur.expect_punct('(', "to open the parameter list")?;
    if !cur.eat_punct(')') {
        loop {
            let kind = if cur.eat_word(DATA) {
                ParamKind::Data
            } else {
                ParamKind::Differentiated
            };
            let name = match cur.peek() {
                Some(Spanned {
                    tok: Tok::Value(n),
                    col,
                }) => {
                    func.param_cols.push(*col);
                    *n
                }
                _ if kind == ParamKind::Data => {
                    return cur.fail("a parameter name ('%name') after 'data'")
                }
                _ => return cur.fail("a parameter ('%name: TYPE' or 'data %name: TYPE')"),
            };
            cur.next();
            if !cur.eat_punct(':') {
                return cur.fail(&format!("':' after parameter '%{name}'"));
            }
            if cur.at_word(DATA) {
                return Err((
                    cur.col(),
                    format!("'data' goes before the parameter name: 'data %{name}: TYPE'"),
                ));
            }
            let ty = cur.ty()?;
            let id = func.define(name, func.params.len());
            func.params.push((name, ty, kind, id));
            if cur.eat_punct(')') {
                break;
            }
            if cur.at_word(DATA) {
                return Err((
                    cur.col(),
                    format!("'data' goes before the parameter name: 'data %{name}: {ty}'"),
                ));
            }
            cur.expect_punct(',', "or ')' after parameter")?;
        }
    }
    if !matches!(
        cur.peek(),
        Some(Spanned {
            tok: Tok::Arrow,
            ..
        })
    ) {
        return cur.fail("'->' and the return types");
    }
    cur.next();
    if cur.eat_punct('(') {
        if !cur.eat_punct(')') {
            loop {
                func.ret_types.push(cur.ty()?);
                if cur.eat_punct(')') {
                    break;
                }
                cur.expect_punct(',', "or ')' after return type")?;
            }
        }
    } else {
        func.ret_types.push(cur.ty()?);
    }
    cur.expect_punct('{', "to open the function body")?;
    cur.expect_end("'{' (instructions go on their own lines)")
}

/// The rest of `%name = ...` after the `=`: the instruction's kind, its operands appended to
/// `func.operands` (the caller drops them again on an error).
fn instruction<'src>(cur: &mut Cursor<'_, 'src>, func: &mut PendingFunc<'src>) -> LineResult<Kind> {
    let (word, op_col) = match cur.peek() {
        Some(Spanned {
            tok: Tok::Word(w),
            col,
        }) => (*w, *col),
        _ => return cur.fail("an opcode after '='"),
    };
    cur.next();
    if word == "const" {
        let ty = cur.ty()?;
        let (text, col) = match cur.peek() {
            Some(Spanned {
                tok: Tok::Number(t) | Tok::Word(t),
                col,
            }) => (*t, *col),
            _ => return cur.fail(&format!("a literal after 'const {ty}'")),
        };
        cur.next();
        let value = parse_literal(text, ty).map_err(|e| (col, e.to_string()))?;
        cur.expect_end("the literal")?;
        return Ok(Kind::Const { ty, value });
    }
    let Some((mut kind, arity)) = opcode(word) else {
        return Err((op_col, unknown_opcode(word)));
    };
    let start = func.operands.len();
    // Operands past the arity are counted for the message, not kept.
    let mut n_found = 0;
    let mut second_col = 0;
    if cur.peek().is_some() {
        loop {
            let col = cur.col();
            let operand = match cur.peek().map(|t| t.tok) {
                Some(Tok::Value(name)) => RawOperand::Value {
                    id: func.name_id(name),
                    col,
                },
                Some(Tok::Number(text)) => RawOperand::Literal { text, col },
                Some(Tok::Word(w)) if matches!(w, "inf" | "nan" | "true" | "false") => {
                    RawOperand::Literal { text: w, col }
                }
                _ => return cur.fail("an operand (a %value or a literal)"),
            };
            if n_found < arity {
                func.operands.push(operand);
            }
            if n_found == 1 {
                second_col = col;
            }
            n_found += 1;
            cur.next();
            if cur.peek().is_none() {
                break;
            }
            cur.expect_punct(',', "after operand")?;
        }
    }
    if n_found != arity {
        let what = if arity == 1 { "operand" } else { "operands" };
        return Err((
            op_col,
            format!("{word} takes {arity} {what}, found {n_found}"),
        ));
    }
    // Operand positions that must be values (not literals).
    let value_only: &[usize] = match kind {
        Kind::Unary(_) | Kind::Powi(_) | Kind::Fpromote | Kind::Fdemote => &[0],
        Kind::Select => &[0],
        _ => &[],
    };
    for &k in value_only {
        if let Some(RawOperand::Literal { text, col }) = func.operands.get(start + k) {
            let role = if matches!(kind, Kind::Select) {
                "the condition of select".to_string()
            } else {
                format!("the operand of {word}")
            };
            return Err((
                *col,
                format!("{role} must be a value (%name), found literal '{text}'"),
            ));
        }
    }
    if let Kind::Powi(exp) = &mut kind {
        let Some(RawOperand::Literal { text, col }) = func.operands.pop() else {
            return Err((
                second_col,
                "the exponent of powi must be an integer literal, found a value".into(),
            ));
        };
        *exp = text.parse::<i32>().map_err(|_| {
            (
                col,
                format!("the exponent of powi must be an i32 literal, found '{text}'"),
            )
        })?;
    }
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::{random_function, random_repeated, RandomOptions, RepeatOptions, Rng};
    use proptest::prelude::*;

    /// A new spelling for a name, of one of the forms the name table treats differently:
    /// numbered in a few families (small numbers, so that names collide and are redefined),
    /// with leading zeros, with text after the number, all digits, too long to index, past
    /// the families' budget, or without any digit.
    fn respell(rng: &mut Rng, n_names: usize) -> String {
        let k = rng.below(n_names.max(1) + 3);
        match rng.below(13) {
            0 | 1 => format!("v{k}"),
            11 => format!("x{k}"),
            // Wraps around to `x{k}` in 32 bits.
            12 => format!("x{}", (1u64 << 32) + k as u64),
            2 => format!("x0{k}"),
            3 => format!("{k}"),
            4 => format!("a{k}_b"),
            5 => format!("a{k}.1"),
            6 => format!("s{k}x{}", rng.below(3)),
            7 => format!("x{k}123456789012345678901234567890"),
            8 => format!("v{}", 999_999_000 + k),
            9 => format!("n{}", 1000 * k),
            _ => {
                let letters: String = (0..1 + rng.below(3))
                    .map(|_| char::from(b'a' + rng.below(26) as u8))
                    .collect();
                format!("foo_{letters}")
            }
        }
    }

    /// `text` with every `%name` replaced through `rename` (the same name always by the same
    /// new one; two names may get one new name).
    fn renamed(text: &str, rng: &mut Rng) -> String {
        let n_names = text.matches('%').count();
        let mut map: std::collections::HashMap<&str, String> = Default::default();
        let mut out = String::with_capacity(2 * text.len());
        let mut rest = text;
        while let Some(at) = rest.find('%') {
            out.push_str(&rest[..=at]);
            let tail = &rest[at + 1..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(tail.len());
            let name = &tail[..end];
            let new = map.entry(name).or_insert_with(|| respell(rng, n_names / 2));
            out.push_str(new);
            rest = &tail[end..];
        }
        out.push_str(rest);
        out
    }

    /// `text` with some lines dropped, swapped or garbled, for errors, forward references and
    /// names defined on bad lines.
    fn damaged(text: &str, rng: &mut Rng) -> String {
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let body = 1..lines.len().saturating_sub(2).max(1);
        for _ in 0..rng.below(3) {
            let i = body.start + rng.below(body.len());
            match rng.below(3) {
                0 => {
                    lines.remove(i);
                }
                1 => {
                    let j = body.start + rng.below(body.len());
                    if j < lines.len() && i < lines.len() {
                        lines.swap(i, j);
                    }
                }
                _ => {
                    if let Some(line) = lines.get_mut(i) {
                        *line = line.replacen('=', "= sine", 1);
                    }
                }
            }
        }
        lines.join("\n") + "\n"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Random programs, printed, with names respelled (and sometimes damaged) parse to the
        /// same functions, source maps and errors through the name families (with the usual
        /// budget, and one that runs out half way) as through the hash table alone, and built
        /// line by line as in two passes.
        #[test]
        fn name_families_and_eager_building_agree_with_the_reference(seed in any::<u64>()) {
            let mut rng = Rng::new(seed);
            let ty = if rng.chance(0.5) { Type::F64 } else { Type::F32 };
            let func = if rng.chance(0.5) {
                random_function(seed, &RandomOptions {
                    ty,
                    n_insts: 5 + rng.below(80),
                    non_smooth: rng.chance(0.5),
                    ..RandomOptions::default()
                })
            } else {
                random_repeated(seed, &RepeatOptions {
                    ty,
                    template: 2 + rng.below(5),
                    trips: 1 + rng.below(20),
                    carried: 1 + rng.below(2),
                    interrupt: rng.below(3),
                    non_smooth: rng.chance(0.5),
                    data: false,
                })
            };
            let mut text = renamed(&func.to_string(), &mut rng);
            if rng.chance(0.3) {
                text = damaged(&text, &mut rng);
            }
            // The reference: every name in the hash table, two passes.
            let reference = parse_lines(&text, 0, false);
            for budget in [text.len() / 4 + 1024, 1 + rng.below(40), 0] {
                for eager in [false, true] {
                    let parsed = parse_lines(&text, budget, eager);
                    if eager && parsed.is_err() {
                        // Errors are left to the two-pass parse.
                        prop_assert!(reference.is_err(), "budget {}\n{}", budget, text);
                        continue;
                    }
                    prop_assert_eq!(&parsed, &reference, "budget {}, eager {}\n{}", budget, eager, text);
                }
                prop_assert_eq!(&parse_with_slot_budget(&text, budget), &reference);
            }
        }
    }
}
