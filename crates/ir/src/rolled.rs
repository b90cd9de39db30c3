//! Rolled programs: a straight-line program kept as the loops it repeats, so that a pass can
//! work on one iteration instead of every copy.
//!
//! A [`Rolled`] program *means* its expansion ([`Rolled::expand`]): the [`Function`] with the
//! same parameters, values (numbered as there) and returns. It holds the parameters and then
//! a sequence of [`Loop`]s that covers every instruction in program order; a loop is `trips`
//! iterations of a `period`-instruction template, iteration `j` being the values `start +
//! j·period ..`, and each value operand of a template instruction follows one
//! [`Source`] rule for every `j` (the same iteration, the previous one, or a value before the
//! loop at an affine index), as the run search ([`crate::roll`]) finds them. Straight code is
//! a loop of one trip. Literals that change from iteration to iteration (data traced in) are
//! read from [`LiteralTable`]s, and the names of later iterations, when there are any, are
//! kept beside the template.
//!
//! What a rolled program costs is its templates, not its trace: the Rosenbrock sum of 10⁶
//! terms is one loop of eight instructions. [`Rolled::interpret`] evaluates it without
//! expanding (one `f64` per value), and a transform that works per template — forward mode,
//! `adjit_diff::jvp_rolled` — produces a rolled program whose expansion is the transform of
//! the expansion, bit for bit.

use crate::function::{
    result_type_with, Function, InstData, Name, Operand, Value, ValueData, ValueDef,
};
use crate::interp::InterpError;
use crate::roll::{find_runs, LiteralTable, Source};
use crate::types::Type;

/// `trips` iterations of a template of instructions (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    /// The value of iteration 0's first instruction.
    pub start: usize,
    pub trips: usize,
    /// Iteration 0's instructions, with their names.
    pub template: Vec<ValueData>,
    /// Per template position, where each value operand comes from (in text order).
    pub sources: Vec<Vec<Source>>,
    /// The literals that change from iteration to iteration.
    pub tables: Vec<LiteralTable>,
    /// The names of iterations `1..trips` (`(trips − 1)·period` entries, iteration by
    /// iteration), or empty when none of them has a name.
    pub names: Vec<Option<Name>>,
}

impl Loop {
    /// Instructions per iteration.
    pub fn period(&self) -> usize {
        self.template.len()
    }

    /// The value after the loop's last.
    pub fn end(&self) -> usize {
        self.start + self.period() * self.trips
    }

    /// The value of template position `t` in iteration `j`.
    pub fn value(&self, t: usize, j: usize) -> usize {
        self.start + j * self.period() + t
    }

    /// The value `source` reads in iteration `j`.
    pub fn source_value(&self, source: Source, j: usize) -> usize {
        match source {
            Source::Same { pos } => self.value(pos as usize, j),
            Source::Carried { init, .. } if j == 0 => init as usize,
            Source::Carried { pos, .. } => self.value(pos as usize, j - 1),
            // Wrapping: a loop built with a step past the program reads an index `verify`
            // refuses, never overflows.
            Source::Affine { base, step } => {
                i64::from(base).wrapping_add(step.wrapping_mul(j as i64)) as usize
            }
        }
    }

    /// The instruction of template position `t` in iteration `j`, with its operands and
    /// literals as the expanded program has them.
    pub fn instance(&self, t: usize, j: usize) -> InstData {
        self.instance_with(t, j, |k| self.tables[k].bits[j])
    }

    /// [`Loop::instance`] with the literals of the tables read from `table_bits` (given the
    /// table's number): a pass can try the template with other data.
    pub fn instance_with(&self, t: usize, j: usize, table_bits: impl Fn(usize) -> u64) -> InstData {
        let ValueDef::Inst(inst) = &self.template[t].def else {
            unreachable!("a template holds instructions")
        };
        let sources = &self.sources[t];
        let mut k = 0;
        let mut inst = inst.map_values(|_| {
            let v = self.source_value(sources[k], j);
            k += 1;
            Value::new(v)
        });
        for (k, table) in self.tables.iter().enumerate() {
            if table.pos as usize == t {
                set_literal(&mut inst, table.slot as usize, table_bits(k));
            }
        }
        inst
    }

    /// The name of template position `t` in iteration `j`.
    pub fn name(&self, t: usize, j: usize) -> Option<&Name> {
        match j {
            0 => self.template[t].name.as_ref(),
            _ if self.names.is_empty() => None,
            _ => self.names[(j - 1) * self.period() + t].as_ref(),
        }
    }

    /// A loop of one trip holding the instructions `values` of a program, whose first is value
    /// `start`: operands before `start` are read as invariants, the others in the iteration.
    pub fn straight(start: usize, values: &[ValueData]) -> Loop {
        let sources = values
            .iter()
            .map(|data| {
                let mut out = Vec::new();
                if let ValueDef::Inst(inst) = &data.def {
                    inst.for_each_value(|v| {
                        out.push(match v.index().checked_sub(start) {
                            Some(pos) => Source::Same { pos: pos as u32 },
                            None => Source::Affine {
                                base: v.index() as u32,
                                step: 0,
                            },
                        })
                    });
                }
                out
            })
            .collect();
        Loop {
            start,
            trips: 1,
            template: values.to_vec(),
            sources,
            tables: Vec::new(),
            names: Vec::new(),
        }
    }
}

/// Sets literal number `slot` of `inst` (counted as [`LiteralTable::slot`] counts: a float
/// `const`'s value is 0, else the literal operands in text order) to the `f64` with `bits`.
fn set_literal(inst: &mut InstData, slot: usize, bits: u64) {
    let mut k = 0;
    let mut set = |o: &mut Operand| {
        if let Operand::Const(c) = o {
            if k == slot {
                *c = f64::from_bits(bits);
            }
            k += 1;
        }
    };
    match inst {
        InstData::Const { bits: b, .. } => *b = bits,
        InstData::Binary { args, .. }
        | InstData::Fcmp { args, .. }
        | InstData::Select { args, .. } => args.iter_mut().for_each(&mut set),
        InstData::Fma { args } => args.iter_mut().for_each(&mut set),
        _ => {}
    }
}

/// Why a rolled program is not well formed ([`Rolled::verify`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RolledError {
    #[error(
        "loop {index} (v{start}), position {pos}, iteration {iteration}: operand {operand} \
         reads v{value}, which is not defined before it"
    )]
    ReadsForward {
        index: usize,
        start: usize,
        pos: usize,
        iteration: usize,
        operand: usize,
        value: i64,
    },
    #[error(
        "loop {index} (v{start}), position {pos}, iteration {iteration}: `{inst}` does not \
         fit its operands' types or its own ({ty})"
    )]
    Type {
        index: usize,
        start: usize,
        pos: usize,
        iteration: usize,
        inst: String,
        ty: Type,
    },
    #[error("loop {index} (v{start}): a literal table names position {pos}, slot {slot}, which is no literal of the template")]
    Table {
        index: usize,
        start: usize,
        pos: usize,
        slot: usize,
    },
    #[error(
        "return {index} is v{value}, past the program's {n_values} values, or not of type {ty}"
    )]
    Return {
        index: usize,
        value: usize,
        n_values: usize,
        ty: Type,
    },
}

/// A straight-line program kept as loops (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rolled {
    /// Name, parameters (with their kinds), returns and return types of the expansion; its
    /// values are the parameters only.
    header: Function,
    loops: Vec<Loop>,
    n_values: usize,
}

impl Rolled {
    /// A program with `header`'s name, parameters and returns and no instruction yet; loops
    /// are appended with [`Rolled::push`].
    ///
    /// # Panics
    /// If `header` holds instructions.
    pub fn new(header: Function) -> Rolled {
        assert_eq!(
            header.n_values(),
            header.n_params,
            "a header holds parameters only"
        );
        let n_values = header.n_params;
        Rolled {
            header,
            loops: Vec::new(),
            n_values,
        }
    }

    /// `func` (verified) with the runs [`crate::roll`] finds in it kept as loops, and the
    /// instructions between them as loops of one trip.
    pub fn from_function(func: &Function) -> Rolled {
        let mut out = Rolled::new(func.header());
        let straight_to = |out: &mut Rolled, end: usize| {
            let start = out.n_values;
            if end > start {
                out.push(Loop::straight(start, &func.values[start..end]));
            }
        };
        for run in find_runs(func).raw {
            debug_assert!(run.segments.len() == 1 && run.outer.is_none());
            straight_to(&mut out, run.start);
            let period = run.period;
            let names: Vec<Option<Name>> = func.values
                [run.start + period..run.start + period * run.trips]
                .iter()
                .map(|d| d.name.clone())
                .collect();
            out.push(Loop {
                start: run.start,
                trips: run.trips,
                template: func.values[run.start..run.start + period].to_vec(),
                sources: run.sources,
                tables: run.tables,
                names: if names.iter().any(Option::is_some) {
                    names
                } else {
                    Vec::new()
                },
            });
        }
        straight_to(&mut out, func.n_values());
        out
    }

    /// Appends `l`, which must start at the next value.
    ///
    /// # Panics
    /// If `l` does not start at [`Rolled::n_values`], a template value is not an instruction,
    /// a position does not have one rule per value operand, or its tables or names do not
    /// have one entry per iteration (what [`Loop::instance`] relies on; what the rules read is
    /// checked by [`Rolled::verify`]).
    pub fn push(&mut self, l: Loop) {
        assert_eq!(l.start, self.n_values, "a loop starts at the next value");
        assert_eq!(l.sources.len(), l.period());
        for (data, sources) in l.template.iter().zip(&l.sources) {
            let ValueDef::Inst(inst) = &data.def else {
                panic!("a template holds instructions only");
            };
            let mut operands = 0;
            inst.for_each_value(|_| operands += 1);
            assert_eq!(sources.len(), operands, "one rule per value operand");
        }
        assert!(l.tables.iter().all(|t| t.bits.len() == l.trips));
        assert!(l.names.is_empty() || l.names.len() == (l.trips - 1) * l.period());
        self.n_values = l.end();
        if l.trips > 0 && l.period() > 0 {
            self.loops.push(l);
        }
    }

    /// Sets the returned values and their types.
    pub fn set_rets(&mut self, rets: Vec<Value>, types: Vec<Type>) {
        self.header.rets = rets;
        self.header.ret_types = types;
    }

    /// Renames the program (its expansion's name).
    pub fn set_function_name(&mut self, name: String) {
        self.header.name = name;
    }

    /// The parameters, name and returns (a function of parameters only).
    pub fn header(&self) -> &Function {
        &self.header
    }

    pub fn loops(&self) -> &[Loop] {
        &self.loops
    }

    /// Values of the expansion, parameters included.
    pub fn n_values(&self) -> usize {
        self.n_values
    }

    pub fn n_params(&self) -> usize {
        self.header.n_params
    }

    /// Instructions held: the templates' (what a per-template pass costs).
    pub fn n_template_insts(&self) -> usize {
        self.loops.iter().map(Loop::period).sum()
    }

    /// The share of the program's instructions in *stages*: loops of several trips that read
    /// another loop of several trips one of its iterations per iteration (an `Affine` source
    /// stepping by that loop's period into it), the two trip counts within 3 of each other,
    /// and the loops they read so. A vectorised trace (NumPy style: each elementwise operation
    /// over the whole array, then a reduction) is stages from end to end; a loop traced term
    /// by term, or a grid row by row, has none. The usual pipeline's schedule interleaves
    /// stages into one loop before it looks for runs; held rolled they stay a loop each, with
    /// an array between every two.
    ///
    /// ```
    /// use adjit_ir::{trace::trace, Rolled};
    /// let n = 100;
    /// let staged = trace(n, |x| {
    ///     let sq: Vec<_> = x.iter().map(|&v| v * v).collect();
    ///     let shifted: Vec<_> = sq.iter().map(|&v| v + 1.0).collect();
    ///     shifted.iter().skip(1).fold(shifted[0], |s, &v| s + v)
    /// });
    /// let by_term = trace(n, |x| x.iter().skip(1).fold(x[0] * x[0], |s, &v| s + v * v));
    /// assert!(Rolled::from_function(&staged).staged_share() > 0.9);
    /// assert_eq!(Rolled::from_function(&by_term).staged_share(), 0.0);
    /// ```
    pub fn staged_share(&self) -> f64 {
        let loops = &self.loops;
        let mut staged = vec![false; loops.len()];
        for (k, l) in loops.iter().enumerate().filter(|(_, l)| l.trips > 1) {
            for &source in l.sources.iter().flatten() {
                let Source::Affine { base, step } = source else {
                    continue;
                };
                let Some((p, _, _)) = self.locate(base as usize) else {
                    continue; // a parameter
                };
                let read = &loops[p];
                if p != k
                    && read.trips > 1
                    && step == read.period() as i64
                    && read.trips.abs_diff(l.trips) <= 3
                {
                    staged[p] = true;
                    staged[k] = true;
                }
            }
        }
        let size = |l: &Loop| l.period() * l.trips;
        let all: usize = loops.iter().map(size).sum();
        let held: usize = (loops.iter().zip(&staged))
            .filter(|&(_, &s)| s)
            .map(|(l, _)| size(l))
            .sum();
        held as f64 / all.max(1) as f64
    }

    /// The loop holding value `v` (an instruction), its template position and iteration.
    pub fn locate(&self, v: usize) -> Option<(usize, usize, usize)> {
        let k = self
            .loops
            .partition_point(|l| l.start <= v)
            .checked_sub(1)?;
        let l = &self.loops[k];
        (v < l.end()).then(|| (k, (v - l.start) % l.period(), (v - l.start) / l.period()))
    }

    /// The name of value `v`.
    pub fn name_of(&self, v: usize) -> Option<&Name> {
        if v < self.header.n_params {
            return self.header.values[v].name.as_ref();
        }
        let (k, t, j) = self.locate(v)?;
        self.loops[k].name(t, j)
    }

    /// Names value `v` (an instruction).
    ///
    /// # Panics
    /// If `v` is not an instruction of the program.
    pub fn set_name(&mut self, v: usize, name: Name) {
        let (k, t, j) = self.locate(v).expect("an instruction of the program");
        let l = &mut self.loops[k];
        if j == 0 {
            l.template[t].name = Some(name);
            return;
        }
        if l.names.is_empty() {
            l.names = vec![None; (l.trips - 1) * l.period()];
        }
        let period = l.period();
        l.names[(j - 1) * period + t] = Some(name);
    }

    /// Every name of the program (parameters', templates', later iterations').
    pub fn names(&self) -> impl Iterator<Item = &Name> {
        let params = self.header.values.iter().filter_map(|d| d.name.as_ref());
        let loops = self.loops.iter().flat_map(|l| {
            let first = l.template.iter().filter_map(|d| d.name.as_ref());
            first.chain(l.names.iter().flatten())
        });
        params.chain(loops)
    }

    /// The type of value `v`.
    ///
    /// # Panics
    /// If `v` is not a value of the program.
    pub fn ty(&self, v: usize) -> Type {
        if v < self.header.n_params {
            return self.header.values[v].ty;
        }
        let (k, t, _) = self.locate(v).expect("a value of the program");
        self.loops[k].template[t].ty
    }

    /// Checks that every iteration reads values defined before it, of the types its
    /// instruction takes, that literal tables name literals, and that the returns are values
    /// of their declared types (each loop's shape is checked by [`Rolled::push`]): what the
    /// rolled transforms assume (as the flat ones assume [`crate::verify`]). Each read is
    /// checked in every iteration, without expanding; names are not checked (their
    /// uniqueness is the expansion's, [`crate::verify`]).
    pub fn verify(&self) -> Result<(), RolledError> {
        for (index, l) in self.loops.iter().enumerate() {
            let start = l.start;
            for table in &l.tables {
                let (pos, slot) = (table.pos as usize, table.slot as usize);
                let n_literals = l.template.get(pos).map_or(0, |d| match &d.def {
                    ValueDef::Inst(InstData::Const { .. }) => 1,
                    ValueDef::Inst(inst) => inst
                        .operands()
                        .iter()
                        .filter(|o| matches!(o, Operand::Const(_)))
                        .count(),
                    ValueDef::Param => 0,
                });
                if slot >= n_literals {
                    return Err(RolledError::Table {
                        index,
                        start,
                        pos,
                        slot,
                    });
                }
            }
            if l.trips == 0 {
                continue;
            }
            for pos in 0..l.period() {
                // Where a read falls is monotone in the iteration: its first and last
                // iterations (and a carried value's first) are the ones to check.
                let mut checked = [0, l.trips - 1, 1.min(l.trips - 1)];
                checked.sort_unstable();
                for j in checked {
                    for (operand, &s) in l.sources[pos].iter().enumerate() {
                        // An index that would be negative reads back as one (wrapping).
                        let value = l.source_value(s, j) as i64;
                        // Same: earlier in the iteration; Carried: a position of the loop, its
                        // first value before the loop; Affine: before the loop.
                        let fits = match s {
                            Source::Same { pos: p } => (p as usize) < pos,
                            Source::Carried { pos: p, .. } => {
                                (p as usize) < l.period() && (j > 0 || value < start as i64)
                            }
                            Source::Affine { .. } => value < start as i64,
                        };
                        if !fits || value < 0 {
                            return Err(RolledError::ReadsForward {
                                index,
                                start,
                                pos,
                                iteration: j,
                                operand,
                                value,
                            });
                        }
                    }
                }
                // Types: the instruction is checked again only where the types it reads
                // change (a read at a stride walking over values of several types).
                let ty = l.template[pos].ty;
                let mut last: Option<[Option<Type>; 3]> = None;
                for j in 0..l.trips {
                    let mut types = [None; 3];
                    for (at, &s) in types.iter_mut().zip(&l.sources[pos]) {
                        *at = Some(match s {
                            Source::Same { pos: p } => l.template[p as usize].ty,
                            Source::Carried { pos: p, .. } if j > 0 => l.template[p as usize].ty,
                            _ => self.ty(l.source_value(s, j)),
                        });
                    }
                    if last == Some(types) {
                        continue;
                    }
                    last = Some(types);
                    let inst = l.instance(pos, j);
                    if result_type_with(&inst, |v| Some(self.ty(v.index()))) != Some(ty) {
                        return Err(RolledError::Type {
                            index,
                            start,
                            pos,
                            iteration: j,
                            inst: inst.opcode_name(),
                            ty,
                        });
                    }
                }
            }
        }
        for (index, (r, &ty)) in self
            .header
            .rets
            .iter()
            .zip(&self.header.ret_types)
            .enumerate()
        {
            if r.index() >= self.n_values || self.ty(r.index()) != ty {
                return Err(RolledError::Return {
                    index,
                    value: r.index(),
                    n_values: self.n_values,
                    ty,
                });
            }
        }
        Ok(())
    }

    /// The expanded program: every iteration of every loop, in order.
    pub fn expand(&self) -> Function {
        let mut func = self.header.clone();
        func.values.reserve(self.n_values - func.n_params);
        for l in &self.loops {
            for j in 0..l.trips {
                for t in 0..l.period() {
                    func.values.push(ValueData {
                        ty: l.template[t].ty,
                        def: ValueDef::Inst(l.instance(t, j)),
                        name: l.name(t, j).cloned(),
                    });
                }
            }
        }
        func
    }

    /// Evaluates the program at `inputs` as [`crate::interpret`] evaluates its expansion,
    /// iteration by iteration, without expanding it.
    pub fn interpret(&self, inputs: &[f64]) -> Result<Vec<f64>, InterpError> {
        let name = || self.header.name.clone();
        if inputs.len() != self.n_params() {
            return Err(InterpError::InputCount {
                func: name(),
                expected: self.n_params(),
                got: inputs.len(),
            });
        }
        let mut values: Vec<f64> = Vec::with_capacity(self.n_values);
        for (data, &x) in self.header.values.iter().zip(inputs) {
            values.push(data.ty.round(x));
        }
        for l in &self.loops {
            for j in 0..l.trips {
                for t in 0..l.period() {
                    let inst = l.instance(t, j);
                    let i = values.len();
                    let mut bad = false;
                    inst.for_each_value(|v| bad |= v.index() >= i);
                    if bad {
                        return Err(InterpError::NotVerified {
                            func: name(),
                            value: i,
                        });
                    }
                    let x = crate::math::eval_inst(&inst, l.template[t].ty, |o| match o {
                        Operand::Value(v) => values[v.index()],
                        Operand::Const(c) => c,
                    });
                    values.push(x);
                }
            }
        }
        self.header
            .rets
            .iter()
            .map(|r| {
                values
                    .get(r.index())
                    .copied()
                    .ok_or(InterpError::NotVerified {
                        func: name(),
                        value: r.index(),
                    })
            })
            .collect()
    }
}

/// One line per loop: `v10..v20: 5 trips of 2 instructions`.
impl std::fmt::Display for Rolled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "@{}: {} values, {} held in {} loops",
            self.header.name,
            self.n_values,
            self.n_template_insts(),
            self.loops.len()
        )?;
        for l in &self.loops {
            write!(
                f,
                "  v{}..v{}: {} trips of {} instructions",
                l.start,
                l.end(),
                l.trips,
                l.period()
            )?;
            if !l.tables.is_empty() {
                write!(f, ", {} literal tables", l.tables.len())?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
