//! The sparse derivative objects through the facade: native code equals the interpreter bit
//! for bit, sparse values equal the dense objects', and the dense objects read through the
//! structural pattern (exact zeros where a dense sweep meets `0·∞`).

use adjit::ir::random::Rng;
use adjit::{
    Engine, Hessian, Jacobian, JacobianMode, Options, SparseHessian, SparseJacobian, Type,
};

fn bratu(n: usize) -> adjit::Function {
    adjit_testkit::bratu(n, 6.0)
}

fn rosenbrock(n: usize) -> adjit::Function {
    adjit_testkit::chained_rosenbrock(n)
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-14 * a.abs().max(b.abs())
}

#[test]
fn sparse_jacobian_matches_dense_and_jit_equals_interpreter() {
    let f = bratu(8);
    let x = Rng::new(1).vector(64, -0.5, 0.5);
    let jit = SparseJacobian::new(&f).unwrap();
    let interp = SparseJacobian::with_options(&f, &Options::on(Engine::Interp)).unwrap();
    assert_eq!((jit.rows(), jit.cols(), jit.colors()), (64, 64, 5));
    assert_eq!(jit.nnz(), 64 * 5 - 4 * 8);
    let (mut a, mut b) = (vec![0.0; jit.nnz()], vec![0.0; jit.nnz()]);
    jit.eval(&x, &mut a).unwrap();
    interp.eval(&x, &mut b).unwrap();
    assert_eq!(
        a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // The forward mode's vector JVPs, not the Auto object (which takes the sparse path here).
    let dense = Jacobian::with_mode(&f, JacobianMode::Forward, &Options::default()).unwrap();
    let (mut y, mut j) = (vec![0.0; 64], vec![0.0; 64 * 64]);
    dense.call(&x, &mut y, &mut j).unwrap();
    let auto = Jacobian::new(&f).unwrap();
    assert_eq!(auto.mode(), JacobianMode::Sparse);
    let (mut y2, mut j2) = (vec![0.0; 64], vec![f64::NAN; 64 * 64]);
    auto.call(&x, &mut y2, &mut j2).unwrap();
    assert_eq!(y, y2);
    for (k, (&s, &d)) in j2.iter().zip(&j).enumerate() {
        assert!(close(s, d), "auto J[{}][{}]: {s} vs {d}", k / 64, k % 64);
    }
    let mut through = vec![f64::NAN; 64 * 64];
    jit.eval_dense(&x, &mut through).unwrap();
    for (k, (&s, &d)) in through.iter().zip(&j).enumerate() {
        assert!(
            close(s, d),
            "J[{}][{}]: sparse {s}, dense {d}",
            k / 64,
            k % 64
        );
    }
    // Lengths are checked and named.
    let err = jit.eval(&x[..3], &mut a).unwrap_err().to_string();
    assert!(err.contains("x has 3 numbers, expected 64"), "{err}");
    let err = jit.eval(&x, &mut a[..3]).unwrap_err().to_string();
    assert!(err.contains("nz has 3 numbers"), "{err}");
}

#[test]
fn sparse_hessian_matches_dense_and_expands_symmetrically() {
    let n = 30;
    let f = rosenbrock(n);
    let x = Rng::new(2).vector(n, -1.0, 1.0);
    let hess = SparseHessian::new(&f).unwrap();
    let interp = SparseHessian::with_options(&f, &Options::on(Engine::Interp)).unwrap();
    assert_eq!((hess.n(), hess.nnz(), hess.colors()), (n, 2 * n - 1, 3));
    let (mut lower, mut other) = (vec![0.0; hess.nnz()], vec![0.0; hess.nnz()]);
    hess.eval(&x, &mut lower).unwrap();
    interp.eval(&x, &mut other).unwrap();
    assert_eq!(lower, other);
    // The reference: one interpreted HVP per column (the Hessian object itself takes the
    // sparse path for this pattern).
    let columns = adjit::diff::hessian(&f, &x).unwrap();
    let h: Vec<f64> = columns.concat();
    let dense = Hessian::new(&f).unwrap();
    let (mut g, mut h_object) = (vec![0.0; n], vec![0.0; n * n]);
    let y = dense.call(&x, &mut g, &mut h_object).unwrap();
    assert_eq!(y, adjit::eval(&f, Engine::Jit, &x).unwrap()[0]);
    for (k, (&a, &b)) in h_object.iter().zip(&h).enumerate() {
        assert!(
            close(a, b),
            "Hessian object H[{}][{}]: {a} vs {b}",
            k / n,
            k % n
        );
    }
    let mut full = vec![0.0; hess.full_pattern().nnz()];
    hess.expand(&lower, &mut full).unwrap();
    for ((i, j), v) in hess.full_pattern().entries().zip(&full) {
        assert!(
            close(*v, h[i * n + j]),
            "H[{i}][{j}] {v} vs {}",
            h[i * n + j]
        );
    }
    let mut through = vec![f64::NAN; n * n];
    hess.eval_dense(&x, &mut through).unwrap();
    for i in 0..n {
        for j in 0..n {
            assert_eq!(through[i * n + j], through[j * n + i], "symmetric");
            assert!(close(through[i * n + j], h[i * n + j]));
        }
    }
}

#[test]
fn sparse_hessian_needs_one_float_output_and_handles_linear_functions() {
    let two = adjit::trace_multi("two", &[Type::F64; 2], |x| vec![x[0], x[1]]);
    let err = SparseHessian::new(&two).err().unwrap().to_string();
    assert!(err.contains("a Hessian needs exactly one"), "{err}");
    // A linear function: no nonzeros, an empty program that still runs.
    let linear = adjit::trace(3, |x| x[0] * 2.0 + x[1] - x[2]);
    let hess = SparseHessian::new(&linear).unwrap();
    assert_eq!(hess.nnz(), 0);
    assert!(hess.colors() <= 1);
    hess.eval(&[1.0, 2.0, 3.0], &mut []).unwrap();
    let mut dense = [f64::NAN; 9];
    hess.eval_dense(&[1.0, 2.0, 3.0], &mut dense).unwrap();
    assert_eq!(dense, [0.0; 9]);
}

#[test]
fn dense_objects_read_through_the_pattern() {
    // y0 = √x1, y1 = x0. At x1 = 0, √'s partial is infinite: a forward sweep along e0 and a
    // reverse sweep for y1 both meet 0·∞ = NaN in entries that are structurally zero.
    let f = adjit::trace_multi("f", &[Type::F64; 2], |x| vec![x[1].sqrt(), x[0]]);
    for engine in [Engine::Jit, Engine::Interp] {
        for mode in [JacobianMode::Forward, JacobianMode::Reverse] {
            let (_, j) = adjit::jacobian(&f, engine, mode, &[1.0, 0.0]).unwrap();
            assert_eq!(j, [0.0, f64::INFINITY, 1.0, 0.0], "{engine:?} {mode:?}");
        }
        let (_, _, h) = adjit::hessian(
            &adjit::trace(2, |x| x[1].sqrt() + x[0] * x[0]),
            engine,
            &[1.0, 0.0],
        )
        .unwrap();
        assert_eq!((h[0], h[1], h[2]), (2.0, 0.0, 0.0), "{engine:?}: {h:?}");
        assert!(h[3].is_nan() || h[3].is_infinite());
    }
}

#[test]
fn sparse_objects_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<SparseJacobian>();
    check::<SparseHessian>();
}

#[test]
fn data_inputs_and_f32_programs() {
    // A Lagrangian with its multiplier as data: L(x; λ) = x0² + λ·x0·x1 − x1.
    let lagrangian = adjit::trace_with_data(2, 1, |x, d| x[0] * x[0] + d[0] * x[0] * x[1] - x[1]);
    let hess = SparseHessian::new(&lagrangian).unwrap();
    assert_eq!(hess.n(), 2);
    let mut lower = vec![0.0; hess.nnz()];
    hess.eval(&[1.0, 2.0, 5.0], &mut lower).unwrap();
    assert_eq!(lower, [2.0, 5.0]); // H00 = 2, H10 = λ; H11 is structurally zero
    let mut dense = [f64::NAN; 4];
    hess.eval_dense(&[1.0, 2.0, 5.0], &mut dense).unwrap();
    assert_eq!(dense, [2.0, 5.0, 5.0, 0.0]);
    // f32: the program computes in f32, the values come back as f64, the same on both engines.
    let mut b = adjit::Builder::new("f32");
    let x = b.param(Type::F32, "x");
    let y = b.param(Type::F32, "y");
    let s = b.unary(adjit::ir::UnaryOp::Sin, x);
    let p = b.mul(s, y);
    let q = b.mul(y, y);
    let f = b.finish(&[p, q]);
    let (jit, interp) = (
        SparseJacobian::new(&f).unwrap(),
        SparseJacobian::with_options(&f, &Options::on(Engine::Interp)).unwrap(),
    );
    let (mut a, mut c) = (vec![0.0; jit.nnz()], vec![0.0; jit.nnz()]);
    jit.eval(&[0.5, 2.0], &mut a).unwrap();
    interp.eval(&[0.5, 2.0], &mut c).unwrap();
    assert_eq!(a, c);
    assert_eq!(a[0], f64::from(0.5f32.cos() * 2.0));
    assert_eq!(jit.pattern().row(1), &[1]);
}

#[test]
fn gradient_and_hessian_of_a_function_with_a_bool_output() {
    let mut b = adjit::Builder::new("f");
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let c = b.fcmp(adjit::ir::CmpPred::Gt, x, y);
    let p = b.mul(x, y);
    let q = b.mul(p, x);
    let f = b.finish(&[c, q]);
    let grad = adjit::Gradient::new(&f).unwrap();
    let mut g = [0.0; 2];
    assert_eq!(grad.call(&[2.0, 3.0], &mut g).unwrap(), 12.0);
    assert_eq!(g, [12.0, 4.0]);
    let hess = Hessian::new(&f).unwrap();
    let (mut g, mut h) = ([0.0; 2], [0.0; 4]);
    assert_eq!(hess.call(&[2.0, 3.0], &mut g, &mut h).unwrap(), 12.0);
    assert_eq!(h, [6.0, 4.0, 4.0, 0.0]);
}

/// Cell (i, j)'s neighbour on one side in an m × m grid, if it has one.
type Neighbour = fn(usize, usize, usize) -> Option<usize>;

/// An m × m residual 4u − (neighbours) over h² − λ·exp(u), traced stage by stage as NumPy
/// slicing traces it: each term over every cell in turn.
fn grid_by_stages(m: usize) -> adjit::Function {
    let h2 = 1.0 / ((m + 1) * (m + 1)) as f64;
    adjit::ir::trace::trace_multi("grid", &vec![Type::F64; m * m], |u| {
        let mut lap: Vec<_> = u.iter().map(|&x| x * 4.0).collect();
        let shifts: [Neighbour; 4] = [
            |i, j, m| (i > 0).then(|| (i - 1) * m + j),
            |i, j, m| (i + 1 < m).then(|| (i + 1) * m + j),
            |i, j, m| (j > 0).then(|| i * m + j - 1),
            |i, j, m| (j + 1 < m).then(|| i * m + j + 1),
        ];
        for shift in shifts {
            for (k, l) in lap.iter_mut().enumerate() {
                if let Some(n) = shift(k / m, k % m, m) {
                    *l -= u[n];
                }
            }
        }
        let lap: Vec<_> = lap.into_iter().map(|l| l / h2).collect();
        lap.iter()
            .zip(u)
            .map(|(&l, &x)| l - x.exp() * 6.0)
            .collect()
    })
}

/// The sparse Jacobian of a grid traced by stages has one `const` per value: its folds turn a
/// stage of varying entries into one constant, which the first round of `simplify` held apart
/// as data and its last round must still merge. With one constant the plan fills its outputs
/// by a loop and the diagonal rolls (a 300 × 300 grid compiled in 32–77 s with 39,600
/// copies of −1/h², in 2–2.6 s now).
#[test]
fn a_grid_jacobian_holds_each_constant_once() {
    let f = grid_by_stages(40);
    let sparse = SparseJacobian::new(&f).unwrap();
    let mut consts: Vec<u64> = sparse
        .ir()
        .insts()
        .filter_map(|(_, inst)| match inst {
            adjit::ir::InstData::Const { bits, .. } => Some(*bits),
            _ => None,
        })
        .collect();
    let n = consts.len();
    consts.sort_unstable();
    consts.dedup();
    assert_eq!(consts.len(), n, "{n} consts, {} distinct", consts.len());
    let n = f.n_params;
    let x = Rng::new(3).vector(n, -0.5, 0.5);
    let dense = Jacobian::with_mode(&f, JacobianMode::Forward, &Options::default()).unwrap();
    let (mut y, mut want) = (vec![0.0; n], vec![0.0; n * n]);
    dense.call(&x, &mut y, &mut want).unwrap();
    let mut through = vec![f64::NAN; n * n];
    sparse.eval_dense(&x, &mut through).unwrap();
    for (k, (&s, &d)) in through.iter().zip(&want).enumerate() {
        assert!(
            close(s, d),
            "J[{}][{}]: sparse {s}, dense {d}",
            k / n,
            k % n
        );
    }
}

/// `eval_varying` writes exactly `eval`'s bits at `varying()`'s positions, on both engines,
/// and every other entry is the same at every point: a varying entry taken for a constant
/// (or a position off by one) fails the second check, a constant taken for a varying one
/// fails Bratu's pinned list (its diagonal alone moves).
#[test]
fn varying_entries_are_the_ones_that_move_and_eval_varying_writes_them() {
    fn check(jit: &SparseJacobianOrHessian, interp: &SparseJacobianOrHessian, points: &[Vec<f64>]) {
        let nnz = jit.nnz();
        assert_eq!(jit.varying(), interp.varying());
        let mut first: Option<Vec<f64>> = None;
        for x in points {
            let mut all = vec![0.0; nnz];
            jit.eval(x, &mut all);
            let (mut a, mut b) = (
                vec![0.0; jit.varying().len()],
                vec![0.0; jit.varying().len()],
            );
            jit.eval_varying(x, &mut a);
            interp.eval_varying(x, &mut b);
            let want: Vec<u64> = jit.varying().iter().map(|&k| all[k].to_bits()).collect();
            assert_eq!(a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
            assert_eq!(b.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
            if let Some(first) = &first {
                // In place over another point's values: every entry is now `eval(x)`'s.
                let mut refreshed = first.clone();
                jit.refresh(x, &mut refreshed);
                assert_eq!(
                    refreshed.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    all.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
                for k in (0..nnz).filter(|k| !jit.varying().contains(k)) {
                    assert_eq!(all[k].to_bits(), first[k].to_bits(), "entry {k} moved");
                }
            }
            first.get_or_insert(all);
        }
    }
    let mut rng = Rng::new(7);
    let f = bratu(8);
    let jit = SparseJacobianOrHessian::Jacobian(SparseJacobian::new(&f).unwrap());
    let interp = SparseJacobianOrHessian::Jacobian(
        SparseJacobian::with_options(&f, &Options::on(Engine::Interp)).unwrap(),
    );
    // Row r's diagonal is its entry at column r: after the row's entries left of it.
    let SparseJacobianOrHessian::Jacobian(j) = &jit else {
        unreachable!()
    };
    let diagonal: Vec<usize> = (0..64)
        .map(|r| {
            j.pattern().indptr()[r]
                + j.pattern()
                    .row(r)
                    .iter()
                    .take_while(|&&c| (c as usize) < r)
                    .count()
        })
        .collect();
    assert_eq!(j.varying(), diagonal);
    let points: Vec<_> = (0..3).map(|_| rng.vector(64, -0.5, 0.5)).collect();
    check(&jit, &interp, &points);
    // Lengths are checked against the varying entries, and named.
    let n = j.varying().len();
    let err = j
        .eval_varying(&[0.0; 3], &mut vec![0.0; n + 1])
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("expected {n}")), "{err}");
    // A quadratic: every Hessian entry constant, nothing to write, on both engines.
    let f = adjit::trace(3, |x| x[0] * x[0] * 3.0 + x[0] * x[1] - x[2]);
    for opts in [Options::default(), Options::on(Engine::Interp)] {
        let hess = SparseHessian::with_options(&f, &opts).unwrap();
        assert_eq!((hess.varying(), hess.nnz()), (&[][..], 2));
        hess.eval_varying(&[1.0, 2.0, 3.0], &mut []).unwrap();
        let mut lower = vec![0.0; 2];
        hess.refresh(&[1.0, 2.0, 3.0], &mut lower).unwrap();
        assert_eq!(lower, [0.0; 2]); // refresh leaves the constants to the caller's `eval`
    }
    // Chained Rosenbrock's Hessian: constant entries (the 200 of 100·d²) beside moving ones.
    let f = rosenbrock(6);
    let jit = SparseJacobianOrHessian::Hessian(SparseHessian::new(&f).unwrap());
    let interp = SparseJacobianOrHessian::Hessian(
        SparseHessian::with_options(&f, &Options::on(Engine::Interp)).unwrap(),
    );
    assert!(!jit.varying().is_empty() && jit.varying().len() < jit.nnz());
    let points: Vec<_> = (0..3).map(|_| rng.vector(6, -2.0, 2.0)).collect();
    check(&jit, &interp, &points);
    // Random programs: mostly varying, some constant (`x·c` gives a constant entry).
    for seed in 0..20 {
        let opts = adjit::ir::random::RandomOptions {
            n_outputs: 4,
            ..Default::default()
        };
        let f = adjit::ir::random::random_function(seed, &opts);
        let jit = SparseJacobianOrHessian::Jacobian(SparseJacobian::new(&f).unwrap());
        let interp = SparseJacobianOrHessian::Jacobian(
            SparseJacobian::with_options(&f, &Options::on(Engine::Interp)).unwrap(),
        );
        let points: Vec<_> = (0..3).map(|_| rng.vector(f.n_params, -2.0, 2.0)).collect();
        check(&jit, &interp, &points);
    }
}

/// The two sparse objects behind one test.
enum SparseJacobianOrHessian {
    Jacobian(SparseJacobian),
    Hessian(SparseHessian),
}

impl SparseJacobianOrHessian {
    fn nnz(&self) -> usize {
        match self {
            Self::Jacobian(j) => j.nnz(),
            Self::Hessian(h) => h.nnz(),
        }
    }
    fn varying(&self) -> &[usize] {
        match self {
            Self::Jacobian(j) => j.varying(),
            Self::Hessian(h) => h.varying(),
        }
    }
    fn eval(&self, x: &[f64], out: &mut [f64]) {
        match self {
            Self::Jacobian(j) => j.eval(x, out),
            Self::Hessian(h) => h.eval(x, out),
        }
        .unwrap()
    }
    fn refresh(&self, x: &[f64], out: &mut [f64]) {
        match self {
            Self::Jacobian(j) => j.refresh(x, out),
            Self::Hessian(h) => h.refresh(x, out),
        }
        .unwrap()
    }
    fn eval_varying(&self, x: &[f64], out: &mut [f64]) {
        match self {
            Self::Jacobian(j) => j.eval_varying(x, out),
            Self::Hessian(h) => h.eval_varying(x, out),
        }
        .unwrap()
    }
}
