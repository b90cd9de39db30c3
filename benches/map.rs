//! Mapped kernels with default options against one thread (issue #21 item 12): a two-parameter
//! line fit's gradient summed over 1, 10², 10⁴ and 10⁶ rows. Default options must never be
//! slower than one thread; compare `default` and `threads=1` of one size within one run.
//!
//! `cargo bench --bench map -- --warm-up-time 1 --measurement-time 2`

use adjit::map::{MapOptions, MappedKernel};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn line_fit(c: &mut Criterion) {
    let kernel =
        adjit::ir::trace::trace_with_data(2, 2, |p, d| (p[0] * d[0] + p[1] - d[1]).square());
    let mut group = c.benchmark_group("map/line_fit_gradient");
    for rows in [1usize, 100, 10_000, 1_000_000] {
        let data: Vec<f64> = (0..2 * rows).map(|i| (i % 7) as f64 * 0.1).collect();
        for (label, threads) in [("threads=1", 1), ("default", 0)] {
            let map = MapOptions {
                threads,
                ..MapOptions::default()
            };
            let k = MappedKernel::with_options(&kernel, map, &Default::default())
                .expect("the kernel compiles");
            let mut g = [0.0; 2];
            group.bench_with_input(BenchmarkId::new(label, rows), &rows, |b, _| {
                b.iter(|| k.gradient(&[1.0, 0.5], &data, &mut g).expect("runs"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, line_fit);
criterion_main!(benches);
