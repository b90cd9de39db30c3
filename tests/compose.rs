//! Composed kernels (`adjit::compose`) against the same functions traced fully unrolled: values
//! and gradients agree to rounding, the gradient matches central differences, results do not
//! depend on threads, lanes or the engine, and bad arguments are typed errors.

use adjit::compose::{ComposeOptions, ComposedKernel, Composition, Gather, Reverse};
use adjit::ir::random::Rng;
use adjit::map::{MapOptions, MappedKernel};
use adjit::{Engine, Error, Function, Options, Tracer, Type, Var};

/// A test case: inner f, outer g, the gather map and the unrolled kernel of the same function.
struct Case {
    transform: Option<Function>,
    inner: Function,
    outer: Function,
    k: usize,
    gather: Vec<Gather>,
    shared: Vec<usize>,
    n_theta: usize,
    row: usize,
    unrolled: Function,
}

impl Case {
    fn spec(&self) -> Composition<'_> {
        Composition {
            transform: self.transform.as_ref(),
            inner: &self.inner,
            outer: &self.outer,
            components: self.k,
            gather: &self.gather,
            shared: &self.shared,
            n_theta: self.n_theta,
        }
    }

    fn kernel(&self, compose: ComposeOptions, engine: Engine) -> ComposedKernel {
        ComposedKernel::with_options(&self.spec(), compose, &Options::on(engine))
            .expect("a valid composition")
    }

    fn data(&self, rows: usize, seed: u64) -> Vec<f64> {
        Rng::new(seed).vector(rows * self.row, -1.5, 1.5)
    }
}

/// Trace `f(φ, x) -> outputs` with `p` parameters and `r` data inputs.
fn trace_inner(
    p: usize,
    r: usize,
    f: impl for<'t> Fn(&[Var<'t>], &[Var<'t>]) -> Vec<Var<'t>>,
) -> Function {
    let t = Tracer::new("inner");
    let phi: Vec<Var<'_>> = (0..p).map(|_| t.input(Type::F64)).collect();
    let x: Vec<Var<'_>> = (0..r).map(|_| t.data_input(Type::F64)).collect();
    t.finish(&f(&phi, &x))
}

/// logsumexp with the max trick, as gmm's reduction.
fn logsumexp<'t>(y: &[Var<'t>]) -> Var<'t> {
    let mx = y[1..].iter().fold(y[0], |m, &v| m.max(v));
    let s = y[1..]
        .iter()
        .fold((y[0] - mx).exp(), |s, &v| s + (v - mx).exp());
    s.ln() + mx
}

/// gmm's component term αⱼ + Σqⱼ − ½‖Qⱼ(x − μⱼ)‖², φ = (α, μ [d], q [d], l [d(d−1)/2]).
fn gmm_term<'t>(d: usize, phi: &[Var<'t>], x: &[Var<'t>]) -> Var<'t> {
    let (alpha, mu, q, l) = (
        phi[0],
        &phi[1..1 + d],
        &phi[1 + d..1 + 2 * d],
        &phi[1 + 2 * d..],
    );
    let centred: Vec<Var<'t>> = (0..d).map(|i| x[i] - mu[i]).collect();
    let mut qx: Vec<Var<'t>> = (0..d).map(|i| q[i].exp() * centred[i]).collect();
    let mut at = 0;
    for (i, &c) in centred.iter().enumerate() {
        for out in &mut qx[i + 1..] {
            *out += l[at] * c;
            at += 1;
        }
    }
    let sum_q = q[1..].iter().fold(q[0], |s, &v| s + v);
    let norm = qx[1..].iter().fold(qx[0] * qx[0], |s, &v| s + v * v);
    alpha + sum_q - 0.5 * norm
}

/// gmm's per-point logsumexp over k components in dimension d; θ = (α [k], μ [k·d], q [k·d],
/// l [k·d(d−1)/2]) as GradBench lays it out.
fn gmm(d: usize, k: usize) -> Case {
    let l_size = d * (d - 1) / 2;
    let p = 1 + 2 * d + l_size;
    let n_theta = k * p;
    let inner = trace_inner(p, d, |phi, x| vec![gmm_term(d, phi, x)]);
    let outer = adjit::trace(k, logsumexp);
    let mut gather = vec![Gather { base: 0, stride: 1 }];
    gather.extend((0..d).map(|i| Gather {
        base: k + i,
        stride: d,
    }));
    gather.extend((0..d).map(|i| Gather {
        base: k + k * d + i,
        stride: d,
    }));
    gather.extend((0..l_size).map(|i| Gather {
        base: k + 2 * k * d + i,
        stride: l_size,
    }));
    let unrolled = adjit::trace_with_data(n_theta, d, |theta, x| {
        let terms: Vec<Var<'_>> = (0..k)
            .map(|j| {
                let phi: Vec<Var<'_>> = gather
                    .iter()
                    .map(|g| theta[g.base + j * g.stride])
                    .collect();
                gmm_term(d, &phi, x)
            })
            .collect();
        logsumexp(&terms)
    });
    Case {
        transform: None,
        inner,
        outer,
        k,
        gather,
        shared: vec![],
        n_theta,
        row: d,
        unrolled,
    }
}

const TWO_K: usize = 3;

/// The inner kernel of [`two_outputs`]: φ = (a, b, c), x = (x₀, x₁).
fn two_f<'t>(phi: &[Var<'t>], x: &[Var<'t>]) -> Vec<Var<'t>> {
    let (a, b, c) = (phi[0], phi[1], phi[2]);
    vec![a * x[0] + b * c, (b * x[1] + c).sin() * a]
}

/// The outer kernel of [`two_outputs`]: the 2k component outputs, the shared s and the row.
fn two_g<'t>(y: &[Var<'t>], s: Var<'t>, x: &[Var<'t>]) -> Var<'t> {
    let mut total = s * x[0] * y[0];
    for j in 0..TWO_K {
        total += (y[2 * j] * y[2 * j + 1]).tanh() + s.square() * y[2 * j + 1];
    }
    total * x[1].cos()
}

/// [`gmm`] with what depends on φ alone moved into a per-component transform, as the
/// GradBench tool runs it: h(α, μ, q, l) = (α + Σq, μ, exp q, l), f(a, μ, e, l; x) =
/// a − ½‖Q(x − μ)‖² with Q = diag(e) + the lower triangle l. The same arithmetic in the same
/// order as [`gmm_term`].
fn gmm_transformed(d: usize, k: usize) -> Case {
    let base = gmm(d, k);
    let p = 1 + 2 * d + d * (d - 1) / 2;
    let transform = adjit::trace_multi("h", &vec![Type::F64; p], |psi| {
        let (alpha, q) = (psi[0], &psi[1 + d..1 + 2 * d]);
        let sum_q = q[1..].iter().fold(q[0], |s, &v| s + v);
        let mut phi = vec![alpha + sum_q];
        phi.extend_from_slice(&psi[1..1 + d]);
        phi.extend(q.iter().map(|v| v.exp()));
        phi.extend_from_slice(&psi[1 + 2 * d..]);
        phi
    });
    let inner = trace_inner(p, d, |phi, x| {
        let (a, mu, e, l) = (
            phi[0],
            &phi[1..1 + d],
            &phi[1 + d..1 + 2 * d],
            &phi[1 + 2 * d..],
        );
        let centred: Vec<Var<'_>> = (0..d).map(|i| x[i] - mu[i]).collect();
        let mut qx: Vec<Var<'_>> = (0..d).map(|i| e[i] * centred[i]).collect();
        let mut at = 0;
        for (i, &c) in centred.iter().enumerate() {
            for out in &mut qx[i + 1..] {
                *out += l[at] * c;
                at += 1;
            }
        }
        let norm = qx[1..].iter().fold(qx[0] * qx[0], |s, &v| s + v * v);
        vec![a - 0.5 * norm]
    });
    Case {
        transform: Some(transform),
        inner,
        ..base
    }
}

/// Two inner outputs, an inner parameter shared by every component (stride 0), a shared outer
/// parameter and the row in the outer kernel too: θ = (a [3], b [3], c, s), rows of 2.
fn two_outputs() -> Case {
    let k = TWO_K;
    let inner = trace_inner(3, 2, two_f);
    let t = Tracer::new("outer");
    let x0 = t.data_input(Type::F64);
    let y: Vec<Var<'_>> = (0..2 * k).map(|_| t.input(Type::F64)).collect();
    let s = t.input(Type::F64);
    let x1 = t.data_input(Type::F64);
    let outer = t.finish(&[two_g(&y, s, &[x0, x1])]);
    let gather = vec![
        Gather { base: 0, stride: 1 },
        Gather { base: 3, stride: 1 },
        Gather { base: 6, stride: 0 },
    ];
    let unrolled = adjit::trace_with_data(8, 2, |theta, x| {
        let y: Vec<Var<'_>> = (0..k)
            .flat_map(|j| two_f(&[theta[j], theta[3 + j], theta[6]], x))
            .collect();
        two_g(&y, theta[7], x)
    });
    Case {
        transform: None,
        inner,
        outer,
        k,
        gather,
        shared: vec![7],
        n_theta: 8,
        row: 2,
        unrolled,
    }
}

fn options(threads: usize, block_rows: usize, lanes: usize, reverse: Reverse) -> ComposeOptions {
    ComposeOptions {
        threads,
        block_rows,
        lanes,
        reverse,
        skip_zero_cotangents: false,
    }
}

/// |a − b| ≤ tol·max(|a|, |b|, 1) entry by entry.
fn assert_close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        let scale = x.abs().max(y.abs()).max(1.0);
        assert!(
            (x - y).abs() <= tol * scale,
            "{what}[{i}]: {x} vs {y} (difference {:e})",
            (x - y).abs()
        );
    }
}

fn bits(xs: &[f64]) -> Vec<u64> {
    xs.iter().map(|x| x.to_bits()).collect()
}

/// Per-row values, their sum and the summed gradient, all in one vector.
fn everything(kernel: &ComposedKernel, theta: &[f64], data: &[f64]) -> Vec<f64> {
    let n_rows = kernel.n_rows(data).expect("whole rows");
    let mut rows = vec![0.0; n_rows];
    kernel.eval(theta, data, &mut rows).expect("eval");
    let sum = kernel.eval_sum(theta, data).expect("eval_sum");
    let mut grad = vec![0.0; kernel.n_theta()];
    let total = kernel.gradient(theta, data, &mut grad).expect("gradient");
    assert_eq!(bits(&[sum]), bits(&[total]), "eval_sum = gradient's value");
    let mut all = rows;
    all.push(total);
    all.extend(grad);
    all
}

/// The same vector from the unrolled kernel, mapped over the rows.
fn unrolled_everything(case: &Case, theta: &[f64], data: &[f64]) -> Vec<f64> {
    let map = MapOptions {
        threads: 1,
        ..MapOptions::default()
    };
    let k = MappedKernel::with_options(&case.unrolled, map, &Options::default()).expect("maps");
    let mut rows = vec![0.0; k.n_rows(data).expect("whole rows")];
    k.eval(theta, data, &mut rows).expect("eval");
    let mut grad = vec![0.0; case.n_theta];
    let total = k.gradient(theta, data, &mut grad).expect("gradient");
    let mut all = rows;
    all.push(total);
    all.extend(grad);
    all
}

#[test]
fn values_and_gradients_equal_the_unrolled_kernel() {
    let cases = [
        ("gmm d=3 k=4", gmm(3, 4)),
        ("gmm d=3 k=4, transformed", gmm_transformed(3, 4)),
        ("two outputs", two_outputs()),
    ];
    for (name, case) in cases {
        let theta = Rng::new(7).vector(case.n_theta, -0.8, 0.8);
        let data = case.data(37, 8);
        let expected = unrolled_everything(&case, &theta, &data);
        for reverse in [Reverse::Auto, Reverse::Vjp] {
            let kernel = case.kernel(options(1, 1024, 1, reverse), Engine::Jit);
            let got = everything(&kernel, &theta, &data);
            assert_close(&format!("{name}, {reverse:?}"), &got, &expected, 1e-13);
        }
    }
}

#[test]
fn the_gradient_matches_central_differences() {
    let cases = [
        ("gmm d=2 k=3", gmm(2, 3)),
        ("gmm d=3 k=2, transformed", gmm_transformed(3, 2)),
        ("two outputs", two_outputs()),
    ];
    for (name, case) in cases {
        let theta = Rng::new(11).vector(case.n_theta, -0.8, 0.8);
        let data = case.data(5, 12);
        let kernel = case.kernel(ComposeOptions::default(), Engine::Jit);
        let mut grad = vec![0.0; case.n_theta];
        kernel.gradient(&theta, &data, &mut grad).expect("gradient");
        let h = 1e-6;
        let fd: Vec<f64> = (0..case.n_theta)
            .map(|i| {
                let at = |delta: f64| {
                    let mut t = theta.clone();
                    t[i] += delta;
                    kernel.eval_sum(&t, &data).expect("eval_sum")
                };
                (at(h) - at(-h)) / (2.0 * h)
            })
            .collect();
        assert_close(name, &grad, &fd, 1e-7);
        // A different function would be caught: the test can fail.
        assert!(
            grad.iter().any(|g| g.abs() > 1e-3),
            "{name}: a nonzero gradient"
        );
    }
}

#[test]
fn threads_lanes_and_strategies_do_not_change_a_bit() {
    for case in [gmm(3, 5), gmm_transformed(3, 5), two_outputs()] {
        let theta = Rng::new(3).vector(case.n_theta, -0.8, 0.8);
        let data = case.data(53, 4);
        // Blocks of 5 rows: eleven blocks, the last one short.
        let one = everything(
            &case.kernel(options(1, 5, 1, Reverse::Auto), Engine::Jit),
            &theta,
            &data,
        );
        for (threads, lanes) in [(2, 1), (3, 1), (1, 2), (2, 2)] {
            let kernel = case.kernel(options(threads, 5, lanes, Reverse::Auto), Engine::Jit);
            assert_eq!(
                bits(&one),
                bits(&everything(&kernel, &theta, &data)),
                "threads {threads}, lanes {lanes}"
            );
        }
        // The interpreter runs the same programs: bitwise the same.
        let interp = case.kernel(options(2, 5, 1, Reverse::Auto), Engine::Interp);
        assert_eq!(
            bits(&one),
            bits(&everything(&interp, &theta, &data)),
            "interpreter"
        );
    }
}

#[test]
fn stored_and_vjp_reverse_agree_to_rounding() {
    let case = gmm(4, 6);
    let theta = Rng::new(5).vector(case.n_theta, -0.8, 0.8);
    let data = case.data(20, 6);
    let stored = case.kernel(options(1, 8, 1, Reverse::Stored), Engine::Jit);
    assert_eq!(stored.options().reverse, Reverse::Stored);
    let vjp = case.kernel(options(1, 8, 1, Reverse::Vjp), Engine::Jit);
    assert_close(
        "stored vs vjp",
        &everything(&stored, &theta, &data),
        &everything(&vjp, &theta, &data),
        1e-14,
    );
}

#[test]
fn bad_lengths_and_compositions_are_typed_errors() {
    let case = gmm(2, 3);
    let kernel = case.kernel(ComposeOptions::default(), Engine::Jit);
    let n = case.n_theta;
    let message = |r: Result<f64, Error>| match r {
        Err(e @ Error::ArgumentLength { .. }) => e.to_string(),
        other => panic!("expected a length error, got {other:?}"),
    };
    let mut grad = vec![0.0; n];
    let theta = vec![0.1; n];
    let m = message(kernel.gradient(&theta[1..], &[0.0; 4], &mut grad));
    assert!(
        m.contains(&format!("θ has {} numbers, expected {n}", n - 1)),
        "{m}"
    );
    let m = message(kernel.gradient(&theta, &[0.0; 5], &mut grad));
    assert!(m.contains("a multiple of the row length 2"), "{m}");
    let m = message(kernel.gradient(&theta, &[0.0; 4], &mut grad[1..]));
    assert!(m.contains("the gradient has"), "{m}");
    let m = message(kernel.eval_sum(&theta, &[0.0; 3]));
    assert!(m.contains("row length"), "{m}");
    let mut rows = [0.0; 3];
    let err = kernel
        .eval(&theta, &[0.0; 4], &mut rows)
        .expect_err("three outputs for two rows");
    assert!(
        err.to_string().contains("the output y has 3 numbers"),
        "{err}"
    );
    // No rows: a zero sum and a zero gradient.
    assert_eq!(kernel.gradient(&theta, &[], &mut grad).ok(), Some(-0.0));
    assert!(grad.iter().all(|&g| g == 0.0));

    let compose = |spec: Composition<'_>| ComposedKernel::new(&spec).map(|_| ());
    let spec = case.spec();
    let bad = [
        (
            "no components",
            Composition {
                components: 0,
                ..spec
            },
        ),
        (
            "gather too short",
            Composition {
                gather: &case.gather[1..],
                ..spec
            },
        ),
        (
            "gather past θ",
            Composition {
                n_theta: n - 1,
                ..spec
            },
        ),
        (
            "shared past θ",
            Composition {
                shared: &[n],
                ..spec
            },
        ),
        (
            "outer arity",
            Composition {
                components: 2,
                ..spec
            },
        ),
        (
            "no row",
            Composition {
                inner: &case.outer,
                ..spec
            },
        ),
        (
            "transform arity",
            Composition {
                transform: Some(&case.outer),
                ..spec
            },
        ),
    ];
    for (what, spec) in bad {
        assert!(
            matches!(
                compose(spec),
                Err(Error::Signature { .. } | Error::TooFew { .. })
            ),
            "{what}: {:?}",
            compose(spec)
        );
    }
    let two = two_outputs();
    let stored = ComposedKernel::with_options(
        &two.spec(),
        options(1, 4, 1, Reverse::Stored),
        &Options::default(),
    );
    assert!(
        matches!(stored, Err(Error::Signature { .. })),
        "stored needs m = 1"
    );
    let mut bool_outer = Function::new("bool_outer");
    let y = bool_outer.add_param(Type::F64, None);
    bool_outer.add_param(Type::Bool, None);
    bool_outer.push_ret(y);
    assert!(matches!(
        compose(Composition {
            outer: &bool_outer,
            components: 1,
            ..spec
        }),
        Err(Error::BoolInput { .. })
    ));
}

/// The squared distance ‖a − c‖², summed in coordinate order.
fn dist<'t>(c: &[Var<'t>], a: &[Var<'t>]) -> Vec<Var<'t>> {
    let terms = c.iter().zip(a).map(|(&c, &a)| (a - c).square());
    vec![terms.reduce(|s, t| s + t).expect("d ≥ 1")]
}

/// The smallest of the component values, folded left to right.
fn nearest<'t>(y: &[Var<'t>]) -> Var<'t> {
    y[1..].iter().fold(y[0], |m, &v| m.min(v))
}

/// k-means: the squared distance of the row (a point) to its nearest centroid, in dimension d
/// over k centroids (θ = the k·d coordinates, centroid-major).
fn kmeans(d: usize, k: usize) -> Case {
    let inner = trace_inner(d, d, dist);
    let outer = adjit::trace(k, nearest);
    let gather = (0..d).map(|l| Gather { base: l, stride: d }).collect();
    let unrolled = adjit::trace_with_data(k * d, d, |c, a| {
        let y: Vec<Var<'_>> = (0..k)
            .flat_map(|j| dist(&c[j * d..(j + 1) * d], a))
            .collect();
        nearest(&y)
    });
    Case {
        transform: None,
        inner,
        outer,
        k,
        gather,
        shared: vec![],
        n_theta: k * d,
        row: d,
        unrolled,
    }
}

/// The inner kernel of [`one_output_shared`]: φ = (a, b), x = (x₀, x₁).
fn shared_f<'t>(phi: &[Var<'t>], x: &[Var<'t>]) -> Vec<Var<'t>> {
    vec![phi[0] * x[0] + (phi[1] * x[1]).sin() * phi[0]]
}

/// The outer kernel of [`one_output_shared`].
fn shared_g<'t>(y: &[Var<'t>], s: Var<'t>) -> Var<'t> {
    let sq = y[1..].iter().fold(y[0] * y[0], |acc, &v| acc + v * v);
    (sq * s).exp() + s * s * y[0]
}

/// One inner output, a parameter shared by every component (gather stride 0) and a shared
/// entry of g that multiplies the component values nonlinearly: every term of the HVP's chain
/// rule is nonzero.
fn one_output_shared() -> Case {
    let k = 3;
    let inner = trace_inner(2, 2, shared_f);
    let t = Tracer::new("outer");
    let y: Vec<Var<'_>> = (0..k).map(|_| t.input(Type::F64)).collect();
    let s = t.input(Type::F64);
    let outer = t.finish(&[shared_g(&y, s)]);
    let gather = vec![Gather { base: 0, stride: 1 }, Gather { base: 3, stride: 0 }];
    let unrolled = adjit::trace_with_data(5, 2, |theta, x| {
        let y: Vec<Var<'_>> = (0..k)
            .flat_map(|j| shared_f(&[theta[j], theta[3]], x))
            .collect();
        shared_g(&y, theta[4])
    });
    Case {
        transform: None,
        inner,
        outer,
        k,
        gather,
        shared: vec![4],
        n_theta: 5,
        row: 2,
        unrolled,
    }
}

/// The sum, gradient and H·v of a composition, in one vector.
fn hvp_all(kernel: &ComposedKernel, theta: &[f64], data: &[f64], v: &[f64]) -> Vec<f64> {
    let n = kernel.n_theta();
    let (mut grad, mut hv) = (vec![0.0; n], vec![0.0; n]);
    let total = kernel.hvp(theta, data, v, &mut grad, &mut hv).expect("hvp");
    let mut all = vec![total];
    all.extend(grad);
    all.extend(hv);
    all
}

fn hvp_cases() -> [(&'static str, Case); 4] {
    [
        ("k-means d=3 k=5", kmeans(3, 5)),
        ("gmm d=2 k=3", gmm(2, 3)),
        ("one output, shared", one_output_shared()),
        ("k-means d=1 k=2", kmeans(1, 2)),
    ]
}

#[test]
fn hessian_vector_products_equal_the_unrolled_kernel() {
    for (name, case) in hvp_cases() {
        let theta = Rng::new(21).vector(case.n_theta, -0.8, 0.8);
        let v = Rng::new(22).vector(case.n_theta, -1.0, 1.0);
        let data = case.data(41, 23);
        let map = MapOptions {
            threads: 1,
            ..MapOptions::default()
        };
        let unrolled =
            MappedKernel::with_options(&case.unrolled, map, &Options::default()).expect("maps");
        let n = case.n_theta;
        let (mut grad, mut hv) = (vec![0.0; n], vec![0.0; n]);
        unrolled
            .hvp_sum(&theta, &data, &v, &mut grad, &mut hv)
            .expect("hvp_sum");
        let mut total = [0.0];
        unrolled.eval_sum(&theta, &data, &mut total).expect("sum");
        let mut expected = vec![total[0]];
        expected.extend(&grad);
        expected.extend(&hv);
        assert!(
            hv.iter().filter(|h| h.abs() > 1e-3).count() >= n / 2,
            "{name}: H·v is mostly nonzero, so a dropped term shows"
        );
        for skip in [false, true] {
            for engine in [Engine::Jit, Engine::Interp] {
                let compose = ComposeOptions {
                    skip_zero_cotangents: skip,
                    threads: 1,
                    ..ComposeOptions::default()
                };
                let got = hvp_all(&case.kernel(compose, engine), &theta, &data, &v);
                assert_close(
                    &format!("{name}, skip {skip}, {engine:?}"),
                    &got,
                    &expected,
                    1e-12,
                );
            }
        }
    }
}

#[test]
fn the_hessian_vector_product_matches_central_differences_of_the_gradient() {
    for (name, case) in hvp_cases() {
        let theta = Rng::new(31).vector(case.n_theta, -0.8, 0.8);
        let v = Rng::new(32).vector(case.n_theta, -1.0, 1.0);
        let data = case.data(7, 33);
        let compose = ComposeOptions {
            skip_zero_cotangents: true,
            ..ComposeOptions::default()
        };
        let kernel = case.kernel(compose, Engine::Jit);
        let n = case.n_theta;
        let (mut grad, mut hv) = (vec![0.0; n], vec![0.0; n]);
        kernel
            .hvp(&theta, &data, &v, &mut grad, &mut hv)
            .expect("hvp");
        let h = 1e-6;
        let grad_at = |delta: f64| {
            let t: Vec<f64> = theta.iter().zip(&v).map(|(t, v)| t + delta * v).collect();
            let mut g = vec![0.0; n];
            kernel.gradient(&t, &data, &mut g).expect("gradient");
            g
        };
        let (up, down) = (grad_at(h), grad_at(-h));
        let fd: Vec<f64> = up
            .iter()
            .zip(&down)
            .map(|(a, b)| (a - b) / (2.0 * h))
            .collect();
        assert_close(name, &hv, &fd, 1e-6);
        let mut plain = vec![0.0; n];
        kernel
            .gradient(&theta, &data, &mut plain)
            .expect("gradient");
        assert_close(&format!("{name}: gradient"), &grad, &plain, 1e-14);
    }
}

#[test]
fn skipping_zero_cotangents_and_threads_do_not_change_a_bit() {
    // Finite values, so a skipped product with zero could only change the sign of a zero;
    // compare bits of everything but zeros.
    let nonzero_bits = |xs: &[f64]| -> Vec<u64> {
        xs.iter()
            .map(|&x| if x == 0.0 { 0 } else { x.to_bits() })
            .collect()
    };
    for (name, case) in hvp_cases() {
        let theta = Rng::new(41).vector(case.n_theta, -0.8, 0.8);
        let v = Rng::new(42).vector(case.n_theta, -1.0, 1.0);
        let data = case.data(3000, 43);
        let mut seen: Option<Vec<u64>> = None;
        for (skip, threads, lanes) in [(false, 1, 1), (true, 1, 1), (true, 2, 2), (false, 0, 2)] {
            let compose = ComposeOptions {
                skip_zero_cotangents: skip,
                threads,
                lanes,
                block_rows: 256,
                ..ComposeOptions::default()
            };
            let got = nonzero_bits(&hvp_all(
                &case.kernel(compose, Engine::Jit),
                &theta,
                &data,
                &v,
            ));
            match &seen {
                None => seen = Some(got),
                Some(first) => assert_eq!(&got, first, "{name}: skip {skip}, {threads} threads"),
            }
        }
    }
    // The Vjp reverse skips too, with the same gradient.
    let case = kmeans(4, 6);
    let theta = Rng::new(44).vector(case.n_theta, -0.8, 0.8);
    let data = case.data(500, 45);
    let gradient = |skip: bool| {
        let compose = ComposeOptions {
            skip_zero_cotangents: skip,
            reverse: Reverse::Vjp,
            ..ComposeOptions::default()
        };
        nonzero_bits(&everything(
            &case.kernel(compose, Engine::Jit),
            &theta,
            &data,
        ))
    };
    assert_eq!(gradient(true), gradient(false));
}

#[test]
fn hessian_vector_products_refuse_what_they_cannot_do() {
    let msg = |case: Case| {
        let kernel = case.kernel(ComposeOptions::default(), Engine::Jit);
        let n = case.n_theta;
        let (mut g, mut h) = (vec![0.0; n], vec![0.0; n]);
        let data = case.data(2, 1);
        match kernel.hvp(&vec![0.1; n], &data, &vec![1.0; n], &mut g, &mut h) {
            Err(e @ Error::Signature { .. }) => e.to_string(),
            other => panic!("expected a signature error, got {other:?}"),
        }
    };
    assert!(msg(two_outputs()).contains("one output, it has 2"));
    assert!(msg(gmm_transformed(2, 2)).contains("needs no transform"));
    let case = kmeans(2, 3);
    let kernel = case.kernel(ComposeOptions::default(), Engine::Jit);
    let data = case.data(4, 2);
    let (mut g, mut h) = (vec![0.0; 6], vec![0.0; 5]);
    let err = kernel
        .hvp(&[0.0; 6], &data, &[1.0; 6], &mut g, &mut h)
        .expect_err("a short H·v buffer");
    assert!(
        err.to_string().contains("Hessian-vector product") && err.to_string().contains('5'),
        "{err}"
    );
    let err = kernel
        .hvp(&[0.0; 6], &data, &[1.0; 7], &mut g, &mut [0.0; 6])
        .expect_err("a long direction");
    assert!(err.to_string().contains("direction"), "{err}");
}
