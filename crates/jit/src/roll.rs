//! The loops the JIT builds from repetition: the runs found by [`adjit_ir::roll`] (re-exported
//! here for the lowering), and [`Region`], how a compiled program reports each loop.

pub(crate) use adjit_ir::roll::{find_runs, find_runs_after, Across, Found, Outer, Run, Source};

/// A run of repeated instruction groups that compiled code runs as one counted loop: the
/// values `start .. start + period·trips` of the program, `trips` iterations of `period`
/// instructions (see [`crate::regions`]). A *nest* (a 2-D grid) is an outer loop of `rows`
/// rows, one every `row_period` values from `start`: each row is the inner loop (`trips` of
/// `period`) and then, in every row but the last, the straight instructions `between` (as in
/// row 0) that lead to the next row's loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: usize,
    pub period: usize,
    pub trips: usize,
    /// The values of the first iteration, in the order the loop body computes them (a loop
    /// fused from several runs interleaves parts of the program that lie apart).
    pub template: Vec<usize>,
    /// Rows of a nest; 1 for a single loop.
    pub rows: usize,
    /// Values from one row's start to the next (`period·trips` for a single loop).
    pub row_period: usize,
    /// A nest's instructions between row 0's inner loop and row 1's (empty for a single loop).
    pub between: Vec<usize>,
    /// Literal operands of the template whose value changes per iteration, each read from a
    /// table of `trips` entries (data traced into the program as literals).
    pub literal_tables: usize,
    /// Whether one-lane code runs the loop two iterations per trip, its parallel part in
    /// vector lanes ([`crate::JitOptions::pair_loops`]).
    pub paired: bool,
}

impl Region {
    /// Instructions the region covers: `rows` inner loops and the `rows − 1` gaps between.
    pub fn insts(&self) -> usize {
        self.rows * self.period * self.trips + (self.rows - 1) * self.between.len()
    }

    /// Instructions compiled for it: the inner template and the gap.
    pub fn lowered(&self) -> usize {
        self.period + self.between.len()
    }

    /// The values it covers: `start .. start + (rows − 1)·row_period + period·trips`.
    pub fn end(&self) -> usize {
        self.start + (self.rows - 1) * self.row_period + self.period * self.trips
    }
}

/// `v10..v20, 5 trips of 2 instructions`; a nest: `v10802..v98799, 98 rows × 98 trips of 9
/// instructions, 8 between rows`.
impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}..v{}, ", self.start, self.end())?;
        if self.rows > 1 {
            write!(f, "{} rows × ", self.rows)?;
        }
        write!(f, "{} trips of {} instructions", self.trips, self.period)?;
        if self.rows > 1 {
            write!(f, ", {} between rows", self.between.len())?;
        }
        match self.literal_tables {
            0 => {}
            1 => write!(f, ", 1 literal table")?,
            n => write!(f, ", {n} literal tables")?,
        }
        if self.paired {
            write!(f, ", paired")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_ir::{BinaryOp, Builder, Function, Type, Value};

    /// Σ (1 − x_i)² + 100 (x_{i+1} − x_i²)², one term after the other.
    fn rosenbrock(n: usize) -> Function {
        let mut b = Builder::new("rosenbrock");
        let x: Vec<Value> = (0..n)
            .map(|i| b.param(Type::F64, &format!("x{i}")))
            .collect();
        let mut acc = None;
        for i in 0..n - 1 {
            let a = b.binary(BinaryOp::Sub, 1.0, x[i]);
            let sq = b.mul(x[i], x[i]);
            let c = b.sub(x[i + 1], sq);
            let c2 = b.mul(c, c);
            let t = b.fma(c2, 100.0, acc.map_or(0.0.into(), adjit_ir::Operand::from));
            acc = Some(b.fma(a, a, t));
        }
        b.finish(&[acc.expect("n > 1")])
    }

    #[test]
    fn rosenbrock_rolls_after_its_first_term() {
        let f = rosenbrock(100);
        let runs = find_runs(&f).runs;
        assert_eq!(runs.len(), 1, "{runs:?}");
        let run = &runs[0];
        assert_eq!(run.period, 6);
        // The first term starts the sum from the literal 0, so a run holds from its last
        // instruction on (acc_i, then term i + 1, carrying a_i and t_i); the run starts at
        // the second term instead, which carries only the sum, up to the term before the last
        // (whose sum is returned).
        assert_eq!(run.start, 100 + 6);
        assert_eq!(run.trips, 97);
        assert!(run.sources[4]
            .iter()
            .any(|s| matches!(s, Source::Carried { pos: 5, .. })));
        let carried = run.sources.iter().flatten();
        let carried = carried.filter(|s| matches!(s, Source::Carried { .. }));
        assert_eq!(carried.count(), 1);
        // x_i and x_{i+1} are parameters at stride 1 (from x_1 and x_2 on).
        assert!(run.sources[0].contains(&Source::Affine { base: 1, step: 1 }));
        assert!(run.sources[2].contains(&Source::Affine { base: 2, step: 1 }));
    }

    /// `f`'s first output at `x` rolled, with `mutate` applied to its runs before lowering,
    /// and the interpreter's.
    fn rolled_with(f: &Function, x: &[f64], mutate: Option<fn(&mut [Run])>) -> (f64, f64) {
        let want = adjit_ir::interpret(f, x).expect("interprets")[0];
        crate::pipeline::MUTATE_RUNS.with(|m| m.set(mutate));
        let opts = crate::JitOptions {
            roll_above: 0,
            ..crate::JitOptions::default()
        };
        let code = crate::compile(f, &opts).expect("compiles");
        crate::pipeline::MUTATE_RUNS.with(|m| m.set(None));
        let mut y = vec![0.0; code.n_outputs()];
        code.call(x, &mut y).expect("lengths match");
        (y[0], want)
    }

    /// The rolled Rosenbrock's value, with `mutate` applied to its runs before lowering.
    fn rosenbrock_with(mutate: Option<fn(&mut [Run])>) -> (f64, f64) {
        let x: Vec<f64> = (0..50).map(|i| 0.5 + 0.03 * i as f64).collect();
        rolled_with(&rosenbrock(50), &x, mutate)
    }

    /// Σ (y_i − (a·x_i + b))² with the data points x_i, y_i as literals, as a trace of a
    /// least-squares fit bakes them in.
    fn least_squares(n: usize) -> Function {
        let mut b = Builder::new("lsq");
        let (a, c) = (b.param(Type::F64, "a"), b.param(Type::F64, "b"));
        let mut acc: adjit_ir::Operand = 0.0.into();
        for i in 0..n {
            let x = 0.1 + 0.37 * i as f64;
            let y = 1.0 + (i as f64).sqrt();
            let m = b.fma(a, x, c);
            let r = b.binary(BinaryOp::Sub, y, m);
            acc = b.fma(r, r, acc).into();
        }
        let acc = acc.as_value().expect("n > 0");
        b.finish(&[acc])
    }

    /// The rolled least-squares sum at (a, b) = (0.7, −0.2), with `mutate` applied to its
    /// runs, and the interpreter's.
    fn least_squares_with(mutate: Option<fn(&mut [Run])>) -> (f64, f64) {
        rolled_with(&least_squares(40), &[0.7, -0.2], mutate)
    }

    #[test]
    fn data_literals_roll_through_tables() {
        let f = least_squares(40);
        let runs = find_runs(&f).runs;
        assert_eq!(runs.len(), 1, "{runs:?}");
        let run = &runs[0];
        // The first term starts the sum from the literal 0 and the last one is returned:
        // the run holds the 38 between.
        assert_eq!((run.start, run.period, run.trips), (2 + 3, 3, 38));
        // x_i and y_i change per iteration; nothing else is a literal.
        let slots: Vec<(u32, u8)> = run.tables.iter().map(|t| (t.pos, t.slot)).collect();
        assert_eq!(slots.len(), 2, "{slots:?}");
        let x = run.tables.iter().find(|t| t.bits[0] == 0.47f64.to_bits());
        assert!(x.is_some(), "x_1 = 0.47 starts a table: {:?}", run.tables);
        let (got, want) = least_squares_with(None);
        assert_eq!(got.to_bits(), want.to_bits());
    }

    /// A table read at the wrong iteration, or a varying literal taken as fixed, gives
    /// another number: the comparisons with the interpreter would catch either.
    #[test]
    fn a_shifted_or_dropped_table_changes_the_result() {
        fn reverse_table(runs: &mut [Run]) {
            runs[0].tables[0].bits.reverse();
        }
        fn drop_tables(runs: &mut [Run]) {
            runs[0].tables.clear();
        }
        let (good, want) = least_squares_with(None);
        assert_eq!(good.to_bits(), want.to_bits());
        for mutate in [reverse_table as fn(&mut [Run]), drop_tables] {
            let (got, want) = least_squares_with(Some(mutate));
            assert_ne!(got.to_bits(), want.to_bits());
        }
    }

    #[test]
    fn the_rolled_loop_computes_the_straight_line_bits() {
        let (got, want) = rosenbrock_with(None);
        assert_eq!(got.to_bits(), want.to_bits());
    }

    /// The comparisons of rolled code with the interpreter would catch a wrong affine index
    /// or a carried value that is dropped: each gives another number.
    #[test]
    fn a_broken_index_or_a_dropped_carry_changes_the_result() {
        fn shift_index(runs: &mut [Run]) {
            for src in runs.iter_mut().flat_map(|r| r.sources.iter_mut().flatten()) {
                if let Source::Affine { step, .. } = src {
                    if *step == 1 {
                        *step = 2;
                        return;
                    }
                }
            }
            panic!("no affine operand");
        }
        fn drop_carry(runs: &mut [Run]) {
            for src in runs.iter_mut().flat_map(|r| r.sources.iter_mut().flatten()) {
                if let Source::Carried { init, .. } = *src {
                    *src = Source::Affine {
                        base: init,
                        step: 0,
                    };
                    return;
                }
            }
            panic!("no carried operand");
        }
        for mutate in [shift_index as fn(&mut [Run]), drop_carry] {
            let (got, want) = rosenbrock_with(Some(mutate));
            assert_ne!(got.to_bits(), want.to_bits());
        }
    }

    /// A sum whose every 7th term differs rolls as one run of 7-term iterations, not as one
    /// short loop per stretch between exceptions.
    #[test]
    fn a_periodic_exception_rolls_into_a_longer_period() {
        let n = 700;
        let mut b = Builder::new("every7");
        let x: Vec<Value> = (0..n)
            .map(|i| b.param(Type::F64, &format!("x{i}")))
            .collect();
        let mut acc = b.mul(x[0], 1.0);
        for (i, &xi) in x.iter().enumerate().skip(1) {
            // Six instructions a term, so six ordinary terms already make a run.
            let t = b.fma(xi, xi, 1.0);
            let u = if i % 7 == 0 {
                b.unary(adjit_ir::UnaryOp::Sin, t)
            } else {
                b.mul(t, xi)
            };
            let v = b.sub(u, 0.5);
            let w = b.mul(v, v);
            let z = b.mul(w, 0.25);
            acc = b.add(acc, z);
        }
        let f = b.finish(&[acc]);
        let runs = find_runs(&f).runs;
        let shape: Vec<_> = runs.iter().map(|r| (r.start, r.period, r.trips)).collect();
        assert_eq!(runs.len(), 1, "{shape:?}");
        assert_eq!(runs[0].period, 42);
        assert!(runs[0].insts() * 10 >= f.n_insts() * 9);
    }

    /// A grid of `rows` rows of `cols` cells: per row a head (carrying a total from the
    /// previous row), the interior cells (a sum carried within the row), a tail.
    fn grid(rows: usize, cols: usize) -> Function {
        let mut b = Builder::new("grid");
        let x: Vec<Value> = (0..(rows + 1) * cols)
            .map(|i| b.param(Type::F64, &format!("x{i}")))
            .collect();
        let mut total = b.mul(x[0], 0.5);
        let mut outs = Vec::new();
        for r in 0..rows {
            let at = |c: usize| r * cols + c;
            let head = b.fma(x[at(0)], 1.5, total);
            let mut acc = head;
            for c in 1..cols - 1 {
                let t = b.sub(x[at(c)], x[at(c - 1)]);
                let t = b.mul(t, x[at(c) + cols]);
                acc = b.add(acc, t);
                outs.push(t);
            }
            let tail = b.mul(acc, x[at(cols - 1)]);
            outs.push(tail);
            total = b.add(total, tail);
        }
        outs.push(total);
        b.finish(&outs)
    }

    /// The rolled grid's outputs and the interpreter's, with `mutate` applied to its runs.
    fn grid_with(mutate: Option<fn(&mut [Run])>) -> (Vec<f64>, Vec<f64>) {
        let f = grid(8, 24);
        let x: Vec<f64> = (0..f.n_params).map(|i| 0.5 + 0.01 * i as f64).collect();
        let want = adjit_ir::interpret(&f, &x).expect("interprets");
        let opts = crate::JitOptions {
            roll_above: 0,
            schedule: false,
            ..crate::JitOptions::default()
        };
        let (_, regions) = crate::rolled_program(&f, &opts);
        assert!(regions.iter().any(|r| r.rows > 2), "{regions:?}");
        crate::pipeline::MUTATE_RUNS.with(|m| m.set(mutate));
        let code = crate::compile(&f, &opts).expect("compiles");
        crate::pipeline::MUTATE_RUNS.with(|m| m.set(None));
        let mut y = vec![0.0; f.rets.len()];
        code.call(&x, &mut y).expect("lengths match");
        (y, want)
    }

    #[test]
    fn the_nested_loops_compute_the_straight_line_bits() {
        let (got, want) = grid_with(None);
        let bits = |v: &[f64]| v.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want));
    }

    /// The comparisons of nested code with the interpreter would catch an outer stride off by
    /// one or a value carried across rows that is dropped: each gives other numbers.
    #[test]
    fn a_broken_row_stride_or_a_dropped_row_carry_changes_the_result() {
        fn rules(runs: &mut [Run]) -> impl Iterator<Item = &mut Across> {
            runs.iter_mut()
                .filter_map(|r| r.outer.as_deref_mut())
                .flat_map(|o| {
                    o.inner
                        .iter_mut()
                        .flatten()
                        .flatten()
                        .chain(o.gap.iter_mut().flatten())
                })
        }
        fn shift_row(runs: &mut [Run]) {
            for rule in rules(runs) {
                if let Across::Affine { step, .. } = rule {
                    if *step != 0 {
                        *step += 1;
                        return;
                    }
                }
            }
            panic!("no moving read across rows");
        }
        fn drop_row_carry(runs: &mut [Run]) {
            for rule in rules(runs) {
                if let Across::PrevRow { init, .. } = *rule {
                    *rule = Across::Affine {
                        base: init,
                        step: 0,
                    };
                    return;
                }
            }
            panic!("no value carried across rows");
        }
        for mutate in [shift_row as fn(&mut [Run]), drop_row_carry] {
            let (got, want) = grid_with(Some(mutate));
            assert!(
                got.iter()
                    .zip(&want)
                    .any(|(a, b)| a.to_bits() != b.to_bits()),
                "the mutation changed nothing"
            );
        }
    }

    #[test]
    fn irregular_programs_have_no_runs() {
        let f = adjit_ir::random::random_function(3, &Default::default());
        assert!(find_runs(&f).runs.is_empty());
    }
}
