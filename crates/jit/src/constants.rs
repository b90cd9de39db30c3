//! The constant table: float literals (and the sign mask `neg` is lowered with) are loaded
//! from a read-only data object at each use instead of being materialised with `f64const`,
//! which x86-64 rebuilds through a general register at every use, and which Cranelift's
//! optimiser hoists to the top of the function where they all stay live (quadratic register
//! allocation). A table load folds into the arithmetic where the instruction takes a memory
//! operand.
//!
//! Chunks with at most [`crate::JitOptions::const_table_above`] distinct literals (default 0:
//! none) keep `f32const`/`f64const`. Every table entry takes 8 bytes; an `f32` literal sits in the low 4
//! bytes (both supported targets are little-endian).

use std::collections::HashMap;

use adjit_ir::{Function, InstData, Operand, Type};
use cranelift_module::{DataDescription, DataId, Linkage, Module};

use crate::error::JitError;
use crate::plan::Plan;

/// Literal key: its type and the bits of its `f64` carrier.
pub(crate) type LiteralKey = (Type, u64);

/// Which chunks use the table, and where each literal sits in it.
#[derive(Debug, Default)]
pub(crate) struct ConstTable {
    /// Per chunk: load literals from the table.
    pub chunk_uses_table: Vec<bool>,
    /// Entry index of every tabled literal.
    pub index: HashMap<LiteralKey, u32>,
    /// The data object, once defined in a module.
    pub data: Option<DataId>,
}

/// The float type a literal operand of `inst` takes (the type of its value operands).
pub(crate) fn literal_type(func: &Function, inst: &InstData, result_ty: Type) -> Type {
    match inst {
        InstData::Fcmp { args, .. } => args
            .iter()
            .find_map(|a| a.as_value())
            .map_or(Type::F64, |v| func.ty(v)),
        _ => result_ty,
    }
}

/// The bits of `-0.0`: the sign mask `neg` is lowered with (`bxor`), a literal of the chunk.
pub(crate) const SIGN_MASK: u64 = 0x8000_0000_0000_0000;

/// Every float literal of `inst` (operands, `const` values, `neg`'s sign mask), with its type.
fn for_each_literal(func: &Function, inst: &InstData, ty: Type, mut f: impl FnMut(LiteralKey)) {
    match inst {
        InstData::Const { ty, bits } if ty.is_float() => f((*ty, *bits)),
        InstData::Unary {
            op: adjit_ir::UnaryOp::Neg,
            ..
        } => f((ty, SIGN_MASK)),
        _ => {
            let lit_ty = literal_type(func, inst, ty);
            inst.for_each_operand(|o| {
                if let Operand::Const(c) = o {
                    f((lit_ty, c.to_bits()))
                }
            })
        }
    }
}

impl ConstTable {
    /// Decide per chunk and assign table entries.
    pub fn build(func: &Function, plan: &Plan, const_table_above: usize) -> ConstTable {
        let mut table = ConstTable::default();
        for range in &plan.chunks {
            let mut distinct: HashMap<LiteralKey, ()> = HashMap::new();
            for v in range.clone().filter(|&v| plan.live[v]) {
                if let Some(inst) = func.inst(adjit_ir::Value::new(v)) {
                    for_each_literal(func, inst, func.values[v].ty, |k| {
                        distinct.insert(k, ());
                    });
                }
            }
            let uses_table = distinct.len() > const_table_above;
            table.chunk_uses_table.push(uses_table);
            if uses_table {
                for key in distinct.into_keys() {
                    let next = table.index.len() as u32;
                    table.index.entry(key).or_insert(next);
                }
            }
        }
        table
    }

    /// The table's bytes.
    fn bytes(&self) -> Vec<u8> {
        let mut bytes = vec![0u8; self.index.len() * 8];
        for (&(ty, bits), &i) in &self.index {
            let at = i as usize * 8;
            match ty {
                Type::F32 => bytes[at..at + 4]
                    .copy_from_slice(&(f64::from_bits(bits) as f32).to_bits().to_le_bytes()),
                _ => bytes[at..at + 8].copy_from_slice(&bits.to_le_bytes()),
            }
        }
        bytes
    }

    /// Define the table as a local read-only data object of `module` (if any chunk uses it).
    pub fn define<M: Module>(&mut self, module: &mut M, name: &str) -> Result<(), JitError> {
        if self.index.is_empty() {
            return Ok(());
        }
        let id = module
            .declare_data(name, Linkage::Local, false, false)
            .map_err(|e| JitError::cranelift("declaring the constant table", e))?;
        let mut desc = DataDescription::new();
        desc.define(self.bytes().into_boxed_slice());
        desc.set_align(8);
        module
            .define_data(id, &desc)
            .map_err(|e| JitError::cranelift("defining the constant table", e))?;
        self.data = Some(id);
        Ok(())
    }
}
