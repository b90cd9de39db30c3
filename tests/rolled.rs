//! Loop rolling through every derivative mode: derivative programs of repeated templates
//! (forward sweeps, reverse sweeps running the iterations backwards, second order) are rolled
//! by the JIT, and their results equal the straight-line code and the interpreter bit for bit
//! (NaN = NaN); the derivatives agree with central differences.

use adjit::{Compiled, Engine, Hessian, Jacobian, JitOptions, Mode, Options};
use adjit_ir::random::{random_repeated, RepeatOptions, Rng};
use adjit_ir::Function;

fn rolled() -> Options {
    Options {
        jit: JitOptions {
            roll_above: 0,
            ..JitOptions::default()
        },
        ..Options::default()
    }
}

/// [`rolled`], and kept rolled from derivation on ([`Options::rolled`]).
fn rolled_through() -> Options {
    Options {
        rolled: adjit::KeepRolled::Always,
        ..rolled()
    }
}

thread_local! {
    /// Programs [`every_mode_equal`] compiled rolled through the pipeline.
    static ROLLED_THROUGH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn unrolled() -> Options {
    Options {
        jit: JitOptions {
            roll: false,
            ..JitOptions::default()
        },
        ..Options::default()
    }
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

fn program(seed: u64) -> Function {
    random_repeated(
        seed,
        &RepeatOptions {
            template: 3 + (seed % 6) as usize,
            trips: 12 + (seed as usize * 5) % 40,
            carried: 1 + (seed % 2) as usize,
            interrupt: [0, 6][(seed % 2) as usize],
            // Every third program has literals that change per iteration (literal tables).
            data: seed % 3 == 2,
            ..RepeatOptions::default()
        },
    )
}

/// `func` with only its last output (the sum over the iterations).
fn scalar(func: &Function) -> Function {
    let mut f = func.clone();
    let last = *f.rets.last().expect("has outputs");
    f.rets = vec![last];
    f.ret_types = vec![f.ty(last)];
    f
}

/// The six modes of `full` (and of `sum`, its scalar version for the gradient and HVP): each
/// compiled rolled, unrolled and on the interpreter, called at one random point of `seed`, and
/// the three results held equal bit for bit (NaN = NaN). Returns the regions the JIT makes of
/// each mode's derived program.
fn every_mode_equal(
    full: &Function,
    sum: &Function,
    seed: u64,
) -> Vec<(Mode, Vec<adjit_jit::Region>)> {
    let mut regions = Vec::new();
    for (func, mode) in [
        (full, Mode::Primal),
        (full, Mode::Jvp),
        (full, Mode::JvpVector(3)),
        (full, Mode::Vjp),
        (sum, Mode::Gradient),
        (sum, Mode::Hvp),
    ] {
        let interp =
            Compiled::with_options(func, mode, &Options::on(Engine::Interp)).expect("derives");
        regions.push((mode, adjit_jit::regions(interp.ir(), &rolled().jit)));
        let a = Compiled::with_options(func, mode, &rolled()).expect("compiles");
        let b = Compiled::with_options(func, mode, &unrolled()).expect("compiles");
        let x = Rng::new(seed).vector(a.layout().n_inputs(), -2.0, 2.0);
        let mut ya = vec![0.0; a.layout().n_outputs()];
        let mut yb = ya.clone();
        let mut yi = ya.clone();
        a.call(&x, &mut ya).expect("calls");
        b.call(&x, &mut yb).expect("calls");
        interp.call(&x, &mut yi).expect("calls");
        assert!(same(&ya, &yb), "seed {seed} {mode:?}: rolled != unrolled");
        // Derived per template and compiled from the templates (`Options::rolled`).
        let c = Compiled::with_options(func, mode, &rolled_through()).expect("compiles");
        let mut yc = ya.clone();
        c.call(&x, &mut yc).expect("calls");
        assert!(
            same(&yc, &yi),
            "seed {seed} {mode:?}: rolled through the pipeline != interpreter"
        );
        if c.rolled().is_some() {
            ROLLED_THROUGH.with(|n| n.set(n.get() + 1));
        }
        assert!(
            same(&ya, &yi),
            "seed {seed} {mode:?}: rolled != interpreter"
        );
    }
    regions
}

#[test]
fn every_mode_rolled_equals_unrolled_and_the_interpreter() {
    let mut rolled_programs = 0;
    let mut tabled_programs = 0;
    for seed in 0..12u64 {
        let full = program(seed);
        let sum = scalar(&full);
        let regions = every_mode_equal(&full, &sum, seed);
        rolled_programs += regions.iter().filter(|(_, r)| !r.is_empty()).count();
        tabled_programs += regions
            .iter()
            .filter(|(_, r)| r.iter().any(|r| r.literal_tables > 0))
            .count();
    }
    assert!(
        rolled_programs >= 48,
        "only {rolled_programs} of 72 derivative programs rolled"
    );
    // Every mode of the programs with enough repetition.
    let through = ROLLED_THROUGH.with(|n| n.get());
    assert!(
        through >= 60,
        "only {through} of 72 programs rolled through the pipeline"
    );
    // Seeds 2, 5, 8 and 11 have data literals: their derived programs read them from tables.
    assert!(
        tabled_programs >= 12,
        "only {tabled_programs} of 24 derivative programs with data rolled a literal table"
    );
}

#[test]
fn rolled_jacobians_and_hessians_equal_unrolled_and_match_differences() {
    for seed in 30..33u64 {
        let func = program(seed);
        let n = func.n_params;
        let m = func.n_outputs();
        let x = Rng::new(seed).vector(n, -1.5, 1.5);
        let ja = Jacobian::with_options(&func, &rolled()).expect("compiles");
        let jb = Jacobian::with_options(&func, &unrolled()).expect("compiles");
        let (mut ya, mut yb) = (vec![0.0; m], vec![0.0; m]);
        let (mut a, mut b) = (vec![0.0; m * n], vec![0.0; m * n]);
        ja.call(&x, &mut ya, &mut a).expect("calls");
        jb.call(&x, &mut yb, &mut b).expect("calls");
        assert!(
            same(&a, &b) && same(&ya, &yb),
            "seed {seed}: Jacobians differ"
        );
        // Central differences of the primal, column by column.
        let primal = Compiled::with_options(&func, Mode::Primal, &rolled()).expect("compiles");
        let h = 1e-6;
        for j in 0..n {
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[j] += h;
            xm[j] -= h;
            let (mut fp, mut fm) = (vec![0.0; m], vec![0.0; m]);
            primal.call(&xp, &mut fp).expect("calls");
            primal.call(&xm, &mut fm).expect("calls");
            for i in 0..m {
                let fd = (fp[i] - fm[i]) / (2.0 * h);
                let jij = a[i * n + j];
                assert!(
                    (fd - jij).abs() <= 1e-5 * (1.0 + jij.abs()),
                    "seed {seed}: J[{i}][{j}] = {jij}, differences {fd}"
                );
            }
        }
    }
    // Hessians of a one-output program: the last output (the sum over iterations).
    for seed in 40..42u64 {
        let func = scalar(&program(seed));
        let n = func.n_params;
        let x = Rng::new(seed).vector(n, -1.5, 1.5);
        let ha = Hessian::with_options(&func, &rolled()).expect("compiles");
        let hb = Hessian::with_options(&func, &unrolled()).expect("compiles");
        let (mut ga, mut gb) = (vec![0.0; n], vec![0.0; n]);
        let (mut a, mut b) = (vec![0.0; n * n], vec![0.0; n * n]);
        let fa = ha.call(&x, &mut ga, &mut a).expect("calls");
        let fb = hb.call(&x, &mut gb, &mut b).expect("calls");
        assert!(
            fa.to_bits() == fb.to_bits() && same(&ga, &gb) && same(&a, &b),
            "seed {seed}: Hessians differ"
        );
    }
}

/// A square chain `y_i = x_i + ½ sin(x_{i+1})` (`y_{n-1} = x_{n-1}`), term by term: its
/// Jacobian is unit upper bidiagonal, so every inverse mode applies.
fn square_chain(n: usize) -> Function {
    let types = vec![adjit::Type::F64; n];
    adjit::ir::trace::trace_multi("chain", &types, |x| {
        let mut ys: Vec<_> = (0..n - 1).map(|i| x[i] + x[i + 1].sin() * 0.5).collect();
        ys.push(x[n - 1] * 1.0);
        ys
    })
}

#[test]
fn sparse_checkpointed_and_inverse_modes_rolled_equal_unrolled() {
    use adjit::checkpoint::CheckpointedGradient;
    use adjit::inverse::CompiledInverse;
    use adjit::{InverseMode, SparseHessian, SparseJacobian, Strategy};

    let func = program(50);
    let n = func.n_params;
    let x = Rng::new(50).vector(n, -1.5, 1.5);
    let (sa, sb) = (
        SparseJacobian::with_options(&func, &rolled()).expect("compiles"),
        SparseJacobian::with_options(&func, &unrolled()).expect("compiles"),
    );
    let (mut va, mut vb) = (vec![0.0; sa.nnz()], vec![0.0; sb.nnz()]);
    sa.eval(&x, &mut va).expect("calls");
    sb.eval(&x, &mut vb).expect("calls");
    assert!(same(&va, &vb), "sparse Jacobians differ");

    let sum = scalar(&func);
    let (ha, hb) = (
        SparseHessian::with_options(&sum, &rolled()).expect("compiles"),
        SparseHessian::with_options(&sum, &unrolled()).expect("compiles"),
    );
    let (mut la, mut lb) = (vec![0.0; ha.nnz()], vec![0.0; hb.nnz()]);
    ha.eval(&x, &mut la).expect("calls");
    hb.eval(&x, &mut lb).expect("calls");
    assert!(same(&la, &lb), "sparse Hessians differ");
    for strategy in [Strategy::Tape, "checkpoint:3".parse().expect("a strategy")] {
        let (ga, gb) = (
            CheckpointedGradient::with_options(&sum, strategy, &rolled()).expect("compiles"),
            CheckpointedGradient::with_options(&sum, strategy, &unrolled()).expect("compiles"),
        );
        let (mut ya, mut yb, mut da, mut db) = ([0.0], [0.0], vec![0.0; n], vec![0.0; n]);
        ga.call(&x, &[1.0], &mut ya, &mut da).expect("calls");
        gb.call(&x, &[1.0], &mut yb, &mut db).expect("calls");
        assert!(
            same(&ya, &yb) && same(&da, &db),
            "{strategy:?}: gradients differ"
        );
    }

    let chain = square_chain(40);
    let x = Rng::new(51).vector(40, -1.0, 1.0);
    let v = Rng::new(52).vector(40, -1.0, 1.0);
    for mode in [
        InverseMode::Reverse,
        InverseMode::Forward,
        InverseMode::Dense,
    ] {
        let (ia, ib) = (
            CompiledInverse::with_options(&chain, mode, &rolled()).expect("compiles"),
            CompiledInverse::with_options(&chain, mode, &unrolled()).expect("compiles"),
        );
        let (mut ya, mut yb, mut oa, mut ob) =
            (vec![0.0; 40], vec![0.0; 40], vec![0.0; 40], vec![0.0; 40]);
        ia.call(&x, &v, &mut ya, &mut oa).expect("calls");
        ib.call(&x, &v, &mut yb, &mut ob).expect("calls");
        assert!(
            same(&ya, &yb) && same(&oa, &ob),
            "{mode:?}: inverse products differ"
        );
    }
}

/// A 2-D grid traced row by row: per row a head carrying a total from the previous row, the
/// interior cells (a five-point-like stencil with a sum carried within the row, one output
/// each), a tail adding the row's sum to the total. With `source`, every cell subtracts a
/// literal of its own and every head and tail adds one (data sampled on the grid).
fn grid(rows: usize, cols: usize, source: bool) -> Function {
    use adjit_ir::{Builder, Type, UnaryOp};
    let mut b = Builder::new("grid");
    let x: Vec<_> = (0..(rows + 2) * cols)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    // Never 0 or ±1, which `simplify` would fold away in some cells and not in others.
    let f = |r: usize, c: usize| ((r * 7 + c * 3) % 23) as f64 * 0.125 + 0.0625;
    let mut total = b.mul(x[0], 0.5);
    let mut outs = Vec::new();
    for r in 1..=rows {
        let at = |c: usize| r * cols + c;
        let head = b.fma(x[at(0)], 1.5, total);
        let head = if source { b.add(head, f(r, 0)) } else { head };
        let mut acc = head;
        for c in 1..cols - 1 {
            let lap = b.mul(x[at(c)], 4.0);
            let lap = b.sub(lap, x[at(c) - cols]);
            let lap = b.sub(lap, x[at(c) + cols]);
            let lap = b.sub(lap, x[at(c - 1)]);
            let lap = b.sub(lap, x[at(c + 1)]);
            let e = b.unary(UnaryOp::Sin, x[at(c)]);
            let t = b.fma(e, -0.5, lap);
            let t = if source { b.sub(t, f(r, c)) } else { t };
            acc = b.add(acc, t);
            outs.push(t);
        }
        let tail = b.mul(acc, x[at(cols - 1)]);
        let tail = if source {
            b.fma(tail, 0.5, f(r, cols - 1))
        } else {
            tail
        };
        outs.push(tail);
        total = b.add(total, tail);
    }
    outs.push(total);
    b.finish(&outs)
}

/// The rows of a grid nest (one outer loop around each row's loop) in the primal and in
/// derivative programs, and every mode's results equal the straight-line code and the
/// interpreter bit for bit.
#[test]
fn grids_nest_in_every_mode_and_equal_unrolled_and_the_interpreter() {
    for source in [false, true] {
        let full = grid(9, 14, source);
        let sum = scalar(&full);
        let nested: Vec<Mode> = every_mode_equal(&full, &sum, 5)
            .into_iter()
            .filter(|(_, regions)| {
                // With a source term the nest reads it from tables.
                let tables = |r: &adjit_jit::Region| !source || r.literal_tables > 0;
                regions.iter().any(|r| r.rows > 1 && tables(r))
            })
            .map(|(mode, _)| mode)
            .collect();
        // A reverse sweep reads the previous row's partial adjoints at a stride: row by row.
        assert!(
            nested.contains(&Mode::Primal) && nested.contains(&Mode::Jvp),
            "source {source}: nested: {nested:?}"
        );
    }
}

/// `adjit dump --stage rolled` of a grid large enough to be searched by default: the nest is
/// one loop line (`rows × trips`), the coverage counts every row and the instructions between
/// rows, and the lowered count is what the loops' listings show plus the straight rest.
#[test]
fn the_rolled_dump_shows_a_nest_with_its_rows_and_coverage() {
    let func = grid(60, 60, false);
    let text =
        adjit::dump(&func, adjit::Stage::Rolled, &adjit::DumpOptions::default()).expect("dumps");
    let header = text.lines().next().expect("a header line");
    let number_before = |what: &str| -> usize {
        let at = header.find(what).expect("the header names it");
        let digits: String = header[..at]
            .trim_end()
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .chars()
            .rev()
            .collect::<String>()
            .parse()
            .expect("a number")
    };
    let n = number_before(" instructions;");
    let covered = number_before(" (");
    let lowered = number_before(" instructions are lowered");
    let regions = adjit_jit::regions(&func, &JitOptions::default());
    let nest = regions
        .iter()
        .find(|r| r.rows > 1)
        .expect("the grid's rows nest");
    assert!(
        text.contains(&format!("{} rows × {} trips", nest.rows, nest.trips)),
        "{header}"
    );
    assert_eq!(covered, regions.iter().map(|r| r.insts()).sum::<usize>());
    assert!(covered <= n && 10 * covered >= 9 * n, "{header}");
    let listed = text.lines().filter(|l| l.starts_with("  ")).count();
    let in_loops: usize = regions.iter().map(|r| r.lowered()).sum();
    assert_eq!(
        listed, in_loops,
        "every loop lists its template and its gap"
    );
    assert_eq!(lowered, n - covered + in_loops);
}

/// A logistic regression over `n` samples, the samples' features `a_i`, `b_i` and labels
/// `y_i ∈ {0, 1}` as literals; the loss is −Σ y_i·log p_i + (1 − y_i)·log(1 − p_i). As a
/// vectorised trace writes it (`per_sample` false): each stage over every sample in turn; as
/// a loop over the samples traces (`per_sample` true): one sample's 13 instructions after the
/// other's.
fn logistic(n: usize, per_sample: bool) -> Function {
    use adjit_ir::{BinaryOp, Builder, Type, UnaryOp, Value};
    let mut b = Builder::new("logistic");
    let w: Vec<_> = (0..3)
        .map(|i| b.param(Type::F64, &format!("w{i}")))
        .collect();
    let data = |i: usize| {
        let a = ((i * 37) % 101) as f64 / 50.0 - 1.0;
        let c = ((i * 53) % 97) as f64 / 48.0 - 1.0;
        (
            a,
            c,
            f64::from(u8::from(a - 0.5 * c + 0.1 * ((i % 5) as f64) > 0.0)),
        )
    };
    // The stages, each applied to every sample's previous values.
    type Stage = fn(&mut Builder, &[Value], (f64, f64, f64), Value) -> Value;
    let stages: [Stage; 11] = [
        |b, w, (a, _, _), _| b.fma(w[0], a, w[2]),
        |b, w, (_, c, _), z| b.fma(w[1], c, z),
        |b, _, _, z| b.unary(UnaryOp::Neg, z),
        |b, _, _, e| b.unary(UnaryOp::Exp, e),
        |b, _, _, e| b.add(e, 1.0),
        |b, _, _, d| b.div(1.0, d),
        |b, _, _, p| b.unary(UnaryOp::Log, p),
        // From here each stage reads the stage before the previous one's value too (below).
        |b, _, _, p| b.binary(BinaryOp::Sub, 1.0, p),
        |b, _, _, q| b.unary(UnaryOp::Log, q),
        |b, _, (_, _, y), lp| b.mul(y, lp),
        |b, _, (_, _, y), lq| b.mul(1.0 - y, lq),
    ];
    // Per sample: its values by stage (p is stage 5, log p stage 6, log(1 − p) stage 8).
    let mut values: Vec<Vec<Value>> = vec![Vec::with_capacity(stages.len()); n];
    let apply = |b: &mut Builder, values: &mut [Vec<Value>], i: usize, k: usize| {
        let vs = &values[i];
        let arg = match k {
            0 => w[0],
            7 => vs[5],
            9 => vs[6],
            10 => vs[8],
            _ => vs[k - 1],
        };
        let v = stages[k](b, &w, data(i), arg);
        values[i].push(v);
    };
    let mut sum = None;
    let mut accumulate = |b: &mut Builder, u: Value, v: Value| {
        let t = b.add(u, v);
        sum = Some(match sum {
            None => t,
            Some(s) => b.add(s, t),
        });
    };
    if per_sample {
        for i in 0..n {
            for k in 0..stages.len() {
                apply(&mut b, &mut values, i, k);
            }
            accumulate(&mut b, values[i][9], values[i][10]);
        }
    } else {
        for k in 0..stages.len() {
            for i in 0..n {
                apply(&mut b, &mut values, i, k);
            }
        }
        for vs in &values {
            accumulate(&mut b, vs[9], vs[10]);
        }
    }
    let loss = b.unary(UnaryOp::Neg, sum.expect("samples"));
    b.finish(&[loss])
}

/// Labels of 0 and 1 are data, not identities: `simplify` keeps the stages that multiply by
/// them whole (see `adjit_diff::simplify`), so every derivative program of the logistic loss
/// rolls whole, traced stage by stage or sample by sample (a period of 13 instructions),
/// equal to the straight-line code and the interpreter, and the gradient agrees with central
/// differences.
#[test]
fn labels_of_zero_and_one_roll_in_every_mode() {
    for per_sample in [false, true] {
        labels_roll(&logistic(300, per_sample));
    }
}

fn labels_roll(f: &Function) {
    let f = f.clone();
    let regions = every_mode_equal(&f, &f, 9);
    for (mode, regions) in &regions {
        let derived =
            Compiled::with_options(&f, *mode, &Options::on(Engine::Interp)).expect("derives");
        let n = derived.ir().n_insts();
        let covered: usize = regions.iter().map(|r| r.insts()).sum();
        assert!(
            covered * 10 >= n * 9,
            "{mode:?}: loops cover {covered} of {n} instructions"
        );
    }
    let g = adjit::Gradient::with_options(&f, &rolled()).expect("compiles");
    let x = [0.4, -0.7, 0.1];
    let mut grad = [0.0; 3];
    let value = g.call(&x, &mut grad).expect("calls");
    assert!(value.is_finite());
    let loss = |x: &[f64]| adjit_ir::interpret(&f, x).expect("interprets")[0];
    for k in 0..3 {
        let h = 1e-6;
        let (mut lo, mut hi) = (x, x);
        lo[k] -= h;
        hi[k] += h;
        let fd = (loss(&hi) - loss(&lo)) / (2.0 * h);
        assert!(
            (fd - grad[k]).abs() <= 1e-6 * (1.0 + fd.abs()),
            "d/dw{k}: {} against {fd}",
            grad[k]
        );
    }
}

/// A traced gradient kept rolled from the trace on (`Options::rolled`): the same numbers as
/// the usual pipeline, one fused loop of a few hundred bytes whatever the length, and the IR it runs is
/// the rolled program (its expansion made only when asked for).
#[test]
fn a_gradient_rolled_through_the_pipeline_equals_the_usual_one() {
    let mut sizes = Vec::new();
    for n in [3_000, 9_000] {
        let f = adjit_testkit::chained_rosenbrock(n);
        let opts = Options {
            rolled: adjit::KeepRolled::Always,
            ..Options::default()
        };
        let g = adjit::Gradient::with_options(&f, &opts).expect("compiles");
        let usual = adjit::Gradient::new(&f).expect("compiles");
        let held = g.compiled().rolled().expect("rolled through");
        assert!(held.n_template_insts() < 60, "{}", held.n_template_insts());
        let code = g.compiled().code().expect("native");
        // Forward and reverse sweep in one loop, without a tape.
        assert_eq!(code.loops(), 1, "{code:?}");
        assert!(code.workspace_bytes() <= 16, "{code:?}");
        sizes.push(code.code_bytes());
        let x: Vec<f64> = (0..n).map(|i| 0.5 + 0.01 * (i % 13) as f64).collect();
        let (mut ga, mut gb) = (vec![0.0; n], vec![0.0; n]);
        let ya = g.call(&x, &mut ga).expect("calls");
        let yb = usual.call(&x, &mut gb).expect("calls");
        assert!(same(&[ya], &[yb]) && same(&ga, &gb), "n = {n}");
        assert_eq!(g.compiled().ir().n_params, n);
    }
    assert_eq!(sizes[0], sizes[1], "code bytes at n = 3,000 and 9,000");
}

/// By default (`KeepRolled::Auto`) a program is kept rolled from `KeepRolled::AUTO_ABOVE`
/// instructions on, and compiled as usual below; `Never` keeps the usual pipeline.
#[test]
fn large_programs_are_kept_rolled_by_default() {
    let rosenbrock = adjit_testkit::chained_rosenbrock;
    let small = rosenbrock(3_000);
    assert!(adjit::Gradient::new(&small)
        .unwrap()
        .compiled()
        .rolled()
        .is_none());
    // (Seven or eight instructions a term: just past the size.)
    let n = adjit::KeepRolled::AUTO_ABOVE / 7 + 2;
    let large = rosenbrock(n);
    assert!(large.n_insts() >= adjit::KeepRolled::AUTO_ABOVE);
    let g = adjit::Gradient::new(&large).unwrap();
    assert!(g.compiled().rolled().is_some());
    let x: Vec<f64> = (0..n).map(|i| 0.5 + 0.01 * (i % 13) as f64).collect();
    let mut grad = vec![0.0; n];
    let y = g.call(&x, &mut grad).unwrap();
    // The interpreter of the rolled program (itself checked against the flat one).
    let held = g.compiled().rolled().unwrap();
    let want = held.interpret(&x).unwrap();
    assert!(same(&[y], &want[..1]) && same(&grad, &want[1..]));
    let never = Options {
        rolled: adjit::KeepRolled::Never,
        ..Options::default()
    };
    let usual = adjit::Compiled::with_options(&small, Mode::Gradient, &never).unwrap();
    assert!(usual.rolled().is_none());
    // Its object files too are compiled from the templates (the program is never derived
    // flat): the object of the rolled gradient itself, a few KB of loops, with the usual
    // symbol and buffers (the JIT's AOT suites run such objects on x86-64 and AArch64 against
    // the interpreter).
    let mut rolled =
        adjit::diff::vjp_rolled_seeded_with_one(&adjit::ir::Rolled::from_function(&large));
    rolled.set_function_name(format!("{}_grad", large.name));
    let symbol = adjit_jit::default_symbol(&rolled.header().name);
    for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        let obj = adjit::compile_object(&large, Mode::Gradient, Some(target)).unwrap();
        let opts = adjit_jit::JitOptions::default();
        let want = adjit_jit::compile_object_rolled(&rolled, target, &opts, &symbol).unwrap();
        assert!(
            obj.bytes == want.bytes,
            "{target}: not the rolled gradient's object"
        );
        assert!(
            obj.code_bytes < 16 * 1024,
            "{target}: {} bytes",
            obj.code_bytes
        );
        assert_eq!((obj.n_inputs, obj.n_outputs), (n, n + 1));
        assert_eq!(obj.symbol, symbol);
    }
}

#[test]
fn vectorised_traces_take_the_usual_road_by_default() {
    // Past the size where a loop traced term by term is kept rolled, stages are not: the
    // usual pipeline interleaves them into one loop, the rolled road keeps a loop per stage.
    let n = adjit::KeepRolled::AUTO_ABOVE / 8 + 2;
    let f = adjit_testkit::staged_rosenbrock(n);
    assert!(f.n_insts() >= adjit::KeepRolled::AUTO_ABOVE);
    assert!(f.n_insts() < adjit::KeepRolled::STAGED_ABOVE);
    let held = adjit::ir::Rolled::from_function(&f);
    assert!(held.staged_share() > 0.99, "{}", held.staged_share());
    let by_default = adjit::Gradient::new(&f).unwrap();
    assert!(by_default.compiled().rolled().is_none());
    assert_eq!(by_default.compiled().code().unwrap().loops(), 1);
    let always = Options {
        rolled: adjit::KeepRolled::Always,
        ..Options::default()
    };
    let kept = adjit::Compiled::with_options(&f, Mode::Gradient, &always).unwrap();
    assert!(kept.rolled().is_some());
    // Either road gives the same bits.
    let x: Vec<f64> = (0..n).map(|i| 0.5 + 0.01 * (i % 13) as f64).collect();
    let mut grad = vec![0.0; n];
    let y = by_default.call(&x, &mut grad).unwrap();
    let mut out = vec![0.0; n + 1];
    kept.call(&x, &mut out).unwrap();
    assert!(same(&[y], &out[..1]) && same(&grad, &out[1..]));
    // A loop traced term by term, or a grid row by row, has no stages.
    let by_term = adjit::ir::Rolled::from_function(&adjit_testkit::chained_rosenbrock(500));
    assert_eq!(by_term.staged_share(), 0.0);
    let rows = adjit::ir::Rolled::from_function(&grid(40, 40, false));
    assert_eq!(rows.staged_share(), 0.0);
}
