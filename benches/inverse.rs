//! Inverse modes against forward mode and the dense fallback, JIT-compiled.
//!
//! Programs: Lorenz RK4 (1000 steps, 3 → 3) and affine coupling networks (n = 8, 16, 32, 64;
//! 4 layers, 8 hidden units). Rows: `jvp` (forward mode, the reference cost), `reverse-inverse`,
//! `forward-inverse`, `dense` (n forward directions + n×n LU). Every program is simplified and
//! compiled once; only calls are timed, into preallocated buffers. Run short:
//! `cargo bench --bench inverse -- --warm-up-time 1 --measurement-time 2`.

use std::hint::black_box;
use std::time::Instant;

use adjit::diff::inverse::{dense_inverse, forward_inverse, reverse_inverse, InverseOptions};
use adjit::ir::{Function, Type};
use adjit::jit::{CompiledFunction, JitOptions};
use adjit_testkit::{coupling_network, lorenz_rk4};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

struct Row {
    name: &'static str,
    code: CompiledFunction,
}

fn compile(name: &'static str, program: &Function, label: &str) -> Row {
    let program = adjit::diff::simplify(program);
    let start = Instant::now();
    let code = adjit::jit::compile(&program, &JitOptions::default()).expect("the program compiles");
    eprintln!(
        "{label:>12} {name:>16}: {:>7} instructions, compiled in {:.0} ms",
        program.n_insts(),
        start.elapsed().as_secs_f64() * 1e3
    );
    Row { name, code }
}

fn rows(f: &Function, label: &str, with_dense: bool) -> Vec<Row> {
    let opts = InverseOptions::default();
    let mut rows = vec![
        compile("jvp", &adjit::diff::jvp(f), label),
        compile(
            "reverse-inverse",
            &reverse_inverse(f, &opts).expect("square"),
            label,
        ),
        compile(
            "forward-inverse",
            &forward_inverse(f, &opts).expect("square"),
            label,
        ),
    ];
    if with_dense {
        rows.push(compile(
            "dense",
            &dense_inverse(f, &opts).expect("square"),
            label,
        ));
    }
    rows
}

fn bench_program(c: &mut Criterion, label: &str, f: &Function, x: &[f64]) {
    let n = x.len();
    let mut group = c.benchmark_group(format!("inverse/{label}"));
    for row in rows(f, label, true) {
        let mut input = x.to_vec();
        input.extend((0..n).map(|i| 0.5 - 0.01 * i as f64));
        let mut output = vec![0.0; row.code.n_outputs()];
        group.bench_function(BenchmarkId::from_parameter(row.name), |b| {
            b.iter(|| {
                row.code
                    .call(black_box(&input), black_box(&mut output))
                    .expect("buffer lengths match")
            })
        });
    }
    group.finish();
}

fn inverse_benches(c: &mut Criterion) {
    let lorenz = lorenz_rk4(1000, 0.001, Type::F64);
    bench_program(c, "lorenz1000", &lorenz, &[1.0, 1.5, 20.0]);
    for n in [8, 16, 32, 64] {
        let f = coupling_network(n, 4, 8, 1);
        let x: Vec<f64> = (0..n).map(|i| ((i * 7) % 13) as f64 / 13.0 - 0.5).collect();
        bench_program(c, &format!("coupling{n}"), &f, &x);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = inverse_benches
}
criterion_main!(benches);
