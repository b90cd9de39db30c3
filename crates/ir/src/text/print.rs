//! The printer: canonical text that parses back to the identical function.
//!
//! Names: a value prints with its own name when it has one that is valid and not already
//! taken; otherwise as `%vN` (N its index), with a `.K` suffix if even that is taken. Parsed
//! functions always keep their names, so parse → print → parse is the identity.

use std::borrow::Cow;
use std::fmt::{self, Write};

use rustc_hash::FxHashSet;

use crate::function::{Function, InstData, Operand, ParamKind, Value};
use crate::types::Type;

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// The name every value prints with (without `%`), indexed by value.
pub fn printed_names(func: &Function) -> Vec<String> {
    names(func).into_iter().map(Cow::into_owned).collect()
}

/// [`printed_names`], borrowing every name the function already has (the common case, and
/// the whole of a parsed function) instead of copying it.
fn names(func: &Function) -> Vec<Cow<'_, str>> {
    let n = func.n_values();
    let mut taken: FxHashSet<Cow<'_, str>> =
        FxHashSet::with_capacity_and_hasher(n, Default::default());
    let mut out = Vec::with_capacity(n);
    for (i, data) in func.values.iter().enumerate() {
        if let Some(own) = data.name.as_deref().filter(|n| valid_name(n)) {
            if taken.insert(Cow::Borrowed(own)) {
                out.push(Cow::Borrowed(own));
                continue;
            }
        }
        let mut name = format!("v{i}");
        let mut k = 1;
        while taken.contains(name.as_str()) {
            name = format!("v{i}.{k}");
            k += 1;
        }
        taken.insert(Cow::Owned(name.clone()));
        out.push(Cow::Owned(name));
    }
    out
}

/// A float literal in canonical form for a value of type `ty`: the shortest decimal that reads
/// back to the same bits (`1.0`, `-0.0`, `2.5e-7`), or `inf`, `-inf`, `nan`. NaN payloads are
/// not preserved.
pub fn format_literal(ty: Type, x: f64) -> String {
    let mut out = String::new();
    // Writing to a `String` cannot fail.
    let _ = write_literal(&mut out, ty, x);
    out
}

/// [`format_literal`], written to `out`.
fn write_literal(out: &mut impl Write, ty: Type, x: f64) -> fmt::Result {
    if x.is_nan() {
        return out.write_str("nan");
    }
    if x.is_infinite() {
        return out.write_str(if x > 0.0 { "inf" } else { "-inf" });
    }
    match ty {
        Type::F32 => write!(out, "{:?}", x as f32),
        Type::Bool => out.write_str(if x != 0.0 { "true" } else { "false" }),
        Type::F64 => write!(out, "{x:?}"),
    }
}

/// `%name` of `v`, or `%<bad vN>` for a value that does not exist.
fn write_value(out: &mut impl Write, names: &[impl AsRef<str>], v: Value) -> fmt::Result {
    match names.get(v.index()) {
        Some(n) => {
            out.write_char('%')?;
            out.write_str(n.as_ref())
        }
        None => write!(out, "%<bad {v}>"),
    }
}

fn operand(out: &mut impl Write, names: &[impl AsRef<str>], ty: Type, o: Operand) -> fmt::Result {
    match o {
        Operand::Value(v) => write_value(out, names, v),
        Operand::Const(c) => write_literal(out, ty, c),
    }
}

/// The float type of an instruction's float operands (for printing literals).
fn operand_float_type(func: &Function, inst: &InstData, result: Type) -> Type {
    let mut ty = None;
    let mut first = true;
    inst.for_each_operand(|o| {
        let is_cond = first && matches!(inst, InstData::Select { .. });
        first = false;
        if is_cond {
            return;
        }
        if let Operand::Value(v) = o {
            if ty.is_none() {
                ty = func
                    .values
                    .get(v.index())
                    .map(|d| d.ty)
                    .filter(|t| t.is_float());
            }
        }
    });
    ty.unwrap_or(if result.is_float() { result } else { Type::F64 })
}

/// The opcode as [`InstData::opcode_name`] spells it, written without allocating.
fn write_opcode(out: &mut impl Write, inst: &InstData) -> fmt::Result {
    match inst {
        InstData::Unary { op, .. } => out.write_str(op.name()),
        InstData::Binary { op, .. } => out.write_str(op.name()),
        InstData::Fcmp { pred, .. } => write!(out, "fcmp.{pred}"),
        _ => out.write_str(&inst.opcode_name()),
    }
}

fn write_inst(
    out: &mut impl Write,
    func: &Function,
    names: &[impl AsRef<str>],
    v: Value,
) -> fmt::Result {
    let data = &func.values[v.index()];
    let Some(inst) = func.inst(v) else {
        return Ok(());
    };
    write_value(out, names, v)?;
    out.write_str(" = ")?;
    write_opcode(out, inst)?;
    if let InstData::Const { ty, bits } = inst {
        write!(out, " {ty} ")?;
        return write_literal(out, *ty, f64::from_bits(*bits));
    }
    let lit_ty = operand_float_type(func, inst, data.ty);
    let mut first = true;
    let mut result = Ok(());
    inst.for_each_operand(|o| {
        if result.is_ok() {
            result = out
                .write_str(if first { " " } else { ", " })
                .and_then(|()| operand(out, names, lit_ty, o));
        }
        first = false;
    });
    result?;
    if let InstData::Powi { exp, .. } = inst {
        write!(out, ", {exp}")?;
    }
    Ok(())
}

/// One instruction as it prints (`%a = add %x, 1.0`), for error messages.
pub fn inst_to_string(func: &Function, v: Value) -> String {
    inst_to_string_with_names(func, &names(func), v)
}

/// [`inst_to_string`] with the names of [`printed_names`] computed once by the caller, for
/// callers that print many lines of one function.
pub fn inst_to_string_with_names(func: &Function, names: &[impl AsRef<str>], v: Value) -> String {
    let mut out = String::new();
    // Writing to a `String` cannot fail.
    let _ = if func.is_param(v) {
        write!(
            out,
            "{}%{}: {}",
            data_prefix(func, v),
            names[v.index()].as_ref(),
            func.ty(v)
        )
    } else {
        write_inst(&mut out, func, names, v)
    };
    out
}

/// The attribute a parameter prints with: `data ` or nothing.
fn data_prefix(func: &Function, p: Value) -> &'static str {
    match func.param_kind(p) {
        ParamKind::Data => "data ",
        ParamKind::Differentiated => "",
    }
}

/// A value as it prints (`%x`).
pub fn value_to_string(func: &Function, v: Value) -> String {
    match names(func).get(v.index()) {
        Some(n) => format!("%{n}"),
        None => format!("%<bad {v}>"),
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = names(self);
        write!(f, "func @{}(", self.name)?;
        for (i, p) in self.params().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(
                f,
                "{}%{}: {}",
                data_prefix(self, p),
                names[p.index()],
                self.ty(p)
            )?;
        }
        f.write_str(") -> ")?;
        if self.ret_types.len() == 1 {
            write!(f, "{}", self.ret_types[0])?;
        } else {
            f.write_str("(")?;
            for (i, t) in self.ret_types.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{t}")?;
            }
            f.write_str(")")?;
        }
        f.write_str(" {\n")?;
        for (v, _) in self.insts() {
            f.write_str("    ")?;
            write_inst(f, self, &names, v)?;
            f.write_char('\n')?;
        }
        f.write_str("    ret")?;
        for (i, r) in self.rets.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { ", " })?;
            write_value(f, &names, *r)?;
        }
        f.write_str("\n}\n")
    }
}
