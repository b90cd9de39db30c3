//! Checkpointed gradients, run with the interpreter, against the taped whole-function `vjp`
//! (bitwise) and against central finite differences.

use adjit_diff::checkpoint::{plan, Executor, InterpRunner, Strategy};
use adjit_diff::vjp;
use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::{interpret, verify, Function, Type};

const STRATEGIES: [Strategy; 7] = [
    Strategy::Tape,
    Strategy::Uniform,
    Strategy::Checkpoint { snapshots: 1 },
    Strategy::Checkpoint { snapshots: 2 },
    Strategy::Checkpoint { snapshots: 3 },
    Strategy::Checkpoint { snapshots: 8 },
    Strategy::CheckpointBytes(6000),
];

/// `(y, Jᵀw)` through a checkpointing plan, every stage function verified.
fn checkpointed(func: &Function, strategy: Strategy, x: &[f64], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let p = plan(func, strategy).unwrap();
    for (stage, rev) in p.partition.stages.iter().zip(&p.partition.reverse) {
        verify(stage).unwrap_or_else(|e| panic!("after pass partition: {e}"));
        verify(rev).unwrap_or_else(|e| panic!("after pass vjp of {}: {e}", stage.name));
    }
    let mut runner = InterpRunner::new(&p.partition);
    let exec = Executor::new(func, &p);
    let mut bufs = exec.buffers();
    let mut y = vec![0.0; func.n_outputs()];
    let n_float_params = func.param_types().iter().filter(|t| t.is_float()).count();
    let mut grad = vec![0.0; n_float_params];
    exec.run(&mut bufs, &mut runner, x, w, &mut y, &mut grad)
        .unwrap();
    (y, grad)
}

/// `(y, Jᵀw)` from the whole-function `vjp` (float parameters only, all float here).
fn taped(func: &Function, x: &[f64], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut inputs = x.to_vec();
    inputs.extend_from_slice(w);
    let out = interpret(&vjp(func), &inputs).unwrap();
    let (y, grad) = out.split_at(func.n_outputs());
    (y.to_vec(), grad.to_vec())
}

fn bits(xs: &[f64]) -> Vec<u64> {
    xs.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn gradients_are_bitwise_the_taped_gradients_on_random_programs() {
    for seed in 0..24 {
        let opts = RandomOptions {
            n_params: 2 + (seed % 4) as usize,
            n_insts: 150 + 40 * (seed % 7) as usize,
            n_outputs: 1 + (seed % 3) as usize,
            ty: if seed % 5 == 4 { Type::F32 } else { Type::F64 },
            window: 8 + (seed % 3) as usize * 8,
            non_smooth: seed % 2 == 1,
        };
        let func = random_function(seed, &opts);
        let mut rng = Rng::new(seed + 100);
        let x: Vec<f64> = rng
            .vector(func.n_params, -2.0, 2.0)
            .iter()
            .map(|&v| opts.ty.round(v))
            .collect();
        let w: Vec<f64> = rng
            .vector(func.n_outputs(), -1.0, 1.0)
            .iter()
            .map(|&v| opts.ty.round(v))
            .collect();
        let (y_tape, g_tape) = taped(&func, &x, &w);
        for strategy in STRATEGIES {
            let (y, g) = checkpointed(&func, strategy, &x, &w);
            assert_eq!(bits(&y), bits(&y_tape), "seed {seed}, {strategy}: outputs");
            assert_eq!(
                bits(&g),
                bits(&g_tape),
                "seed {seed}, {strategy}: {g:?} vs {g_tape:?}"
            );
        }
    }
}

#[test]
fn gradients_match_central_differences() {
    for seed in 0..6 {
        let func = random_function(
            seed,
            &RandomOptions {
                n_insts: 300,
                ..RandomOptions::default()
            },
        );
        let mut rng = Rng::new(seed);
        let x = rng.vector(func.n_params, -1.5, 1.5);
        let w = rng.vector(func.n_outputs(), -1.0, 1.0);
        let (_, grad) = checkpointed(&func, Strategy::Checkpoint { snapshots: 2 }, &x, &w);
        let f = |x: &[f64]| -> f64 {
            interpret(&func, x)
                .unwrap()
                .iter()
                .zip(&w)
                .map(|(y, w)| y * w)
                .sum()
        };
        for i in 0..func.n_params {
            let h = 1e-5 * (1.0 + x[i].abs());
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[i] += h;
            xm[i] -= h;
            let fd = (f(&xp) - f(&xm)) / (2.0 * h);
            let scale = 1.0 + fd.abs().max(grad[i].abs());
            assert!(
                (fd - grad[i]).abs() < 1e-5 * scale,
                "seed {seed}, x{i}: fd {fd} vs {}",
                grad[i]
            );
        }
    }
}

#[test]
fn outputs_returned_twice_and_bool_states_are_handled() {
    // A value returned twice (seeds added), a parameter returned as is, and an fcmp result
    // that crosses stage boundaries.
    let mut b = adjit_ir::Builder::new("mixed");
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let c = b.fcmp(adjit_ir::CmpPred::Lt, x, y);
    let mut acc = b.mul(x, y);
    for i in 0..40 {
        let s = b.unary(adjit_ir::UnaryOp::Sin, acc);
        let t = b.select(c, s, x);
        acc = b.fma(t, 0.5 + i as f64 * 0.01, acc);
    }
    let func = b.finish(&[acc, y, acc, c]);
    verify(&func).unwrap();
    let x = [0.3, 0.7];
    let w = [0.25, -1.5, 2.0, 9.0];
    let mut inputs = x.to_vec();
    inputs.extend_from_slice(&w[..3]);
    let out = interpret(&vjp(&func), &inputs).unwrap();
    for strategy in STRATEGIES {
        let (y, g) = checkpointed(&func, strategy, &x, &w[..3]);
        assert_eq!(bits(&y), bits(&out[..4]), "{strategy}");
        assert_eq!(bits(&g), bits(&out[4..]), "{strategy}");
    }
}
