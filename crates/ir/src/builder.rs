//! Building well-typed functions: the API every transform and front end uses to emit IR.

use crate::function::{Function, InstData, Name, Operand, ParamKind, Value};
use crate::opcode::{BinaryOp, CmpPred, UnaryOp};
use crate::types::Type;

/// Appends parameters and instructions to a [`Function`], inferring result types and rounding
/// float literals to the type of the instruction they appear in.
///
/// The builder never emits an instruction whose float operands are all literals (the text
/// format forbids it): such an operand is materialised as a `const` first.
///
/// ```
/// use adjit_ir::{Builder, Type};
/// let mut b = Builder::new("square_plus_one");
/// let x = b.param(Type::F64, "x");
/// let x2 = b.mul(x, x);
/// let y = b.add(x2, 1.0);
/// let f = b.finish(&[y]);
/// assert_eq!(adjit_ir::interpret(&f, &[3.0]).unwrap(), vec![10.0]);
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    func: Function,
}

impl Builder {
    pub fn new(name: impl Into<String>) -> Builder {
        Builder {
            func: Function::new(name),
        }
    }

    /// A builder with room for `n_values` values (parameters and instructions) before its
    /// function's value vector grows: for transforms that know their output's size up front,
    /// where growing by doubling reallocates the largest vector of the pass some 25 times.
    pub fn with_capacity(name: impl Into<String>, n_values: usize) -> Builder {
        let mut func = Function::new(name);
        func.values.reserve_exact(n_values);
        Builder { func }
    }

    /// Continue appending to an existing function (its returns are kept until
    /// [`Builder::finish`] replaces them).
    pub fn from_function(func: Function) -> Builder {
        Builder { func }
    }

    /// The function built so far.
    pub fn func(&self) -> &Function {
        &self.func
    }

    /// Add a named parameter. All parameters must be added before the first instruction.
    ///
    /// # Panics
    /// If an instruction has already been added (a programming error in the caller).
    pub fn param(&mut self, ty: Type, name: &str) -> Value {
        self.func.add_param(ty, Some(name.into()))
    }

    /// Add a named data parameter ([`ParamKind::Data`]: an input that derivative programs take
    /// but do not differentiate, printed `data %name: TYPE`).
    ///
    /// # Panics
    /// If an instruction has already been added.
    pub fn data_param(&mut self, ty: Type, name: &str) -> Value {
        let p = self.param(ty, name);
        self.func.set_param_kind(p, ParamKind::Data);
        p
    }

    /// Add a parameter with the type, name and kind of parameter `p` of `func` (how a
    /// transform copies a signature).
    ///
    /// # Panics
    /// If an instruction has already been added.
    pub fn copy_param(&mut self, func: &Function, p: Value) -> Value {
        let data = func.data(p);
        let new = self.func.add_param(data.ty, data.name.clone());
        self.func.set_param_kind(new, func.param_kind(p));
        new
    }

    /// Set the kind of parameter `p` (see [`ParamKind`]).
    ///
    /// # Panics
    /// If `p` is not a parameter.
    pub fn set_param_kind(&mut self, p: Value, kind: ParamKind) {
        self.func.set_param_kind(p, kind);
    }

    /// Add an unnamed parameter.
    pub fn param_unnamed(&mut self, ty: Type) -> Value {
        self.func.add_param(ty, None)
    }

    pub fn ty(&self, v: Value) -> Type {
        self.func.ty(v)
    }

    /// Give `v` a name for printing (replaces any earlier name).
    pub fn set_name(&mut self, v: Value, name: impl Into<Name>) {
        self.func.values[v.index()].name = Some(name.into());
    }

    /// Append any instruction. Literal operands are rounded to the instruction's float type;
    /// if every float operand is a literal, the first is materialised as a `const`.
    ///
    /// # Panics
    /// If the operand types are inconsistent (a bug in the transform that emits it).
    pub fn inst(&mut self, mut inst: InstData) -> Value {
        self.normalize(&mut inst);
        let ty = self
            .func
            .result_type(&inst)
            .unwrap_or_else(|| panic!("ill-typed instruction {inst:?}"));
        self.func.push_inst(ty, inst, None)
    }

    /// Append an instruction whose result type `ty` the caller knows: a copy of an
    /// instruction of a verified function with its operands mapped to values of the same
    /// types. Literals are treated as by [`Builder::inst`]; the type inference is skipped
    /// (60 instructions an instruction, 5 % of a VJP), and only checked in debug builds.
    pub fn copy_inst(&mut self, ty: Type, mut inst: InstData, name: Option<Name>) -> Value {
        self.normalize(&mut inst);
        debug_assert_eq!(
            self.func.result_type(&inst),
            Some(ty),
            "copied instruction {inst:?}"
        );
        self.func.push_inst(ty, inst, name)
    }

    /// Round literals to the operands' float type, and materialise a `const` when every float
    /// operand is a literal (defaulting to f64).
    fn fix_operands(&mut self, ops: &mut [Operand], default: Type) {
        // No literal, nothing to do: most emitted lines, and the type lookup skipped is a
        // cache miss in a large program.
        if ops.iter().all(|o| matches!(o, Operand::Value(_))) {
            return;
        }
        let ty = match ops.iter().find_map(|o| o.as_value()) {
            Some(v) => self.func.ty(v),
            None => {
                if let Operand::Const(c) = ops[0] {
                    ops[0] = Operand::Value(self.constant(default, c));
                }
                default
            }
        };
        for o in ops {
            if let Operand::Const(c) = o {
                *c = ty.round(*c);
            }
        }
    }

    /// [`Builder::fix_operands`] on the float operands of `inst`, in place.
    fn normalize(&mut self, inst: &mut InstData) {
        match inst {
            InstData::Binary { args, .. }
            | InstData::Fcmp { args, .. }
            | InstData::Select { args, .. } => self.fix_operands(args, Type::F64),
            InstData::Fma { args } => self.fix_operands(args, Type::F64),
            _ => {}
        }
    }

    pub fn constant(&mut self, ty: Type, value: f64) -> Value {
        self.func.push_inst(ty, InstData::constant(ty, value), None)
    }

    pub fn unary(&mut self, op: UnaryOp, x: Value) -> Value {
        self.inst(InstData::Unary { op, arg: x })
    }

    pub fn binary(&mut self, op: BinaryOp, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.inst(InstData::Binary {
            op,
            args: [a.into(), b.into()],
        })
    }

    pub fn add(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.binary(BinaryOp::Add, a, b)
    }

    pub fn sub(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.binary(BinaryOp::Sub, a, b)
    }

    pub fn mul(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.binary(BinaryOp::Mul, a, b)
    }

    pub fn div(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.binary(BinaryOp::Div, a, b)
    }

    pub fn neg(&mut self, x: Value) -> Value {
        self.unary(UnaryOp::Neg, x)
    }

    pub fn fma(
        &mut self,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        c: impl Into<Operand>,
    ) -> Value {
        self.inst(InstData::Fma {
            args: [a.into(), b.into(), c.into()],
        })
    }

    pub fn powi(&mut self, x: Value, exp: i32) -> Value {
        self.inst(InstData::Powi { arg: x, exp })
    }

    pub fn fcmp(&mut self, pred: CmpPred, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.inst(InstData::Fcmp {
            pred,
            args: [a.into(), b.into()],
        })
    }

    pub fn select(&mut self, cond: Value, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.inst(InstData::Select {
            cond,
            args: [a.into(), b.into()],
        })
    }

    pub fn fpromote(&mut self, x: Value) -> Value {
        self.inst(InstData::Fpromote { arg: x })
    }

    pub fn fdemote(&mut self, x: Value) -> Value {
        self.inst(InstData::Fdemote { arg: x })
    }

    /// Set the returned values (replacing any earlier ones) and return the function.
    pub fn finish(mut self, rets: &[Value]) -> Function {
        self.func.rets.clear();
        self.func.ret_types.clear();
        for &r in rets {
            self.func.push_ret(r);
        }
        self.func
    }
}
