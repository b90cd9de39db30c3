//! What every inverse program shares: the parameter list (the program's inputs, then the
//! seeds), copies of primal instructions, and the checked block structure of every lump.

use adjit_ir::{Builder, Function, Value, ValueDef};

use super::blocks::{lump_blocks, LumpBlocks};
use super::lumps::Lump;
use super::{label, InverseError, InverseOptions};

/// The block structure of every lump, with [`InverseError::LumpTooLarge`] when a diagonal block
/// exceeds `opts.max_lump` (only if `limit`).
pub(crate) fn checked_structures(
    func: &Function,
    active: &[bool],
    lumps: &[Lump],
    opts: &InverseOptions,
    limit: bool,
) -> Result<Vec<LumpBlocks>, InverseError> {
    lumps
        .iter()
        .map(|lump| {
            let s = lump_blocks(func, active, lump)?;
            if limit && s.largest() > opts.max_lump {
                return Err(InverseError::LumpTooLarge {
                    func: func.name.clone(),
                    lump: lump.index,
                    first: label(func, lump.insts[0]),
                    last: label(func, lump.insts[lump.insts.len() - 1]),
                    size: s.largest(),
                    max: opts.max_lump,
                });
            }
            Ok(s)
        })
        .collect()
}

/// A builder holding copies of `func`'s parameters followed by one extra parameter per entry of
/// `extra` (type, name).
pub(crate) fn builder_with_params(
    func: &Function,
    suffix: &str,
    extra: &[(adjit_ir::Type, String)],
) -> (Builder, Vec<Value>, Vec<Value>) {
    let mut b = Builder::new(format!("{}_{suffix}", func.name));
    let mut map = Vec::with_capacity(func.n_values());
    for p in func.params() {
        let data = func.data(p);
        let v = match &data.name {
            Some(name) => b.param(data.ty, name),
            None => b.param_unnamed(data.ty),
        };
        map.push(v);
    }
    let extra_params = extra.iter().map(|(ty, name)| b.param(*ty, name)).collect();
    (b, map, extra_params)
}

/// Copy the instruction `v` of `func` into `b`, extending `map`.
pub(crate) fn copy_inst(b: &mut Builder, func: &Function, map: &mut [Value], v: Value) {
    let data = func.data(v);
    let ValueDef::Inst(inst) = &data.def else {
        unreachable!("copy_inst on a parameter")
    };
    let new = b.inst(inst.map_values(|o| map[o.index()]));
    if let Some(name) = &data.name {
        b.set_name(new, name.clone());
    }
    map[v.index()] = new;
}
