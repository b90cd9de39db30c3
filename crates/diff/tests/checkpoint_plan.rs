//! Byte-budget planning stays fast on large programs: a plan for a 20k-instruction random
//! program and for a Lorenz RK4 integration completes, fits its budget as measured on the
//! built partition, and the "smallest budget" of a refusal is one that plans.

use std::time::Instant;

use adjit_diff::checkpoint::{plan, CheckpointError, Strategy};
use adjit_ir::random::{random_function, RandomOptions};
use adjit_ir::{Function, Type};

/// The Lorenz system (σ = 10, ρ = 28, β = 8/3) integrated by `steps` RK4 steps of dt = 0.01.
fn lorenz_rk4(steps: usize) -> Function {
    adjit_testkit::lorenz_rk4(steps, 0.01, Type::F64)
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
