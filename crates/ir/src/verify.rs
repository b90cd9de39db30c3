//! The verifier: checks every invariant the rest of adjit relies on and reports *all*
//! violations, each naming the value and showing its printed line.
//!
//! Checked, in this order per value: the straight-line invariant (every operand is defined
//! earlier), operand and result types, literal-only instructions, names (no two values share
//! one, and parameters especially), then that every `data` attribute is on a parameter, and
//! finally that `ret` matches the signature. Code after a
//! successful `verify` indexes values without re-checking.

use std::cell::OnceCell;
use std::fmt;
use std::hash::BuildHasher;

use hashbrown::{hash_table, HashTable};
use rustc_hash::FxBuildHasher;

use crate::function::{Function, InstData, Operand, Value, ValueDef};
use crate::text::inst_to_string_with_names;

/// One verifier finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    /// The offending value, if the error is about one (not for `ret`-level errors).
    pub value: Option<Value>,
    /// The printed line of the offending value (or `ret ...`).
    pub line: String,
    pub message: String,
    /// Another value the error is about (the first definition of a redefined name).
    pub related: Option<Value>,
    /// The printed line of `related`.
    pub related_line: Option<String>,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(first) = &self.related_line {
            write!(f, " (first defined by `{first}`)")?;
        }
        write!(f, "\n    in: {}", self.line)
    }
}

/// All verifier findings for one function.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct VerifyErrors {
    pub func: String,
    /// Set by passes: the name of the pass whose output failed ("after pass jvp").
    pub after_pass: Option<String>,
    pub errors: Vec<VerifyError>,
}

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}: {} verifier error(s)", self.func, self.errors.len())?;
        if let Some(p) = &self.after_pass {
            write!(f, " after pass {p}")?;
        }
        for e in &self.errors {
            write!(f, "\nerror: {e}")?;
        }
        Ok(())
    }
}

/// The printed names of a function's values, computed on first use: only a program with an
/// error needs them (computing them for every program was a tenth of loading a large file).
struct Names<'f> {
    func: &'f Function,
    cell: OnceCell<Vec<String>>,
}

impl Names<'_> {
    fn get(&self) -> &[String] {
        self.cell
            .get_or_init(|| crate::text::printed_names(self.func))
    }
}

/// `%name` of a value in messages, looked up only when a message is written.
struct Shown<'a, 'f>(&'a Names<'f>, usize);

impl fmt::Display for Shown<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0.get()[self.1])
    }
}

/// Verify `func`, collecting every error.
pub fn verify(func: &Function) -> Result<(), VerifyErrors> {
    let mut errors = Vec::new();
    let names = Names {
        func,
        cell: OnceCell::new(),
    };
    let mut err = |value: Option<Value>, message: String| {
        let line = match value {
            Some(v) => inst_to_string_with_names(func, names.get(), v),
            None => "ret".to_string(),
        };
        errors.push(VerifyError {
            value,
            line,
            message,
            related: None,
            related_line: None,
        });
    };

    if func.n_params > func.values.len() {
        err(None, "more parameters than values".into());
    }
    // The latest value of each name, as a table of values hashed by their names: a fifth of
    // the memory of a map from names, which keeps 10⁶ names within the cache.
    // Sized for the named values only: a derivative program names one value in ten, and a
    // table for all of them (18 M slots at 10⁷ instructions) cost more than the checks.
    let named = func.values.iter().filter(|d| d.name.is_some()).count();
    let mut seen: HashTable<Value> = HashTable::with_capacity(named);
    let name_of = |v: &Value| func.values[v.index()].name.as_deref().unwrap_or_default();
    for (i, data) in func.values.iter().enumerate() {
        let v = Value::new(i);
        let shown = Shown(&names, i);
        if let Some(name) = &data.name {
            let entry = seen.entry(
                FxBuildHasher.hash_one(name.as_str()),
                |&u| name_of(&u) == name,
                |u| FxBuildHasher.hash_one(name_of(u)),
            );
            let prev = match entry {
                hash_table::Entry::Occupied(mut e) => Some(std::mem::replace(e.get_mut(), v)),
                hash_table::Entry::Vacant(e) => {
                    e.insert(v);
                    None
                }
            };
            if let Some(prev) = prev {
                let what = if i < func.n_params && prev.index() < func.n_params {
                    "duplicate parameter name"
                } else {
                    "redefinition of"
                };
                err(Some(v), format!("{what} %{name}"));
            }
        }
        match &data.def {
            ValueDef::Param => {
                if i >= func.n_params {
                    err(
                        Some(v),
                        format!("{shown} is a parameter after the instructions"),
                    );
                }
                if !data.ty.is_float() && data.ty != crate::types::Type::Bool {
                    err(Some(v), format!("{shown} has an unsupported type"));
                }
            }
            ValueDef::Inst(inst) => {
                if i < func.n_params {
                    err(
                        Some(v),
                        format!("{shown} is an instruction among the parameters"),
                    );
                    continue;
                }
                let mut ok = true;
                inst.for_each_value(|u| {
                    if u.index() >= i {
                        ok = false;
                        let uname = names
                            .get()
                            .get(u.index())
                            .map(|n| format!("%{n}"))
                            .unwrap_or_else(|| format!("value {}", u.index()));
                        err(
                            Some(v),
                            format!("{shown} uses {uname} before its definition"),
                        );
                    }
                });
                if !ok {
                    continue;
                }
                check_inst(func, v, inst, &shown, &mut err);
            }
        }
    }
    for p in func.data_params() {
        if !func.is_param(p) {
            let shown = names
                .get()
                .get(p.index())
                .map(|n| format!("%{n}"))
                .unwrap_or_else(|| format!("value {}", p.index()));
            let at = (p.index() < func.values.len()).then_some(p);
            err(
                at,
                format!("{shown} is marked 'data' but is not a parameter"),
            );
        }
    }
    if func.rets.len() != func.ret_types.len() {
        err(
            None,
            format!(
                "ret has {} values but the signature declares {}",
                func.rets.len(),
                func.ret_types.len()
            ),
        );
    }
    for (k, (&r, &t)) in func.rets.iter().zip(&func.ret_types).enumerate() {
        match func.values.get(r.index()) {
            None => err(
                None,
                format!("ret operand {k} is not a value of the function"),
            ),
            Some(d) if d.ty != t => err(
                None,
                format!(
                    "ret operand {k} (%{}) has type {}, the signature declares {t}",
                    names.get()[r.index()],
                    d.ty
                ),
            ),
            Some(_) => {}
        }
    }
    // A redefinition names the first definition: the first value with the same name.
    for e in &mut errors {
        let Some(v) = e.value else { continue };
        let Some(name) = func.values.get(v.index()).and_then(|d| d.name.as_deref()) else {
            continue;
        };
        if !(e.message.starts_with("redefinition of ")
            || e.message.starts_with("duplicate parameter name "))
        {
            continue;
        }
        if let Some(first) = func.values[..v.index()]
            .iter()
            .position(|d| d.name.as_deref() == Some(name))
        {
            let first = Value::new(first);
            e.related = Some(first);
            e.related_line = Some(inst_to_string_with_names(func, names.get(), first));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(VerifyErrors {
            func: func.name.clone(),
            after_pass: None,
            errors,
        })
    }
}

fn check_inst(
    func: &Function,
    v: Value,
    inst: &InstData,
    shown: &Shown<'_, '_>,
    err: &mut impl FnMut(Option<Value>, String),
) {
    let data = &func.values[v.index()];
    let float_ops: &[Operand] = match inst {
        InstData::Binary { args, .. }
        | InstData::Fcmp { args, .. }
        | InstData::Select { args, .. } => args,
        InstData::Fma { args } => args,
        _ => &[],
    };
    if !float_ops.is_empty() && float_ops.iter().all(|o| matches!(o, Operand::Const(_))) {
        err(
            Some(v),
            format!(
                "{shown}: every float operand of {} is a literal; use `const`",
                inst.opcode_name()
            ),
        );
        return;
    }
    if let InstData::Const { ty, bits } = inst {
        let x = f64::from_bits(*bits);
        if ty.round(x).to_bits() != *bits && !x.is_nan() {
            err(Some(v), format!("{shown}: literal is not exactly a {ty}"));
        }
    }
    match func.result_type(inst) {
        None if matches!(inst, InstData::Select { cond, .. } if func.ty(*cond) != crate::types::Type::Bool) => {
            if let InstData::Select { cond, .. } = inst {
                let names = crate::text::printed_names(func);
                err(
                    Some(v),
                    format!(
                        "{shown}: the condition of select must be bool; %{} is {}",
                        names[cond.index()],
                        func.ty(*cond)
                    ),
                );
            }
        }
        None => {
            let tys: Vec<String> = inst
                .operands()
                .iter()
                .map(|o| match o {
                    Operand::Value(u) => func.ty(*u).to_string(),
                    Operand::Const(_) => "literal".into(),
                })
                .collect();
            err(
                Some(v),
                format!(
                    "{shown}: type mismatch: {} does not accept operands of types ({})",
                    inst.opcode_name(),
                    tys.join(", ")
                ),
            );
        }
        Some(t) if t != data.ty => err(
            Some(v),
            format!(
                "{shown} has type {} but {} produces {t}",
                data.ty,
                inst.opcode_name()
            ),
        ),
        Some(t) => {
            // Literals must be exactly representable in the operand type.
            let lit_ty = if matches!(inst, InstData::Fcmp { .. }) {
                float_ops
                    .iter()
                    .find_map(|o| o.as_value())
                    .map(|u| func.ty(u))
                    .unwrap_or(t)
            } else {
                t
            };
            for o in float_ops {
                if let Operand::Const(c) = o {
                    if lit_ty.round(*c).to_bits() != c.to_bits() && !c.is_nan() {
                        err(
                            Some(v),
                            format!("{shown}: literal {c} is not exactly a {lit_ty}"),
                        );
                    }
                }
            }
        }
    }
}
