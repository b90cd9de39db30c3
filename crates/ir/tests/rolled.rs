//! Rolled programs: `Rolled::from_function(f)` expands back to `f` exactly, and its
//! interpreter computes the interpreter's bits on `f`, on random repeated programs (carried
//! state, strides, interruptions, data literals, f32), irregular ones and traces; the held
//! instructions follow the template, not the trip count.

use adjit_ir::random::{random_function, random_repeated, RandomOptions, RepeatOptions, Rng};
use adjit_ir::roll::Source;
use adjit_ir::trace::trace;
use adjit_ir::{interpret, verify, Function, Rolled, Type};

fn repeated(seed: u64, data: bool) -> Function {
    let func = random_repeated(seed, &RepeatOptions::of_seed(seed, data));
    verify(&func).expect("generated programs verify");
    func
}

fn assert_same_bits(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
            "{what}: output {i}: {x} against {y}"
        );
    }
}

/// Expansion gives the program back, and both interpreters agree at a few points.
fn check(func: &Function, seed: u64) -> Rolled {
    let rolled = Rolled::from_function(func);
    rolled.verify().expect("a program's loops verify");
    let expanded = rolled.expand();
    assert_eq!(&expanded, func, "{rolled}");
    assert_eq!(rolled.n_values(), func.n_values());
    let mut rng = Rng::new(seed);
    for _ in 0..3 {
        let x = rng.vector(func.n_params, -2.0, 2.0);
        let want = interpret(func, &x).expect("runs");
        let got = rolled.interpret(&x).expect("runs");
        assert_same_bits(&got, &want, &func.name);
    }
    rolled
}

#[test]
fn repeated_programs_expand_to_themselves() {
    let mut rolled_some = 0;
    for seed in 0..120 {
        for data in [false, true] {
            let func = repeated(seed, data);
            let rolled = check(&func, seed);
            if rolled.n_template_insts() < func.n_insts() {
                rolled_some += 1;
            }
        }
    }
    assert!(
        rolled_some > 200,
        "only {rolled_some} of 240 programs rolled"
    );
}

#[test]
fn irregular_programs_expand_to_themselves() {
    for seed in 0..60 {
        check(&random_function(seed, &RandomOptions::of_seed(seed)), seed);
    }
}

/// Σ (1 − x_i)² + 100 (x_{i+1} − x_i²)², traced term by term.
fn rosenbrock(n: usize) -> Function {
    trace(n, |x| {
        let mut s = x[0] * 0.0;
        for i in 0..n - 1 {
            let a = x[i + 1] - x[i] * x[i];
            let b = 1.0 - x[i];
            s = s + a * a * 100.0 + b * b;
        }
        s
    })
}

#[test]
fn a_traced_sum_is_held_as_its_template() {
    for n in [100, 1000, 5000] {
        let func = rosenbrock(n);
        let rolled = check(&func, n as u64);
        assert!(
            rolled.n_template_insts() <= 40,
            "n = {n}: {} instructions held\n{rolled}",
            rolled.n_template_insts()
        );
    }
}

/// The tests above can fail: a loop whose affine index or carried value is broken expands to
/// another program and computes other numbers.
#[test]
fn a_broken_index_or_carry_is_seen() {
    let func = rosenbrock(200);
    let rolled = Rolled::from_function(&func);
    let x: Vec<f64> = (0..200).map(|i| 0.5 + (i % 7) as f64 * 0.1).collect();
    let want = interpret(&func, &x).expect("runs");
    let mutations: [fn(&mut Source) -> bool; 2] = [
        |s| match s {
            Source::Affine { step, .. } if *step != 0 => {
                *step += 1;
                true
            }
            _ => false,
        },
        |s| match s {
            Source::Carried { init, .. } => {
                let base = *init;
                *s = Source::Affine { base, step: 0 };
                true
            }
            _ => false,
        },
    ];
    for mutate in mutations {
        let mut broken = Rolled::new(func.header());
        let mut done = false;
        for l in rolled.loops() {
            let mut l = l.clone();
            if !done && l.trips > 1 {
                'find: for srcs in &mut l.sources {
                    for s in srcs.iter_mut() {
                        if mutate(s) {
                            done = true;
                            break 'find;
                        }
                    }
                }
            }
            broken.push(l);
        }
        assert!(done, "no source to break");
        broken.set_rets(func.rets.clone(), func.ret_types.clone());
        let got = broken.interpret(&x).expect("runs");
        assert_ne!(got[0].to_bits(), want[0].to_bits());
        assert_ne!(broken.expand(), func);
    }
}

/// `verify` names what is wrong: a read of a later value, an operand of the wrong type, a
/// rule count that does not match the instruction, a return past the program.
#[test]
fn verify_finds_broken_loops() {
    use adjit_ir::RolledError;
    let func = rosenbrock(50);
    let rolled = Rolled::from_function(&func);
    let (k, _) = rolled
        .loops()
        .iter()
        .enumerate()
        .find(|(_, l)| l.trips > 1)
        .expect("a loop");
    let rebuild = |edit: &dyn Fn(&mut adjit_ir::Loop)| {
        let mut out = Rolled::new(func.header());
        for (i, l) in rolled.loops().iter().enumerate() {
            let mut l = l.clone();
            if i == k {
                edit(&mut l);
            }
            out.push(l);
        }
        out.set_rets(func.rets.clone(), func.ret_types.clone());
        out.verify()
    };
    assert_eq!(rebuild(&|_| {}), Ok(()));
    // An affine read that reaches into the loop itself.
    let err = rebuild(&|l| {
        let s = l
            .sources
            .iter_mut()
            .flatten()
            .find(|s| matches!(s, Source::Affine { .. }))
            .expect("an affine read");
        *s = Source::Affine {
            base: l.start as u32,
            step: 1,
        };
    });
    assert!(
        matches!(err, Err(RolledError::ReadsForward { .. })),
        "{err:?}"
    );
    // A same-iteration read of a later position.
    let err = rebuild(&|l| {
        let period = l.period() as u32;
        let s = l.sources[0].first_mut().expect("an operand");
        *s = Source::Same { pos: period - 1 };
    });
    assert!(
        matches!(err, Err(RolledError::ReadsForward { .. })),
        "{err:?}"
    );
    // One rule too many: `push` refuses the loop.
    let pushed = std::panic::catch_unwind(|| {
        rebuild(&|l| l.sources[0].push(Source::Affine { base: 0, step: 0 }))
    });
    assert!(pushed.is_err());
    // A return past the end.
    let mut r = rolled.clone();
    r.set_rets(vec![adjit_ir::Value::new(func.n_values())], vec![Type::F64]);
    assert!(matches!(r.verify(), Err(RolledError::Return { .. })));
    // A type mismatch: an f32 program read where f64 is taken.
    let mut b = adjit_ir::Builder::new("mixed");
    let x = b.param(Type::F32, "x");
    let y = b.param(Type::F64, "y");
    let s = b.mul(y, 2.0);
    let f = b.finish(&[s]);
    let mut bad = Rolled::new(f.header());
    let mut l = adjit_ir::Loop::straight(2, &f.values[2..]);
    l.sources[0][0] = Source::Affine {
        base: x.index() as u32,
        step: 0,
    };
    bad.push(l);
    bad.set_rets(f.rets.clone(), f.ret_types.clone());
    assert!(
        matches!(bad.verify(), Err(RolledError::Type { .. })),
        "{:?}",
        bad.verify()
    );
}
