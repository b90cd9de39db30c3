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

use adjit_ir::roll::Source;
use adjit_ir::{Builder, Loop, Name, Rolled, Value, ValueData, ValueDef};

use crate::activity::{activity_rolled, Activity};
use crate::forward::{could_be_tangent_name, jvp_with_maps, tangent_name};
use crate::rules::NameTable;
use crate::segments;

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
    forward(r, 1, format!("{}_jvp", r.header().name))
}

/// Forward mode with `k` directions of a rolled program: `expand(jvp_vector_rolled(r, k))` is
/// `jvp_vector(expand(r), k)`.
pub fn jvp_vector_rolled(r: &Rolled, k: usize) -> Rolled {
    forward(r, k, format!("{}_jvp{k}", r.header().name))
}

fn forward(r: &Rolled, k: usize, name: String) -> Rolled {
    let act = activity_rolled(r);
    let header = r.header();
    // Every name of the program is taken; derived names are given in program order, as
    // `jvp` gives them.
    let mut names = NameTable::from_names(
        r.names()
            .filter(|n| could_be_tangent_name(n.as_str()))
            .cloned(),
    );
    let mut b = Builder::new(name);
    for p in header.params() {
        b.copy_param(header, p);
    }
    for dir in 0..k {
        for p in header.differentiated_params() {
            let data = header.data(p);
            match &data.name {
                Some(n) => {
                    let name = names.fresh(tangent_name(n, k, dir));
                    b.param(data.ty, &name)
                }
                None => b.param_unnamed(data.ty),
            };
        }
    }
    let mut out = Rolled::new(b.finish(&[]));
    let n = r.n_values();
    let mut images = Images {
        prim: vec![NONE; n],
        tan: vec![vec![NONE; n]; k],
    };
    // The tangent parameters follow the parameters: per direction, one per differentiated
    // parameter.
    let n_diff = header.differentiated_params().count();
    for (rank, p) in header.differentiated_params().enumerate() {
        if act.is_active(p) {
            for (dir, tan) in images.tan.iter_mut().enumerate() {
                tan[p.index()] = (header.n_params + dir * n_diff + rank) as u32;
            }
        }
    }
    for p in 0..header.n_params {
        images.prim[p] = p as u32;
    }
    for l in r.loops() {
        let mut j = 0;
        while j < l.trips {
            j = segment(r, l, j, &act, &mut images, &mut names, &mut out);
        }
    }
    // Returns: the copies, then the float outputs' tangents (`const 0.0` where zero).
    let mut rets: Vec<Value> = header
        .rets
        .iter()
        .map(|v| Value::new(images.prim[v.index()] as usize))
        .collect();
    let mut types = header.ret_types.clone();
    let mut zeros = segments::Zeros::new(out.n_values());
    for tan in &images.tan {
        for (v, &ty) in header.rets.iter().zip(&header.ret_types) {
            if !ty.is_float() {
                continue;
            }
            let t = tan[v.index()];
            let dv = if t != NONE { t as usize } else { zeros.get(ty) };
            rets.push(Value::new(dv));
            types.push(ty);
        }
    }
    zeros.finish(&mut out);
    out.set_rets(rets, types);
    out
}

/// Where each primal value went: its copy and, per direction, its tangent (`NONE`: zero), by
/// index.
struct Images {
    prim: Vec<u32>,
    tan: Vec<Vec<u32>>,
}

/// A read of a segment's template from outside the iteration: the primal operand number
/// `ext` (in the order [`Template::ext`] lists them), its copy or its tangent in a direction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Read {
    Same(u32),
    Ext { ext: usize, tangent: Option<usize> },
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
    /// Per template position of the primal, its copy's line, and per direction its tangent.
    prim: Vec<u32>,
    tan: Vec<Vec<TanAt>>,
}

/// The key of iteration `j`: which positions are useful, which outside reads have a tangent.
fn key<'a>(
    l: &'a Loop,
    j: usize,
    act: &'a Activity,
    images: &'a Images,
) -> impl Iterator<Item = bool> + 'a {
    let useful = (0..l.period()).map(move |t| act.is_useful(Value::new(l.value(t, j))));
    // Every direction has a tangent where the first has (active values).
    let tangents = l
        .sources
        .iter()
        .flatten()
        .filter(|s| !matches!(s, Source::Same { .. }))
        .map(move |&s| images.tan[0][l.source_value(s, j)] != NONE);
    useful.chain(tangents)
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
    // One parameter per outside read (a value read twice is two parameters: tangents are
    // read, never accumulated, so nothing depends on which reads meet).
    let ext: Vec<Source> = l
        .sources
        .iter()
        .flatten()
        .copied()
        .filter(|s| !matches!(s, Source::Same { .. }))
        .collect();
    let params: Vec<usize> = ext.iter().map(|&s| l.source_value(s, j)).collect();
    let m = ext.len();
    let param_of: Vec<u32> = (0..m as u32).collect();
    let carries = |v: usize| images.tan[0][v] != NONE;
    let mut tf = segments::iteration(r, l, j, probe, &params, carries, &param_of);
    for t in 0..l.period() {
        let v = Value::new(l.value(t, j));
        if act.is_useful(v) && l.template[t].ty.is_float() {
            tf.push_ret(Value::new(m + t));
        }
    }
    let k = images.tan.len();
    let g = jvp_with_maps(&tf, k);
    let n_params = g.func.n_params;
    // The tangent parameters follow the primal ones: per direction, one per differentiated
    // parameter.
    let diff: Vec<usize> = tf.differentiated_params().map(Value::index).collect();
    let read = |v: Value| -> Read {
        let i = v.index();
        if i >= n_params {
            Read::Same((i - n_params) as u32)
        } else if i < m {
            Read::Ext {
                ext: i,
                tangent: None,
            }
        } else {
            let at = i - m;
            Read::Ext {
                ext: diff[at % diff.len()],
                tangent: Some(at / diff.len()),
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
    let tan = g
        .tangents
        .iter()
        .map(|tangent| {
            (0..l.period())
                .map(|t| match tangent[m + t] {
                    None => TanAt::Zero,
                    Some(v) => match read(v) {
                        Read::Same(p) => TanAt::Line(p),
                        Read::Ext { ext, .. } => TanAt::Ext(ext),
                    },
                })
                .collect()
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

/// Emits the segment of `l` from iteration `j0` into `out` and fills the images of its
/// values; returns the iteration after it.
fn segment(
    r: &Rolled,
    l: &Loop,
    j0: usize,
    act: &Activity,
    images: &mut Images,
    names: &mut NameTable,
    out: &mut Rolled,
) -> usize {
    let mut tpl = derive(r, l, j0, act, images, None);
    // Names: a copy keeps its primal's; a tangent line made for a named value (not an alias
    // of an operand's tangent) gets `d` and the name, from the program's table.
    let mut is_copy = vec![false; tpl.lines.len()];
    for &p in &tpl.prim {
        is_copy[p as usize] = true;
    }
    for (line, copy) in tpl.lines.iter_mut().zip(is_copy) {
        if !copy {
            line.name = None;
        }
    }
    // The lines named after a position's name in every iteration: its copy, and its tangent
    // where made for it, direction by direction (`None`: the copy).
    let k = tpl.tan.len();
    let mut named_lines: Vec<(usize, u32, Option<usize>)> = Vec::new();
    for t in 0..l.period() {
        named_lines.push((t, tpl.prim[t], None));
        for (dir, tan) in tpl.tan.iter().enumerate() {
            if let TanAt::Line(p) = tan[t] {
                if p > tpl.prim[t] {
                    named_lines.push((t, p, Some(dir)));
                }
            }
        }
    }
    let name_iteration =
        |names: &mut NameTable, j: usize, mut set: Box<dyn FnMut(u32, Name) + '_>| {
            for &(t, p, dir) in &named_lines {
                if let Some(n) = l.name(t, j) {
                    let name = match dir {
                        Some(dir) => names.fresh(tangent_name(n, k, dir)),
                        None => n.clone(),
                    };
                    set(p, name);
                }
            }
        };
    {
        let lines = &mut tpl.lines;
        name_iteration(
            names,
            j0,
            Box::new(|p, name| lines[p as usize].name = Some(name)),
        );
    }
    let start = out.n_values();
    let period = tpl.lines.len();
    let fill = |images: &mut Images, j: usize| {
        let base = start + (j - j0) * period;
        for t in 0..l.period() {
            let v = l.value(t, j);
            images.prim[v] = (base + tpl.prim[t] as usize) as u32;
            for (tan, at) in images.tan.iter_mut().zip(&tpl.tan) {
                tan[v] = match at[t] {
                    TanAt::Line(p) => (base + p as usize) as u32,
                    TanAt::Ext(e) => tan[l.source_value(tpl.ext[e], j)],
                    TanAt::Zero => NONE,
                };
            }
        }
    };
    // Every outside read, the index it reads in iteration `j`, into `out` (cleared).
    let reads_at = |images: &Images, j: usize, out: &mut Vec<usize>| {
        out.clear();
        out.extend(tpl.reads.iter().flatten().filter_map(|&rd| match rd {
            Read::Same(_) => None,
            Read::Ext { ext, tangent } => {
                let v = l.source_value(tpl.ext[ext], j);
                let img = match tangent {
                    Some(dir) => images.tan[dir][v],
                    None => images.prim[v],
                };
                Some(img as usize)
            }
        }));
    };
    fill(images, j0);
    let mut first = Vec::new();
    reads_at(images, j0, &mut first);
    let mut rules = segments::fixed(&first);
    let mut tables: Vec<(u32, u8, usize)> = Vec::new();
    let mut j1 = j0 + 1;
    let key0: Vec<bool> = key(l, j0, act, images).collect();
    let same_key = |images: &Images, j: usize| key(l, j, act, images).eq(key0.iter().copied());
    if j1 < l.trips && same_key(images, j1) {
        let literal_ok = l.tables.is_empty()
            || match segments::markers(l, j0) {
                None => false,
                Some(markers) => {
                    let probe = derive(r, l, j0, act, images, Some(&markers));
                    match segments::table_slots(l, j0, &tpl.lines, &probe.lines, &markers) {
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
            let mut here = Vec::new();
            reads_at(images, j1, &mut here);
            if let Some(found) = segments::rules(&first, &here, start, period) {
                rules = found;
                j1 += 1;
                while j1 < l.trips && same_key(images, j1) {
                    fill(images, j1);
                    reads_at(images, j1, &mut here);
                    if !segments::hold(&rules, &here, start, period, j1 - j0) {
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
    // The names of the later iterations, in program order.
    let mut later_names: Vec<Option<Name>> = Vec::new();
    if (j0 + 1..j1).any(|j| segments::named(l, j)) {
        later_names = vec![None; (trips - 1) * period];
        for j in j0 + 1..j1 {
            let row = (j - j0 - 1) * period;
            let slots = &mut later_names[row..row + period];
            name_iteration(names, j, Box::new(|p, name| slots[p as usize] = Some(name)));
        }
    }
    let sources = segments::sources(
        &tpl.reads,
        |rd| match rd {
            Read::Same(pos) => Some(pos),
            Read::Ext { .. } => None,
        },
        rules,
    );
    let tables = segments::tables(l, tables, trips, |i| j0 + i);
    out.push(Loop {
        start,
        trips,
        template: tpl.lines,
        sources,
        tables,
        names: later_names,
    });
    j1
}
