//! JIT benchmarks: `cargo bench --bench jit -- --warm-up-time 1 --measurement-time 2`.
//!
//! - primal: JIT vs hand-written Rust for the chained Rosenbrock (n = 1000) and the 16→32→1
//!   MLP of ir/bench/, and the per-call cost of the seed001 example (safe wrapper included),
//!   and of its gradient through the facade (`Gradient::call`, `Compiled::call`), the JIT's
//!   checked call and the raw entry;
//! - derivatives: JVP and VJP of the same programs, and "differentiate + compile" time;
//! - batch: points/s of `call_batch` with scalar kernels (`batch_lanes = 1`) and two-point
//!   kernels (`batch_lanes = 2`) on seed001, rosenbrock100, mlp and the VJP of rosenbrock100,
//!   and `call_batch_parallel` on 1 and 2 threads;
//! - math: points/s of `call_batch` on programs of 32 calls each of one routine (`exp`,
//!   `expm1`, `log`, `log1p`, `sin`, `cos`, `tan`, `sinh`, `cosh`, `tanh`, `asin`, `acos`, `atan`,
//!   `erf`, `pow`, `atan2`), with the math routines inline (`MathImpl::Inline`) or called from
//!   the C library (`MathImpl::Libm`), one and two lanes: the figures behind the default
//!   (`MathImpl::Auto`, per routine the faster of the two within 1 ulp);
//! - selects: points/s of `call_batch` on the gradients of four piecewise programs of 64
//!   inputs (a `max` chain, ReLU, `abs`, a clamp that never binds) over 2,048 random points,
//!   with float selects as branches and as bit masks (`JitOptions::mask_selects`);
//! - pairs: one gradient call of four traced programs of 20,000 terms (rolled into loops),
//!   with each loop one iteration per trip and with the loops the cost model pairs
//!   (`JitOptions::pair_loops`: two iterations per trip, the parallel part in vector lanes);
//! - fused: gradients of models fitted to data and a primal of three sums, traced term by
//!   term, with each rolled loop on its own and with loops of nearly equal trips run side by
//!   side (`JitOptions::fuse_loops`: one loop advancing every per-weight sum);
//! - sparse: the 2-D Bratu residual (100 × 100, 300 × 300) against its sparse Jacobian: every
//!   nonzero, only the varying ones (compact), and those in place (`SparseJacobian::refresh`);
//! - compile: random programs of 10k and 100k instructions (criterion), and one timed compile
//!   of a 1M-instruction program (printed, not sampled: it takes seconds).

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use adjit::diff::{jvp, vjp};
use adjit::ir::random::{random_function, RandomOptions, Rng};
use adjit::ir::{parse_function, BinaryOp, Builder, Function, Operand, Type, UnaryOp};
use adjit::jit::{compile, JitOptions, MathImpl, Pairing};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn load(name: &str) -> Function {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("ir/bench")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("ir/bench file (run scripts/gen_bench.py)");
    parse_function(&text).expect("benchmark program parses")
}

/// The chained Rosenbrock sum as a Rust programmer would write it.
fn rosenbrock_rust(x: &[f64]) -> f64 {
    x.windows(2)
        .map(|w| (1.0 - w[0]).powi(2) + 100.0 * (w[1] - w[0] * w[0]).powi(2))
        .sum()
}

/// The chained Rosenbrock with exactly the operations of rosenbrock1000.ir, in its order
/// (`fma` = `f64::mul_add`): the same bits as the JIT. Each term enters the running sum
/// through two dependent fmas, so the sum's latency chain is twice [`rosenbrock_rust`]'s.
/// Compiled with the `fma` instruction when the CPU has it (as the JIT does), not the libm
/// routine `mul_add` falls back to without that target feature.
fn rosenbrock_rust_same_ops(x: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        #[target_feature(enable = "fma")]
        fn with_fma(x: &[f64]) -> f64 {
            same_ops(x)
        }
        // SAFETY: the CPU was just checked to have the `fma` target feature.
        return unsafe { with_fma(x) };
    }
    same_ops(x)
}

#[inline(always)]
fn same_ops(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, w) in x.windows(2).enumerate() {
        let n = -w[0];
        let a = n + 1.0;
        let c = n.mul_add(w[0], w[1]);
        let d = c * c;
        if i == 0 {
            s = a.mul_add(a, d * 100.0);
        } else {
            s = a.mul_add(a, d.mul_add(100.0, s));
        }
    }
    s
}

/// The MLP's weights, read back from the literals of mlp.ir in program order:
/// per hidden unit 16 weights and a bias, then 32 output weights and the output bias.
struct Mlp {
    w1: Vec<[f64; 16]>,
    b1: Vec<f64>,
    w2: Vec<f64>,
    b2: f64,
}

impl Mlp {
    fn from_ir(func: &Function) -> Mlp {
        let mut lits = Vec::new();
        for (_, inst) in func.insts() {
            inst.for_each_operand(|o| {
                if let Operand::Const(c) = o {
                    lits.push(c)
                }
            });
        }
        assert_eq!(lits.len(), 32 * 17 + 33, "mlp.ir layout");
        let (hidden, out) = lits.split_at(32 * 17);
        Mlp {
            w1: hidden
                .chunks(17)
                .map(|c| c[..16].try_into().unwrap())
                .collect(),
            b1: hidden.chunks(17).map(|c| c[16]).collect(),
            w2: out[..32].to_vec(),
            b2: out[32],
        }
    }

    fn eval(&self, x: &[f64; 16]) -> f64 {
        let mut y = self.b2;
        for j in 0..32 {
            let z: f64 = self.w1[j].iter().zip(x).map(|(w, x)| w * x).sum();
            y += self.w2[j] * (z + self.b1[j]).tanh();
        }
        y
    }
}

fn primal(c: &mut Criterion) {
    let opts = JitOptions::default();
    let mut g = c.benchmark_group("primal");

    let seed = load("seed001.ir");
    let code = compile(&seed, &opts).unwrap();
    let mut out = [0.0];
    g.bench_function("seed001/jit_call", |b| {
        b.iter(|| code.call(black_box(&[1.5, 0.25]), &mut out).unwrap())
    });
    // The gradient of seed001 three ways: the facade's checked call, the JIT's checked call,
    // and the unchecked raw entry (buffers checked once, outside the loop).
    let grad = adjit::Gradient::new(&seed).unwrap();
    let mut gbuf = [0.0; 2];
    g.bench_function("seed001_gradient/facade_call", |b| {
        b.iter(|| grad.call(black_box(&[1.5, 0.25]), &mut gbuf).unwrap())
    });
    let compiled = grad.compiled();
    let mut cout = [0.0; 3];
    g.bench_function("seed001_gradient/compiled_call", |b| {
        b.iter(|| compiled.call(black_box(&[1.5, 0.25]), &mut cout).unwrap())
    });
    let gcode = grad.compiled().code().expect("native code");
    let mut gout = [0.0; 3];
    g.bench_function("seed001_gradient/jit_call", |b| {
        b.iter(|| gcode.call(black_box(&[1.5, 0.25]), &mut gout).unwrap())
    });
    let entry = gcode.raw_entry().expect("one chunk, no workspace");
    assert_eq!((gcode.n_inputs(), gcode.n_outputs()), (2, 3));
    let x = [1.5, 0.25];
    g.bench_function("seed001_gradient/raw_entry", |b| {
        // SAFETY: `x` holds 2 numbers and `gout` 3, as checked above; they do not overlap.
        b.iter(|| unsafe { entry.call(black_box(x.as_ptr()), gout.as_mut_ptr()) })
    });
    g.bench_function("seed001/rust", |b| {
        b.iter(|| {
            let (x, y) = black_box((1.5f64, 0.25f64));
            let p = 7.0 * x;
            black_box(2.0 * p * (p * x * 5.0) + 3.0 * (1.0 / y))
        })
    });

    let rosen = load("rosenbrock1000.ir");
    let code = compile(&rosen, &opts).unwrap();
    let x = Rng::new(1).vector(1000, -1.0, 1.0);
    g.bench_function("rosenbrock1000/jit", |b| {
        b.iter(|| code.call(black_box(&x), &mut out).unwrap())
    });
    g.bench_function("rosenbrock1000/rust", |b| {
        b.iter(|| rosenbrock_rust(black_box(&x)))
    });
    let mut jit_out = [0.0];
    code.call(&x, &mut jit_out).unwrap();
    assert_eq!(
        rosenbrock_rust_same_ops(&x).to_bits(),
        jit_out[0].to_bits(),
        "same operations, same bits"
    );
    g.bench_function("rosenbrock1000/rust-same-ops", |b| {
        b.iter(|| rosenbrock_rust_same_ops(black_box(&x)))
    });

    let mlp = load("mlp.ir");
    let code = compile(&mlp, &opts).unwrap();
    let weights = Mlp::from_ir(&mlp);
    let x: [f64; 16] = Rng::new(2).vector(16, -1.0, 1.0).try_into().unwrap();
    g.bench_function("mlp/jit", |b| {
        b.iter(|| code.call(black_box(&x), &mut out).unwrap())
    });
    g.bench_function("mlp/rust", |b| b.iter(|| weights.eval(black_box(&x))));
    g.finish();
}

fn derivatives(c: &mut Criterion) {
    let opts = JitOptions::default();
    let mut g = c.benchmark_group("derivatives");
    for name in ["rosenbrock1000.ir", "mlp.ir"] {
        let func = load(name);
        for (mode, df) in [("jvp", jvp(&func)), ("vjp", vjp(&func))] {
            let code = compile(&df, &opts).unwrap();
            let x = Rng::new(3).vector(code.n_inputs(), -1.0, 1.0);
            let mut out = vec![0.0; code.n_outputs()];
            g.bench_function(format!("{name}/{mode}"), |b| {
                b.iter(|| code.call(black_box(&x), &mut out).unwrap())
            });
        }
    }
    g.sample_size(10);
    let rosen = load("rosenbrock1000.ir");
    g.bench_function("rosenbrock1000.ir/vjp+compile", |b| {
        b.iter(|| compile(&vjp(black_box(&rosen)), &opts).unwrap())
    });
    g.finish();
}

/// Points per benchmarked batch.
const BATCH_POINTS: usize = 4096;

fn batch(c: &mut Criterion) {
    let mut g = c.benchmark_group("batch");
    let rosen = load("rosenbrock100.ir");
    let programs = [
        ("seed001", load("seed001.ir")),
        ("rosenbrock100", rosen.clone()),
        ("mlp", load("mlp.ir")),
        ("rosenbrock100-vjp", vjp(&rosen)),
    ];
    for (name, func) in &programs {
        let mut outputs = Vec::new();
        for lanes in [1, 2] {
            let opts = JitOptions {
                batch_lanes: lanes,
                ..JitOptions::default()
            };
            let code = compile(func, &opts).unwrap();
            assert_eq!(code.batch_lanes(), lanes, "{name}: kernels compiled");
            let x = Rng::new(4).vector(BATCH_POINTS * code.n_inputs(), -1.0, 1.0);
            let mut out = vec![0.0; BATCH_POINTS * code.n_outputs()];
            g.throughput(Throughput::Elements(BATCH_POINTS as u64));
            g.bench_function(format!("{name}/lanes{lanes}"), |b| {
                b.iter(|| code.call_batch(black_box(&x), &mut out).unwrap())
            });
            if *name == "rosenbrock100" {
                for threads in [1, 2] {
                    g.bench_function(format!("{name}/lanes{lanes}/threads{threads}"), |b| {
                        b.iter(|| {
                            code.call_batch_parallel(black_box(&x), &mut out, threads)
                                .unwrap()
                        })
                    });
                }
            }
            outputs.push(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
        assert_eq!(
            outputs[0], outputs[1],
            "{name}: two-point batch = scalar batch"
        );
    }
    g.finish();
}

fn sum<'t>(terms: impl Iterator<Item = adjit::Var<'t>>) -> adjit::Var<'t> {
    terms.reduce(|a, b| a + b).expect("terms")
}

/// Gradients whose reverse sweeps route cotangents by `select`: on data-dependent
/// conditions (which the points change) and on one that never changes.
fn selects(c: &mut Criterion) {
    let mut g = c.benchmark_group("selects");
    let n = 64;
    let programs = [
        (
            "max-chain",
            adjit::trace(n, |x| x[1..].iter().fold(x[0], |m, &v| m.max(v))),
        ),
        (
            "relu",
            adjit::trace(n, |x| sum(x.iter().map(|&v| v.max(v * 0.0) * v))),
        ),
        (
            "abs",
            adjit::trace(n, |x| sum(x.iter().map(|&v| (v - 0.1).abs() * v))),
        ),
        (
            "clamp-never-binds",
            adjit::trace(n, |x| sum(x.iter().map(|&v| v.max(v * 0.0 - 10.0) * v))),
        ),
    ];
    const POINTS: usize = 2048;
    for (name, func) in &programs {
        let gradient = vjp(func);
        let mut outputs = Vec::new();
        for mask_selects in [false, true] {
            let opts = JitOptions {
                mask_selects,
                ..JitOptions::default()
            };
            let code = compile(&gradient, &opts).unwrap();
            let x = Rng::new(5).vector(POINTS * code.n_inputs(), -1.0, 1.0);
            let mut out = vec![0.0; POINTS * code.n_outputs()];
            g.throughput(Throughput::Elements(POINTS as u64));
            let form = if mask_selects { "masks" } else { "branches" };
            g.bench_function(format!("{name}/{form}"), |b| {
                b.iter(|| code.call_batch(black_box(&x), &mut out).unwrap())
            });
            outputs.push(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
        assert_eq!(outputs[0], outputs[1], "{name}: masks = branches");
    }
    g.finish();
}

/// Gradients of programs traced term by term, rolled into loops, one and two iterations per
/// trip.
fn pairs(c: &mut Criterion) {
    let mut g = c.benchmark_group("pairs");
    const N: usize = 20_000;
    let programs = [
        (
            "tanh-dot",
            adjit::trace(N + 1, |x| {
                sum((0..N).map(|i| x[i].tanh() * (x[i + 1] / 3.0)))
            }),
        ),
        (
            "total-variation",
            adjit::trace(N + 1, |x| {
                sum((0..N).map(|i| {
                    let d = x[i + 1] - x[i];
                    (d * d + 1e-6).sqrt()
                }))
            }),
        ),
        (
            "rosenbrock",
            adjit::trace(N, |x| {
                sum((0..N - 1).map(|i| {
                    let (a, d) = (1.0 - x[i], x[i + 1] - x[i] * x[i]);
                    a * a + 100.0 * d * d
                }))
            }),
        ),
        (
            "tanh-recurrence",
            adjit::trace(N, |x| x[1..].iter().fold(x[0], |s, &v| (s * v).tanh())),
        ),
    ];
    for (name, func) in &programs {
        let gradient = vjp(func);
        let mut outputs = Vec::new();
        for (form, pairing) in [("one", Pairing::Off), ("auto", Pairing::Auto)] {
            let opts = JitOptions {
                pair_loops: pairing,
                ..JitOptions::default()
            };
            let code = compile(&gradient, &opts).unwrap();
            let x = Rng::new(5).vector(code.n_inputs(), -1.0, 1.0);
            let mut out = vec![0.0; code.n_outputs()];
            g.throughput(Throughput::Elements(N as u64));
            g.bench_function(format!("{name}/{form}"), |b| {
                b.iter(|| code.call(black_box(&x), &mut out).unwrap())
            });
            outputs.push(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
        assert_eq!(outputs[0], outputs[1], "{name}: paired = unpaired");
    }
    g.finish();
}

/// Programs whose loops run side by side: the gradients of a least-squares fit and of a
/// 3→8→1 MLP over data rows (one sum over the rows per weight), and a primal of three sums
/// over one array traced one after the other, each with its rolled loops apart and fused.
fn fused(c: &mut Criterion) {
    let mut g = c.benchmark_group("fused");
    const ROWS: usize = 5_000;
    let mut rng = Rng::new(17);
    let data: Vec<[f64; 3]> = (0..ROWS)
        .map(|_| {
            [
                rng.uniform(-1.0, 1.0),
                rng.uniform(-1.0, 1.0),
                rng.uniform(-1.0, 1.0),
            ]
        })
        .collect();
    let targets: Vec<f64> = (0..ROWS).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let (d, t) = (&data, &targets);
    let least_squares = adjit::trace(4, |w| {
        sum((0..ROWS).map(|j| {
            let r = w[0] * d[j][0] + w[1] * d[j][1] + w[2] * d[j][2] + w[3] - t[j];
            r * r
        }))
    });
    let mlp = adjit::trace(40, |w| {
        sum((0..ROWS).map(|j| {
            let out = (0..8).fold(w[32] * 0.0, |acc, h| {
                let z = w[h] * d[j][0] + w[8 + h] * d[j][1] + w[16 + h] * d[j][2] + w[24 + h];
                acc + z.tanh() * w[32 + h]
            });
            let r = out - t[j];
            r * r
        }))
    });
    const N: usize = 20_000;
    let sums = adjit::trace(N, |u| {
        let diffs = sum((0..N - 1).map(|i| (u[i + 1] - u[i]) * (u[i + 1] - u[i])));
        let quartic = sum((0..N).map(|i| u[i] * u[i] * u[i] * u[i]));
        let source = sum((0..N).map(|i| u[i] * (i as f64 / N as f64)));
        diffs + quartic - source
    });
    let programs = [
        ("least-squares-gradient", vjp(&least_squares), ROWS),
        ("mlp-gradient", vjp(&mlp), ROWS),
        ("three-sums", sums, N),
    ];
    for (name, func, n) in &programs {
        let mut outputs = Vec::new();
        for (form, fuse_loops) in [("apart", false), ("fused", true)] {
            let opts = JitOptions {
                fuse_loops,
                ..JitOptions::default()
            };
            let code = compile(func, &opts).unwrap();
            let x = Rng::new(5).vector(code.n_inputs(), -1.0, 1.0);
            let mut out = vec![0.0; code.n_outputs()];
            g.throughput(Throughput::Elements(*n as u64));
            g.bench_function(format!("{name}/{form}"), |b| {
                b.iter(|| code.call(black_box(&x), &mut out).unwrap())
            });
            outputs.push(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
        assert_eq!(outputs[0], outputs[1], "{name}: fused = apart");
    }
    g.finish();
}

/// `Σᵢ op(xᵢ mod 4 · (0.3 + 0.02 i) + 1.2)`, i < 32, over four inputs in [−1, 1]: 32 calls of
/// `op` on arguments in [0.26, 2.14] and little else (`asin`, `acos`: all scaled by 0.45 and
/// shifted by −0.5, into [−0.38, 0.46]).
fn math_program(op: UnaryOp) -> Function {
    let (scale, shift) = if matches!(op, UnaryOp::Asin | UnaryOp::Acos) {
        (0.45, -0.5)
    } else {
        (1.0, 0.0)
    };
    let mut b = Builder::new(format!("{}32", op.name()));
    let xs: Vec<_> = (0..4)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    let mut acc = None;
    for i in 0..32 {
        let t = b.fma(
            xs[i % 4],
            (0.3 + 0.02 * i as f64) * scale,
            1.2 * scale + shift,
        );
        let y = b.unary(op, t);
        acc = Some(match acc {
            None => y,
            Some(a) => b.add(a, y),
        });
    }
    b.finish(&[acc.expect("32 terms")])
}

/// `Σᵢ op(xᵢ mod 4 · (0.3 + 0.02 i) + 1.2, x₍ᵢ₊₁₎ mod 4 · 2.5 + 0.1 i)`, i < 32: 32 calls of
/// `pow` on bases in [0.26, 2.14] and exponents in [−2.5, 5.6] (`atan2`: the same pairs).
fn binary_program(op: BinaryOp) -> Function {
    let mut b = Builder::new(format!("{}32", op.name()));
    let xs: Vec<_> = (0..4)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    let mut acc = None;
    for i in 0..32 {
        let t = b.fma(xs[i % 4], 0.3 + 0.02 * i as f64, 1.2);
        let e = b.fma(xs[(i + 1) % 4], 2.5, 0.1 * i as f64);
        let y = b.binary(op, t, e);
        acc = Some(match acc {
            None => y,
            Some(a) => b.add(a, y),
        });
    }
    b.finish(&[acc.expect("32 terms")])
}

fn math(c: &mut Criterion) {
    let mut g = c.benchmark_group("math");
    let unary = [
        UnaryOp::Exp,
        UnaryOp::Expm1,
        UnaryOp::Tanh,
        UnaryOp::Erf,
        UnaryOp::Log,
        UnaryOp::Log1p,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Atan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
    ];
    for func in unary
        .map(math_program)
        .into_iter()
        .chain([BinaryOp::Pow, BinaryOp::Atan2].map(binary_program))
    {
        for (imp, math) in [("inline", MathImpl::Inline), ("libm", MathImpl::Libm)] {
            for lanes in [1, 2] {
                let opts = JitOptions {
                    batch_lanes: lanes,
                    math,
                    ..JitOptions::default()
                };
                let code = compile(&func, &opts).unwrap();
                assert_eq!(code.batch_lanes(), lanes, "{}: kernels compiled", func.name);
                let x = Rng::new(4).vector(BATCH_POINTS * code.n_inputs(), -1.0, 1.0);
                let mut out = vec![0.0; BATCH_POINTS * code.n_outputs()];
                g.throughput(Throughput::Elements(BATCH_POINTS as u64));
                g.bench_function(format!("{}/{imp}/lanes{lanes}", func.name), |b| {
                    b.iter(|| code.call_batch(black_box(&x), &mut out).unwrap())
                });
            }
        }
    }
    g.finish();
}

fn random_program(n_insts: usize) -> Function {
    random_function(
        42,
        &RandomOptions {
            n_insts,
            ..RandomOptions::default()
        },
    )
}

fn compile_time(c: &mut Criterion) {
    let opts = JitOptions::default();
    let mut g = c.benchmark_group("compile");
    g.sample_size(10);
    for n in [10_000, 100_000] {
        let func = random_program(n);
        g.bench_with_input(BenchmarkId::new("random", n), &func, |b, f| {
            b.iter(|| compile(f, &opts).unwrap())
        });
    }
    g.finish();
    let func = random_program(1_000_000);
    let start = Instant::now();
    let code = compile(&func, &opts).unwrap();
    println!(
        "compile/random/1000000: {:.2} s ({} chunks, {} KiB code, {} KiB workspace)",
        start.elapsed().as_secs_f64(),
        code.n_chunks(),
        code.code_bytes() / 1024,
        code.workspace_bytes() / 1024
    );
}

/// The 2-D Bratu residual on an n × n grid against its sparse Jacobian three ways: every
/// nonzero (`eval`), only the nonzeros that depend on the point, compact (`eval_varying`), and
/// those written in place over an earlier call's values (`refresh`, what a Newton step that
/// hands the whole matrix to a sparse LU needs).
fn sparse(c: &mut Criterion) {
    let mut g = c.benchmark_group("sparse");
    for n in [100, 300] {
        let f = adjit_testkit::bratu(n, 6.0);
        let x = Rng::new(5).vector(n * n, 0.0, 0.5);
        let residual = adjit::Compiled::new(&f, adjit::Mode::Primal).unwrap();
        let jac = adjit::SparseJacobian::new(&f).unwrap();
        let (mut r, mut values) = (vec![0.0; n * n], vec![0.0; jac.nnz()]);
        let mut varying = vec![0.0; jac.varying().len()];
        jac.eval(&x, &mut values).unwrap();
        g.bench_function(format!("bratu{n}/residual"), |b| {
            b.iter(|| residual.call(black_box(&x), &mut r).unwrap())
        });
        g.bench_function(format!("bratu{n}/eval"), |b| {
            b.iter(|| jac.eval(black_box(&x), &mut values).unwrap())
        });
        g.bench_function(format!("bratu{n}/eval_varying"), |b| {
            b.iter(|| jac.eval_varying(black_box(&x), &mut varying).unwrap())
        });
        g.bench_function(format!("bratu{n}/refresh"), |b| {
            b.iter(|| jac.refresh(black_box(&x), &mut values).unwrap())
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    primal,
    derivatives,
    batch,
    selects,
    pairs,
    fused,
    math,
    sparse,
    compile_time
);
criterion_main!(benches);
