//! [`adjit_ir::mathlib`]'s routines emitted inline as Cranelift IR: the [`MathEmitter`] over a
//! `FunctionBuilder`, for one point (`F64`, `I64`, masks `I8`) or two (`F64X2`, `I64X2`, lane
//! masks `I64X2`). Every emitter operation is one Cranelift instruction (constants: a load
//! from the constant pool, as `f64const` is rebuilt through a general register at each use on
//! x86-64) with the IEEE result the interpreter's `f64` emitter computes, so inline math
//! equals the interpreter bit for bit in every lane.
//!
//! Target support (Cranelift 0.135): every operation used here (`fadd fsub fmul fdiv fma fneg
//! fabs nearest floor`, `bitcast`, `iadd isub band bor ishl_imm ushr_imm`, `fcmp`, `select` /
//! `bitselect`, `vconst`) lowers natively on AArch64 and on x86-64 with the host's features
//! (cranelift-native enables FMA and SSE4.1). Without FMA (x86-64 objects, which target the
//! SSE2 baseline) Cranelift turns `fma` into calls to the C library's correctly rounded `fma`
//! (per lane in vector code): slower, never a different result.

use adjit_ir::mathlib::{Cmp, MathEmitter};
use cranelift_codegen::ir::{
    self, condcodes::FloatCC, types, ConstantData, InstBuilder, MemFlagsData,
};
use cranelift_frontend::FunctionBuilder;

use crate::lower::{lane_bitcast, Lanes};

/// Emits math routines into `b` for `lanes` points.
pub(crate) struct ClifMath<'f, 'b> {
    pub b: &'f mut FunctionBuilder<'b>,
    pub lanes: Lanes,
    /// In-process code may read `mathlib`'s tables at their addresses; object files may not.
    pub tables: bool,
}

impl ClifMath<'_, '_> {
    fn vector_const(&mut self, ty: types::Type, bits: u64) -> ir::Value {
        let mut bytes = bits.to_le_bytes().to_vec();
        bytes.extend_from_slice(&bits.to_le_bytes());
        let c = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        self.b.ins().vconst(ty, c)
    }
}

impl MathEmitter for ClifMath<'_, '_> {
    type F = ir::Value;
    type I = ir::Value;
    type M = ir::Value;

    fn has_tables(&self) -> bool {
        self.tables
    }

    fn lookup_row<const W: usize, const N: usize>(
        &mut self,
        table: &'static [[f64; W]; N],
        i: ir::Value,
    ) -> [ir::Value; W] {
        const { assert!(N.is_power_of_two()) };
        // The table is a `static` of this process, so its address is a constant of code
        // that runs in this process (`tables` is false for object files).
        let base = self.b.ins().iconst(types::I64, table.as_ptr() as i64);
        let row_bytes = (W * std::mem::size_of::<f64>()) as i64;
        let load_row = |b: &mut FunctionBuilder<'_>, index: ir::Value| -> [ir::Value; W] {
            let masked = b.ins().band_imm_u(index, (N - 1) as i64);
            let off = b.ins().imul_imm_u(masked, row_bytes);
            let at = b.ins().iadd(base, off);
            std::array::from_fn(|k| {
                b.ins().load(
                    types::F64,
                    MemFlagsData::trusted().with_readonly(),
                    at,
                    (k * std::mem::size_of::<f64>()) as i32,
                )
            })
        };
        match self.lanes {
            Lanes::One => load_row(self.b, i),
            Lanes::Two => {
                let i0 = self.b.ins().extractlane(i, 0);
                let i1 = self.b.ins().extractlane(i, 1);
                let y0 = load_row(self.b, i0);
                let y1 = load_row(self.b, i1);
                std::array::from_fn(|k| {
                    let v = self.b.ins().scalar_to_vector(types::F64X2, y0[k]);
                    self.b.ins().insertlane(v, y1[k], 1)
                })
            }
        }
    }

    fn fconst(&mut self, c: f64) -> ir::Value {
        match self.lanes {
            // A constant-pool load (`f64const` is rebuilt through a general register at
            // every use on x86-64): lane 0 of a vector constant.
            Lanes::One => {
                let v = self.vector_const(types::F64X2, c.to_bits());
                self.b.ins().extractlane(v, 0)
            }
            Lanes::Two => self.vector_const(types::F64X2, c.to_bits()),
        }
    }

    fn iconst(&mut self, c: u64) -> ir::Value {
        match self.lanes {
            Lanes::One => self.b.ins().iconst(types::I64, c as i64),
            Lanes::Two => self.vector_const(types::I64X2, c),
        }
    }

    fn add(&mut self, a: ir::Value, b: ir::Value) -> ir::Value {
        self.b.ins().fadd(a, b)
    }

    fn sub(&mut self, a: ir::Value, b: ir::Value) -> ir::Value {
        self.b.ins().fsub(a, b)
    }

    fn mul(&mut self, a: ir::Value, b: ir::Value) -> ir::Value {
        self.b.ins().fmul(a, b)
    }

    fn div(&mut self, a: ir::Value, b: ir::Value) -> ir::Value {
        self.b.ins().fdiv(a, b)
    }

    fn fma(&mut self, a: ir::Value, b: ir::Value, c: ir::Value) -> ir::Value {
        self.b.ins().fma(a, b, c)
    }

    fn neg(&mut self, a: ir::Value) -> ir::Value {
        self.b.ins().fneg(a)
    }

    fn abs(&mut self, a: ir::Value) -> ir::Value {
        self.b.ins().fabs(a)
    }

    fn nearest(&mut self, a: ir::Value) -> ir::Value {
        self.b.ins().nearest(a)
    }

    fn floor(&mut self, a: ir::Value) -> ir::Value {
        self.b.ins().floor(a)
    }

    fn bits_of(&mut self, a: ir::Value) -> ir::Value {
        match self.lanes {
            Lanes::One => self.b.ins().bitcast(types::I64, MemFlagsData::new(), a),
            Lanes::Two => self.b.ins().bitcast(types::I64X2, lane_bitcast(), a),
        }
    }

    fn float_of(&mut self, a: ir::Value) -> ir::Value {
        match self.lanes {
            Lanes::One => self.b.ins().bitcast(types::F64, MemFlagsData::new(), a),
            Lanes::Two => self.b.ins().bitcast(types::F64X2, lane_bitcast(), a),
        }
    }

    fn iadd(&mut self, a: ir::Value, b: ir::Value) -> ir::Value {
        self.b.ins().iadd(a, b)
    }

    fn isub(&mut self, a: ir::Value, b: ir::Value) -> ir::Value {
        self.b.ins().isub(a, b)
    }

    fn band(&mut self, a: ir::Value, b: ir::Value) -> ir::Value {
        self.b.ins().band(a, b)
    }

    fn bor(&mut self, a: ir::Value, b: ir::Value) -> ir::Value {
        self.b.ins().bor(a, b)
    }

    fn shl(&mut self, a: ir::Value, n: u32) -> ir::Value {
        self.b.ins().ishl_imm_u(a, i64::from(n))
    }

    fn ushr(&mut self, a: ir::Value, n: u32) -> ir::Value {
        self.b.ins().ushr_imm_u(a, i64::from(n))
    }

    fn cmp(&mut self, cmp: Cmp, a: ir::Value, b: ir::Value) -> ir::Value {
        let cc = match cmp {
            Cmp::Lt => FloatCC::LessThan,
            Cmp::Le => FloatCC::LessThanOrEqual,
            Cmp::Gt => FloatCC::GreaterThan,
            Cmp::Ge => FloatCC::GreaterThanOrEqual,
            Cmp::Eq => FloatCC::Equal,
            Cmp::Uno => FloatCC::Unordered,
        };
        self.b.ins().fcmp(cc, a, b)
    }

    fn select(&mut self, m: ir::Value, a: ir::Value, b: ir::Value) -> ir::Value {
        match self.lanes {
            // Measured: making this a blend (lane 0 of a vector compare and `bitselect`) costs
            // more in moves than the branch it saves, even in `erf`'s piece selection.
            Lanes::One => self.b.ins().select(m, a, b),
            Lanes::Two => {
                let mask = self.b.ins().bitcast(types::F64X2, lane_bitcast(), m);
                self.b.ins().bitselect(mask, a, b)
            }
        }
    }
}
