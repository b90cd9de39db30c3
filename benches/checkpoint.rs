//! Checkpointed reverse mode against the tape: Lorenz RK4 (10,000 steps) and a long random
//! program (~50k instructions), Tape vs checkpoint:2,4,8, Uniform and a byte budget of 1/10 of
//! the tape.
//!
//! Besides criterion's timings it prints one table per program (peak bytes, recomputed
//! instructions, ns per gradient, predicted and measured cost relative to the tape) and the
//! three checks of the design: memory within s × largest snapshot + largest stage tape (plus
//! the stored-once values and working buffers, printed separately), measured time ratio within
//! 25% of the predicted instruction ratio, and ≤ 2.5× the tape's time at 1/10 of its bytes.
//! Run: `cargo bench --bench checkpoint -- --warm-up-time 1 --measurement-time 2`.

use std::hint::black_box;
use std::time::Instant;

use adjit::checkpoint::CheckpointedGradient;
use adjit::ir::random::{random_function, RandomOptions, Rng};
use adjit::{Compiled, Function, Mode, Strategy, Type};
use criterion::Criterion;

/// The Lorenz system (σ = 10, ρ = 28, β = 8/3) integrated by `steps` RK4 steps of dt = 0.01.
fn lorenz_rk4(steps: usize) -> Function {
    adjit_testkit::lorenz_rk4(steps, 0.01, Type::F64)
}

struct Row {
    label: String,
    peak_bytes: u64,
    snapshots_plus_tape: u64,
    recomputed: u64,
    ns: f64,
    predicted: f64,
    stages: usize,
    compile_ms: f64,
    workspace_bytes: u64,
}

fn run_program(c: &mut Criterion, name: &str, func: &Function, x: &[f64]) {
    let w = Rng::new(11).vector(func.n_outputs(), 0.5, 1.5);
    let n_out = func.n_outputs();

    // The tape: the whole-function vjp, simplified and compiled.
    let start = Instant::now();
    let tape = Compiled::new(func, Mode::Vjp).expect("tape compiles");
    let tape_compile_ms = start.elapsed().as_secs_f64() * 1e3;
    let tape_insts = tape.ir().n_insts() as f64;
    let mut inputs = x.to_vec();
    inputs.extend_from_slice(&w);
    let mut tape_out = vec![0.0; tape.n_outputs()];
    let tape_ns = adjit::time_per_call(|| {
        tape.call(black_box(&inputs), &mut tape_out)?;
        black_box(&tape_out);
        Ok(())
    })
    .expect("tape runs");
    let tape_plan = adjit::diff::checkpoint::plan(func, adjit::diff::checkpoint::Strategy::Tape)
        .expect("tape plan");
    let tape_bytes = tape_plan.cost.peak_bytes;
    c.bench_function(&format!("{name}/tape"), |bench| {
        bench.iter(|| tape.call(black_box(&inputs), &mut tape_out))
    });

    let strategies = [
        Strategy::Checkpoint { snapshots: 2 },
        Strategy::Checkpoint { snapshots: 4 },
        Strategy::Checkpoint { snapshots: 8 },
        Strategy::Uniform,
        Strategy::CheckpointBytes(tape_bytes / 10),
    ];
    let mut rows = vec![Row {
        label: "tape".into(),
        peak_bytes: tape_bytes,
        snapshots_plus_tape: tape_plan.cost.tape_bytes,
        recomputed: 0,
        ns: tape_ns,
        predicted: 1.0,
        stages: 1,
        compile_ms: tape_compile_ms,
        workspace_bytes: tape.code().map_or(0, |c| c.workspace_bytes() as u64),
    }];
    for strategy in strategies {
        let label = match strategy {
            Strategy::Checkpoint { snapshots } => format!("checkpoint:{snapshots}"),
            Strategy::Uniform => "uniform".into(),
            Strategy::CheckpointBytes(b) => format!("bytes:{b} (1/10)"),
            Strategy::Tape => "tape".into(),
        };
        let start = Instant::now();
        let g = match CheckpointedGradient::new(func, strategy) {
            Ok(g) => g,
            Err(e) => {
                println!("{name} {label}: {e}");
                continue;
            }
        };
        let compile_ms = start.elapsed().as_secs_f64() * 1e3;
        let mut y = vec![0.0; n_out];
        let mut grad = vec![0.0; func.n_params];
        g.call(x, &w, &mut y, &mut grad)
            .expect("checkpointed gradient runs");
        let same = y
            .iter()
            .chain(&grad)
            .zip(&tape_out)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{name} {label}: gradient differs from the tape");
        let ns = adjit::time_per_call(|| {
            g.call(black_box(x), &w, &mut y, &mut grad)?;
            black_box(&grad);
            Ok(())
        })
        .expect("checkpointed gradient runs");
        c.bench_function(&format!("{name}/{label}"), |bench| {
            bench.iter(|| g.call(black_box(x), &w, &mut y, &mut grad))
        });
        let stats = g.stats();
        let plan = adjit::diff::checkpoint::plan(
            func,
            match strategy {
                Strategy::Checkpoint { snapshots } => {
                    adjit::diff::checkpoint::Strategy::Checkpoint { snapshots }
                }
                Strategy::Uniform => adjit::diff::checkpoint::Strategy::Uniform,
                Strategy::CheckpointBytes(b) => {
                    adjit::diff::checkpoint::Strategy::CheckpointBytes(b)
                }
                Strategy::Tape => adjit::diff::checkpoint::Strategy::Tape,
            },
        )
        .expect("plans");
        rows.push(Row {
            label,
            peak_bytes: stats.peak_bytes,
            snapshots_plus_tape: plan.cost.snapshot_bytes + plan.cost.tape_bytes,
            recomputed: stats.recomputed_ops,
            ns,
            predicted: stats.executed_insts as f64 / tape_insts,
            stages: stats.stages,
            compile_ms,
            workspace_bytes: stats.workspace_bytes,
        });
    }

    println!(
        "\n{name}: {} instructions, tape vjp {} instructions (simplified)",
        func.n_insts(),
        tape_insts
    );
    println!(
        "| strategy | stages | peak bytes | s·snap+tape | recomputed insts | ns/gradient | measured ×tape | predicted ×tape | compile ms | JIT workspace bytes |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.0} | {} |",
            r.label,
            r.stages,
            r.peak_bytes,
            r.snapshots_plus_tape,
            r.recomputed,
            r.ns,
            r.ns / tape_ns,
            r.predicted,
            r.compile_ms,
            r.workspace_bytes
        );
    }
    for r in &rows[1..] {
        let measured = r.ns / tape_ns;
        let within = (measured / r.predicted - 1.0).abs() <= 0.25;
        println!(
            "check {name} {}: peak {} vs tape {} ({:.1}%); time ratio {measured:.2} vs predicted {:.2}: {}",
            r.label,
            r.peak_bytes,
            tape_bytes,
            100.0 * r.peak_bytes as f64 / tape_bytes as f64,
            r.predicted,
            if within { "within 25%" } else { "OUTSIDE 25%" }
        );
        if r.label.starts_with("bytes:") {
            println!(
                "check {name} budget 1/10: {measured:.2}× the tape's time ({})",
                if measured <= 2.5 {
                    "≤ 2.5×: ok"
                } else {
                    "> 2.5×: FAILS"
                }
            );
        }
    }
}

fn main() {
    let mut c = Criterion::default().sample_size(10).configure_from_args();
    let lorenz = lorenz_rk4(10_000);
    run_program(&mut c, "lorenz", &lorenz, &[1.0, 1.0, 1.0]);
    let random = random_function(
        2026,
        &RandomOptions {
            n_insts: 50_000,
            n_outputs: 4,
            ..RandomOptions::default()
        },
    );
    let x = Rng::new(3).vector(random.n_params, -2.0, 2.0);
    run_program(&mut c, "random", &random, &x);
    c.final_summary();
}
