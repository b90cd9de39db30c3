//! Two-point batch kernels (`JitOptions::batch_lanes = 2`) against the scalar code: every
//! output bit equal (NaN payloads included) to `call` at the same point, for every opcode at
//! special values, the example corpus, and random programs, with odd and even point counts
//! and options that force spilling, chunking and the thread-local workspace.

mod common;

use std::path::Path;

use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::{parse, verify, BinaryOp, Builder, CmpPred, Function, Type};
use adjit_jit::{compile, CompiledFunction, JitError, JitOptions};
use common::{every_opcode, long_range_chain, special_values};

fn pair_options(base: &JitOptions) -> JitOptions {
    JitOptions {
        batch_lanes: 2,
        ..base.clone()
    }
}

/// Compile `func` with two-point kernels and check that `call_batch` (and a two-thread
/// `call_batch_parallel`) over `points` (point-major) equals `call` at each point, bit for
/// bit. Returns the compiled function.
fn check(func: &Function, base: &JitOptions, points: &[f64]) -> CompiledFunction {
    verify(func).expect("test program verifies");
    let code = compile(func, &pair_options(base)).unwrap_or_else(|e| panic!("@{}: {e}", func.name));
    assert_eq!(
        code.batch_lanes(),
        2,
        "@{}: two-point kernels compiled",
        func.name
    );
    let (n_in, n_out) = (code.n_inputs(), code.n_outputs());
    let n_points = points.len().checked_div(n_in).unwrap_or(3);
    let mut batch = vec![0.0; n_points * n_out];
    code.call_batch(points, &mut batch).unwrap();
    let mut par = vec![0.0; n_points * n_out];
    code.call_batch_parallel(points, &mut par, 2).unwrap();
    // The same points through a `PairBatch`, read back from its own layout.
    let mut pairs = code.pair_batch(n_points).expect("two-point kernels");
    for p in 0..n_points {
        for (i, &x) in points[p * n_in..(p + 1) * n_in].iter().enumerate() {
            pairs.set(p, i, x);
        }
    }
    code.run_pair_batch(&mut pairs).unwrap();
    let in_place: Vec<f64> = (0..n_points)
        .flat_map(|p| (0..n_out).map(move |j| (p, j)))
        .map(|(p, j)| pairs.output(p, j))
        .collect();
    let read_in_place: Vec<f64> = (0..n_points)
        .flat_map(|p| (0..n_out).map(move |j| (p, j)))
        .map(|(p, j)| pairs.point_outputs(p).get(j))
        .collect();
    let mut one = vec![0.0; n_out];
    for p in 0..n_points {
        let x = &points[p * n_in..(p + 1) * n_in];
        code.call(x, &mut one).unwrap();
        for j in 0..n_out {
            let runs = [
                ("batch", &batch),
                ("parallel batch", &par),
                ("pair batch", &in_place),
                ("pair batch, point_outputs", &read_in_place),
            ];
            for (what, got) in runs {
                let g = got[p * n_out + j];
                assert_eq!(
                    g.to_bits(),
                    one[j].to_bits(),
                    "@{}: {what} output {j} at point {p} {x:?} of {n_points}: {g:e} ({:#x}) vs call {:e} ({:#x})",
                    func.name,
                    g.to_bits(),
                    one[j],
                    one[j].to_bits()
                );
            }
        }
    }
    // Only the first point's pair runs: a changed input of the last pair's point does not
    // reach its outputs (with three points or more, it is in another pair).
    if n_points >= 3 && n_in > 0 {
        let last = n_points - 1;
        let keep = pairs.input(last, 0);
        pairs.set(last, 0, keep + 1.0);
        code.run_pair_batch_first(&mut pairs, 1).unwrap();
        for j in 0..n_out {
            assert_eq!(
                pairs.output(last, j).to_bits(),
                in_place[last * n_out + j].to_bits(),
                "@{}: a point past the prefix ran",
                func.name
            );
        }
        pairs.set(last, 0, keep);
    }
    // Run again with one input of the last point changed: that point gives the outputs of
    // its new inputs, and no other point moves.
    if let (Some(last), true) = (n_points.checked_sub(1), n_in > 0) {
        let mut x = points[last * n_in..(last + 1) * n_in].to_vec();
        x[0] = points[0];
        pairs.set(last, 0, x[0]);
        assert_eq!(pairs.input(last, 0).to_bits(), x[0].to_bits());
        code.run_pair_batch(&mut pairs).unwrap();
        code.call(&x, &mut one).unwrap();
        for p in 0..n_points {
            for j in 0..n_out {
                let want = if p == last {
                    one[j]
                } else {
                    in_place[p * n_out + j]
                };
                assert_eq!(
                    pairs.output(p, j).to_bits(),
                    want.to_bits(),
                    "@{}: pair batch output {j} of point {p} after point {last} changed",
                    func.name
                );
            }
        }
    }
    code
}

/// Every pair of special values for two float parameters, with the bool parameter cycling
/// through 0, 1 and NaN (nonzero: true), so each lane meets different special cases.
fn special_points() -> Vec<f64> {
    let values = special_values();
    let flags = [0.0, 1.0, f64::NAN, -0.0];
    let mut points = Vec::new();
    for (i, &x) in values.iter().enumerate() {
        for (j, &y) in values.iter().enumerate() {
            points.extend([x, y, flags[(i + j) % flags.len()]]);
        }
    }
    // An odd number of points: the last one runs through the scalar kernel.
    points.extend([0.25, -0.0, 1.0]);
    points
}

#[test]
fn every_opcode_at_special_values_f64() {
    check(
        &every_opcode(Type::F64),
        &JitOptions::default(),
        &special_points(),
    );
}

#[test]
fn every_opcode_at_special_values_f32() {
    check(
        &every_opcode(Type::F32),
        &JitOptions::default(),
        &special_points(),
    );
}

/// Tiny register budget and chunks, all literals in the table: spills, reloads and values
/// crossing chunks go through the 16-byte workspace slots.
#[test]
fn every_opcode_with_spilling_and_chunks() {
    let opts = JitOptions {
        registers: 4,
        chunk_insts: 13,
        const_table_above: 0,
        ..JitOptions::default()
    };
    for ty in [Type::F64, Type::F32] {
        check(&every_opcode(ty), &opts, &special_points());
    }
    // Literals as instructions instead of table loads.
    let opts = JitOptions {
        const_table_above: usize::MAX,
        ..JitOptions::default()
    };
    check(&every_opcode(Type::F64), &opts, &special_points());
}

/// `min`/`max` ties and NaNs in both operand orders, comparisons of NaN feeding `select`,
/// and `powi` at exponent extremes, with subnormal and huge bases.
#[test]
fn min_max_ties_nan_selects_and_powi_extremes() {
    for ty in [Type::F64, Type::F32] {
        let mut b = Builder::new(format!("edges_{ty}"));
        let x = b.param(ty, "x");
        let y = b.param(ty, "y");
        let mut outs = vec![
            b.binary(BinaryOp::Min, x, y),
            b.binary(BinaryOp::Max, x, y),
            b.binary(BinaryOp::Min, y, x),
            b.binary(BinaryOp::Max, y, x),
        ];
        for pred in CmpPred::ALL {
            let c = b.fcmp(*pred, x, y);
            outs.push(b.select(c, y, x));
            outs.push(c);
        }
        for k in [
            i32::MIN,
            i32::MIN + 1,
            -1075,
            -1,
            0,
            1,
            2,
            1023,
            1024,
            i32::MAX,
        ] {
            outs.push(b.powi(x, k));
        }
        let f = b.finish(&outs);
        let values = [
            0.0,
            -0.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            5e-324,
            -1e-310,
            1.0000000000000002,
            -1.0,
            0.9999999999999999,
            1e308,
            2.0,
        ];
        let mut points = Vec::new();
        for &x in &values {
            for &y in &values {
                points.extend([x, y]);
            }
        }
        check(&f, &JitOptions::default(), &points);
    }
}

/// Bool and f32 parameters and results only, and functions whose outputs are parameters.
#[test]
fn bool_and_f32_boundaries() {
    let mut b = Builder::new("bools");
    let p = b.param(Type::Bool, "p");
    let q = b.param(Type::Bool, "q");
    let s = b.param(Type::F32, "s");
    let t = b.constant(Type::Bool, 1.0);
    let c = b.fcmp(CmpPred::Lt, s, 0.5);
    let v = b.select(q, s, 2.5);
    let w = b.select(t, v, s);
    let d = b.fpromote(w);
    let e = b.fcmp(CmpPred::Ne, d, 2.5);
    let g = b.select(e, 0.0, d);
    let f = b.finish(&[w, v, p, s, c, g, e, t]);
    let values = [0.0, 1.0, -0.0, f64::NAN, 2.0, 1e-40, 0.3, 3.4e38, 1e39];
    let mut points = Vec::new();
    for (i, &x) in values.iter().enumerate() {
        for &y in &values {
            points.extend([x, y, values[(i * 7) % values.len()]]);
        }
    }
    check(&f, &JitOptions::default(), &points);
}

fn random_points(seed: u64, n: usize) -> Vec<f64> {
    Rng::new(seed).vector(n, -2.0, 2.0)
}

#[test]
fn random_programs_match_scalar_calls() {
    let variants = [
        JitOptions::default(),
        JitOptions {
            registers: 4,
            chunk_insts: 17,
            ..JitOptions::default()
        },
    ];
    for seed in 0..300u64 {
        let ty = if seed % 3 == 2 { Type::F32 } else { Type::F64 };
        let ropts = RandomOptions {
            n_params: 1 + (seed % 4) as usize,
            n_insts: 20 + (seed as usize * 37) % 150,
            n_outputs: 1 + (seed % 3) as usize,
            ty,
            non_smooth: seed % 2 == 1,
            ..RandomOptions::default()
        };
        let func = random_function(seed, &ropts);
        // Odd and even point counts, including 1 (scalar only) and 2 (one pair).
        let n_points = [1, 2, 5, 8, 11][seed as usize % 5];
        let points = random_points(seed, n_points * func.n_params);
        check(&func, &variants[seed as usize % 2], &points);
    }
}

/// A program where every instruction also uses a value from far back: many values live
/// long, so the workspace is larger than the stack buffer and pair batches use the
/// thread-local one.
#[test]
fn large_workspaces_use_the_thread_local_buffer() {
    let (b, vals) = long_range_chain(3000, false);
    let rets: Vec<_> = vals.iter().copied().step_by(5).collect();
    let func = b.finish(&rets);
    let opts = JitOptions {
        chunk_insts: 100,
        schedule: false,
        ..JitOptions::default()
    };
    let code = check(&func, &opts, &random_points(3, 7 * 2));
    assert!(code.workspace_bytes() / 8 > 128, "{code:?}");
}

/// A batch whose outputs reach `STREAM_BYTES` writes them with non-temporal stores: still the
/// bits of `call` at every point (odd count: the last point runs alone), on one and two threads
/// (two halves, each its own streaming batch).
#[test]
fn batches_with_streamed_outputs_match_scalar_calls() {
    let func = parse(
        "func @wide(%x: f64, %y: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64) {
            %a = mul %x, %y
            %b = sub %x, %y
            %c = div %a, %b
            %d = sqrt %a
            %e = add %c, 1.5
            %f = mul %d, %e
            %g = neg %f
            %h = fma %x, %y, %g
            ret %a, %b, %c, %d, %e, %f, %g, %h
        }",
    )
    .expect("parses")
    .remove(0);
    let n_points = 2 * adjit_jit::STREAM_BYTES / (8 * 8) + 1;
    check(
        &func,
        &JitOptions::default(),
        &random_points(11, 2 * n_points),
    );
}

/// Every function of the example corpus (`ir/examples`, and the small `ir/bench` programs)
/// at random points.
#[test]
fn corpus_programs_match_scalar_calls() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir");
    let mut n = 0;
    for dir in ["examples", "bench", "inverse"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if path.extension().is_none_or(|e| e != "ir") || meta.len() > 100_000 {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let Ok(funcs) = parse(&text) else { continue };
            for func in funcs.iter().filter(|f| verify(f).is_ok()) {
                let points = random_points(n, 5 * func.n_params);
                check(func, &JitOptions::default(), &points);
                n += 1;
            }
        }
    }
    assert!(n >= 15, "only {n} corpus functions found");
}

#[test]
fn batch_length_errors_are_unchanged() {
    let func = common::seed001();
    let code = compile(&func, &pair_options(&JitOptions::default())).unwrap();
    let mut out3 = [0.0; 3];
    assert_eq!(
        code.call_batch(&[1.0, 2.0, 3.0], &mut out3),
        Err(JitError::BatchLength {
            inputs: 3,
            outputs: 3,
            n_inputs: 2,
            n_outputs: 1
        })
    );
    assert!(code.call_batch(&[1.0, 2.0, 3.0, 4.0], &mut out3).is_err());
    assert!(code.call_batch_parallel(&[1.0, 2.0], &mut out3, 2).is_err());
    code.call_batch(&[], &mut []).unwrap();
    code.call_batch_parallel(&[], &mut [], 2).unwrap();
}

#[test]
fn default_options_compile_no_pair_kernels() {
    let code = compile(&common::seed001(), &JitOptions::default()).unwrap();
    assert_eq!(code.batch_lanes(), 1);
    assert!(code.pair_batch(4).is_none());
}

/// A pair batch runs only on the function that made it; another function's kernels, whose
/// buffers may be of other sizes, refuse it.
#[test]
fn a_pair_batch_runs_only_on_its_own_function() {
    let opts = pair_options(&JitOptions::default());
    let code = compile(&common::seed001(), &opts).unwrap();
    let other = compile(&common::seed001(), &opts).unwrap();
    let wider = compile(&random_function(7, &RandomOptions::default()), &opts).unwrap();
    let mut batch = code.pair_batch(3).unwrap();
    assert_eq!(batch.n_points(), 3);
    code.run_pair_batch(&mut batch).unwrap();
    assert_eq!(
        code.run_pair_batch_first(&mut batch, 4),
        Err(JitError::BatchLength {
            inputs: 8,
            outputs: 3,
            n_inputs: 2,
            n_outputs: 1
        })
    );
    for foreign in [&other, &wider] {
        assert_eq!(
            foreign.run_pair_batch(&mut batch),
            Err(JitError::ForeignBatch)
        );
    }
    let scalar = compile(&common::seed001(), &JitOptions::default()).unwrap();
    assert_eq!(
        scalar.run_pair_batch(&mut batch),
        Err(JitError::ForeignBatch)
    );
}

/// Inputs shared by every point (`set_all_run`, `set_all`), the rest per point (`set_run`):
/// each point's outputs are `call`'s at its inputs, an odd count included.
#[test]
fn inputs_set_for_all_points_reach_every_point() {
    let ropts = RandomOptions {
        n_params: 4,
        ..RandomOptions::default()
    };
    let func = random_function(11, &ropts);
    let code = compile(&func, &pair_options(&JitOptions::default())).unwrap();
    let (n_in, n_out) = (code.n_inputs(), code.n_outputs());
    assert_eq!(n_in, 4);
    let points = random_points(12, 5 * n_in);
    let mut batch = code.pair_batch(5).unwrap();
    // Inputs 0 and 1 shared (point 0's), 3 shared too but set alone, 2 per point.
    batch.set_all_run(0, &points[..2]);
    batch.set_all(3, points[3]);
    for p in 0..5 {
        batch.set_run(p, 2, &points[p * n_in + 2..p * n_in + 3]);
    }
    code.run_pair_batch(&mut batch).unwrap();
    let mut one = vec![0.0; n_out];
    for p in 0..5 {
        let mut x = points[..n_in].to_vec();
        x[2] = points[p * n_in + 2];
        code.call(&x, &mut one).unwrap();
        let got: Vec<u64> = batch.outputs(p, 0..n_out).map(f64::to_bits).collect();
        let want: Vec<u64> = one.iter().map(|y| y.to_bits()).collect();
        assert_eq!(got, want, "point {p}");
        assert_eq!(batch.input(p, 1).to_bits(), points[1].to_bits());
    }
    // The per-point input reaches the outputs, so a point left with another's would show.
    let first: Vec<f64> = batch.outputs(0, 0..n_out).collect();
    assert!(
        (1..5).any(|p| batch.outputs(p, 0..n_out).zip(&first).any(|(a, b)| a != *b)),
        "the program reads input 2"
    );
}

/// Reading or writing outside the batch is a programming error, caught before any memory is
/// touched.
#[test]
#[should_panic(expected = "outside a batch of 3 points")]
fn a_point_past_the_batch_panics() {
    let code = compile(&common::seed001(), &pair_options(&JitOptions::default())).unwrap();
    let mut batch = code.pair_batch(3).unwrap();
    batch.set(3, 0, 1.0);
}
