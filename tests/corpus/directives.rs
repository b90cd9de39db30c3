//! The comment directives of corpus files, and in-place rewriting of them for
//! `UPDATE_EXPECT=1`.
//!
//! - `; run: @NAME(ARG, ...) == OUT, ...` (`@NAME` optional when the file has one function;
//!   literals follow the IR's literal rules, read in the parameter/return type);
//! - `; dump: STAGE [@NAME]` followed by `; | TEXT` lines (`; |` alone for an empty line);
//! - `; error: MESSAGE`.
//!
//! Lines are indexed from 0 here; messages add 1.

use std::collections::BTreeMap;

use adjit::ir::text::parse_literal;
use adjit::{Function, Type};

pub struct Directive {
    /// 0-based line of the directive.
    pub line: usize,
    pub kind: DirectiveKind,
}

pub enum DirectiveKind {
    Run(Run),
    Dump(Dump),
    Error(String),
}

pub struct Run {
    pub func: Option<String>,
    pub args: Vec<String>,
    pub expected: Option<Vec<String>>,
    /// The line up to (not including) ` == `, for rewriting.
    prefix: String,
}

pub struct Dump {
    pub stage: String,
    pub func: Option<String>,
    /// 0-based line of the `; dump:` directive.
    line: usize,
    /// 0-based lines of the `; |` block.
    body: Vec<usize>,
    pub expected: Vec<String>,
}

/// Read a literal of type `ty`; `bool` accepts `true`/`false` or a number (nonzero = true).
fn number(text: &str, ty: Type) -> Result<f64, String> {
    if ty == Type::Bool && text != "true" && text != "false" {
        return parse_literal(text, Type::F64)
            .map(|x| ty.round(x))
            .map_err(|e| e.to_string());
    }
    parse_literal(text, ty).map_err(|e| e.to_string())
}

impl Run {
    /// The arguments, read in the parameter types of `func`.
    pub fn inputs(&self, func: &Function) -> Result<Vec<f64>, String> {
        let tys = func.param_types();
        if tys.len() != self.args.len() {
            return Err(format!(
                "@{} takes {} arguments, the run line gives {}",
                func.name,
                tys.len(),
                self.args.len()
            ));
        }
        self.args
            .iter()
            .zip(tys)
            .map(|(a, ty)| number(a, ty))
            .collect()
    }

    /// The expected outputs, read in the return types of `func`.
    pub fn outputs(&self, func: &Function) -> Result<Vec<f64>, String> {
        let Some(expected) = &self.expected else {
            return Err("the run line has no `== OUTPUTS` (run with UPDATE_EXPECT=1)".into());
        };
        if expected.len() != func.ret_types.len() {
            return Err(format!(
                "@{} returns {} values, the run line expects {}",
                func.name,
                func.ret_types.len(),
                expected.len()
            ));
        }
        expected
            .iter()
            .zip(&func.ret_types)
            .map(|(a, &ty)| number(a, ty))
            .collect()
    }
}

fn split_list(s: &str) -> Vec<String> {
    let s = s.trim();
    if s.is_empty() {
        return Vec::new();
    }
    s.split(',').map(|a| a.trim().to_string()).collect()
}

fn parse_run(rest: &str, line: &str) -> Result<Run, String> {
    let (call, outputs) = match rest.split_once("==") {
        Some((c, o)) => (c, Some(split_list(o))),
        None => (rest, None),
    };
    let call = call.trim();
    let (func, args) = match call.strip_prefix('@') {
        Some(named) => match named.split_once('(') {
            Some((name, args)) => (Some(name.trim().to_string()), args),
            None => return Err("expected '(' after the function name".into()),
        },
        None => match call.strip_prefix('(') {
            Some(args) => (None, args),
            None => return Err("expected `@NAME(ARGS)` or `(ARGS)`".into()),
        },
    };
    let Some(args) = args.trim_end().strip_suffix(')') else {
        return Err("expected ')' closing the arguments".into());
    };
    let prefix = match line.split_once("==") {
        Some((p, _)) => p.trim_end().to_string(),
        None => line.trim_end().to_string(),
    };
    Ok(Run {
        func,
        args: split_list(args),
        expected: outputs,
        prefix,
    })
}

/// Every directive of `text`, or `"LINE: message"` for a malformed one.
pub fn scan(text: &str) -> Result<Vec<Directive>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("; run:") {
            let run = parse_run(rest, line).map_err(|e| format!("{}: bad run line: {e}", i + 1))?;
            out.push(Directive {
                line: i,
                kind: DirectiveKind::Run(run),
            });
        } else if let Some(rest) = trimmed.strip_prefix("; error:") {
            out.push(Directive {
                line: i,
                kind: DirectiveKind::Error(rest.trim().to_string()),
            });
        } else if let Some(rest) = trimmed.strip_prefix("; dump:") {
            let mut words = rest.split_whitespace();
            let Some(stage) = words.next() else {
                return Err(format!("{}: `; dump:` needs a stage", i + 1));
            };
            let func = match words.next() {
                Some(w) => match w.strip_prefix('@') {
                    Some(n) => Some(n.to_string()),
                    None => {
                        return Err(format!(
                            "{}: expected @NAME after the stage, found {w}",
                            i + 1
                        ))
                    }
                },
                None => None,
            };
            let mut body = Vec::new();
            let mut expected = Vec::new();
            while let Some(b) = lines.get(i + 1 + body.len()) {
                let Some(t) = b.trim_start().strip_prefix("; |") else {
                    break;
                };
                expected.push(t.strip_prefix(' ').unwrap_or(t).trim_end().to_string());
                body.push(i + 1 + body.len());
            }
            let n = body.len();
            out.push(Directive {
                line: i,
                kind: DirectiveKind::Dump(Dump {
                    stage: stage.to_string(),
                    func,
                    line: i,
                    body,
                    expected,
                }),
            });
            i += n;
        }
        i += 1;
    }
    Ok(out)
}

/// Line replacements for `UPDATE_EXPECT`: each listed line becomes zero or more lines.
#[derive(Default)]
pub struct Edits {
    replace: BTreeMap<usize, Vec<String>>,
    /// Lines inserted after a line (a dump block that was empty).
    after: BTreeMap<usize, Vec<String>>,
    /// Lines inserted at the top (error lines of a file that had none).
    prepend: Vec<String>,
}

impl Edits {
    pub fn is_empty(&self) -> bool {
        self.replace.is_empty() && self.after.is_empty() && self.prepend.is_empty()
    }

    pub fn set_run_outputs(&mut self, line: usize, run: &Run, outputs: &str) {
        self.replace
            .insert(line, vec![format!("{} == {outputs}", run.prefix)]);
    }

    pub fn set_dump_block(&mut self, dump: &Dump, actual: &[String]) {
        let block: Vec<String> = actual
            .iter()
            .map(|l| {
                if l.is_empty() {
                    "; |".into()
                } else {
                    format!("; | {l}")
                }
            })
            .collect();
        match dump.body.split_first() {
            Some((&first, rest)) => {
                self.replace.insert(first, block);
                for &l in rest {
                    self.replace.insert(l, Vec::new());
                }
            }
            None => {
                self.after.insert(dump.line, block);
            }
        }
    }

    /// Replace every `; error:` line by `actual` (placed where the first one was, else after
    /// the file's leading comment block). Line numbers in `actual` may then be off by the
    /// lines inserted: the caller repeats the update until the file is stable.
    pub fn replace_errors(&mut self, text: &str, directives: &[Directive], actual: &[String]) {
        let lines: Vec<usize> = directives
            .iter()
            .filter(|d| matches!(d.kind, DirectiveKind::Error(_)))
            .map(|d| d.line)
            .collect();
        let block: Vec<String> = actual.iter().map(|m| format!("; error: {m}")).collect();
        match lines.split_first() {
            Some((&first, rest)) => {
                self.replace.insert(first, block);
                for &l in rest {
                    self.replace.insert(l, Vec::new());
                }
            }
            None => {
                let n_leading = text
                    .lines()
                    .take_while(|l| l.trim_start().starts_with(';'))
                    .count();
                match n_leading.checked_sub(1) {
                    Some(last) => {
                        self.after.insert(last, block);
                    }
                    None => self.prepend = block,
                }
            }
        }
    }

    /// `text` with the edits applied (a final newline is kept).
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::new();
        for l in &self.prepend {
            out.push_str(l);
            out.push('\n');
        }
        for (i, line) in text.lines().enumerate() {
            match self.replace.get(&i) {
                Some(new) => {
                    for l in new {
                        out.push_str(l);
                        out.push('\n');
                    }
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            for l in self.after.get(&i).into_iter().flatten() {
                out.push_str(l);
                out.push('\n');
            }
        }
        if !text.ends_with('\n') {
            out.pop();
        }
        out
    }
}
