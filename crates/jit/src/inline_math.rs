//! [`adjit_ir::mathlib`]'s routines emitted inline as Cranelift IR: the [`MathEmitter`] over a
//! `FunctionBuilder`, for one point (`F64`, `I64`, masks `I8`) or two (`F64X2`, `I64X2`, lane
//! masks `I64X2`). Every emitter operation is one Cranelift instruction (constants: a load
//! from the constant pool, as `f64const` is rebuilt through a general register at each use on
//! x86-64) with the IEEE result the interpreter's `f64` emitter computes, so inline math
//! equals the interpreter bit for bit in every lane.
//!
//! Tables ([`MathEmitter::lookup_row`]) become read-only data objects of the module the code
//! is compiled into, declared on first use under a name derived from their contents (so the
//! scalar and two-point kernels of one object file share them), in JIT code and object files
//! alike: AArch64 objects run under qemu exercise the same table code as the JIT. A row is
//! loaded from the table's symbol plus the masked index times the row size; in two-lane code
//! each lane's row is read by 16-byte pairs that two `shuffle`s interleave
//! (`punpcklqdq`/`punpckhqdq` on x86-64).
//!
//! Target support (Cranelift 0.135): every operation used here (`fadd fsub fmul fdiv fma fneg
//! fabs sqrt nearest floor`, `bitcast`, `iadd isub band bor ishl_imm ushr_imm imul_imm`, `fcmp`,
//! `select` / `bitselect`, `vconst`, `load`, `extractlane insertlane scalar_to_vector
//! shuffle`) lowers natively on AArch64 and on x86-64 with the host's features
//! (cranelift-native enables FMA and SSE4.1). Without FMA (x86-64 objects, which target the
//! SSE2 baseline) Cranelift turns `fma` into calls to the C library's correctly rounded `fma`
//! (per lane in vector code): slower, never a different result.

use std::collections::HashMap;

use adjit_ir::mathlib::{Cmp, MathEmitter};
use cranelift_codegen::ir::{
    self, condcodes::FloatCC, types, ConstantData, InstBuilder, MemFlagsData,
};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::{DataDescription, DataId, FuncOrDataId, Linkage, Module};

use crate::error::JitError;
use crate::lanes::{lane_bitcast, Lanes};

/// Emits math routines into `b` for `lanes` points, defining the tables they read in
/// `module`.
pub(crate) struct ClifMath<'f, 'b, M: Module> {
    pub b: &'f mut FunctionBuilder<'b>,
    pub lanes: Lanes,
    pub module: &'f mut M,
    /// The address of each table this function has read, by the table's address in this
    /// process (one `symbol_value` per table and function: the function is one block).
    pub table_bases: &'f mut HashMap<usize, ir::Value>,
    /// The first failure to define a table (the emitter's operations cannot fail; the caller
    /// reports it after the routine).
    pub error: Option<JitError>,
}

/// The bytes of a table (`f64`s in the target's little-endian order).
fn table_bytes<const W: usize, const N: usize>(table: &[[f64; W]; N]) -> Vec<u8> {
    table
        .iter()
        .flatten()
        .flat_map(|x| x.to_bits().to_le_bytes())
        .collect()
}

/// A name for a table that depends only on its contents (FNV-1a over its bytes).
fn table_name(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("adjit.math.table.{hash:016x}")
}

impl<M: Module> ClifMath<'_, '_, M> {
    /// The table as a local read-only data object of the module (declared and defined on
    /// its first use in the module).
    fn table_data(&mut self, bytes: Vec<u8>) -> Result<DataId, JitError> {
        let name = table_name(&bytes);
        if let Some(FuncOrDataId::Data(id)) = self.module.declarations().get_name(&name) {
            return Ok(id);
        }
        let id = self
            .module
            .declare_data(&name, Linkage::Local, false, false)
            .map_err(|e| JitError::cranelift("declaring a math table", e))?;
        let mut desc = DataDescription::new();
        desc.define(bytes.into_boxed_slice());
        desc.set_align(16);
        self.module
            .define_data(id, &desc)
            .map_err(|e| JitError::cranelift("defining a math table", e))?;
        Ok(id)
    }

    /// The address of `table` in the generated code.
    fn table_base<const W: usize, const N: usize>(
        &mut self,
        table: &'static [[f64; W]; N],
    ) -> ir::Value {
        let key = table.as_ptr() as usize;
        if let Some(&base) = self.table_bases.get(&key) {
            return base;
        }
        let ptr = self.module.target_config().pointer_type();
        let base = match self.table_data(table_bytes(table)) {
            Ok(id) => {
                let gv = self.module.declare_data_in_func(id, self.b.func);
                self.b.ins().symbol_value(ptr, gv)
            }
            Err(e) => {
                // Any address will do: the caller discards the function.
                self.error.get_or_insert(e);
                self.b.ins().iconst(ptr, 0)
            }
        };
        self.table_bases.insert(key, base);
        base
    }

    /// A `shuffle` mask (byte `k` of the result is byte `mask[k]` of `a ++ b`), as the
    /// little-endian 128-bit number whose byte `k` is `mask[k]`.
    fn shuffle_mask(&mut self, mask: u128) -> ir::Immediate {
        let data = ConstantData::from(mask.to_le_bytes().to_vec());
        self.b.func.dfg.immediates.push(data)
    }

    fn vector_const(&mut self, ty: types::Type, bits: u64) -> ir::Value {
        let mut bytes = bits.to_le_bytes().to_vec();
        bytes.extend_from_slice(&bits.to_le_bytes());
        let c = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        self.b.ins().vconst(ty, c)
    }
}

impl<M: Module> MathEmitter for ClifMath<'_, '_, M> {
    type F = ir::Value;
    type I = ir::Value;
    type M = ir::Value;

    fn lookup_row<const W: usize, const N: usize>(
        &mut self,
        table: &'static [[f64; W]; N],
        i: ir::Value,
    ) -> [ir::Value; W] {
        const { assert!(N.is_power_of_two()) };
        const F64: usize = std::mem::size_of::<f64>();
        let base = self.table_base(table);
        let row_bytes = W * F64;
        let row_at = |b: &mut FunctionBuilder<'_>, index: ir::Value| {
            let masked = b.ins().band_imm_u(index, (N - 1) as i64);
            let off = if row_bytes.is_power_of_two() {
                b.ins()
                    .ishl_imm_u(masked, i64::from(row_bytes.trailing_zeros()))
            } else {
                b.ins().imul_imm_u(masked, row_bytes as i64)
            };
            b.ins().iadd(base, off)
        };
        // In bounds by the mask whatever the index (so free to move, and removed when
        // unused), read-only; rows are 8-byte aligned only.
        let flags = MemFlagsData::new()
            .with_notrap()
            .with_readonly()
            .with_can_move();
        let scalar = |b: &mut FunctionBuilder<'_>, at: ir::Value, k: usize| {
            b.ins().load(types::F64, flags, at, (k * F64) as i32)
        };
        match self.lanes {
            Lanes::One => {
                let at = row_at(self.b, i);
                std::array::from_fn(|k| scalar(self.b, at, k))
            }
            Lanes::Two => {
                // Two neighbouring values of each lane's row in one 16-byte load, then
                // `[a₀, b₀]` and `[a₁, b₁]` interleaved into `[a₀, a₁]` and `[b₀, b₁]`
                // (`punpcklqdq` / `punpckhqdq` on x86-64): two loads and two shuffles per
                // pair instead of four loads and two lane inserts. An odd last value is
                // loaded per lane (a 16-byte load could leave the table).
                let i0 = self.b.ins().extractlane(i, 0);
                let i1 = self.b.ins().extractlane(i, 1);
                let at0 = row_at(self.b, i0);
                let at1 = row_at(self.b, i1);
                let mut out = [at0; W];
                let lows = self.shuffle_mask(0x1716_1514_1312_1110_0706_0504_0302_0100);
                let highs = self.shuffle_mask(0x1f1e_1d1c_1b1a_1918_0f0e_0d0c_0b0a_0908);
                for pair in 0..W / 2 {
                    let offset = (2 * pair * F64) as i32;
                    let v0 = self.b.ins().load(types::F64X2, flags, at0, offset);
                    let v1 = self.b.ins().load(types::F64X2, flags, at1, offset);
                    let b0 = self.b.ins().bitcast(types::I8X16, lane_bitcast(), v0);
                    let b1 = self.b.ins().bitcast(types::I8X16, lane_bitcast(), v1);
                    for (k, mask) in [(2 * pair, lows), (2 * pair + 1, highs)] {
                        let both = self.b.ins().shuffle(b0, b1, mask);
                        out[k] = self.b.ins().bitcast(types::F64X2, lane_bitcast(), both);
                    }
                }
                if W % 2 == 1 {
                    let y0 = scalar(self.b, at0, W - 1);
                    let v = self.b.ins().scalar_to_vector(types::F64X2, y0);
                    let y1 = scalar(self.b, at1, W - 1);
                    out[W - 1] = self.b.ins().insertlane(v, y1, 1);
                }
                out
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

    fn sqrt(&mut self, a: ir::Value) -> ir::Value {
        self.b.ins().sqrt(a)
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

    /// A branch on `m` (in two lanes: on every lane's) to `fast` or to `general` (a cold
    /// block), joined in a new block whose parameters are the values. Table addresses first
    /// read in either arm are forgotten after it: they do not dominate the join.
    fn when_all<const N: usize>(
        &mut self,
        m: ir::Value,
        fast: impl FnOnce(&mut Self) -> [ir::Value; N],
        general: impl FnOnce(&mut Self) -> [ir::Value; N],
    ) -> [ir::Value; N] {
        let (cond, ty) = match self.lanes {
            Lanes::One => (m, types::F64),
            Lanes::Two => (self.b.ins().vall_true(m), types::F64X2),
        };
        let (fast_block, general_block) = (self.b.create_block(), self.b.create_block());
        let join = self.b.create_block();
        for _ in 0..N {
            self.b.append_block_param(join, ty);
        }
        self.b.set_cold_block(general_block);
        self.b.ins().brif(cond, fast_block, &[], general_block, &[]);
        self.b.seal_block(fast_block);
        self.b.seal_block(general_block);
        let known = self.table_bases.clone();
        self.b.switch_to_block(fast_block);
        let values = fast(self).map(ir::BlockArg::Value);
        self.b.ins().jump(join, &values);
        self.table_bases.clone_from(&known);
        self.b.switch_to_block(general_block);
        let values = general(self).map(ir::BlockArg::Value);
        self.b.ins().jump(join, &values);
        *self.table_bases = known;
        self.b.switch_to_block(join);
        self.b.seal_block(join);
        let params = self.b.block_params(join);
        std::array::from_fn(|k| params[k])
    }
}
