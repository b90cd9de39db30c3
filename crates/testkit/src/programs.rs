//! Square programs used by the inverse-mode tests, benchmarks and docs: Lorenz RK4, affine
//! coupling networks (RealNVP-like), the paper's Fig. 2 program, random triangular maps, and
//! the sparse-derivative programs (the 2-D Bratu residual, the chained Rosenbrock function).
//! They build ordinary IR with [`Builder`]; nothing here differentiates.

use adjit_ir::random::Rng;
use adjit_ir::trace::trace_multi;
use adjit_ir::{BinaryOp, Builder, Function, Type, UnaryOp, Value};

/// Lorenz system (σ = 10, ρ = 28, β = 8/3) integrated with `steps` classical RK4 steps of size
/// `dt`: `(x, y, z) → (x, y, z)` after `steps·dt`. `ty` is `F64` or `F32`.
pub fn lorenz_rk4(steps: usize, dt: f64, ty: Type) -> Function {
    let mut b = Builder::new(format!("lorenz_rk4_{steps}"));
    let mut s = [b.param(ty, "x"), b.param(ty, "y"), b.param(ty, "z")];
    let rhs = |b: &mut Builder, u: [Value; 3]| -> [Value; 3] {
        let [x, y, z] = u;
        let d = b.sub(y, x);
        let dx = b.mul(10.0, d);
        let r = b.sub(28.0, z);
        let xr = b.mul(x, r);
        let dy = b.sub(xr, y);
        let xy = b.mul(x, y);
        let bz = b.mul(8.0 / 3.0, z);
        let dz = b.sub(xy, bz);
        [dx, dy, dz]
    };
    for _ in 0..steps {
        let k1 = rhs(&mut b, s);
        let u2 = [0, 1, 2].map(|i| b.fma(k1[i], 0.5 * dt, s[i]));
        let k2 = rhs(&mut b, u2);
        let u3 = [0, 1, 2].map(|i| b.fma(k2[i], 0.5 * dt, s[i]));
        let k3 = rhs(&mut b, u3);
        let u4 = [0, 1, 2].map(|i| b.fma(k3[i], dt, s[i]));
        let k4 = rhs(&mut b, u4);
        s = [0, 1, 2].map(|i| {
            let a = b.fma(k2[i], 2.0, k1[i]);
            let a = b.fma(k3[i], 2.0, a);
            let a = b.add(a, k4[i]);
            b.fma(a, dt / 6.0, s[i])
        });
    }
    b.finish(&s)
}

/// A small tanh MLP `R^m → R^m` with `hidden` units, weights from `rng`; returns (s, t).
fn mlp_pair(
    b: &mut Builder,
    rng: &mut Rng,
    input: &[Value],
    hidden: usize,
) -> (Vec<Value>, Vec<Value>) {
    let m = input.len();
    let scale = 1.0 / (m as f64).sqrt();
    let h: Vec<Value> = (0..hidden)
        .map(|_| {
            let mut acc = b.mul(input[0], rng.uniform(-scale, scale));
            for &x in &input[1..] {
                acc = b.fma(x, rng.uniform(-scale, scale), acc);
            }
            let acc = b.add(acc, rng.uniform(-0.1, 0.1));
            b.unary(UnaryOp::Tanh, acc)
        })
        .collect();
    let hscale = 0.5 / (hidden as f64).sqrt();
    let mut head = |b: &mut Builder| -> Vec<Value> {
        (0..m)
            .map(|_| {
                let mut acc = b.mul(h[0], rng.uniform(-hscale, hscale));
                for &hv in &h[1..] {
                    acc = b.fma(hv, rng.uniform(-hscale, hscale), acc);
                }
                acc
            })
            .collect()
    };
    let s = head(b);
    let t = head(b);
    (s, t)
}

/// An affine coupling network on `n` (even) inputs with `layers` layers: each layer splits the
/// state into halves `(a, c)` and maps `c ← c·exp(s(a)) + t(a)`, `s`, `t` tanh MLPs with
/// `hidden` units; the halves swap roles from layer to layer. Weights come from `seed`.
pub fn coupling_network(n: usize, layers: usize, hidden: usize, seed: u64) -> Function {
    assert!(
        n >= 2 && n.is_multiple_of(2),
        "coupling networks need an even n ≥ 2"
    );
    let mut rng = Rng::new(seed);
    let mut b = Builder::new(format!("coupling_{n}"));
    let mut state: Vec<Value> = (0..n)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    let half = n / 2;
    for layer in 0..layers {
        let (fixed, moved): (Vec<usize>, Vec<usize>) = if layer % 2 == 0 {
            ((0..half).collect(), (half..n).collect())
        } else {
            ((half..n).collect(), (0..half).collect())
        };
        let a: Vec<Value> = fixed.iter().map(|&i| state[i]).collect();
        let (s, t) = mlp_pair(&mut b, &mut rng, &a, hidden);
        for (k, &i) in moved.iter().enumerate() {
            let e = b.unary(UnaryOp::Exp, s[k]);
            state[i] = b.fma(state[i], e, t[k]);
        }
    }
    b.finish(&state)
}

/// The program of Pearlmutter & Siskind's Fig. 2: `z1 = p(x1, x2)`, `z2 = q(z1, x3)`, outputs
/// `(z1, x2, z2)`, with `p = x1·x2 + sin(x1)` and `q = z1·exp(x3) + x3`.
pub fn fig2() -> Function {
    let mut b = Builder::new("fig2");
    let x1 = b.param(Type::F64, "x1");
    let x2 = b.param(Type::F64, "x2");
    let x3 = b.param(Type::F64, "x3");
    let s = b.unary(UnaryOp::Sin, x1);
    let z1 = b.fma(x1, x2, s);
    b.set_name(z1, "z1");
    let e = b.unary(UnaryOp::Exp, x3);
    let z2 = b.fma(z1, e, x3);
    b.set_name(z2, "z2");
    b.finish(&[z1, x2, z2])
}

/// A random square program built from `steps` invertible updates of an `n`-vector: each update
/// replaces one component `s_i` by `s_i·g + h` or `s_i + h`, where `g = exp(c·tanh(s_j))` and
/// `h` (a bounded function of a random expression) only read other components. Invertible by construction;
/// `seed` picks everything.
pub fn random_triangular(n: usize, steps: usize, seed: u64) -> Function {
    let mut rng = Rng::new(seed);
    let mut b = Builder::new(format!("random_triangular_{seed}"));
    let mut s: Vec<Value> = (0..n)
        .map(|i| b.param(Type::F64, &format!("x{i}")))
        .collect();
    for _ in 0..steps {
        let i = rng.below(n);
        let mut others: Vec<Value> = (0..n).filter(|&j| j != i).map(|j| s[j]).collect();
        if others.is_empty() {
            others.push(b.constant(Type::F64, 0.5));
        }
        let pick = |rng: &mut Rng| others[rng.below(others.len())];
        let mut h = pick(&mut rng);
        for _ in 0..rng.below(3) {
            let o = pick(&mut rng);
            let op = [BinaryOp::Add, BinaryOp::Mul, BinaryOp::Sub][rng.below(3)];
            h = b.binary(op, h, o);
        }
        // Bounded nonlinearities keep the map well conditioned.
        let f = [UnaryOp::Sin, UnaryOp::Tanh, UnaryOp::Atan][rng.below(3)];
        h = b.unary(f, h);
        s[i] = if rng.chance(0.5) {
            let g = b.unary(UnaryOp::Tanh, pick(&mut rng));
            let g = b.mul(g, rng.uniform(-0.5, 0.5));
            let g = b.unary(UnaryOp::Exp, g);
            b.fma(s[i], g, h)
        } else {
            b.add(s[i], h)
        };
    }
    b.finish(&s)
}

/// The 2-D Bratu residual on an `n × n` interior grid (zero boundary values), scaled by h²
/// (h = 1/(n+1)): `r_ij = 4u_ij − Σ neighbours − h²·λ·e^u_ij`. Square (n² → n²), a 5-point
/// stencil: the sparse Jacobian's test and benchmark program (5 colours).
pub fn bratu(n: usize, lambda: f64) -> Function {
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    trace_multi("bratu", &vec![Type::F64; n * n], |u| {
        let mut r = Vec::with_capacity(n * n);
        for i in 0..n {
            for j in 0..n {
                let mut lap = u[i * n + j] * 4.0;
                let neighbours = [
                    (i > 0).then(|| (i - 1) * n + j),
                    (i + 1 < n).then(|| (i + 1) * n + j),
                    (j > 0).then(|| i * n + j - 1),
                    (j + 1 < n).then(|| i * n + j + 1),
                ];
                for k in neighbours.into_iter().flatten() {
                    lap -= u[k];
                }
                r.push(lap - u[i * n + j].exp() * (h2 * lambda));
            }
        }
        r
    })
}

/// [`chained_rosenbrock`] as IR text in the form `ir/bench` writes it: the sum threaded through
/// two `fma`s per term (`%t = fma %d, 100.0, %s`, `%s' = fma %a, %a, %t`), six instructions a
/// term, `n ≥ 2`. Its reverse sweep reads the forward loop's term after its own.
pub fn chained_rosenbrock_text(n: usize) -> String {
    let params: Vec<String> = (0..n).map(|i| format!("%x{i}: f64")).collect();
    let mut text = format!(
        "func @rb({}) -> f64 {{\n    %s0 = const f64 0.0\n",
        params.join(", ")
    );
    for i in 0..n.saturating_sub(1) {
        let j = i + 1;
        text += &format!(
            "    %n{i} = neg %x{i}\n    %a{i} = add %n{i}, 1.0\n    %c{i} = fma %n{i}, %x{i}, %x{j}\n    \
             %d{i} = mul %c{i}, %c{i}\n    %t{i} = fma %d{i}, 100.0, %s{i}\n    %s{j} = fma %a{i}, %a{i}, %t{i}\n"
        );
    }
    text + &format!("    ret %s{}\n}}\n", n - 1)
}

/// The chained Rosenbrock function Σ_{i<n−1} 100(x_{i+1} − xᵢ²)² + (1 − xᵢ)² (tridiagonal
/// Hessian: 3 star colours), `n ≥ 2`.
pub fn chained_rosenbrock(n: usize) -> Function {
    assert!(
        n >= 2,
        "the chained Rosenbrock function needs two variables"
    );
    trace_multi("chained_rosenbrock", &vec![Type::F64; n], |x| {
        let terms = (0..n.saturating_sub(1)).map(|i| {
            let d = x[i + 1] - x[i] * x[i];
            let a = 1.0 - x[i];
            d * d * 100.0 + a * a
        });
        vec![terms.reduce(|s, t| s + t).expect("n ≥ 2 terms")]
    })
}

/// The chained Rosenbrock function traced NumPy style (`n ≥ 2`): each elementwise stage over
/// the whole array (`x²`, `x[1:] − x²`, `1 − x`, `100·(…)²`, the two added), then the sum. Its
/// rolled form is a loop per stage ([`adjit_ir::Rolled::staged_share`] is 1).
pub fn staged_rosenbrock(n: usize) -> Function {
    assert!(n >= 2, "the staged Rosenbrock function needs two variables");
    trace_multi("staged_rosenbrock", &vec![Type::F64; n], |x| {
        let m = n - 1;
        let sq: Vec<_> = (0..m).map(|i| x[i] * x[i]).collect();
        let d: Vec<_> = (0..m).map(|i| x[i + 1] - sq[i]).collect();
        let a: Vec<_> = (0..m).map(|i| 1.0 - x[i]).collect();
        let dd: Vec<_> = (0..m).map(|i| d[i] * d[i] * 100.0).collect();
        let t: Vec<_> = (0..m).map(|i| dd[i] + a[i] * a[i]).collect();
        vec![t[1..].iter().fold(t[0], |s, &v| s + v)]
    })
}

/// A 2-D grid energy on `m × m` unknowns (`m ≥ 3`): Σ r² over the interior with r = 4u −
/// (the four neighbours) − eᵘ/2, traced row by row, each cell's terms in turn. Its rolled
/// gradient's reverse loops hand each row's adjoints to the next row.
pub fn grid_energy(m: usize) -> Function {
    assert!(m >= 3, "the grid needs an interior");
    trace_multi("grid_energy", &vec![Type::F64; m * m], |u| {
        let mut s = u[0] * 0.0;
        for i in 1..m - 1 {
            for j in 1..m - 1 {
                let c = u[i * m + j];
                let r = c * 4.0
                    - u[(i - 1) * m + j]
                    - u[(i + 1) * m + j]
                    - u[i * m + j - 1]
                    - u[i * m + j + 1]
                    - c.exp() * 0.5;
                s += r * r;
            }
        }
        vec![s]
    })
}
