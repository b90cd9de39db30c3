//! The printer: canonical text that parses back to the identical function.
//!
//! Names: a value prints with its own name when it has one that is valid and not already
//! taken; otherwise as `%vN` (N its index), with a `.K` suffix if even that is taken. Parsed
//! functions always keep their names, so parse → print → parse is the identity.

use std::collections::HashSet;
use std::fmt::{self, Write};

use crate::function::{Function, InstData, Operand, ParamKind, Value};
use crate::types::Type;

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// The name every value prints with (without `%`), indexed by value.
pub fn printed_names(func: &Function) -> Vec<String> {
    let mut taken = HashSet::with_capacity(func.n_values());
    let mut out = Vec::with_capacity(func.n_values());
    for (i, data) in func.values.iter().enumerate() {
        let mut name = match &data.name {
            Some(n) if valid_name(n) && !taken.contains(n.as_str()) => n.clone(),
            _ => format!("v{i}"),
        };
        let mut k = 1;
        while taken.contains(&name) {
            name = format!("v{i}.{k}");
            k += 1;
        }
        taken.insert(name.clone());
        out.push(name);
    }
    out
}

/// A float literal in canonical form for a value of type `ty`: the shortest decimal that reads
/// back to the same bits (`1.0`, `-0.0`, `2.5e-7`), or `inf`, `-inf`, `nan`. NaN payloads are
/// not preserved.
pub fn format_literal(ty: Type, x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    match ty {
        Type::F32 => format!("{:?}", x as f32),
        Type::Bool => (if x != 0.0 { "true" } else { "false" }).into(),
        Type::F64 => format!("{x:?}"),
    }
}

fn operand(out: &mut String, names: &[String], ty: Type, o: Operand) {
    match o {
        Operand::Value(v) => match names.get(v.index()) {
            Some(n) => {
                let _ = write!(out, "%{n}");
            }
            None => {
                let _ = write!(out, "%<bad {v}>");
            }
        },
        Operand::Const(c) => out.push_str(&format_literal(ty, c)),
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

fn write_inst(out: &mut String, func: &Function, names: &[String], v: Value) {
    let data = &func.values[v.index()];
    let Some(inst) = func.inst(v) else {
        return;
    };
    let _ = write!(out, "%{} = {}", names[v.index()], inst.opcode_name());
    if let InstData::Const { ty, bits } = inst {
        let _ = write!(out, " {ty} {}", format_literal(*ty, f64::from_bits(*bits)));
        return;
    }
    let lit_ty = operand_float_type(func, inst, data.ty);
    let mut first = true;
    inst.for_each_operand(|o| {
        out.push_str(if first { " " } else { ", " });
        first = false;
        operand(out, names, lit_ty, o);
    });
    if let InstData::Powi { exp, .. } = inst {
        let _ = write!(out, ", {exp}");
    }
}

/// One instruction as it prints (`%a = add %x, 1.0`), for error messages.
pub fn inst_to_string(func: &Function, v: Value) -> String {
    inst_to_string_with_names(func, &printed_names(func), v)
}

/// [`inst_to_string`] with the names of [`printed_names`] computed once by the caller, for
/// callers that print many lines of one function.
pub fn inst_to_string_with_names(func: &Function, names: &[String], v: Value) -> String {
    let mut out = String::new();
    if func.is_param(v) {
        let _ = write!(
            out,
            "{}%{}: {}",
            data_prefix(func, v),
            names[v.index()],
            func.ty(v)
        );
    } else {
        write_inst(&mut out, func, names, v);
    }
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
    match printed_names(func).get(v.index()) {
        Some(n) => format!("%{n}"),
        None => format!("%<bad {v}>"),
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = printed_names(self);
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
        let mut line = String::new();
        for (v, _) in self.insts() {
            line.clear();
            write_inst(&mut line, self, &names, v);
            writeln!(f, "    {line}")?;
        }
        f.write_str("    ret")?;
        for (i, r) in self.rets.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { ", " })?;
            match names.get(r.index()) {
                Some(n) => write!(f, "%{n}")?,
                None => write!(f, "%<bad {r}>")?,
            }
        }
        f.write_str("\n}\n")
    }
}
