//! The facade never panics on a function that does not verify: every entry point reports the
//! verifier's errors instead of handing a broken function to a transform or backend.

use adjit::ir::{BinaryOp, InstData, Operand, Type, Value};
use adjit::{Engine, Error, Function, InverseMode, Mode, Strategy};

/// `@broken(%x) -> f64` whose only instruction uses a value defined after it.
fn broken() -> Function {
    let mut f = Function::new("broken");
    let x = f.add_param(Type::F64, Some("x".into()));
    let forward = Value::new(2);
    let a = f.push_inst(
        Type::F64,
        InstData::Binary {
            op: BinaryOp::Add,
            args: [Operand::Value(x), Operand::Value(forward)],
        },
        Some("a".into()),
    );
    let b = f.push_inst(
        Type::F64,
        InstData::Binary {
            op: BinaryOp::Mul,
            args: [Operand::Value(a), Operand::Value(x)],
        },
        Some("b".into()),
    );
    f.push_ret(b);
    f
}

fn assert_verify_error<T: std::fmt::Debug>(what: &str, r: adjit::Result<T>) {
    match r {
        Err(Error::Verify(e)) => assert!(
            e.to_string().contains("before its definition"),
            "{what}: {e}"
        ),
        other => panic!("{what}: expected a verifier error, got {other:?}"),
    }
}

#[test]
fn every_entry_point_rejects_an_unverified_function() {
    let f = broken();
    for engine in [Engine::Interp, Engine::Jit] {
        assert_verify_error("eval", adjit::eval(&f, engine, &[1.0]));
        assert_verify_error("jvp", adjit::jvp(&f, engine, &[1.0], &[1.0]));
        assert_verify_error(
            "vjp",
            adjit::vjp(&f, engine, Strategy::Tape, &[1.0], &[1.0]),
        );
        assert_verify_error(
            "inverse",
            adjit::inverse(&f, engine, InverseMode::Reverse, &[1.0], &[1.0]),
        );
        assert_verify_error("hvp", adjit::hvp(&f, engine, &[1.0], &[1.0]));
        assert_verify_error(
            "jvp_vector",
            adjit::jvp_vector(&f, engine, &[1.0], &[&[1.0]]),
        );
        for &mode in adjit::JacobianMode::ALL {
            assert_verify_error("jacobian", adjit::jacobian(&f, engine, mode, &[1.0]));
        }
        assert_verify_error("hessian", adjit::hessian(&f, engine, &[1.0]));
    }
    for &stage in adjit::Stage::ALL {
        assert_verify_error(stage.name(), adjit::dump(&f, stage, &Default::default()));
    }
    for mode in [
        Mode::Primal,
        Mode::Jvp,
        Mode::Vjp,
        Mode::Gradient,
        Mode::Hvp,
    ] {
        assert_verify_error("derive", adjit::derive(&f, mode));
        assert_verify_error("compile_object", adjit::compile_object(&f, mode, None));
    }
    assert_verify_error("Gradient", adjit::Gradient::new(&f).map(|_| ()));
    for engine in [Engine::Interp, Engine::Jit] {
        let opts = adjit::Options::on(engine);
        assert_verify_error(
            "Compiled",
            adjit::Compiled::with_options(&f, Mode::Jvp, &opts).map(|_| ()),
        );
        assert_verify_error(
            "CheckpointedGradient",
            adjit::checkpoint::CheckpointedGradient::with_options(&f, Strategy::Uniform, &opts)
                .map(|_| ()),
        );
        assert_verify_error(
            "CompiledInverse",
            adjit::inverse::CompiledInverse::with_options(&f, InverseMode::Dense, &opts)
                .map(|_| ()),
        );
    }
}

/// Data inputs through every compile-once object: derivatives for the differentiated inputs
/// only, and the checkpointed gradient bitwise equal to the taped one under every strategy.
#[test]
fn data_inputs_through_the_facade() {
    use adjit::checkpoint::CheckpointedGradient;
    use adjit::Part;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/ir/examples/fit.ir");
    let funcs = adjit::load(std::path::Path::new(path)).unwrap();
    let f = &funcs[0];
    let n_diff = f.differentiated_params().count();
    assert!(f.has_data_params() && n_diff < f.n_params);
    let x: Vec<f64> = (0..f.n_params).map(|i| 0.3 + 0.1 * i as f64).collect();
    let grad = adjit::Gradient::new(f).unwrap();
    let mut g = vec![0.0; n_diff];
    grad.call(&x, &mut g).unwrap();
    let tape = adjit::Compiled::new(f, Mode::Vjp).unwrap();
    assert_eq!(tape.layout().output(Part::Gradient).len(), n_diff);
    let (mut y, mut expected) = (vec![0.0; f.n_outputs()], vec![0.0; n_diff]);
    tape.call_parts(&[&x, &[1.0]], &mut [&mut y, &mut expected])
        .unwrap();
    assert_eq!(g, expected);
    for strategy in [
        Strategy::Tape,
        Strategy::Uniform,
        Strategy::Checkpoint { snapshots: 1 },
    ] {
        for engine in [Engine::Interp, Engine::Jit] {
            let c = CheckpointedGradient::with_options(f, strategy, &adjit::Options::on(engine))
                .unwrap();
            let mut got = vec![0.0; n_diff];
            c.call(&x, &[1.0], &mut y, &mut got).unwrap();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&expected), "{strategy:?} {engine:?}");
            let mut wrong = vec![0.0; f.n_params];
            let err = c.call(&x, &[1.0], &mut y, &mut wrong).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Length {
                        part: Part::Gradient,
                        ..
                    }
                ),
                "{err}"
            );
        }
    }
}

/// Inverse products through iterated steps satisfy the inverse identities with the iterated
/// JVP and VJP under every strategy, and agree with the unrolled program's inverse modes.
#[test]
fn inverse_through_iterated_steps() {
    use adjit::steps::IteratedStep;
    let dt = 0.002;
    let step = adjit_testkit::lorenz_rk4(1, dt, Type::F64);
    let n_steps = 40;
    let unrolled = adjit_testkit::lorenz_rk4(n_steps, dt, Type::F64);
    let x = [1.0, 1.5, 20.0];
    let v = [0.3, -1.0, 0.25];
    let close = |a: &[f64], b: &[f64], what: &str| {
        for (p, q) in a.iter().zip(b) {
            assert!(
                (p - q).abs() <= 1e-9 * (1.0 + q.abs()),
                "{what}: {a:?} vs {b:?}"
            );
        }
    };
    let (_, unrolled_inv) =
        adjit::inverse(&unrolled, Engine::Jit, InverseMode::Reverse, &x, &v).unwrap();
    for strategy in [
        Strategy::Tape,
        Strategy::Checkpoint { snapshots: 3 },
        Strategy::Uniform,
    ] {
        let it = IteratedStep::new(&step, n_steps, strategy).unwrap();
        let (mut y, mut out) = ([0.0; 3], [0.0; 3]);
        for mode in [InverseMode::Reverse, InverseMode::Dense] {
            it.inverse(mode, &x, &v, &mut y, &mut out).unwrap();
            close(
                &out,
                &unrolled_inv,
                &format!("{strategy:?} {mode:?} vs unrolled"),
            );
            // J·(J⁻¹v) = v.
            let (mut y2, mut jv) = ([0.0; 3], [0.0; 3]);
            it.jvp(&x, &out, &mut y2, &mut jv).unwrap();
            assert_eq!(y, y2, "{strategy:?}: y = s_N");
            close(&jv, &v, &format!("{strategy:?} {mode:?}: J(J⁻¹v)"));
        }
        // Jᵀ·(J⁻ᵀw) = w.
        it.inverse(InverseMode::Forward, &x, &v, &mut y, &mut out)
            .unwrap();
        let (mut y3, mut jtw) = ([0.0; 3], [0.0; 3]);
        it.vjp(&x, &out, &mut y3, &mut jtw).unwrap();
        close(&jtw, &v, &format!("{strategy:?}: Jᵀ(J⁻ᵀw)"));
    }
    // A step with θ has no square Jacobian in the state alone: an error, not a panic.
    let decay = adjit::trace_multi("decay", &[Type::F64; 2], |s| vec![s[0] - 0.1 * s[1] * s[0]]);
    let it = IteratedStep::new(&decay, 10, Strategy::Tape).unwrap();
    let (mut y, mut out) = ([0.0], [0.0]);
    let err = it
        .inverse(InverseMode::Reverse, &[1.0, 0.5], &[1.0], &mut y, &mut out)
        .unwrap_err();
    assert!(err.to_string().contains("square step without θ"), "{err}");
}

/// One compiled object serves many threads (`&self` calls, `Send + Sync`): 8 threads calling
/// the same Gradient, CheckpointedGradient and CompiledInverse get the single-thread bits.
#[test]
fn eight_threads_share_one_compiled_object() {
    use adjit::checkpoint::CheckpointedGradient;
    use adjit::inverse::CompiledInverse;
    let f = adjit_testkit::lorenz_rk4(20, 0.01, Type::F64);
    let sum = adjit::trace(3, |x| x[0] * x[1].sin() + x[2] * x[2]);
    let grad = adjit::Gradient::new(&sum).unwrap();
    let ckpt = CheckpointedGradient::new(&f, Strategy::Checkpoint { snapshots: 2 }).unwrap();
    let inv = CompiledInverse::new(&f, InverseMode::Reverse).unwrap();
    let point = |t: usize| [1.0 + 0.01 * t as f64, 1.5, 20.0];
    let run = |t: usize| {
        let x = point(t);
        let mut g = [0.0; 3];
        let y = grad.call(&x, &mut g).unwrap();
        let (mut yc, mut gc) = ([0.0; 3], [0.0; 3]);
        ckpt.call(&x, &[1.0, -1.0, 0.5], &mut yc, &mut gc).unwrap();
        let (mut yi, mut vi) = ([0.0; 3], [0.0; 3]);
        inv.call(&x, &[0.3, 0.2, 0.1], &mut yi, &mut vi).unwrap();
        [
            y, g[0], g[1], g[2], gc[0], gc[1], gc[2], vi[0], vi[1], vi[2],
        ]
        .map(f64::to_bits)
    };
    let expected: Vec<_> = (0..8).map(run).collect();
    let got: Vec<Vec<_>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|t| scope.spawn(move || (0..50).map(|_| run(t)).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, calls) in got.iter().enumerate() {
        assert!(calls.iter().all(|c| *c == expected[t]), "thread {t}");
    }
}

/// `Gradient::call` and `Compiled::call` take an inlined native path for small programs and an
/// out-of-line one for everything else: both give the VJP's numbers on either side of the
/// stack buffers' sizes (4 and 16 outputs), on both engines, and wrong lengths are errors.
#[test]
fn gradient_and_compiled_calls_agree_across_buffer_sizes() {
    for n in [1usize, 2, 3, 4, 5, 15, 16, 17, 24] {
        let f = adjit::trace(n, |x| {
            x.iter().enumerate().fold(x[0] * 0.0, |s, (i, &xi)| {
                s + xi * xi * (i as f64 + 1.0) + xi.sin()
            })
        });
        let x: Vec<f64> = (0..n).map(|i| 0.25 + 0.1 * i as f64).collect();
        for engine in [Engine::Jit, Engine::Interp] {
            let opts = adjit::Options::on(engine);
            let grad = adjit::Gradient::with_options(&f, &opts).unwrap();
            let vjp = adjit::Compiled::with_options(&f, Mode::Vjp, &opts).unwrap();
            let mut g = vec![f64::NAN; n];
            let y = grad.call(&x, &mut g).unwrap();
            let mut inputs = x.clone();
            inputs.push(1.0);
            let mut out = vec![f64::NAN; n + 1];
            vjp.call(&inputs, &mut out).unwrap();
            assert_eq!(y.to_bits(), out[0].to_bits(), "n = {n}, {engine:?}");
            assert_eq!(g, out[1..], "n = {n}, {engine:?}");
            // Analytic check: d/dxᵢ = 2(i+1)xᵢ + cos xᵢ.
            for (i, (&gi, &xi)) in g.iter().zip(&x).enumerate() {
                let exact = 2.0 * (i as f64 + 1.0) * xi + xi.cos();
                assert!(
                    (gi - exact).abs() <= 1e-14 * exact.abs().max(1.0),
                    "n = {n}"
                );
            }
            assert!(grad.call(&x[1..], &mut g).is_err());
            assert!(grad.call(&x, &mut g[1..]).is_err());
            assert!(vjp.call(&inputs[1..], &mut out).is_err());
            assert!(vjp.call(&inputs, &mut out[1..]).is_err());
        }
    }
}
