//! The constant table: float literals (and the sign mask `neg` is lowered with) are loaded
//! from a read-only data object at each use instead of being materialised with `f64const`,
//! which x86-64 rebuilds through a general register at every use, and which Cranelift's
//! optimiser hoists to the top of the function where they all stay live (quadratic register
//! allocation). A table load folds into the arithmetic where the instruction takes a memory
//! operand.
//!
//! Chunks with at most [`crate::JitOptions::const_table_above`] distinct literals (default 0:
//! none) keep `f32const`/`f64const`. Every table entry takes 8 bytes; an `f32` literal sits in the low 4
//! bytes (both supported targets are little-endian). The table of two-point kernels holds each
//! literal already in both lanes (16 bytes: two `f64`s, or four `f32`s), aligned to 16, so a
//! use is one vector load, which x86-64 folds into the arithmetic, instead of a load and a
//! splat.

use std::collections::HashMap;

use adjit_ir::roll::LiteralTable;
use adjit_ir::{literal_type_with, Function, InstData, Operand, Rolled, Type};
use cranelift_module::{DataDescription, DataId, Linkage, Module};

use crate::error::JitError;
use crate::plan::Plan;
use crate::roll::Run;

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
    /// Bytes per entry: 8, or 16 for two-point kernels (the literal in both lanes).
    pub entry_bytes: usize,
    /// Per run (by index), per literal table of the run ([`Run::tables`], then a nest's
    /// `gap_tables`): the entry of its first iteration; iteration `j`'s is `j` entries later.
    /// Tables follow the literals.
    pub run_tables: Vec<Vec<u32>>,
    /// The tables' values, in entry order (equal tables are stored once).
    tables: Vec<(Type, Vec<u64>)>,
}

/// The bits of `-0.0`: the sign mask `neg` is lowered with (`bxor`), a literal of the chunk.
pub(crate) const SIGN_MASK: u64 = 0x8000_0000_0000_0000;

/// Every float literal of `inst` (operands, `const` values, `neg`'s sign mask), with its type;
/// `lit_ty` is the type of its literal operands ([`Function::literal_type`]).
fn for_each_literal(inst: &InstData, ty: Type, lit_ty: Type, mut f: impl FnMut(LiteralKey)) {
    match inst {
        InstData::Const { ty, bits } if ty.is_float() => f((*ty, *bits)),
        InstData::Unary {
            op: adjit_ir::UnaryOp::Neg,
            ..
        } => f((ty, SIGN_MASK)),
        _ => inst.for_each_operand(|o| {
            if let Operand::Const(c) = o {
                f((lit_ty, c.to_bits()))
            }
        }),
    }
}

impl ConstTable {
    /// Decide per chunk and assign table entries.
    /// `lanes` is 1, or 2 for the table of two-point kernels.
    /// A run's chunk reads the literals of its template (its first iteration), all of them.
    pub fn build(
        func: &Function,
        plan: &Plan,
        runs: &[Run],
        const_table_above: usize,
        lanes: usize,
    ) -> ConstTable {
        let mut table = ConstTable {
            entry_bytes: 8 * lanes.max(1),
            ..ConstTable::default()
        };
        for c in 0..plan.chunks.len() {
            // In order of first use, so the table (and the code addressing it) is the same
            // on every compilation.
            let mut seen: HashMap<LiteralKey, ()> = HashMap::new();
            let mut distinct: Vec<LiteralKey> = Vec::new();
            let looped = plan.chunk_runs[c].is_some();
            for v in plan
                .lowered_values(c, runs)
                .into_iter()
                .filter(|&v| looped || plan.live[v])
            {
                if let Some(inst) = func.inst(adjit_ir::Value::new(v)) {
                    let ty = func.values[v].ty;
                    for_each_literal(inst, ty, func.literal_type(inst, ty), |k| {
                        if seen.insert(k, ()).is_none() {
                            distinct.push(k);
                        }
                    });
                }
            }
            // A loop with literal tables reads them from the table's data object.
            let has_tables = plan.chunk_runs[c].is_some_and(|r| {
                let gap = runs[r]
                    .outer
                    .as_ref()
                    .is_some_and(|o| !o.gap_tables.is_empty());
                !runs[r].tables.is_empty() || gap
            });
            let uses_table = distinct.len() > const_table_above || has_tables;
            table.chunk_uses_table.push(uses_table);
            if uses_table {
                for key in distinct {
                    let next = table.index.len() as u32;
                    table.index.entry(key).or_insert(next);
                }
            }
        }
        table.push_tables(runs.iter().map(|run| {
            let gap_tables = run.outer.as_ref().map_or(&[][..], |o| &o.gap_tables[..]);
            run.tables.iter().chain(gap_tables)
        }));
        table
    }

    /// Each group's literal tables after the literals (equal tables stored once), and per
    /// group its tables' first entries in [`ConstTable::run_tables`].
    fn push_tables<'a, G: Iterator<Item = &'a LiteralTable>>(
        &mut self,
        groups: impl Iterator<Item = G>,
    ) {
        let mut next = self.index.len();
        let mut seen: HashMap<(Type, &[u64]), u32> = HashMap::new();
        for group in groups {
            let mut entries = Vec::new();
            for t in group {
                let at = *seen.entry((t.ty, &t.bits[..])).or_insert_with(|| {
                    self.tables.push((t.ty, t.bits.clone()));
                    let at = next as u32;
                    next += t.bits.len();
                    at
                });
                entries.push(at);
            }
            self.run_tables.push(entries);
        }
    }

    /// The table of a rolled program lowered as one function ([`crate::lower::rolled`]):
    /// the literals of its live template positions, when there are more than
    /// `const_table_above` or some loop has literal tables, and per loop (by index) its
    /// literal tables' first entries.
    pub fn build_rolled(
        rolled: &Rolled,
        live: &[Vec<bool>],
        const_table_above: usize,
    ) -> ConstTable {
        let mut table = ConstTable {
            entry_bytes: 8,
            ..ConstTable::default()
        };
        let mut distinct: Vec<LiteralKey> = Vec::new();
        let mut seen: HashMap<LiteralKey, ()> = HashMap::new();
        for (l, live) in rolled.loops().iter().zip(live) {
            for t in (0..l.period()).filter(|&t| live[t]) {
                // Iteration 0's operands (a derived template's own are placeholders).
                let inst = &l.instance(t, 0);
                let ty = l.template[t].ty;
                let lit_ty = literal_type_with(inst, ty, |v| rolled.ty(v.index()));
                for_each_literal(inst, ty, lit_ty, |k| {
                    if seen.insert(k, ()).is_none() {
                        distinct.push(k);
                    }
                });
            }
        }
        let has_tables = rolled.loops().iter().any(|l| !l.tables.is_empty());
        let uses_table = distinct.len() > const_table_above || has_tables;
        table.chunk_uses_table.push(uses_table);
        if uses_table {
            for (i, key) in distinct.into_iter().enumerate() {
                table.index.insert(key, i as u32);
            }
        }
        table.push_tables(rolled.loops().iter().map(|l| l.tables.iter()));
        table
    }

    /// The table's bytes: the literals, then the literal tables.
    fn bytes(&self) -> Vec<u8> {
        let width = self.entry_bytes;
        let table_entries: usize = self.tables.iter().map(|(_, bits)| bits.len()).sum();
        let mut bytes = vec![0u8; (self.index.len() + table_entries) * width];
        let mut by_index: Vec<LiteralKey> = vec![(Type::F64, 0); self.index.len()];
        for (&key, &i) in &self.index {
            by_index[i as usize] = key;
        }
        let literals = by_index.into_iter();
        let tabled = self
            .tables
            .iter()
            .flat_map(|(ty, bits)| bits.iter().map(|&b| (*ty, b)));
        for ((ty, bits), entry) in literals.chain(tabled).zip(bytes.chunks_exact_mut(width)) {
            write_entry(entry, ty, bits);
        }
        bytes
    }

    /// Whether there is anything to define.
    fn is_empty(&self) -> bool {
        self.index.is_empty() && self.tables.is_empty()
    }

    /// Define the table as a local read-only data object of `module` (if any chunk uses it).
    pub fn define<M: Module>(&mut self, module: &mut M, name: &str) -> Result<(), JitError> {
        if self.is_empty() {
            return Ok(());
        }
        let id = module
            .declare_data(name, Linkage::Local, false, false)
            .map_err(|e| JitError::cranelift("declaring the constant table", e))?;
        let mut desc = DataDescription::new();
        desc.define(self.bytes().into_boxed_slice());
        desc.set_align(self.entry_bytes as u64);
        module
            .define_data(id, &desc)
            .map_err(|e| JitError::cranelift("defining the constant table", e))?;
        self.data = Some(id);
        Ok(())
    }
}

/// One entry of `ty`'s literal `bits` (its `f64` carrier): an `f32` in the low 4 bytes of a
/// scalar entry and in every lane of a pair entry's F32X4; an `f64` in every 8 bytes.
fn write_entry(entry: &mut [u8], ty: Type, bits: u64) {
    match ty {
        Type::F32 => {
            let lane = (f64::from_bits(bits) as f32).to_bits().to_le_bytes();
            let lanes = if entry.len() == 8 { 1 } else { entry.len() / 4 };
            for chunk in entry.chunks_exact_mut(4).take(lanes) {
                chunk.copy_from_slice(&lane);
            }
        }
        _ => {
            for chunk in entry.chunks_exact_mut(8) {
                chunk.copy_from_slice(&bits.to_le_bytes());
            }
        }
    }
}
