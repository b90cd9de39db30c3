//! Reverse mode on a rolled program: the derivative of a loop is a loop that runs backwards,
//! and its expansion is [`crate::vjp`] of the expansion, line for line.
//!
//! The VJP's forward sweep is the program's loops copied (their indices moved past the
//! cotangent parameters). Its adjoint sweep visits the loops last to first and each loop's
//! iterations last to first; iterations with the same *key* get the same adjoint lines, so a
//! loop becomes *segments* that run its iterations backwards. The key of an iteration: which
//! of the values it reads from outside are one value (`x[j]` read twice), which of those and
//! of its own values already have an adjoint when the sweep reaches it (their contributions
//! from later code start a sum, or accumulate onto one), and which are active. A segment's
//! template is the adjoint sweep of [`crate::vjp`] of a small function: its parameters are
//! the distinct values the iteration reads from outside (of kind `data` when not varied), its
//! instructions the iteration's, and its returns the values that arrive with an adjoint,
//! whose cotangents stand for those adjoints. Its reads then become [`Source`]s again: an
//! adjoint one iteration of the segment earlier is carried (a running sum into a loop
//! invariant's adjoint, `x[j+1]`'s adjoint finished one iteration later), forward values are
//! read at affine indices, running backwards (negative steps). What this pass stores per
//! value of the expansion is one `u32` adjoint image and an activity byte.

use adjit_ir::roll::Source;
use adjit_ir::{
    BinaryOp, Builder, InstData, Loop, Name, Operand, Rolled, Value, ValueData, ValueDef,
};

use crate::activity::{activity_rolled, Activity};
use crate::reverse::{adjoint_name, could_be_adjoint_name, vjp_with_maps};
use crate::rules::NameTable;
use crate::segments;

/// No adjoint (zero).
const NONE: u32 = u32::MAX;

/// Reverse mode of a rolled program (verified expansion): `expand(vjp_rolled(r))` is
/// `vjp(expand(r))`. See the module docs.
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
/// let g = adjit_diff::vjp_rolled(&Rolled::from_function(&f));
/// assert_eq!(g.expand(), adjit_diff::vjp(&f));
/// assert!(g.n_template_insts() < 60);
/// ```
pub fn vjp_rolled(r: &Rolled) -> Rolled {
    let act = activity_rolled(r);
    let header = r.header();
    let np = header.n_params;
    let mut names = NameTable::from_names(
        r.names()
            .filter(|n| could_be_adjoint_name(n.as_str()))
            .cloned(),
    );
    // Parameters, then one cotangent per float output.
    let mut b = Builder::new(format!("{}_vjp", header.name));
    for p in header.params() {
        b.copy_param(header, p);
    }
    let mut seeds: Vec<(usize, usize)> = Vec::new();
    for &ret in &header.rets {
        let ty = r.ty(ret.index());
        if ty.is_float() {
            let seed = match r.name_of(ret.index()) {
                Some(n) => {
                    let name = names.fresh(adjoint_name(n));
                    b.param(ty, &name)
                }
                None => b.param_unnamed(ty),
            };
            seeds.push((ret.index(), seed.index()));
        }
    }
    let n_seeds = seeds.len();
    let shift = |v: usize| if v < np { v } else { v + n_seeds };
    let mut out = Rolled::new(b.finish(&[]));
    // The forward sweep: every loop, moved past the cotangents.
    for l in r.loops() {
        let mut copy = l.clone();
        copy.start = shift(l.start);
        for srcs in &mut copy.sources {
            for s in srcs {
                match s {
                    Source::Carried { init, .. } => *init = shift(*init as usize) as u32,
                    Source::Affine { base, .. } => *base = shift(*base as usize) as u32,
                    Source::Same { .. } => {}
                }
            }
        }
        out.push(copy);
    }
    let forward_end = out.n_values();
    // Seeds: the first cotangent of a value is its adjoint, a second one is added.
    let mut adj = vec![NONE; r.n_values()];
    let mut adds: Vec<ValueData> = Vec::new();
    for &(ret, seed) in &seeds {
        if !act.is_active(Value::new(ret)) {
            continue;
        }
        adj[ret] = match adj[ret] {
            NONE => seed as u32,
            acc => {
                let v = forward_end + adds.len();
                adds.push(ValueData {
                    ty: r.ty(ret),
                    def: ValueDef::Inst(InstData::Binary {
                        op: BinaryOp::Add,
                        args: [
                            Operand::Value(Value::new(acc as usize)),
                            Operand::Value(Value::new(seed)),
                        ],
                    }),
                    name: None,
                });
                v as u32
            }
        };
    }
    if !adds.is_empty() {
        out.push(Loop::straight(forward_end, &adds));
    }
    let mut returned = vec![false; r.n_values()];
    for v in &header.rets {
        returned[v.index()] = true;
    }
    let mut sweep = Sweep {
        r,
        names,
        returned,
        forward_end,
        act: &act,
        adj,
        shift: &shift,
        key: Vec::new(),
        values: Vec::new(),
        advanced: Vec::new(),
    };
    for l in r.loops().iter().rev() {
        let mut j = l.trips;
        while j > 0 {
            j = sweep.segment(l, j - 1, &mut out);
        }
    }
    let Sweep {
        adj,
        mut names,
        returned,
        ..
    } = sweep;
    // Returns: the copies, then the differentiated parameters' adjoints.
    let mut rets: Vec<Value> = header
        .rets
        .iter()
        .map(|v| Value::new(shift(v.index())))
        .collect();
    let mut types = header.ret_types.clone();
    let mut zeros = segments::Zeros::new(out.n_values());
    for p in header.differentiated_params() {
        let ty = header.ty(p);
        let a = adj[p.index()];
        let dp = if a != NONE {
            let a = a as usize;
            if let Some(n) = header.name_of(p) {
                if a >= forward_end && out.name_of(a).is_none() {
                    let remember = returned[p.index()];
                    out.set_name(a, names.fresh_with(adjoint_name(n), remember));
                }
            }
            a
        } else {
            zeros.get(ty)
        };
        rets.push(Value::new(dp));
        types.push(ty);
    }
    zeros.finish(&mut out);
    out.set_rets(rets, types);
    out
}

/// Where a read of a segment's adjoint lines goes, per iteration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Read {
    /// A line of the segment's template.
    Line(u32),
    /// The forward sweep's copy of outside value `k` (in [`Template::ext`] order).
    FwdExt(usize),
    /// The forward sweep's copy of template position `t`.
    FwdPos(usize),
    /// The adjoint of outside value `k` when the sweep reaches the iteration.
    InExt(usize),
    /// The adjoint of template position `t` when the sweep reaches the iteration.
    InPos(usize),
}

/// The adjoint lines of one iteration, as the template of a segment.
struct Template {
    /// Per distinct value read from outside, one operand reading it (template position, its
    /// number among the position's value operands).
    ext: Vec<(usize, usize)>,
    lines: Vec<ValueData>,
    reads: Vec<Vec<Read>>,
    /// Per outside value, its adjoint after the iteration (`None`: still zero).
    ext_adjoint: Vec<Option<Read>>,
    /// Per template position, its final adjoint.
    pos_adjoint: Vec<Option<Read>>,
}

/// The state of the adjoint sweep.
struct Sweep<'a, F: Fn(usize) -> usize> {
    r: &'a Rolled,
    /// The names taken, and per primal value whether it is returned (its adjoint's name is
    /// remembered).
    names: NameTable,
    returned: Vec<bool>,
    /// Where the adjoint sweep starts in the derived program.
    forward_end: usize,
    act: &'a Activity,
    /// Per primal value, its adjoint so far (an index of the VJP), or [`NONE`].
    adj: Vec<u32>,
    /// Primal value → its forward-sweep copy.
    shift: &'a F,
    /// Buffers of the per-iteration work (a key, an iteration's outside values, the adjoints
    /// an iteration sets): one allocation for the sweep, not per iteration.
    key: Vec<u32>,
    values: Vec<usize>,
    advanced: Vec<(usize, u32)>,
}

/// The distinct outside values iteration `j` of `l` reads: per operand (template position,
/// value operand) that is not of the same iteration, the number of its value among them, and
/// the values in order of first read.
fn outside(l: &Loop, j: usize) -> (Vec<u32>, Vec<usize>) {
    let (mut which, mut values) = (Vec::new(), Vec::new());
    outside_into(l, j, &mut which, &mut values);
    (which, values)
}

/// [`outside`] into buffers (cleared first): the sweep asks for every iteration's.
fn outside_into(l: &Loop, j: usize, which: &mut Vec<u32>, values: &mut Vec<usize>) {
    which.clear();
    values.clear();
    for srcs in &l.sources {
        for &s in srcs {
            if matches!(s, Source::Same { .. }) {
                continue;
            }
            let v = l.source_value(s, j);
            let k = match values.iter().position(|&u| u == v) {
                Some(k) => k,
                None => {
                    values.push(v);
                    values.len() - 1
                }
            };
            which.push(k as u32);
        }
    }
}

impl<F: Fn(usize) -> usize> Sweep<'_, F> {
    /// The key of iteration `j` (see the module docs), in `self.key`.
    fn key(&mut self, l: &Loop, j: usize) -> &[u32] {
        let mut key = std::mem::take(&mut self.key);
        let mut values = std::mem::take(&mut self.values);
        outside_into(l, j, &mut key, &mut values);
        for &v in &values {
            let v = Value::new(v);
            key.push(
                u32::from(self.act.is_varied(v)) | u32::from(self.adj[v.index()] != NONE) << 1,
            );
        }
        for t in 0..l.period() {
            let v = Value::new(l.value(t, j));
            key.push(
                u32::from(self.act.is_active(v)) | u32::from(self.adj[v.index()] != NONE) << 1,
            );
        }
        self.key = key;
        self.values = values;
        &self.key
    }

    /// The adjoint lines of iteration `j` of `l`, with the tables' literals replaced by
    /// `probe` when given.
    fn derive(&self, l: &Loop, j: usize, probe: Option<&[u64]>) -> Template {
        let r = self.r;
        let (which, values) = outside(l, j);
        let m = values.len();
        let act = self.act;
        let carries = |v: usize| act.is_varied(Value::new(v));
        let mut tf = segments::iteration(r, l, j, probe, &values, carries, &which);
        // One outside read of each distinct value: (template position, value operand).
        let mut ext = vec![(0, 0); m];
        let mut n_outside = 0;
        for (t, sources) in l.sources.iter().enumerate() {
            for (k, s) in sources.iter().enumerate() {
                if !matches!(s, Source::Same { .. }) {
                    ext[which[n_outside] as usize] = (t, k);
                    n_outside += 1;
                }
            }
        }
        // Returns: the values that arrive with an adjoint, own ones first.
        let mut seeded: Vec<Read> = Vec::new();
        for t in 0..l.period() {
            if self.adj[l.value(t, j)] != NONE {
                tf.push_ret(Value::new(m + t));
                seeded.push(Read::InPos(t));
            }
        }
        for (k, &v) in values.iter().enumerate() {
            if self.adj[v] != NONE {
                tf.push_ret(Value::new(k));
                seeded.push(Read::InExt(k));
            }
        }
        let g = vjp_with_maps(&tf);
        let n_params = g.func.n_params;
        // Forward copies back to template positions.
        let mut copy_of = vec![usize::MAX; g.forward_end];
        for t in 0..l.period() {
            copy_of[g.map[m + t].index()] = t;
        }
        let read = |v: usize| -> Read {
            if v >= g.forward_end {
                Read::Line((v - g.forward_end) as u32)
            } else if v < m {
                Read::FwdExt(v)
            } else if v < n_params {
                seeded[v - m]
            } else {
                Read::FwdPos(copy_of[v])
            }
        };
        let lines: Vec<ValueData> = g.func.values[g.forward_end..g.n_body].to_vec();
        let reads = lines
            .iter()
            .map(|d| {
                let mut out = Vec::new();
                if let ValueDef::Inst(inst) = &d.def {
                    inst.for_each_value(|v| out.push(read(v.index())));
                }
                out
            })
            .collect();
        let ext_adjoint = (0..m)
            .map(|k| match g.adjoint[k] {
                NONE => None,
                a => Some(read(a as usize)),
            })
            .collect();
        let pos_adjoint = (0..l.period())
            .map(|t| match g.adjoint[m + t] {
                NONE => None,
                a => Some(read(a as usize)),
            })
            .collect();
        Template {
            ext,
            lines,
            reads,
            ext_adjoint,
            pos_adjoint,
        }
    }

    /// The index a read of iteration `j` (the segment's `i`-th, lines from `base`) reads.
    fn resolve(&self, l: &Loop, tpl: &Template, j: usize, base: usize, read: Read) -> usize {
        let ext_value = |k: usize| {
            let (t, n) = tpl.ext[k];
            l.source_value(l.sources[t][n], j)
        };
        match read {
            Read::Line(p) => base + p as usize,
            Read::FwdExt(k) => (self.shift)(ext_value(k)),
            Read::FwdPos(t) => (self.shift)(l.value(t, j)),
            Read::InExt(k) => self.adj[ext_value(k)] as usize,
            Read::InPos(t) => self.adj[l.value(t, j)] as usize,
        }
    }

    /// Names the adjoints of the named values of the segment's iterations (`j0` down, `trips`
    /// of them) as `vjp` does when its sweep reaches each (last to first): the value holding
    /// the adjoint, if made by the adjoint sweep and still unnamed, gets `n_b` from the
    /// program's table. Called once the segment's extent is known and its iterations'
    /// adjoints are in `adj` (a position's adjoint when the sweep reached it does not change
    /// afterwards). Returns the names of the segment's lines, iteration by iteration (empty
    /// when there are none); names of values before the segment go into `out`.
    fn name_segment(
        &mut self,
        l: &Loop,
        j0: usize,
        trips: usize,
        tpl: &Template,
        start: usize,
        out: &mut Rolled,
    ) -> Vec<Option<Name>> {
        let period = tpl.lines.len();
        let mut names: Vec<Option<Name>> = Vec::new();
        for i in 0..trips {
            let j = j0 - i;
            let base = start + i * period;
            for t in (0..l.period()).rev() {
                let (Some(n), Some(rd)) = (l.name(t, j), tpl.pos_adjoint[t]) else {
                    continue;
                };
                let remember = self.returned[l.value(t, j)];
                let a = self.resolve(l, tpl, j, base, rd);
                if a >= start {
                    if names.is_empty() {
                        names = vec![None; trips * period];
                    }
                    let slot = &mut names[a - start];
                    if slot.is_none() {
                        *slot = Some(self.names.fresh_with(adjoint_name(n), remember));
                    }
                } else if a >= self.forward_end && out.name_of(a).is_none() {
                    out.set_name(a, self.names.fresh_with(adjoint_name(n), remember));
                }
            }
        }
        names
    }

    /// The outside reads of iteration `j`'s lines, in operand order, into `out` (cleared).
    fn reads_at(&self, l: &Loop, tpl: &Template, j: usize, base: usize, out: &mut Vec<usize>) {
        out.clear();
        out.extend(
            tpl.reads
                .iter()
                .flatten()
                .filter(|rd| !matches!(rd, Read::Line(_)))
                .map(|&rd| self.resolve(l, tpl, j, base, rd)),
        );
    }

    /// The adjoints after iteration `j`: those of the values it read from outside (all read
    /// before any is written).
    fn advance(&mut self, l: &Loop, tpl: &Template, j: usize, base: usize) {
        let mut new = std::mem::take(&mut self.advanced);
        new.clear();
        new.extend(tpl.ext_adjoint.iter().enumerate().filter_map(|(k, a)| {
            let (t, n) = tpl.ext[k];
            let v = l.source_value(l.sources[t][n], j);
            a.map(|rd| (v, self.resolve(l, tpl, j, base, rd) as u32))
        }));
        for &(v, a) in &new {
            self.adj[v] = a;
        }
        self.advanced = new;
    }

    /// Emits the segment of `l` from iteration `j0` down into `out`; returns the iteration
    /// after its last (the next one down, plus one), 0 when it reaches the first.
    fn segment(&mut self, l: &Loop, j0: usize, out: &mut Rolled) -> usize {
        let key0 = self.key(l, j0).to_vec();
        let mut tpl = self.derive(l, j0, None);
        let start = out.n_values();
        // The template's names are given again, in the program's table (below).
        for line in &mut tpl.lines {
            line.name = None;
        }
        let period = tpl.lines.len();
        // Which literals are the data's: probed before the sweep moves past iteration j0.
        let table_slots = if l.tables.is_empty() {
            Some(Vec::new())
        } else {
            segments::markers(l, j0).and_then(|markers| {
                let probe = self.derive(l, j0, Some(&markers));
                segments::table_slots(l, j0, &tpl.lines, &probe.lines, &markers)
            })
        };
        let mut first = Vec::new();
        self.reads_at(l, &tpl, j0, start, &mut first);
        self.advance(l, &tpl, j0, start);
        let mut rules = segments::fixed(&first);
        let mut tables = Vec::new();
        let mut i = 1;
        let extends = |s: &mut Self, i: usize| i <= j0 && s.key(l, j0 - i) == key0;
        if let Some(slots) = table_slots {
            if extends(self, 1) {
                let mut here = Vec::new();
                self.reads_at(l, &tpl, j0 - 1, start + period, &mut here);
                if let Some(found) = segments::rules(&first, &here, start, period) {
                    rules = found;
                    tables = slots;
                    self.advance(l, &tpl, j0 - 1, start + period);
                    i = 2;
                    while extends(self, i) {
                        let (j, base) = (j0 - i, start + i * period);
                        self.reads_at(l, &tpl, j, base, &mut here);
                        if !segments::hold(&rules, &here, start, period, i) {
                            break;
                        }
                        self.advance(l, &tpl, j, base);
                        i += 1;
                    }
                }
            }
        }
        let trips = i;
        let mut names = self.name_segment(l, j0, trips, &tpl, start, out);
        if !names.is_empty() {
            let later = names.split_off(period);
            for (line, name) in tpl.lines.iter_mut().zip(names) {
                line.name = name;
            }
            names = later;
        }
        let sources = segments::sources(
            &tpl.reads,
            |rd| match rd {
                Read::Line(pos) => Some(pos),
                _ => None,
            },
            rules,
        );
        let tables = segments::tables(l, tables, trips, |i| j0 - i);
        out.push(Loop {
            start,
            trips,
            template: tpl.lines,
            sources,
            tables,
            names,
        });
        j0 + 1 - trips
    }
}
