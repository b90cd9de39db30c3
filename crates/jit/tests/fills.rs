//! Constants returned many times are written by a loop over their span before anything else
//! (`plan.rs`, `Fill`): the outputs are the interpreter's bit for bit, in one and two lanes
//! and in tiny chunks, and the code no longer grows with the number of such outputs.

mod common;

use adjit_ir::interpret;
use adjit_jit::{compile, JitOptions};
use common::{assert_same, constant_outputs};

fn check(opts: &JitOptions) {
    for seed in 0..6 {
        let func = constant_outputs(seed);
        let code = compile(&func, opts).expect("compiles");
        let points = [vec![1.5, -0.25], vec![3.0, 0.5], vec![-2.0, 0.0]];
        for x in &points {
            let mut out = vec![f64::NAN; code.n_outputs()];
            code.call(x, &mut out).expect("lengths match");
            let want = interpret(&func, x).expect("interprets");
            assert_same(&func.name, x, &out, &want);
        }
        let flat: Vec<f64> = points.concat();
        let mut out = vec![f64::NAN; code.n_outputs() * points.len()];
        code.call_batch(&flat, &mut out).expect("lengths match");
        for (x, y) in points.iter().zip(out.chunks(code.n_outputs())) {
            let want = interpret(&func, x).expect("interprets");
            assert_same(&func.name, x, y, &want);
        }
    }
}

#[test]
fn filled_outputs_match_the_interpreter() {
    check(&JitOptions::default());
}

#[test]
fn filled_outputs_match_the_interpreter_in_two_lanes() {
    check(&JitOptions {
        batch_lanes: 2,
        ..JitOptions::default()
    });
}

#[test]
fn filled_outputs_match_the_interpreter_in_tiny_chunks() {
    check(&JitOptions {
        chunk_insts: 3,
        registers: 4,
        ..JitOptions::default()
    });
}

/// 10⁴ more outputs of one constant cost a loop, not 10⁴ stores.
#[test]
fn code_does_not_grow_with_the_filled_outputs() {
    let bytes = |n: usize| {
        let mut b = adjit_ir::Builder::new("many");
        let x = b.param(adjit_ir::Type::F64, "x");
        let c = b.constant(adjit_ir::Type::F64, -1.0);
        let y = b.mul(x, x);
        let mut rets = vec![y];
        rets.extend(std::iter::repeat_n(c, n));
        let func = b.finish(&rets);
        compile(&func, &JitOptions::default())
            .expect("compiles")
            .code_bytes()
    };
    let (small, large) = (bytes(100), bytes(10_100));
    assert!(large <= small + 64, "{small} B → {large} B");
}
