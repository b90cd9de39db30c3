//! Byte-budget planning stays fast on large programs: a plan for a 20k-instruction random
//! program and for a Lorenz RK4 integration completes, fits its budget as measured on the
//! built partition, and the "smallest budget" of a refusal is one that plans.

use std::time::Instant;

use adjit_diff::checkpoint::{plan, CheckpointError, Strategy};
use adjit_ir::random::{random_function, RandomOptions};
use adjit_ir::{Builder, Function, Type, Value};

/// The Lorenz system integrated by `steps` RK4 steps of dt = 0.01 (as in benches/checkpoint.rs).
fn lorenz_rk4(steps: usize) -> Function {
    const SIGMA: f64 = 10.0;
    const RHO: f64 = 28.0;
    const BETA: f64 = 8.0 / 3.0;
    const DT: f64 = 0.01;
    let mut b = Builder::new("lorenz");
    let mut s = [
        b.param(Type::F64, "x"),
        b.param(Type::F64, "y"),
        b.param(Type::F64, "z"),
    ];
    let field = |b: &mut Builder, [x, y, z]: [Value; 3]| -> [Value; 3] {
        let yx = b.sub(y, x);
        let dx = b.mul(yx, SIGMA);
        let rz = b.sub(RHO, z);
        let xr = b.mul(x, rz);
        let dy = b.sub(xr, y);
        let xy = b.mul(x, y);
        let bz = b.mul(z, BETA);
        let dz = b.sub(xy, bz);
        [dx, dy, dz]
    };
    let axpy = |b: &mut Builder, k: [Value; 3], h: f64, s: [Value; 3]| -> [Value; 3] {
        [0, 1, 2].map(|i| b.fma(k[i], h, s[i]))
    };
    for _ in 0..steps {
        let k1 = field(&mut b, s);
        let s2 = axpy(&mut b, k1, DT / 2.0, s);
        let k2 = field(&mut b, s2);
        let s3 = axpy(&mut b, k2, DT / 2.0, s);
        let k3 = field(&mut b, s3);
        let s4 = axpy(&mut b, k3, DT, s);
        let k4 = field(&mut b, s4);
        s = [0, 1, 2].map(|i| {
            let ends = b.add(k1[i], k4[i]);
            let mids = b.add(k2[i], k3[i]);
            let sum = b.fma(mids, 2.0, ends);
            b.fma(sum, DT / 6.0, s[i])
        });
    }
    b.finish(&s)
}

/// Plans `func` under a tenth, a hundredth and a thousandth of its tape peak; every plan fits
/// its budget, every refusal names a budget that plans.
fn check_budgets(func: &Function) {
    let tape = plan(func, Strategy::Tape)
        .expect("tape plan")
        .cost
        .peak_bytes;
    for divisor in [10, 100, 1000] {
        let budget = tape / divisor;
        match plan(func, Strategy::CheckpointBytes(budget)) {
            Ok(p) => {
                assert!(p.cost.peak_bytes <= budget, "1/{divisor}: {:?}", p.cost);
                assert!(
                    p.partition.n_stages() > 1,
                    "1/{divisor} needs recomputation"
                );
                for stage in p.partition.stages.iter().chain(&p.partition.reverse) {
                    adjit_ir::verify(stage).unwrap_or_else(|e| panic!("after pass plan: {e}"));
                }
            }
            Err(CheckpointError::BudgetTooSmall { smallest, .. }) => {
                assert!(smallest > budget);
                let p = plan(func, Strategy::CheckpointBytes(smallest)).expect("smallest plans");
                assert!(p.cost.peak_bytes <= smallest);
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn large_random_program_plans_under_a_budget() {
    let func = random_function(
        21,
        &RandomOptions {
            n_insts: 20_000,
            ..RandomOptions::default()
        },
    );
    check_budgets(&func);
}

#[test]
fn lorenz_plans_under_a_budget() {
    check_budgets(&lorenz_rk4(500));
}

/// Prints the planning time for Lorenz RK4 with 10,000 steps (~530k instructions); run with
/// `cargo test --release -p adjit-diff --test checkpoint_plan -- --ignored --nocapture`.
#[test]
#[ignore = "timing report for a large program; run in release"]
fn lorenz_10k_planning_time() {
    let func = lorenz_rk4(10_000);
    let tape = plan(&func, Strategy::Tape)
        .expect("tape plan")
        .cost
        .peak_bytes;
    // The last budget is too small: the refusal measures the smallest workable budget.
    for divisor in [10, 100, 1000, 1_000_000] {
        let start = Instant::now();
        let p = plan(&func, Strategy::CheckpointBytes(tape / divisor));
        let elapsed = start.elapsed();
        match p {
            Ok(p) => println!(
                "1/{divisor} of tape ({} bytes): {} stages, {} snapshots, peak {}, planned in {:.2?}",
                tape / divisor,
                p.partition.n_stages(),
                p.snapshots,
                p.cost.peak_bytes,
                elapsed
            ),
            Err(e) => println!("1/{divisor}: {e} ({elapsed:.2?})"),
        }
    }
}
