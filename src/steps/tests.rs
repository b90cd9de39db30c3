//! The iterated steps and summed losses against their unrolled programs, bit for bit.

use super::*;
use crate::compile::{Compiled, Gradient};
use adjit_diff::checkpoint::revolve::{min_advances, Action};
use adjit_ir::trace::{trace_multi, Var};
use adjit_ir::Type;

fn bits(xs: &[f64]) -> Vec<u64> {
    xs.iter().map(|x| x.to_bits()).collect()
}

/// A pendulum-like step with θ = (a, b) used several times per step and a data step size.
fn pendulum_step<'t>(x: &[Var<'t>]) -> Vec<Var<'t>> {
    let (s0, s1, a, b, dt) = (x[0], x[1], x[2], x[3], x[4]);
    let force = -a * s0.sin() - b * s1 + a * a * 0.01 * s0;
    vec![s0 + dt * s1, s1 + dt * force]
}

fn with_dt_as_data(mut f: Function) -> Function {
    f.set_param_kind(Value::new(4), adjit_ir::ParamKind::Data);
    f
}

fn pendulum(steps: usize) -> Function {
    with_dt_as_data(trace_multi("pendulum", &[Type::F64; 5], |x| {
        let mut s = vec![x[0], x[1]];
        for _ in 0..steps {
            let mut input = s.clone();
            input.extend_from_slice(&x[2..]);
            s = pendulum_step(&input);
        }
        s
    }))
}

fn energy<'t>(x: &[Var<'t>]) -> Var<'t> {
    0.5 * x[1] * x[1] + x[2] * (1.0 - x[0].cos()) + x[3]
}

const STRATEGIES: [Strategy; 6] = [
    Strategy::Tape,
    Strategy::Uniform,
    Strategy::Checkpoint { snapshots: 1 },
    Strategy::Checkpoint { snapshots: 3 },
    Strategy::Checkpoint { snapshots: 20 },
    Strategy::CheckpointBytes(2000),
];

/// Every strategy's VJP (and the JVP and value) equals the unrolled program's bit for bit,
/// with and without an objective, and re-advances as often as the stats say.
#[test]
fn every_strategy_is_bitwise_the_unrolled_tape() {
    let n_steps = 37;
    let step = pendulum(1);
    let unrolled = pendulum(n_steps);
    let objective = with_dt_as_data(trace_multi("energy", &[Type::F64; 5], |x| vec![energy(x)]));
    let unrolled_obj = with_dt_as_data(trace_multi("energy_n", &[Type::F64; 5], |x| {
        let mut s = vec![x[0], x[1]];
        for _ in 0..n_steps {
            let mut input = s.clone();
            input.extend_from_slice(&x[2..]);
            s = pendulum_step(&input);
        }
        let mut input = s;
        input.extend_from_slice(&x[2..]);
        vec![energy(&input)]
    }));
    let x = [0.3, -0.2, 1.7, 0.1, 0.05];
    let xdot = [0.5, -1.0, 0.25, 2.0];
    for (obj, whole, w) in [
        (None, &unrolled, &[0.7, -1.3][..]),
        (Some(&objective), &unrolled_obj, &[1.0][..]),
    ] {
        let m = w.len();
        let tape = Compiled::new(whole, Mode::Vjp).unwrap();
        let (mut y, mut g) = (vec![0.0; m], vec![0.0; 4]);
        tape.call_parts(&[&x, w], &mut [&mut y, &mut g]).unwrap();
        let jvp = Compiled::new(whole, Mode::Jvp).unwrap();
        let (mut jy, mut ydot) = (vec![0.0; m], vec![0.0; m]);
        jvp.call_parts(&[&x, &xdot], &mut [&mut jy, &mut ydot])
            .unwrap();
        for strategy in STRATEGIES {
            let it = IteratedStep::with_options(&step, obj, n_steps, strategy, &Options::default())
                .unwrap();
            let (mut y2, mut g2) = (vec![0.0; m], vec![0.0; 4]);
            let advances = it.sweep(&x, w, &mut y2, &mut g2).unwrap();
            assert_eq!(bits(&y2), bits(&y), "{strategy}");
            assert_eq!(bits(&g2), bits(&g), "{strategy}");
            assert_eq!(advances, it.stats().forward_steps, "{strategy}");
            if let Strategy::Checkpoint { snapshots } = strategy {
                assert_eq!(advances, min_advances(n_steps, snapshots), "{strategy}");
            }
            if let Strategy::CheckpointBytes(budget) = strategy {
                assert!(it.stats().peak_bytes <= budget);
                assert!(it.stats().snapshots > 1, "{:?}", it.stats());
            }
            let (mut y3, mut ydot3) = (vec![0.0; m], vec![0.0; m]);
            it.jvp(&x, &xdot, &mut y3, &mut ydot3).unwrap();
            assert_eq!(bits(&y3), bits(&jy));
            assert_eq!(bits(&ydot3), bits(&ydot));
            let mut y4 = vec![0.0; m];
            it.eval(&x, &mut y4).unwrap();
            assert_eq!(bits(&y4), bits(&jy));
        }
    }
}

#[test]
fn lorenz_rk4_steps_are_bitwise_the_unrolled_tape() {
    let (n_steps, dt) = (200, 0.01);
    let step = adjit_testkit::lorenz_rk4(1, dt, Type::F64);
    let unrolled = adjit_testkit::lorenz_rk4(n_steps, dt, Type::F64);
    let x = [1.0, 1.0, 1.0];
    let w = [1.0, -0.5, 0.25];
    let tape = Compiled::new(&unrolled, Mode::Vjp).unwrap();
    let (mut y, mut g) = ([0.0; 3], [0.0; 3]);
    tape.call_parts(&[&x, &w], &mut [&mut y, &mut g]).unwrap();
    for strategy in [Strategy::Tape, Strategy::Checkpoint { snapshots: 5 }] {
        let it = IteratedStep::new(&step, n_steps, strategy).unwrap();
        let (mut y2, mut g2) = ([0.0; 3], [0.0; 3]);
        it.vjp(&x, &w, &mut y2, &mut g2).unwrap();
        assert_eq!((bits(&y2), bits(&g2)), (bits(&y), bits(&g)), "{strategy}");
    }
}

/// Step counts beyond memory or `usize`: every strategy builds at once (its schedule is
/// counted in closed form, never walked), the forward sweep needs no stored states, and a
/// reverse sweep whose states do not fit says so and names what fits, before allocating.
#[test]
fn extreme_step_counts_are_errors_not_aborts() {
    let step =
        adjit_ir::trace::trace_multi("decay", &[Type::F64; 2], |x| vec![x[0] - x[0] * x[1] * 0.1]);
    let strategies = [
        Strategy::Tape,
        Strategy::Uniform,
        Strategy::Checkpoint { snapshots: 20 },
        Strategy::Checkpoint {
            snapshots: usize::MAX,
        },
        Strategy::CheckpointBytes(u64::MAX),
    ];
    for n in [1_000_000_000_000, usize::MAX] {
        for strategy in strategies {
            let it = IteratedStep::new(&step, n, strategy).unwrap();
            assert_eq!(it.n_steps(), n);
            // 20 states, or √N·2 of them for 10¹² steps (16 MB), fit: those sweeps would
            // run for hours. Every other combination needs more than a machine holds.
            let fits = matches!(strategy, Strategy::Checkpoint { snapshots: 20 })
                || (strategy == Strategy::Uniform && n == 1_000_000_000_000);
            if !fits {
                let (mut y, mut g) = ([0.0], [0.0; 2]);
                let err = it.vjp(&[1.0, 0.5], &[1.0], &mut y, &mut g).unwrap_err();
                let text = err.to_string();
                assert!(
                    text.contains("stored states") && text.contains("checkpoint:S"),
                    "{strategy:?} × {n}: {text}"
                );
            }
        }
    }
    // The closed-form count of the √N scheme is the sweep's own.
    for n in [1, 2, 7, 100, 1001] {
        let it = IteratedStep::new(&step, n, Strategy::Uniform).unwrap();
        let (mut y, mut g) = ([0.0], [0.0; 2]);
        let swept = it.sweep(&[1.0, 0.5], &[1.0], &mut y, &mut g).unwrap();
        let counted = it.stats().forward_steps;
        let mut walked = 0u64;
        it.schedule
            .stream(&mut |a| {
                if let Action::Advance { from, to } = a {
                    walked += (to - from) as u64;
                }
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(swept, walked, "n = {n}");
        assert_eq!(counted, walked, "n = {n}");
    }
}

/// A loss summed over the states equals the unrolled program's, value and gradient, under
/// every strategy; the trajectory is the states the primal visits.
#[test]
fn summed_loss_and_trajectory_match_the_unrolled_program() {
    // s = (p, q), θ = (a, b), one data input dt.
    fn step_fn<'t>(x: &[Var<'t>]) -> Vec<Var<'t>> {
        let (p, q, a, b, dt) = (x[0], x[1], x[2], x[3], x[4]);
        vec![p + q * dt, q - (p.sin() * a + q * b) * dt]
    }
    fn loss_fn<'t>(x: &[Var<'t>]) -> Var<'t> {
        x[0] * x[0] + x[1] * x[1] * x[2]
    }
    let types = [Type::F64; 5];
    let mut step = trace_multi("osc", &types, step_fn);
    step.set_param_kind(Value::new(4), adjit_ir::ParamKind::Data);
    let mut loss = trace_multi("energy", &types, |x| vec![loss_fn(x)]);
    loss.set_param_kind(Value::new(4), adjit_ir::ParamKind::Data);
    let n_steps = 7;
    let mut unrolled = trace_multi("unrolled", &types, |x| {
        let mut state = vec![x[0], x[1]];
        let mut total = x[0] * 0.0;
        for _ in 0..n_steps {
            let args = [state[0], state[1], x[2], x[3], x[4]];
            state = step_fn(&args);
            let args = [state[0], state[1], x[2], x[3], x[4]];
            total += loss_fn(&args);
        }
        vec![total]
    });
    unrolled.set_param_kind(Value::new(4), adjit_ir::ParamKind::Data);
    let x = [0.3, -0.2, 1.1, 0.4, 0.1];
    let grad = Gradient::new(&unrolled).unwrap();
    let mut expected = [0.0; 4];
    let value = grad.call(&x, &mut expected).unwrap();
    for strategy in [
        Strategy::Tape,
        Strategy::Uniform,
        Strategy::Checkpoint { snapshots: 1 },
        Strategy::Checkpoint { snapshots: 3 },
    ] {
        let sum = SummedLoss::new(&step, &loss, n_steps, strategy).unwrap();
        let mut g = [0.0; 4];
        let l = sum.gradient(&x, &mut g).unwrap();
        assert!(
            (l - value).abs() <= 1e-14 * value.abs(),
            "{strategy:?}: {l} vs {value}"
        );
        assert_eq!(sum.eval(&x).unwrap(), l);
        for (a, b) in g.iter().zip(&expected) {
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "{strategy:?}: {g:?} vs {expected:?}"
            );
        }
    }
    let it = IteratedStep::new(&step, n_steps, Strategy::Tape).unwrap();
    let mut states = vec![0.0; 2 * n_steps];
    it.trajectory(&x, &mut states).unwrap();
    let mut last = [0.0; 2];
    it.eval(&x, &mut last).unwrap();
    assert_eq!(&states[2 * n_steps - 2..], &last);
    assert!(it.trajectory(&x, &mut [0.0; 3]).is_err());
    let bad = trace_multi("bad", &[Type::F64; 2], |x| vec![x[0]]);
    assert!(SummedLoss::new(&step, &bad, 3, Strategy::Tape).is_err());
}

#[test]
fn bad_steps_and_arguments_are_errors() {
    let step = pendulum(1);
    let err = IteratedStep::new(&step, 0, Strategy::Tape).unwrap_err();
    assert!(err.to_string().contains("at least one step"), "{err}");
    let five = trace_multi("five", &[Type::F64; 1], |x| vec![x[0]; 3]);
    let err = IteratedStep::new(&five, 4, Strategy::Tape).unwrap_err();
    assert!(
        err.to_string().contains("3 outputs but 1 parameters"),
        "{err}"
    );
    let err = IteratedStep::new(&step, 4, Strategy::CheckpointBytes(10)).unwrap_err();
    assert!(
        err.to_string().contains("smallest that works needs"),
        "{err}"
    );
    let it = IteratedStep::new(&step, 4, Strategy::Uniform).unwrap();
    let (mut y, mut g) = ([0.0; 2], [0.0; 4]);
    let err = it.vjp(&[0.0; 5], &[1.0], &mut y, &mut g).unwrap_err();
    assert!(
        err.to_string().contains("ȳ has 1 numbers, expected 2"),
        "{err}"
    );
    let bad_obj = trace_multi("obj", &[Type::F64; 2], |x| vec![x[0]]);
    let err = IteratedStep::with_options(
        &step,
        Some(&bad_obj),
        4,
        Strategy::Tape,
        &Options::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("takes the step's parameters"),
        "{err}"
    );
}
