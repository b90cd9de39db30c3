//! The in-memory IR: a function is a vector of values whose operands point backwards.
//!
//! Values `0..n_params` are the parameters; every later value is defined by exactly one
//! instruction. The vector order *is* the program order (egg's `RecExpr` shape). A function
//! produced by the parser may break the invariants (operands pointing forwards, type
//! mismatches); [`crate::verify`] reports such problems, and everything else (interpreter,
//! transforms, backends) assumes a verified function.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use crate::opcode::{BinaryOp, CmpPred, UnaryOp};
use crate::types::Type;

/// A value of a function: an index into [`Function::values`]. Printed as `v3` when it has no
/// name of its own.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Value(u32);

impl Value {
    /// The value at `index`.
    ///
    /// # Panics
    /// If `index` does not fit in a `u32` (a program of four billion values).
    pub fn new(index: usize) -> Value {
        Value(u32::try_from(index).expect("more than u32::MAX values"))
    }

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// An operand of a float operation: a value, or a float literal written inline
/// (`sub 1.0, %x`). A literal takes the type of the instruction's other float operands and is
/// stored already rounded to that type, so that printing and parsing round-trip bit-exactly.
/// The operands of one instruction, in text order (at most three): what
/// [`InstData::operands`] returns. Derefs to a slice and iterates by value.
#[derive(Clone, Copy, Debug)]
pub struct Operands {
    items: [Operand; 3],
    len: u8,
}

impl std::ops::Deref for Operands {
    type Target = [Operand];
    fn deref(&self) -> &[Operand] {
        &self.items[..self.len as usize]
    }
}

impl IntoIterator for Operands {
    type Item = Operand;
    type IntoIter = std::iter::Take<std::array::IntoIter<Operand, 3>>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().take(self.len as usize)
    }
}

impl<'a> IntoIterator for &'a Operands {
    type Item = &'a Operand;
    type IntoIter = std::slice::Iter<'a, Operand>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Operand {
    Value(Value),
    Const(f64),
}

impl Operand {
    pub fn as_value(self) -> Option<Value> {
        match self {
            Operand::Value(v) => Some(v),
            Operand::Const(_) => None,
        }
    }
}

impl PartialEq for Operand {
    /// Literals compare bit-exactly (so `NaN == NaN` and `-0.0 != 0.0`).
    fn eq(&self, other: &Operand) -> bool {
        match (self, other) {
            (Operand::Value(a), Operand::Value(b)) => a == b,
            (Operand::Const(a), Operand::Const(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl Eq for Operand {}

impl std::hash::Hash for Operand {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Operand::Value(v) => (0u8, v.0 as u64).hash(state),
            Operand::Const(c) => (1u8, c.to_bits()).hash(state),
        }
    }
}

impl From<Value> for Operand {
    fn from(v: Value) -> Operand {
        Operand::Value(v)
    }
}

impl From<f64> for Operand {
    fn from(c: f64) -> Operand {
        Operand::Const(c)
    }
}

/// One instruction. The result type is stored in [`ValueData::ty`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InstData {
    /// `const TYPE LITERAL`. For `bool` the literal is 0.0 or 1.0 (`false`/`true`).
    Const { ty: Type, bits: u64 },
    /// `OP %x`.
    Unary { op: UnaryOp, arg: Value },
    /// `OP a, b`.
    Binary { op: BinaryOp, args: [Operand; 2] },
    /// `fma a, b, c` = a·b + c with a single rounding.
    Fma { args: [Operand; 3] },
    /// `powi %x, K`: x raised to an integer power by binary exponentiation
    /// (see [`crate::math::powi`] for the exact evaluation order).
    Powi { arg: Value, exp: i32 },
    /// `fcmp.PRED a, b` giving `bool`.
    Fcmp { pred: CmpPred, args: [Operand; 2] },
    /// `select %c, a, b`: a if c is true, else b.
    Select { cond: Value, args: [Operand; 2] },
    /// `fpromote %x`: f32 → f64 (exact).
    Fpromote { arg: Value },
    /// `fdemote %x`: f64 → f32 (round to nearest even).
    Fdemote { arg: Value },
}

impl InstData {
    /// A `const` instruction holding `value` (rounded to `ty`).
    pub fn constant(ty: Type, value: f64) -> InstData {
        InstData::Const {
            ty,
            bits: ty.round(value).to_bits(),
        }
    }

    /// The text-format opcode, e.g. `add`, `fcmp.lt`.
    pub fn opcode_name(&self) -> String {
        match self {
            InstData::Const { .. } => "const".into(),
            InstData::Unary { op, .. } => op.name().into(),
            InstData::Binary { op, .. } => op.name().into(),
            InstData::Fma { .. } => "fma".into(),
            InstData::Powi { .. } => "powi".into(),
            InstData::Fcmp { pred, .. } => format!("fcmp.{pred}"),
            InstData::Select { .. } => "select".into(),
            InstData::Fpromote { .. } => "fpromote".into(),
            InstData::Fdemote { .. } => "fdemote".into(),
        }
    }

    /// Every operand, in text order (the condition of `select` first; `powi`'s exponent is
    /// not an operand).
    ///
    /// Returned by value in a fixed-capacity list (no allocation: every sweep over a large
    /// program calls this once per instruction).
    pub fn operands(&self) -> Operands {
        let mut out = Operands {
            items: [Operand::Const(0.0); 3],
            len: 0,
        };
        self.for_each_operand(|o| {
            out.items[out.len as usize] = o;
            out.len += 1;
        });
        out
    }

    /// Operand number `pos` in text order (what `operands()[pos]` is), without allocating;
    /// `None` past the last.
    pub fn operand(&self, pos: usize) -> Option<Operand> {
        match self {
            InstData::Const { .. } => None,
            InstData::Unary { arg, .. }
            | InstData::Powi { arg, .. }
            | InstData::Fpromote { arg }
            | InstData::Fdemote { arg } => (pos == 0).then_some(Operand::Value(*arg)),
            InstData::Binary { args, .. } | InstData::Fcmp { args, .. } => args.get(pos).copied(),
            InstData::Fma { args } => args.get(pos).copied(),
            InstData::Select { cond, args } => match pos {
                0 => Some(Operand::Value(*cond)),
                _ => args.get(pos - 1).copied(),
            },
        }
    }

    /// Calls `f` on every operand, in text order, without allocating. Always inlined: passes
    /// over 10⁶–10⁷ instructions call it per instruction, and out of line (with `f`'s body
    /// inlined into it, not it into the pass) it was 5 % of a gradient's compile (callgrind).
    #[inline(always)]
    pub fn for_each_operand(&self, mut f: impl FnMut(Operand)) {
        match self {
            InstData::Const { .. } => {}
            InstData::Unary { arg, .. }
            | InstData::Powi { arg, .. }
            | InstData::Fpromote { arg }
            | InstData::Fdemote { arg } => f(Operand::Value(*arg)),
            InstData::Binary { args, .. } | InstData::Fcmp { args, .. } => {
                args.iter().for_each(|&a| f(a))
            }
            InstData::Fma { args } => args.iter().for_each(|&a| f(a)),
            InstData::Select { cond, args } => {
                f(Operand::Value(*cond));
                args.iter().for_each(|&a| f(a));
            }
        }
    }

    /// Calls `f` on every value operand, in text order (inlined, as
    /// [`InstData::for_each_operand`]).
    #[inline(always)]
    pub fn for_each_value(&self, mut f: impl FnMut(Value)) {
        self.for_each_operand(|o| {
            if let Operand::Value(v) = o {
                f(v)
            }
        })
    }

    /// The instruction's *shape*: every value operand replaced by `v0` and every literal (a
    /// `const`'s value too) by 0; which operands are literals stays. Instructions repeated
    /// over data (a vectorised trace's `mul y_i, %v_i`) have one shape.
    pub fn shape(&self) -> InstData {
        let lit = |o: Operand| match o {
            Operand::Const(_) => Operand::Const(0.0),
            Operand::Value(_) => Operand::Value(Value::new(0)),
        };
        match self.map_values(|_| Value::new(0)) {
            InstData::Const { ty, .. } => InstData::Const { ty, bits: 0 },
            InstData::Binary { op, args } => InstData::Binary {
                op,
                args: args.map(lit),
            },
            InstData::Fma { args } => InstData::Fma {
                args: args.map(lit),
            },
            InstData::Fcmp { pred, args } => InstData::Fcmp {
                pred,
                args: args.map(lit),
            },
            InstData::Select { cond, args } => InstData::Select {
                cond,
                args: args.map(lit),
            },
            other => other,
        }
    }

    /// The same instruction with every value operand replaced by `f(value)`.
    /// This is how transforms copy an instruction into a new function.
    pub fn map_values(&self, mut f: impl FnMut(Value) -> Value) -> InstData {
        let mut op = |o: Operand| match o {
            Operand::Value(v) => Operand::Value(f(v)),
            c => c,
        };
        match *self {
            InstData::Const { ty, bits } => InstData::Const { ty, bits },
            InstData::Unary { op: u, arg } => InstData::Unary {
                op: u,
                arg: op(arg.into()).as_value().unwrap_or(arg),
            },
            InstData::Binary { op: b, args } => InstData::Binary {
                op: b,
                args: args.map(&mut op),
            },
            InstData::Fma { args } => InstData::Fma {
                args: args.map(&mut op),
            },
            InstData::Powi { arg, exp } => InstData::Powi {
                arg: op(arg.into()).as_value().unwrap_or(arg),
                exp,
            },
            InstData::Fcmp { pred, args } => InstData::Fcmp {
                pred,
                args: args.map(&mut op),
            },
            InstData::Select { cond, args } => InstData::Select {
                cond: op(cond.into()).as_value().unwrap_or(cond),
                args: args.map(&mut op),
            },
            InstData::Fpromote { arg } => InstData::Fpromote {
                arg: op(arg.into()).as_value().unwrap_or(arg),
            },
            InstData::Fdemote { arg } => InstData::Fdemote {
                arg: op(arg.into()).as_value().unwrap_or(arg),
            },
        }
    }
}

/// How a value is defined.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueDef {
    /// The value is parameter number `index` (its position in the signature).
    Param,
    Inst(InstData),
}

/// The name of a value, without the `%` (e.g. `x`): an immutable, shared string.
///
/// Every pass copies every value into a new function, names included; sharing makes that copy
/// a reference-count increment instead of an allocation, and a thin pointer (8 bytes, the
/// string's length lives behind it) keeps [`ValueData`] small, which is what large programs
/// pay for in every pass (memory traffic and page faults).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Arc<String>);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name(Arc::new(s))
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name(Arc::new(s.to_string()))
    }
}

impl From<&String> for Name {
    fn from(s: &String) -> Name {
        Name(Arc::new(s.clone()))
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// A value: its type, its definition and an optional name used by the text format.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValueData {
    pub ty: Type,
    pub def: ValueDef,
    /// The name without the `%`, e.g. `x`. Unnamed values print as `%vN`.
    pub name: Option<Name>,
}

/// How a parameter takes part in derivative programs, written as an attribute in the text
/// format (`data %t: f64`).
///
/// The IR only stores the attribute; the derivative transforms read it. A float parameter of
/// kind [`ParamKind::Differentiated`] gets a tangent seed and an adjoint output, a
/// [`ParamKind::Data`] parameter gets neither: it is a plain input that every derivative
/// program takes in its place among the primal inputs (JAX's `argnums`, CasADi's parameter
/// vector). On a `bool` parameter the attribute is allowed and changes nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// The default: derivatives are taken with respect to the parameter if it is a float.
    #[default]
    Differentiated,
    /// A data input: held fixed, never differentiated.
    Data,
}

/// A straight-line function: parameters, instructions and returned values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Function {
    /// The name without the `@`.
    pub name: String,
    /// All values; the first `n_params` are the parameters, in signature order.
    pub values: Vec<ValueData>,
    pub n_params: usize,
    /// Returned values, in order.
    pub rets: Vec<Value>,
    /// The declared return types (the verifier checks them against `rets`).
    pub ret_types: Vec<Type>,
    /// The parameters of kind [`ParamKind::Data`]; every other parameter is
    /// [`ParamKind::Differentiated`]. Kept sparse so that code which builds parameters without
    /// knowing of kinds gets the default, and so that equal functions compare equal.
    data_params: BTreeSet<Value>,
}

impl Function {
    /// An empty function with no parameters and no returns.
    pub fn new(name: impl Into<String>) -> Function {
        Function {
            name: name.into(),
            values: Vec::new(),
            n_params: 0,
            rets: Vec::new(),
            ret_types: Vec::new(),
            data_params: BTreeSet::new(),
        }
    }

    /// The function's name, parameters (with their kinds) and returns, without its
    /// instructions (the returns then point past its values): the header of a program held
    /// another way, such as [`crate::Rolled`]. Copies the parameters only.
    pub fn header(&self) -> Function {
        Function {
            name: self.name.clone(),
            values: self.values[..self.n_params].to_vec(),
            n_params: self.n_params,
            rets: self.rets.clone(),
            ret_types: self.ret_types.clone(),
            data_params: self.data_params.clone(),
        }
    }

    pub fn n_values(&self) -> usize {
        self.values.len()
    }

    pub fn n_outputs(&self) -> usize {
        self.rets.len()
    }

    /// Number of instructions (values that are not parameters).
    pub fn n_insts(&self) -> usize {
        self.values.len() - self.n_params
    }

    /// The parameters, in signature order.
    pub fn params(&self) -> impl ExactSizeIterator<Item = Value> + '_ {
        (0..self.n_params).map(Value::new)
    }

    /// Parameter types, in signature order.
    pub fn param_types(&self) -> Vec<Type> {
        self.values[..self.n_params].iter().map(|v| v.ty).collect()
    }

    /// The kind of parameter `p` ([`ParamKind::Differentiated`] for any value that was not
    /// marked).
    pub fn param_kind(&self, p: Value) -> ParamKind {
        if self.data_params.contains(&p) {
            ParamKind::Data
        } else {
            ParamKind::Differentiated
        }
    }

    /// Whether `p` is a parameter of kind [`ParamKind::Data`].
    pub fn is_data(&self, p: Value) -> bool {
        self.data_params.contains(&p)
    }

    /// Whether any parameter is a data parameter.
    pub fn has_data_params(&self) -> bool {
        !self.data_params.is_empty()
    }

    /// The values marked [`ParamKind::Data`], in order. The verifier checks that they are
    /// parameters.
    pub fn data_params(&self) -> impl ExactSizeIterator<Item = Value> + '_ {
        self.data_params.iter().copied()
    }

    /// Set the kind of parameter `p`.
    ///
    /// # Panics
    /// If `p` is not a parameter (a programming error in the caller).
    pub fn set_param_kind(&mut self, p: Value, kind: ParamKind) {
        assert!(self.is_param(p), "{p} is not a parameter");
        match kind {
            ParamKind::Data => self.data_params.insert(p),
            ParamKind::Differentiated => self.data_params.remove(&p),
        };
    }

    /// The float parameters derivatives are taken with respect to (not `bool`, not
    /// [`ParamKind::Data`]), in signature order: one tangent seed / adjoint output each.
    ///
    /// ```
    /// use adjit_ir::{Builder, Type};
    /// let mut b = Builder::new("f");
    /// let a = b.param(Type::F64, "a");
    /// let t = b.data_param(Type::F64, "t");
    /// let y = b.mul(a, t);
    /// let f = b.finish(&[y]);
    /// assert_eq!(f.differentiated_params().collect::<Vec<_>>(), vec![a]);
    /// ```
    pub fn differentiated_params(&self) -> impl Iterator<Item = Value> + '_ {
        self.params()
            .filter(|&p| self.ty(p).is_float() && !self.is_data(p))
    }

    /// Every value defined by an instruction, in program order, with its instruction.
    pub fn insts(&self) -> impl Iterator<Item = (Value, &InstData)> + '_ {
        self.values
            .iter()
            .enumerate()
            .skip(self.n_params)
            .filter_map(|(i, d)| match &d.def {
                ValueDef::Inst(inst) => Some((Value::new(i), inst)),
                ValueDef::Param => None,
            })
    }

    /// All values in program order.
    pub fn all_values(&self) -> impl ExactSizeIterator<Item = Value> {
        (0..self.values.len()).map(Value::new)
    }

    pub fn ty(&self, v: Value) -> Type {
        self.values[v.index()].ty
    }

    /// The type a literal operand of `inst` (an instruction of this function, of type
    /// `result_ty`) takes: the type of its value operands, which is the result's except for
    /// `fcmp` (whose result is `bool`).
    pub fn literal_type(&self, inst: &InstData, result_ty: Type) -> Type {
        literal_type_with(inst, result_ty, |v| self.ty(v))
    }

    pub fn data(&self, v: Value) -> &ValueData {
        &self.values[v.index()]
    }

    /// The instruction defining `v`, or `None` for a parameter.
    pub fn inst(&self, v: Value) -> Option<&InstData> {
        match &self.values[v.index()].def {
            ValueDef::Inst(i) => Some(i),
            ValueDef::Param => None,
        }
    }

    pub fn is_param(&self, v: Value) -> bool {
        v.index() < self.n_params
    }

    /// The value's name, if it has one.
    pub fn name_of(&self, v: Value) -> Option<&str> {
        self.values[v.index()].name.as_deref()
    }

    /// The value's name as a shared [`Name`] (cloning it does not copy the string).
    pub fn name(&self, v: Value) -> Option<&Name> {
        self.values[v.index()].name.as_ref()
    }

    /// Number of uses of every value as an operand (returns count once per return slot too).
    pub fn use_counts(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.values.len()];
        for (_, inst) in self.insts() {
            inst.for_each_value(|v| {
                if let Some(c) = counts.get_mut(v.index()) {
                    *c += 1
                }
            });
        }
        for r in &self.rets {
            if let Some(c) = counts.get_mut(r.index()) {
                *c += 1
            }
        }
        counts
    }

    /// Append a parameter. Parameters must come before every instruction.
    ///
    /// # Panics
    /// If an instruction has already been added.
    pub fn add_param(&mut self, ty: Type, name: Option<Name>) -> Value {
        assert_eq!(
            self.n_params,
            self.values.len(),
            "parameters must precede instructions"
        );
        self.values.push(ValueData {
            ty,
            def: ValueDef::Param,
            name,
        });
        self.n_params += 1;
        Value::new(self.values.len() - 1)
    }

    /// Append an instruction with an explicit result type. Prefer [`crate::Builder`], which
    /// infers the type and keeps literals well-typed.
    pub fn push_inst(&mut self, ty: Type, inst: InstData, name: Option<Name>) -> Value {
        self.values.push(ValueData {
            ty,
            def: ValueDef::Inst(inst),
            name,
        });
        Value::new(self.values.len() - 1)
    }

    /// Append the instructions of `g` with `g`'s parameter `k` standing for `args[k]`; returns
    /// the images of `g`'s returns. Names are dropped (they could clash with this function's).
    /// How transforms call one program from another (stacked sweeps, a step then a loss).
    ///
    /// # Panics
    /// If `args` has fewer values than `g` has parameters.
    pub fn inline(&mut self, g: &Function, args: &[Value]) -> Vec<Value> {
        let mut map: Vec<Value> = args[..g.n_params].to_vec();
        for (v, inst) in g.insts() {
            let new = self.push_inst(g.ty(v), inst.map_values(|u| map[u.index()]), None);
            map.push(new);
        }
        g.rets.iter().map(|r| map[r.index()]).collect()
    }

    /// Append a returned value (its type becomes the declared return type).
    pub fn push_ret(&mut self, v: Value) {
        self.rets.push(v);
        self.ret_types.push(self.ty(v));
    }

    /// The result type an instruction has given its operands' types, or `None` when the operand
    /// types are inconsistent (the verifier says why). Out-of-range operands give `None`.
    pub fn result_type(&self, inst: &InstData) -> Option<Type> {
        result_type_with(inst, |v| self.values.get(v.index()).map(|d| d.ty))
    }
}

/// [`Function::literal_type`] when value `v` has type `ty_of(v)`: a comparison's literals
/// take its value operand's type, every other instruction's its result type.
pub fn literal_type_with(inst: &InstData, result_ty: Type, ty_of: impl Fn(Value) -> Type) -> Type {
    match inst {
        InstData::Fcmp { args, .. } => args
            .iter()
            .find_map(|a| a.as_value())
            .map_or(Type::F64, ty_of),
        _ => result_ty,
    }
}

/// The result type of `inst` when value `v` has type `ty_of(v)` (`None`: no such value), or
/// `None` when its operand types do not fit it ([`Function::result_type`]).
pub fn result_type_with(inst: &InstData, ty_of: impl Fn(Value) -> Option<Type>) -> Option<Type> {
    let ty_of = |o: Operand| match o {
        Operand::Value(v) => ty_of(v).map(Some),
        Operand::Const(_) => Some(None),
    };
    // The common float type of a set of float operands (literals adopt it).
    let float_ty = |ops: &[Operand]| -> Option<Type> {
        let mut ty = None;
        for &o in ops {
            if let Some(t) = ty_of(o)? {
                if !t.is_float() || ty.is_some_and(|u| u != t) {
                    return None;
                }
                ty = Some(t);
            }
        }
        ty
    };
    match inst {
        InstData::Const { ty, .. } => Some(*ty),
        InstData::Unary { arg, .. } | InstData::Powi { arg, .. } => {
            float_ty(&[Operand::Value(*arg)])
        }
        InstData::Binary { args, .. } => float_ty(args),
        InstData::Fma { args } => float_ty(args),
        InstData::Fcmp { args, .. } => float_ty(args).map(|_| Type::Bool),
        InstData::Select { cond, args } => {
            if ty_of(Operand::Value(*cond))?? != Type::Bool {
                return None;
            }
            float_ty(args)
        }
        InstData::Fpromote { arg } => {
            (ty_of(Operand::Value(*arg))?? == Type::F32).then_some(Type::F64)
        }
        InstData::Fdemote { arg } => {
            (ty_of(Operand::Value(*arg))?? == Type::F64).then_some(Type::F32)
        }
    }
}
