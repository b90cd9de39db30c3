//! Differential tests across paths that must agree bit for bit: the tape and the checkpointed
//! reverse (one rulebook, one simplification), and, over structure-aware random programs, the
//! interpreter and the JIT, the adjoint identity, and the inverse modes (finite or an error).
//!
//! Everything goes through the facade, which is what the CLI calls.

use adjit::{Engine, Function, Strategy};

fn parse(text: &str) -> Function {
    adjit::load_str(text, "test.ir").expect("parses").remove(0)
}

/// `vjp` under every strategy equals the tape bit for bit (as f64 bits, so 0.0 ≠ −0.0 and NaN
/// shows).
fn check_strategies_agree(func: &Function, x: &[f64], w: &[f64]) {
    let (y, tape) = adjit::vjp(func, Engine::Jit, Strategy::Tape, x, w).expect("tape vjp");
    let bits = |v: &[f64]| v.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
    for strategy in [
        Strategy::Checkpoint { snapshots: 1 },
        Strategy::Checkpoint { snapshots: 2 },
        Strategy::Uniform,
    ] {
        for engine in [Engine::Jit, Engine::Interp] {
            let (ys, g) = adjit::vjp(func, engine, strategy, x, w).expect("checkpointed vjp");
            assert_eq!(bits(&ys), bits(&y), "@{} outputs, {strategy}", func.name);
            assert_eq!(
                bits(&g),
                bits(&tape),
                "@{} at {x:?}: tape {tape:?}, {strategy} on {engine:?} {g:?}",
                func.name
            );
        }
    }
}

/// `powi a, 0` is 1 for every `a` (NaN included), so nothing flows back into `a`: the tape
/// emitted no adjoint for `%a` while the checkpoint stages passed a runtime zero across the
/// stage boundary and multiplied it by `cos %y` (0·NaN = NaN at y = inf, −0.0 at y = 2.5).
#[test]
fn powi_zero_gives_the_same_gradient_under_every_strategy() {
    let f = parse(
        "func @f(%x: f64, %y: f64) -> f64 {
    %a = sin %y
    %p = powi %a, 0
    %r = mul %x, %p
    ret %r
}",
    );
    for y in [f64::INFINITY, 2.5, 0.0, -0.0, f64::NAN] {
        check_strategies_agree(&f, &[0.3, y], &[1.0]);
    }
    let (_, g) = adjit::vjp(
        &f,
        Engine::Jit,
        Strategy::Tape,
        &[0.3, f64::INFINITY],
        &[1.0],
    )
    .expect("vjp");
    assert_eq!((g[0], g[1].to_bits()), (1.0, 0.0f64.to_bits()));
}
