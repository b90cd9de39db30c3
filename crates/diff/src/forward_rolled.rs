//! Forward mode on a rolled program: each loop's template is differentiated once, and the
//! result is a rolled program whose expansion is [`crate::jvp`] of the expansion, line for
//! line (the same instructions, operands, literals and names, in the same order).
//!
//! The JVP of an iteration depends on which of its values are useful (a float output depends
//! on them) and which of the values it reads from outside the iteration have a tangent; where
//! that *key* is the same, iterations get the same lines. So a loop is cut into *segments* of
//! equal key, and each segment's template is the JVP of a small function: its parameters are
//! the values the iteration reads from outside (of kind `data` when they have no tangent),
//! its instructions the iteration's, its returns the useful ones. That function's JVP
//! ([`crate::forward`]) is the segment's template; each of its reads from outside becomes a
//! [`Source`] again: the previous iteration of the segment (a carried value, or its tangent),
//! or an affine index into what came before. Where a read stops following one rule (an
//! earlier loop was cut at another place), the segment ends there too. Literals that change
//! per iteration are checked to be copied into the derivative (differentiating at two
//! iterations and comparing); otherwise, as for loops whose later iterations carry names,
//! each iteration is its own segment. What this pass stores per value of the expansion is
//! two `u32` images and one activity byte; its derivative rules run once per segment.

use adjit_ir::roll::{LiteralTable, Source};
use adjit_ir::{
    Function, InstData, Loop, Operand, ParamKind, Rolled, Type, Value, ValueData, ValueDef,
};

use crate::activity::{activity_rolled, Activity};
use crate::forward::jvp_with_maps;

/// No image (a value without a tangent).
const NONE: u32 = u32::MAX;

/// Forward mode of a rolled program (verified expansion): `expand(jvp_rolled(r))` is
/// `jvp(expand(r))`. See the module docs.
///
/// ```
/// use adjit_ir::{trace::trace, Rolled};
/// let f = trace(1000, |x| {
///     let mut s = x[0] * 0.0;
///     for i in 0..999 {
///         let a = x[i + 1] - x[i] * x[i];
///         s = s + a * a;
///     }
///     s
/// });
/// let r = Rolled::from_function(&f);
/// let df = adjit_diff::jvp_rolled(&r);
/// assert_eq!(df.expand(), adjit_diff::jvp(&f));
/// assert!(df.n_template_insts() < 40);
/// ```
pub fn jvp_rolled(r: &Rolled) -> Rolled {
    let act = activity_rolled(r);
    let header = r.header();
    let mut params_only = header.clone();
    params_only.rets.clear();
    params_only.ret_types.clear();
    let h = jvp_with_maps(&params_only);
    let mut out = Rolled::new(h.func);
    let n = r.n_values();
    let mut images = Images {
        prim: vec![NONE; n],
        tan: vec![NONE; n],
    };
    // The tangent parameters follow the parameters, one per differentiated one.
    for (rank, p) in (header.n_params..).zip(header.differentiated_params()) {
        if act.is_active(p) {
            images.tan[p.index()] = rank as u32;
        }
    }
    for p in 0..header.n_params {
        images.prim[p] = h.map[p].index() as u32;
    }
    for l in r.loops() {
        let mut j = 0;
        while j < l.trips {
            j = segment(r, l, j, &act, &mut images, &mut out);
        }
    }
    // Returns: the copies, then the float outputs' tangents (`const 0.0` where zero).
    let mut rets: Vec<Value> = header
        .rets
        .iter()
        .map(|v| Value::new(images.prim[v.index()] as usize))
        .collect();
    let mut types = header.ret_types.clone();
    let mut zeros: Vec<(Type, usize)> = Vec::new();
    let mut zero_insts: Vec<ValueData> = Vec::new();
    let start = out.n_values();
    for (v, &ty) in header.rets.iter().zip(&header.ret_types) {
        if !ty.is_float() {
            continue;
        }
        let t = images.tan[v.index()];
        let dv = if t != NONE {
            t as usize
        } else if let Some(&(_, z)) = zeros.iter().find(|(zt, _)| *zt == ty) {
            z
        } else {
            let z = start + zero_insts.len();
            zero_insts.push(ValueData {
                ty,
                def: ValueDef::Inst(InstData::constant(ty, 0.0)),
                name: None,
            });
            zeros.push((ty, z));
            z
        };
        rets.push(Value::new(dv));
        types.push(ty);
    }
    if !zero_insts.is_empty() {
        out.push(Loop::straight(start, &zero_insts));
    }
    out.set_rets(rets, types);
    out
}

/// Where each primal value went: its copy and its tangent (`NONE`: zero), by index.
struct Images {
    prim: Vec<u32>,
    tan: Vec<u32>,
}

/// A read of a segment's template from outside the iteration: the primal operand number
/// `ext` (in the order [`Template::ext`] lists them), its copy or its tangent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Read {
    Same(u32),
    Ext { ext: usize, tangent: bool },
}

/// Where a template position's tangent is: a line of the segment's template, the tangent of
/// a value read from outside (`dy = dx`), or nowhere.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TanAt {
    Line(u32),
    Ext(usize),
    Zero,
}

/// The JVP of one iteration of a loop, as the template of a segment.
struct Template {
    /// The primal operands read from outside the iteration: template position and source.
    ext: Vec<Source>,
    /// The lines, with their operands (in text order) as reads.
    lines: Vec<ValueData>,
    reads: Vec<Vec<Read>>,
    /// Per template position of the primal, its copy's line and its tangent.
    prim: Vec<u32>,
    tan: Vec<TanAt>,
}

/// The key of iteration `j`: which positions are useful, which outside reads have a tangent.
fn key(l: &Loop, j: usize, act: &Activity, images: &Images) -> Vec<bool> {
    let mut key = Vec::with_capacity(2 * l.period());
    for t in 0..l.period() {
        key.push(act.is_useful(Value::new(l.value(t, j))));
    }
    for srcs in &l.sources {
        for &s in srcs {
            if !matches!(s, Source::Same { .. }) {
                key.push(images.tan[l.source_value(s, j)] != NONE);
            }
        }
    }
    key
}

/// Differentiates iteration `j` of `l` (see the module docs), with the literals of its tables
/// replaced by `probe` (per table) when given.
fn derive(
    r: &Rolled,
    l: &Loop,
    j: usize,
    act: &Activity,
    images: &Images,
    probe: Option<&[u64]>,
) -> Template {
    let mut tf = Function::new(format!("{}_iteration", r.header().name));
    let mut ext = Vec::new();
    for srcs in &l.sources {
        for &s in srcs {
            if !matches!(s, Source::Same { .. }) {
                let v = l.source_value(s, j);
                let p = tf.add_param(r.ty(v), None);
                if images.tan[v] == NONE {
                    tf.set_param_kind(p, ParamKind::Data);
                }
                ext.push(s);
            }
        }
    }
    let m = ext.len();
    let mut next_ext = 0;
    for t in 0..l.period() {
        let srcs = &l.sources[t];
        let mut k = 0;
        let inst = match probe {
            Some(bits) => l.instance_with(t, j, |k| bits[k]),
            None => l.instance(t, j),
        };
        let inst = inst.map_values(|_| {
            let s = srcs[k];
            k += 1;
            match s {
                Source::Same { pos } => Value::new(m + pos as usize),
                _ => {
                    next_ext += 1;
                    Value::new(next_ext - 1)
                }
            }
        });
        tf.push_inst(l.template[t].ty, inst, l.name(t, j).cloned());
    }
    for t in 0..l.period() {
        let v = Value::new(l.value(t, j));
        if act.is_useful(v) && l.template[t].ty.is_float() {
            tf.push_ret(Value::new(m + t));
        }
    }
    let g = jvp_with_maps(&tf);
    let n_params = g.func.n_params;
    // The tangent parameters follow the primal ones, one per differentiated parameter.
    let diff: Vec<usize> = tf.differentiated_params().map(Value::index).collect();
    let read = |v: Value| -> Read {
        let i = v.index();
        if i >= n_params {
            Read::Same((i - n_params) as u32)
        } else if i < m {
            Read::Ext {
                ext: i,
                tangent: false,
            }
        } else {
            Read::Ext {
                ext: diff[i - m],
                tangent: true,
            }
        }
    };
    let lines: Vec<ValueData> = g.func.values[n_params..g.n_body].to_vec();
    let reads = lines
        .iter()
        .map(|d| {
            let mut out = Vec::new();
            if let ValueDef::Inst(inst) = &d.def {
                inst.for_each_value(|v| out.push(read(v)));
            }
            out
        })
        .collect();
    let prim = (0..l.period())
        .map(|t| (g.map[m + t].index() - n_params) as u32)
        .collect();
    let tan = (0..l.period())
        .map(|t| match g.tangent[m + t] {
            None => TanAt::Zero,
            Some(v) => match read(v) {
                Read::Same(p) => TanAt::Line(p),
                Read::Ext { ext, .. } => TanAt::Ext(ext),
            },
        })
        .collect();
    Template {
        ext,
        lines,
        reads,
        prim,
        tan,
    }
}

/// The literals of an instruction in slot order (as [`LiteralTable::slot`] counts them).
fn literals(inst: &InstData) -> Vec<u64> {
    match *inst {
        InstData::Const { bits, .. } => vec![bits],
        _ => {
            let mut out = Vec::new();
            inst.for_each_operand(|o| {
                if let Operand::Const(c) = o {
                    out.push(c.to_bits());
                }
            });
            out
        }
    }
}

/// The literal tables of a segment from iteration `j0` whose template is `a`, `b` being the
/// same iteration differentiated with every table's literal replaced by `markers`: a literal
/// of the template that changes with the data must be a copy of one table's (its two values
/// are that table's entry `j0` and marker). `None` when one is not.
fn tables_of(
    l: &Loop,
    j0: usize,
    a: &Template,
    b: &Template,
    markers: &[u64],
) -> Option<Vec<(u32, u8, usize)>> {
    let mut found = Vec::new();
    for (pos, (x, y)) in a.lines.iter().zip(&b.lines).enumerate() {
        let (ValueDef::Inst(x), ValueDef::Inst(y)) = (&x.def, &y.def) else {
            continue;
        };
        let (lx, ly) = (literals(x), literals(y));
        if lx.len() != ly.len() || x.shape() != y.shape() {
            return None;
        }
        for (slot, (&p, &q)) in lx.iter().zip(&ly).enumerate() {
            if p == q {
                continue;
            }
            let k = l
                .tables
                .iter()
                .zip(markers)
                .position(|(t, &m)| t.bits[j0] == p && m == q)?;
            found.push((pos as u32, slot as u8, k));
        }
    }
    Some(found)
}

/// Literals to try a loop's template with in place of its tables' (one per table): unlike
/// iteration `j0`'s own and negative, so that a rule which folds a literal (`pow`'s
/// exponent minus one, an absolute value) gives another literal at the two, and only a copy
/// gives the marker back. `pow` branches on whether a literal base is zero, which no probe
/// can see: a table there gives no markers (every iteration its own segment).
fn markers(l: &Loop, j0: usize) -> Option<Vec<u64>> {
    l.tables
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let in_pow = matches!(
                l.template[t.pos as usize].def,
                ValueDef::Inst(InstData::Binary {
                    op: adjit_ir::BinaryOp::Pow,
                    ..
                })
            );
            if in_pow {
                return None;
            }
            let mut m = -1.718_281_828_459 - 0.037_1 * k as f64;
            while t.ty.round(m).to_bits() == t.bits[j0] {
                m -= 0.5;
            }
            Some(t.ty.round(m).to_bits())
        })
        .collect()
}

/// Emits the segment of `l` from iteration `j0` into `out` and fills the images of its
/// values; returns the iteration after it.
fn segment(
    r: &Rolled,
    l: &Loop,
    j0: usize,
    act: &Activity,
    images: &mut Images,
    out: &mut Rolled,
) -> usize {
    let tpl = derive(r, l, j0, act, images, None);
    let start = out.n_values();
    let period = tpl.lines.len();
    let fill = |images: &mut Images, j: usize| {
        let base = start + (j - j0) * period;
        for t in 0..l.period() {
            let v = l.value(t, j);
            images.prim[v] = (base + tpl.prim[t] as usize) as u32;
            images.tan[v] = match tpl.tan[t] {
                TanAt::Line(p) => (base + p as usize) as u32,
                TanAt::Ext(e) => images.tan[l.source_value(tpl.ext[e], j)],
                TanAt::Zero => NONE,
            };
        }
    };
    // Every outside read, the index it reads in iteration `j`.
    let reads_at = |images: &Images, j: usize| -> Vec<usize> {
        tpl.reads
            .iter()
            .flatten()
            .filter_map(|&rd| match rd {
                Read::Same(_) => None,
                Read::Ext { ext, tangent } => {
                    let v = l.source_value(tpl.ext[ext], j);
                    let img = if tangent {
                        images.tan[v]
                    } else {
                        images.prim[v]
                    };
                    Some(img as usize)
                }
            })
            .collect()
    };
    fill(images, j0);
    let first = reads_at(images, j0);
    let mut rules: Vec<Source> = first
        .iter()
        .map(|&base| Source::Affine {
            base: base as u32,
            step: 0,
        })
        .collect();
    let mut tables: Vec<(u32, u8, usize)> = Vec::new();
    let mut j1 = j0 + 1;
    let may_extend = l.names.is_empty() && j1 < l.trips;
    if may_extend && key(l, j1, act, images) == key(l, j0, act, images) {
        let literal_ok = l.tables.is_empty()
            || match markers(l, j0) {
                None => false,
                Some(markers) => {
                    let probe = derive(r, l, j0, act, images, Some(&markers));
                    match tables_of(l, j0, &tpl, &probe, &markers) {
                        Some(t) => {
                            tables = t;
                            true
                        }
                        None => false,
                    }
                }
            };
        if literal_ok {
            fill(images, j1);
            let second = reads_at(images, j1);
            let own = start..start + period;
            let candidate: Vec<Option<Source>> = first
                .iter()
                .zip(&second)
                .map(|(&a, &b)| {
                    if own.contains(&b) {
                        Some(Source::Carried {
                            pos: (b - start) as u32,
                            init: a as u32,
                        })
                    } else if b < start {
                        Some(Source::Affine {
                            base: a as u32,
                            step: b as i64 - a as i64,
                        })
                    } else {
                        None
                    }
                })
                .collect();
            if candidate.iter().all(Option::is_some) {
                rules = candidate.into_iter().flatten().collect();
                j1 += 1;
                let key0 = key(l, j0, act, images);
                while j1 < l.trips && key(l, j1, act, images) == key0 {
                    fill(images, j1);
                    let here = reads_at(images, j1);
                    let holds = rules.iter().zip(&here).all(|(&rule, &x)| {
                        let want = match rule {
                            Source::Carried { pos, .. } => {
                                start + (j1 - j0 - 1) * period + pos as usize
                            }
                            Source::Affine { base, step } => {
                                (base as i64 + step * (j1 - j0) as i64) as usize
                            }
                            Source::Same { .. } => unreachable!("outside reads"),
                        };
                        want == x
                    });
                    if !holds {
                        break;
                    }
                    j1 += 1;
                }
            } else {
                j1 = j0 + 1;
            }
        }
    }
    // The images of iteration j1 (if filled) are overwritten by the next segment.
    let trips = j1 - j0;
    let mut rule = rules.into_iter();
    let sources = tpl
        .reads
        .iter()
        .map(|reads| {
            reads
                .iter()
                .map(|&rd| match rd {
                    Read::Same(pos) => Source::Same { pos },
                    Read::Ext { .. } => rule.next().expect("one rule per outside read"),
                })
                .collect()
        })
        .collect();
    let tables = tables
        .into_iter()
        .map(|(pos, slot, k)| LiteralTable {
            pos,
            slot,
            ty: l.tables[k].ty,
            bits: l.tables[k].bits[j0..j1].to_vec(),
        })
        .collect();
    out.push(Loop {
        start,
        trips,
        template: tpl.lines,
        sources,
        tables,
        names: Vec::new(),
    });
    j1
}
