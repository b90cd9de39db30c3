//! Loop rolling: programs made of repeated templates compile to loops whose results equal the
//! straight-line code and the interpreter bit for bit (NaN = NaN), in one and two lanes, with
//! chunked straight-line code around the loops, for f64 and f32; programs without repetition
//! are not rolled.

mod common;

use adjit_ir::random::{random_function, random_repeated, RandomOptions, RepeatOptions, Rng};
use adjit_ir::{interpret, verify, Function, Type};
use adjit_jit::{compile, regions, JitOptions, Pairing};
use common::assert_same;

fn rolled() -> JitOptions {
    JitOptions {
        roll_above: 0,
        ..JitOptions::default()
    }
}

/// Rolled, in chunks of 7 instructions with 4 registers: loops between chunk boundaries and
/// values spilled around them.
fn rolled_in_small_chunks() -> JitOptions {
    JitOptions {
        chunk_insts: 7,
        registers: 4,
        ..rolled()
    }
}

/// Rolled, every loop two iterations per trip (see [`Pairing`]).
fn paired() -> JitOptions {
    JitOptions {
        pair_loops: Pairing::Always,
        ..rolled()
    }
}

fn unrolled() -> JitOptions {
    JitOptions {
        roll: false,
        ..JitOptions::default()
    }
}

fn points(seed: u64, n: usize, count: usize) -> Vec<Vec<f64>> {
    let mut rng = Rng::new(seed);
    (0..count).map(|_| rng.vector(n, -2.0, 2.0)).collect()
}

/// Compile `func` under `opts` and compare one call per point with the interpreter.
fn check(func: &Function, opts: &JitOptions, xs: &[Vec<f64>]) {
    let code = compile(func, opts).unwrap_or_else(|e| panic!("@{}: {e}", func.name));
    let mut out = vec![0.0; code.n_outputs()];
    for x in xs {
        code.call(x, &mut out).expect("lengths match");
        let want = interpret(func, x).expect("interprets");
        assert_same(&func.name, x, &out, &want);
    }
}

/// Compile `func` under `opts` in two lanes (`batch_lanes: 2`) and compare one batch over
/// the points with the interpreter.
fn check_two_lanes(func: &Function, opts: &JitOptions, xs: &[Vec<f64>]) {
    let opts = JitOptions {
        batch_lanes: 2,
        ..opts.clone()
    };
    let code = compile(func, &opts).unwrap_or_else(|e| panic!("@{}: {e}", func.name));
    let mut out = vec![0.0; code.n_outputs() * xs.len()];
    code.call_batch(&xs.concat(), &mut out)
        .expect("lengths match");
    for (x, y) in xs.iter().zip(out.chunks(code.n_outputs())) {
        let want = interpret(func, x).expect("interprets");
        assert_same(&func.name, x, y, &want);
    }
}

fn repeated(seed: u64) -> Function {
    repeated_program(seed, false)
}

/// A random repeated program of `seed`'s sizes; with `data`, literals that change per
/// iteration (data traced in as literals).
fn repeated_program(seed: u64, data: bool) -> Function {
    let func = random_repeated(seed, &RepeatOptions::of_seed(seed, data));
    verify(&func).expect("generated programs verify");
    func
}

/// Programs per campaign: 120 in CI; `ADJIT_ROLL_CASES=5000` for a long run.
fn cases() -> u64 {
    adjit_ir::random::campaign_cases()
}

#[test]
fn repeated_programs_roll_and_match_the_interpreter() {
    let mut rolled_count = 0;
    let cases = cases();
    for seed in 0..cases {
        let func = repeated(seed);
        let found = regions(&func, &rolled());
        if !found.is_empty() {
            rolled_count += 1;
        }
        let xs = points(seed, func.n_params, 3);
        check(&func, &rolled(), &xs);
        check(&func, &unrolled(), &xs);
    }
    // Most generated programs have a run (interruptions and short trips may leave none).
    assert!(
        rolled_count * 4 >= cases * 3,
        "only {rolled_count} of {cases} rolled"
    );
}

#[test]
fn loops_between_small_chunks_match_the_interpreter() {
    for seed in 200..240 {
        let func = repeated(seed);
        let opts = rolled_in_small_chunks();
        check(&func, &opts, &points(seed, func.n_params, 2));
    }
}

#[test]
fn two_lane_loops_match_the_interpreter() {
    for seed in 300..340 {
        let func = repeated(seed);
        check_two_lanes(&func, &rolled(), &points(seed, func.n_params, 5));
    }
}

#[test]
fn data_literals_roll_into_tables_and_match_the_interpreter() {
    let mut tabled = 0;
    for seed in 500..560 {
        let func = repeated_program(seed, true);
        if regions(&func, &rolled())
            .iter()
            .any(|r| r.literal_tables > 0)
        {
            tabled += 1;
        }
        let xs = points(seed, func.n_params, 2);
        check(&func, &rolled(), &xs);
        check(&func, &unrolled(), &xs);
        check(&func, &rolled_in_small_chunks(), &xs);
        // Two lanes: the pair table holds each entry in both lanes.
        check_two_lanes(&func, &rolled(), &points(seed + 1, func.n_params, 3));
    }
    // Most programs draw a literal that changes per iteration into a rolled template.
    assert!(tabled >= 40, "only {tabled} of 60 rolled a literal table");
}

#[test]
fn irregular_programs_are_not_rolled() {
    for seed in 0..6 {
        let func = random_function(
            seed,
            &RandomOptions {
                n_insts: 3000,
                ..RandomOptions::default()
            },
        );
        assert!(regions(&func, &rolled()).is_empty(), "seed {seed}");
        // And compile to the same code as with rolling off (same chunks, same size; the
        // text differs only in the order of the constant table).
        let a = compile(&func, &JitOptions::default()).expect("compiles");
        let b = compile(&func, &unrolled()).expect("compiles");
        assert_eq!(
            (a.n_chunks(), a.code_bytes(), a.workspace_bytes()),
            (b.n_chunks(), b.code_bytes(), b.workspace_bytes()),
            "seed {seed}"
        );
    }
}

#[test]
fn code_size_follows_the_template_not_the_trip_count() {
    let sizes: Vec<usize> = [100, 1000, 10_000]
        .iter()
        .map(|&trips| {
            let func = random_repeated(
                7,
                &RepeatOptions {
                    trips,
                    ..RepeatOptions::default()
                },
            );
            compile(&func, &rolled()).expect("compiles").code_bytes()
        })
        .collect();
    // The loop is the same; only the straight-line prologue and epilogue (the sum and the
    // per-iteration outputs are in the loop) may differ slightly.
    assert!(
        sizes[2] < 2 * sizes[0],
        "code bytes grow with the trips: {sizes:?}"
    );
}

/// The shape of a vectorised (NumPy-style) trace: each elementwise operation over the whole
/// array, one after the other, then a serial sum: `Σ 100 (x[1:] − x[:-1]²)² + (1 − x[:-1])²`
/// plus a stage reading two arrays and a stage with a math call.
fn vectorised(n: usize) -> Function {
    use adjit_ir::{BinaryOp, Builder, UnaryOp};
    let mut b = Builder::new("vectorised");
    let x: Vec<_> = (0..n)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    let m = n - 1;
    let sq: Vec<_> = (0..m).map(|i| b.powi(x[i], 2)).collect();
    let d: Vec<_> = (0..m).map(|i| b.sub(x[i + 1], sq[i])).collect();
    let d2: Vec<_> = (0..m).map(|i| b.powi(d[i], 2)).collect();
    let h: Vec<_> = (0..m).map(|i| b.mul(100.0, d2[i])).collect();
    let a: Vec<_> = (0..m).map(|i| b.binary(BinaryOp::Sub, 1.0, x[i])).collect();
    let s: Vec<_> = (0..m).map(|i| b.unary(UnaryOp::Sin, a[i])).collect();
    let t: Vec<_> = (0..m).map(|i| b.fma(s[i], s[i], h[i])).collect();
    let mut acc = t[0];
    for &ti in &t[1..] {
        acc = b.add(acc, ti);
    }
    // Outputs: the sum and every term (outputs at affine indices from inside the loop).
    let mut rets = vec![acc];
    rets.extend(&t);
    b.finish(&rets)
}

#[test]
fn vectorised_traces_fuse_into_one_loop_and_match_the_interpreter() {
    let func = vectorised(300);
    // Scheduled (the default), each term's stages and its share of the sum are computed
    // together: one loop.
    let found = regions(&func, &rolled());
    assert_eq!(found.len(), 1, "{found:?}");
    // In program order, the seven elementwise stages (runs of period 1) fuse into one loop;
    // the serial sum, its first term peeled in front of it, is a second one, until
    // regrouping moves that term in front of the stages: then one loop computes both.
    let in_order = JitOptions {
        schedule: false,
        ..rolled()
    };
    let apart = regions(
        &func,
        &JitOptions {
            fuse_loops: false,
            ..in_order.clone()
        },
    );
    assert_eq!(apart.len(), 2, "{apart:?}");
    assert_eq!(apart[0].period, 7);
    let found = regions(&func, &in_order);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].period, 8);
    let xs = points(11, func.n_params, 3);
    check(&func, &rolled(), &xs);
    check(&func, &in_order, &xs);
    check_two_lanes(&func, &in_order, &xs);
}

/// A random 2-D grid (see `common::grid`): sizes, strides, template, f32 or f64 by seed.
fn grid(seed: u64) -> Function {
    let rows = 5 + (seed as usize * 3) % 9;
    let cols = 14 + (seed as usize * 5) % 27;
    let ty = if seed % 4 == 3 { Type::F32 } else { Type::F64 };
    let func = common::grid(seed, rows, cols, ty);
    verify(&func).expect("generated programs verify");
    func
}

/// Whether the rows' loops of a grid nest into one outer loop (a region of several rows).
fn nests(func: &Function, opts: &JitOptions) -> bool {
    regions(func, opts).iter().any(|r| r.rows > 1)
}

#[test]
fn grids_nest_and_match_the_interpreter() {
    let cases = cases() / 2;
    let in_order = JitOptions {
        schedule: false,
        ..rolled()
    };
    let (mut scheduled, mut ordered) = (0, 0);
    for seed in 0..cases {
        let func = grid(seed);
        scheduled += u64::from(nests(&func, &rolled()));
        ordered += u64::from(nests(&func, &in_order));
        let xs = points(seed, func.n_params, 3);
        check(&func, &rolled(), &xs);
        check(&func, &unrolled(), &xs);
        check(&func, &in_order, &xs);
    }
    // In program order every grid is rows of the same form. The schedule may move work
    // between rows (an earlier loop's values into the row before the one reading them: each
    // row then reads the previous row's cells, which does not nest) or split a row in two
    // loops; such grids roll row by row.
    assert!(
        ordered * 10 >= cases * 9,
        "only {ordered} of {cases} nested"
    );
    assert!(scheduled * 4 >= cases, "only {scheduled} of {cases} nested");
}

/// A row that differs ends a nest: the rows before it and after it nest, it rolls on its own,
/// and the results are the interpreter's.
#[test]
fn a_differing_row_splits_the_nest() {
    let in_order = JitOptions {
        schedule: false,
        ..rolled()
    };
    for seed in 0..6 {
        let ty = if seed % 2 == 1 { Type::F32 } else { Type::F64 };
        let whole = common::grid(seed, 12, 30, ty);
        let func = common::grid_with_odd_row(seed, 12, 30, ty, Some(6));
        let nests = |f: &Function| {
            regions(f, &in_order)
                .iter()
                .filter(|r| r.rows > 1)
                .map(|r| r.rows)
                .collect::<Vec<_>>()
        };
        assert_eq!(nests(&whole).len(), 1, "seed {seed}: {:?}", nests(&whole));
        let split = nests(&func);
        assert_eq!(split.len(), 2, "seed {seed}: {split:?}");
        assert!(
            split.iter().sum::<usize>() < nests(&whole)[0],
            "seed {seed}: {split:?} {:?}",
            nests(&whole)
        );
        let xs = points(seed, func.n_params, 3);
        check(&func, &in_order, &xs);
        check(&func, &rolled(), &xs);
    }
}

/// Grids with data literals (a source term per cell, and per row in the straight code between
/// rows' loops) nest with literal tables, and match the interpreter bit for bit in one and
/// two lanes and small chunks.
#[test]
fn grids_with_data_nest_with_tables_and_match_the_interpreter() {
    let in_order = JitOptions {
        schedule: false,
        ..rolled()
    };
    let mut tabled_nests = 0;
    for seed in 0..30u64 {
        let rows = 5 + (seed as usize * 3) % 9;
        let cols = 14 + (seed as usize * 5) % 27;
        let ty = if seed % 4 == 3 { Type::F32 } else { Type::F64 };
        let func = common::grid_with_data(seed, rows, cols, ty);
        verify(&func).expect("generated programs verify");
        let nested_tables = regions(&func, &in_order)
            .iter()
            .any(|r| r.rows > 1 && r.literal_tables >= 2);
        tabled_nests += u64::from(nested_tables);
        let xs = points(seed, func.n_params, 3);
        for opts in [
            rolled(),
            unrolled(),
            in_order.clone(),
            rolled_in_small_chunks(),
        ] {
            check(&func, &opts, &xs);
        }
        check_two_lanes(&func, &in_order, &xs);
    }
    // In program order every such grid is rows of one form, cells and heads with tables.
    assert!(
        tabled_nests >= 27,
        "only {tabled_nests} of 30 nested with tables"
    );
}

#[test]
fn grids_in_two_lanes_and_small_chunks_match_the_interpreter() {
    for seed in 100..130 {
        let func = grid(seed);
        let small = rolled_in_small_chunks();
        let xs = points(seed, func.n_params, 5);
        check(&func, &small, &xs);
        check_two_lanes(&func, &rolled(), &xs);
    }
}

/// The regions of 1-D programs, as `(start, period, trips, template length)`: a fingerprint
/// pinned from the code before nests were formed.
fn fingerprint_1d() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |x: usize| {
        h ^= x as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    };
    // Pinned before regrouping existed: without it.
    let in_order = JitOptions {
        schedule: false,
        ..unfused()
    };
    for seed in 0..120 {
        let func = repeated(seed);
        for opts in [unfused(), in_order.clone()] {
            for r in regions(&func, &opts) {
                for x in [r.start, r.period, r.trips, r.template.len()] {
                    mix(x);
                }
            }
            mix(usize::MAX);
        }
    }
    h
}

#[test]
fn one_dimensional_programs_roll_as_before() {
    assert_eq!(fingerprint_1d(), PINNED_1D);
}

/// [`fingerprint_1d`] before nests (the rolling of 1-D programs is unchanged by them);
/// re-pinned when the search began to start a run where it carries the fewest values
/// (`roll::Finder::rotated`, which moves some runs' starts by a part of their period).
const PINNED_1D: u64 = 16110686922058182552;

#[test]
fn paired_loops_match_the_interpreter() {
    let (mut loops, mut paired_loops, mut nests) = (0, 0, 0);
    let mut count_in = |func: &Function, opts: &JitOptions| {
        let found = regions(func, opts);
        loops += found.len();
        paired_loops += found.iter().filter(|r| r.paired).count();
        nests += found.iter().filter(|r| r.rows > 1 && r.paired).count();
    };
    let mut count = |func: &Function| count_in(func, &paired());
    // Random templates: carried values, interruptions, f32 (every fifth seed), min/max and
    // selects on bools (odd seeds), odd and even trip counts.
    for seed in 0..cases() {
        let func = repeated(seed);
        count(&func);
        check(&func, &paired(), &points(seed, func.n_params, 3));
    }
    // Literal tables, and loops between small chunks (values spilled around the loop).
    for seed in 500..540 {
        let func = repeated_program(seed, true);
        count(&func);
        let xs = points(seed, func.n_params, 2);
        check(&func, &paired(), &xs);
        let small = JitOptions {
            pair_loops: Pairing::Always,
            ..rolled_in_small_chunks()
        };
        check(&func, &small, &xs);
    }
    // Stages of a vectorised trace fused into one loop that reads earlier loops' arrays and
    // stores an output per iteration; an odd and an even trip count.
    for n in [300, 301] {
        let func = vectorised(n);
        let in_order = JitOptions {
            schedule: false,
            ..paired()
        };
        count(&func);
        let xs = points(n as u64, func.n_params, 3);
        check(&func, &paired(), &xs);
        check(&func, &in_order, &xs);
    }
    // 2-D grids: the inner loop of every row paired, with rows reading the previous row,
    // sums carried within and across rows, and (odd seeds) a source term in tables.
    for seed in 0..30 {
        let func = if seed % 2 == 0 {
            grid(seed)
        } else {
            let rows = 5 + (seed as usize * 3) % 9;
            let cols = 14 + (seed as usize * 5) % 27;
            let ty = if seed % 4 == 3 { Type::F32 } else { Type::F64 };
            common::grid_with_data(seed, rows, cols, ty)
        };
        let xs = points(seed, func.n_params, 2);
        check(&func, &paired(), &xs);
        let in_order = JitOptions {
            schedule: false,
            ..paired()
        };
        check(&func, &in_order, &xs);
        count_in(&func, &paired());
        count_in(&func, &in_order);
    }
    // Every loop is paired under `Always`.
    assert_eq!(paired_loops, loops);
    assert!(loops >= 100, "only {loops} loops");
    assert!(nests >= 20, "only {nests} nests");
}

/// `Σ tanh(xᵢ)·(xᵢ₊₁/3)` and the recurrence `s ← tanh(s·xᵢ)`, built in program order.
fn parallel_and_serial(n: usize) -> (Function, Function) {
    use adjit_ir::{Builder, UnaryOp};
    let mut b = Builder::new("parallel");
    let x: Vec<_> = (0..=n)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    let mut acc = b.mul(x[0], 0.0);
    for i in 0..n {
        let t = b.unary(UnaryOp::Tanh, x[i]);
        let d = b.div(x[i + 1], 3.0);
        let p = b.mul(t, d);
        acc = b.add(acc, p);
    }
    let parallel = b.finish(&[acc]);
    let mut b = Builder::new("serial");
    let x: Vec<_> = (0..n)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    let mut s = x[0];
    for &xi in &x[1..] {
        let p = b.mul(s, xi);
        s = b.unary(UnaryOp::Tanh, p);
    }
    let serial = b.finish(&[s]);
    (parallel, serial)
}

#[test]
fn pairing_is_chosen_where_the_work_is_parallel() {
    let (parallel, serial) = parallel_and_serial(201);
    let found = regions(&parallel, &rolled());
    assert!(
        !found.is_empty() && found.iter().all(|r| r.paired),
        "{found:?}"
    );
    // A recurrence has nothing to run in lanes: it stays one iteration per trip.
    let found = regions(&serial, &rolled());
    assert!(
        !found.is_empty() && found.iter().all(|r| !r.paired),
        "{found:?}"
    );
    let off = JitOptions {
        pair_loops: Pairing::Off,
        ..rolled()
    };
    assert!(regions(&parallel, &off).iter().all(|r| !r.paired));
    for func in [&parallel, &serial] {
        let xs = points(5, func.n_params, 3);
        check(func, &rolled(), &xs);
        check(func, &off, &xs);
    }
}

/// Without regrouping (see [`JitOptions::fuse_loops`]).
fn unfused() -> JitOptions {
    JitOptions {
        fuse_loops: false,
        ..rolled()
    }
}

#[test]
fn reductions_run_in_one_loop_and_match_the_interpreter() {
    let in_order = |opts: JitOptions| JitOptions {
        schedule: false,
        ..opts
    };
    let (mut fused, mut two, mut blocked_fused) = (0u64, 0u64, 0u64);
    let cases = 40;
    for seed in 0..cases {
        for blocked in [false, true] {
            let func = common::reductions(seed, blocked);
            for opts in [rolled(), in_order(rolled())] {
                let (program, _) = adjit_jit::rolled_program(&func, &opts);
                verify(&program).expect("the regrouped program verifies");
            }
            let before = regions(&func, &in_order(unfused()));
            let after = regions(&func, &in_order(rolled()));
            assert!(after.len() <= before.len(), "seed {seed}: {after:?}");
            if after.len() < before.len() {
                fused += 1;
                blocked_fused += u64::from(blocked);
            }
            two += u64::from(after.len() <= 2);
            let xs = points(seed, func.n_params, 2);
            check(&func, &rolled(), &xs);
            for opts in [rolled(), unfused(), paired()] {
                check(&func, &in_order(opts), &xs);
            }
            if seed % 4 == 0 {
                check(&func, &in_order(rolled_in_small_chunks()), &xs);
                check_two_lanes(&func, &in_order(rolled()), &xs);
            }
        }
    }
    // In program order every sum is a loop of its own; most fuse, some with the stage too.
    assert!(
        fused * 3 >= cases * 2 * 2,
        "only {fused} of {} fused",
        cases * 2
    );
    assert!(
        blocked_fused * 3 >= cases * 2,
        "only {blocked_fused} blocked programs fused"
    );
    assert!(two * 4 >= cases * 2, "only {two} in at most two loops");
}
