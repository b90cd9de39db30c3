//! Row drivers.
//!
//! - `map/line_fit_gradient`: mapped kernels with default options against one thread (issue
//!   #21 item 12), a two-parameter line fit's gradient summed over 1, 10², 10⁴ and 10⁶ rows.
//!   Default options must never be slower than one thread; compare `default` and `threads=1`
//!   of one size within one run.
//! - `map/wide_theta_gradient`: a least-squares row (Σ θᵢ·aᵢ − b)² over p = 100 and 1,000
//!   features, 2,000 rows, in one lane and in two (`MapOptions::lanes`; θ laid out for the
//!   two-lane kernels once per call); the bench asserts both give the same bits.
//! - `compose/kmeans_hvp`: GradBench kmeans' Hessian-vector product (1,000 points, d = 8) as
//!   a composition (`ComposedKernel::hvp`, the nearest centroid's HVP only) against the HVP of
//!   the kernel unrolled over the k centroids (`MappedKernel::hvp_sum`) and against plain
//!   Rust loops computing what GradBench's `manual` tool computes (`rust`); compare the three
//!   of one k within one run.
//!
//! `cargo bench --bench map -- --warm-up-time 1 --measurement-time 2`

use adjit::compose::{ComposeOptions, ComposedKernel, Composition, Gather};
use adjit::map::{MapOptions, MappedKernel};
use adjit::Var;
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

/// ‖a − c‖², summed in coordinate order.
fn wide_theta(c: &mut Criterion) {
    let mut group = c.benchmark_group("map/wide_theta_gradient");
    let rows = 2000;
    for p in [100usize, 1000] {
        let kernel = adjit::ir::trace::trace_with_data(p, p + 1, |t, a| {
            let dot = t.iter().zip(a).map(|(&t, &a)| t * a).reduce(|s, x| s + x);
            (dot.expect("p ≥ 1") - a[p]).square()
        });
        let theta: Vec<f64> = (0..p)
            .map(|i| ((i * 7919) % 1000) as f64 / 1e3 - 0.5)
            .collect();
        let data: Vec<f64> = (0..rows * (p + 1))
            .map(|i| ((i * 104_729) % 1000) as f64 / 1e3 - 0.5)
            .collect();
        let mut bits = Vec::new();
        for lanes in [1usize, 2] {
            let map = MapOptions {
                threads: 1,
                lanes,
                ..MapOptions::default()
            };
            let k = MappedKernel::with_options(&kernel, map, &Default::default())
                .expect("the kernel compiles");
            let mut g = vec![0.0; p];
            let y = k.gradient(&theta, &data, &mut g).expect("runs");
            bits.push((
                y.to_bits(),
                g.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            ));
            group.bench_with_input(BenchmarkId::new(format!("lanes={lanes}"), p), &p, |b, _| {
                b.iter(|| k.gradient(&theta, &data, &mut g).expect("runs"))
            });
        }
        assert_eq!(bits[0], bits[1], "two lanes change no bit");
    }
    group.finish();
}

fn distance<'t>(c: &[Var<'t>], a: &[Var<'t>]) -> Var<'t> {
    let terms = c.iter().zip(a).map(|(&c, &a)| (a - c) * (a - c));
    terms.reduce(|s, t| s + t).expect("d ≥ 1")
}

fn nearest<'t>(y: &[Var<'t>]) -> Var<'t> {
    y[1..].iter().fold(y[0], |m, &v| m.min(v))
}

/// What GradBench's hand-written `manual` tool computes for kmeans `dir`, in plain Rust: per
/// point the nearest centroid (first of equals), then its gradient 2(c − a) and its Hessian
/// diagonal 2 (H·1, the HVP's second output). The reference the composed HVP is timed against.
fn manual_gradient_and_diagonal(c: &[f64], a: &[f64], d: usize, g: &mut [f64], h: &mut [f64]) {
    g.fill(0.0);
    h.fill(0.0);
    for a in a.chunks_exact(d) {
        let mut best = (f64::INFINITY, 0);
        for (j, c) in c.chunks_exact(d).enumerate() {
            let dist: f64 = c.iter().zip(a).map(|(c, a)| (a - c) * (a - c)).sum();
            if dist < best.0 {
                best = (dist, j);
            }
        }
        let j = best.1;
        for l in 0..d {
            g[j * d + l] += 2.0 * (c[j * d + l] - a[l]);
            h[j * d + l] += 2.0;
        }
    }
}

fn kmeans_hvp(c: &mut Criterion) {
    let (d, n) = (8, 1000);
    let mut group = c.benchmark_group("compose/kmeans_hvp");
    for k in [10usize, 100] {
        let theta: Vec<f64> = (0..k * d)
            .map(|i| ((i * 7919) % 1000) as f64 / 1e3)
            .collect();
        let data: Vec<f64> = (0..n * d)
            .map(|i| ((i * 104_729) % 1000) as f64 / 1e3)
            .collect();
        let ones = vec![1.0; k * d];
        let (mut g, mut h) = (vec![0.0; k * d], vec![0.0; k * d]);
        let inner = adjit::ir::trace::trace_with_data(d, d, distance);
        let outer = adjit::trace(k, nearest);
        let gather: Vec<Gather> = (0..d).map(|l| Gather { base: l, stride: d }).collect();
        let spec = Composition {
            transform: None,
            inner: &inner,
            outer: &outer,
            components: k,
            gather: &gather,
            shared: &[],
            n_theta: k * d,
        };
        let compose = ComposeOptions {
            threads: 1,
            skip_zero_cotangents: true,
            ..ComposeOptions::default()
        };
        let composed = ComposedKernel::with_options(&spec, compose, &Default::default())
            .expect("the composition compiles");
        composed.prepare_hvp().expect("compiles");
        group.bench_with_input(BenchmarkId::new("composed", k), &k, |b, _| {
            b.iter(|| {
                composed
                    .hvp(&theta, &data, &ones, &mut g, &mut h)
                    .expect("runs")
            })
        });
        let composed2 = ComposedKernel::with_options(
            &spec,
            ComposeOptions {
                lanes: 2,
                ..compose
            },
            &Default::default(),
        )
        .expect("the composition compiles");
        composed2.prepare_hvp().expect("compiles");
        // Two rows per call in vector lanes: the same bits.
        let (mut g2, mut h2) = (vec![0.0; k * d], vec![0.0; k * d]);
        composed
            .hvp(&theta, &data, &ones, &mut g, &mut h)
            .expect("runs");
        composed2
            .hvp(&theta, &data, &ones, &mut g2, &mut h2)
            .expect("runs");
        let same = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same(&g, &g2) && same(&h, &h2), "two lanes change no bit");
        group.bench_with_input(BenchmarkId::new("composed_lanes2", k), &k, |b, _| {
            b.iter(|| {
                composed2
                    .hvp(&theta, &data, &ones, &mut g, &mut h)
                    .expect("runs")
            })
        });
        group.bench_with_input(BenchmarkId::new("rust", k), &k, |b, _| {
            b.iter(|| manual_gradient_and_diagonal(&theta, &data, d, &mut g, &mut h))
        });
        let unrolled = adjit::ir::trace::trace_with_data(k * d, d, |c, a| {
            let y: Vec<Var<'_>> = (0..k)
                .map(|j| distance(&c[j * d..(j + 1) * d], a))
                .collect();
            nearest(&y)
        });
        let map = MapOptions {
            threads: 1,
            ..MapOptions::default()
        };
        let mapped = MappedKernel::with_options(&unrolled, map, &Default::default())
            .expect("the kernel compiles");
        group.bench_with_input(BenchmarkId::new("unrolled", k), &k, |b, _| {
            b.iter(|| {
                mapped
                    .hvp_sum(&theta, &data, &ones, &mut g, &mut h)
                    .expect("runs")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, line_fit, wide_theta, kmeans_hvp);
criterion_main!(benches);
