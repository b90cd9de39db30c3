//! `ba`: bundle adjustment (ADBench's objective, as GradBench's reference computes it).
//!
//! The input is one camera (11 numbers: Rodrigues rotation r, centre C, focal length f,
//! principal point x₀, radial distortion k₁ k₂), one point X, one weight w and one feature,
//! expanded as the reference does into n cameras, m points and p observations (observation i
//! sees camera i mod n and point i mod m, with weight wᵢ and the feature).
//!
//! Two traced kernels, compiled once per session:
//! * the reprojection error of one observation, (cam, X, w) → w·(proj(cam, X) − feat), 15
//!   differentiated inputs, the feature as `data`, 2 outputs;
//! * the weight error 1 − w².
//!
//! `objective` runs both over every observation; `jacobian` takes each observation's dense
//! 2×15 block by reverse mode, one VJP per row (measured 2–3× faster than one forward call
//! carrying all 15 directions), and the weight errors' derivatives, and lays them out in the
//! reference's CSR matrix (rows, cols, vals). Observations run in batches of [`CHUNK`] through
//! the native code's batched call, on one thread (`--threads` is not used: the reference is
//! single-threaded). Like the reference, the answers print only a prefix of what was
//! computed: the first observation's errors with a repeat count, and the first 30 entries
//! plus the last of each CSR array.

use std::cell::RefCell;
use std::rc::Rc;

use adjit::diff::layout::Part;
use adjit::ir::trace::{Tracer, Var};
use adjit::{Compiled, Mode, Type};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{unknown_function, Config, Eval};
use crate::error::Result;
use crate::input::Source;
use crate::measure::{evaluate, Evaluation, Runs};

/// Camera parameters per camera.
const CAM: usize = 11;
/// Differentiated inputs of the reprojection kernel: camera, point, weight.
const COLS: usize = CAM + 3 + 1;
/// Inputs of the reprojection kernel: those and the feature (data).
const ARGS: usize = COLS + 2;
/// Nonzeros of one observation's reprojection rows.
const BLOCK: usize = 2 * COLS;
/// Observations per batched call.
const CHUNK: usize = 64;

#[derive(Deserialize)]
struct Input {
    n: usize,
    m: usize,
    p: usize,
    cam: Vec<f64>,
    x: Vec<f64>,
    w: f64,
    feat: Vec<f64>,
}

/// a × b.
fn cross<'t>(a: [Var<'t>; 3], b: [Var<'t>; 3]) -> [Var<'t>; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// The point `pt` rotated by the angle-axis vector `rot` (Rodrigues' formula), as the
/// reference computes it: the full formula when |rot|² ≠ 0, else the first-order
/// pt + rot × pt. Both branches are traced and one selected; the full formula divides by a
/// θ that is replaced by 1 where it is 0, so the branch not taken has finite derivatives.
fn rodrigues<'t>(rot: [Var<'t>; 3], pt: [Var<'t>; 3]) -> [Var<'t>; 3] {
    let sqtheta = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2];
    let nonzero = sqtheta.ne(0.0);
    let theta = nonzero.select(sqtheta, 1.0).sqrt();
    let (costheta, sintheta) = (theta.cos(), theta.sin());
    let theta_inverse = 1.0 / theta;
    let w = rot.map(|r| r * theta_inverse);
    let w_cross_pt = cross(w, pt);
    let tmp = (w[0] * pt[0] + w[1] * pt[1] + w[2] * pt[2]) * (1.0 - costheta);
    let rot_cross_pt = cross(rot, pt);
    std::array::from_fn(|i| {
        let full = pt[i] * costheta + w_cross_pt[i] * sintheta + w[i] * tmp;
        let small = pt[i] + rot_cross_pt[i];
        nonzero.select(full, small)
    })
}

/// w·(proj(cam, X) − feat) for one observation: θ = (cam, X, w), data = feat.
fn reproj_kernel() -> adjit::Function {
    let t = Tracer::new("ba_reproj");
    let args: Vec<Var<'_>> = (0..COLS).map(|_| t.input(Type::F64)).collect();
    let feat = [t.data_input(Type::F64), t.data_input(Type::F64)];
    let (cam, x, w) = (&args[..CAM], &args[CAM..CAM + 3], args[CAM + 3]);
    let xo = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    let xcam = rodrigues([cam[0], cam[1], cam[2]], xo);
    let proj = [xcam[0] / xcam[2], xcam[1] / xcam[2]];
    let rsq = proj[0] * proj[0] + proj[1] * proj[1];
    let l = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq;
    let distorted = proj.map(|v| v * l);
    let err: Vec<Var<'_>> = (0..2)
        .map(|i| w * ((distorted[i] * cam[6] + cam[7 + i]) - feat[i]))
        .collect();
    t.finish(&err)
}

/// 1 − w².
fn weight_kernel() -> adjit::Function {
    adjit::trace(1, |w| 1.0 - w[0] * w[0])
}

/// The compiled kernels (they do not depend on the sizes).
struct Kernels {
    reproj: Compiled,
    /// `(x, ȳ) -> (y, x̄)`: one row of the block per call, ȳ a unit vector.
    reproj_vjp: Compiled,
    weight: Compiled,
    /// `(w) -> (1 − w², −2w)`.
    weight_grad: Compiled,
}

impl Kernels {
    fn new() -> Result<Kernels> {
        let (reproj, weight) = (reproj_kernel(), weight_kernel());
        // The reprojection kernels run over all observations in batches: two per call, one
        // per lane of the two-lane kernels.
        let mut pairs = adjit::Options::default();
        pairs.jit.batch_lanes = 2;
        Ok(Kernels {
            reproj: Compiled::with_options(&reproj, Mode::Primal, &pairs)?,
            reproj_vjp: Compiled::with_options(&reproj, Mode::Vjp, &pairs)?,
            weight: Compiled::new(&weight, Mode::Primal)?,
            weight_grad: Compiled::new(&weight, Mode::Gradient)?,
        })
    }
}

/// Runs `c` on every point of `inputs` (point-major, writing `outputs` point-major): one
/// batched call on native code, one call per point on the interpreter.
fn run_batch(c: &Compiled, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
    match c.code() {
        Some(code) => code
            .call_batch(inputs, outputs)
            .map_err(adjit::Error::from)?,
        None => {
            let (n_in, n_out) = (c.n_inputs(), c.n_outputs());
            for (x, y) in inputs
                .chunks_exact(n_in)
                .zip(outputs.chunks_exact_mut(n_out))
            {
                c.call(x, y)?;
            }
        }
    }
    Ok(())
}

/// A zeroed vector of `len` entries, or an input error when it cannot be allocated.
fn zeros<T: Clone + Default>(source: Source<'_>, len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| source.error(format!("{what} of {len} entries does not fit in memory")))?;
    v.resize(len, T::default());
    Ok(v)
}

/// The problem as the reference expands it.
struct Problem {
    n: usize,
    m: usize,
    p: usize,
    cams: Vec<f64>,
    x: Vec<f64>,
    w: Vec<f64>,
    /// (camera, point) per observation.
    obs: Vec<[usize; 2]>,
    feats: Vec<f64>,
}

impl Problem {
    fn new(source: Source<'_>, input: &Input) -> Result<Problem> {
        let Input { n, m, p, .. } = *input;
        let cams = zeros(source, CAM.saturating_mul(n), "the cameras")?;
        let x = zeros(source, 3usize.saturating_mul(m), "the points")?;
        let w = zeros(source, p, "the weights")?;
        let obs = zeros(source, p, "the observations")?;
        let feats = zeros(source, 2usize.saturating_mul(p), "the features")?;
        let mut problem = Problem {
            n,
            m,
            p,
            cams,
            x,
            w,
            obs,
            feats,
        };
        for cam in problem.cams.chunks_exact_mut(CAM) {
            cam.copy_from_slice(&input.cam);
        }
        for x in problem.x.chunks_exact_mut(3) {
            x.copy_from_slice(&input.x);
        }
        problem.w.fill(input.w);
        for (i, obs) in problem.obs.iter_mut().enumerate() {
            *obs = [i % n, i % m];
        }
        for feat in problem.feats.chunks_exact_mut(2) {
            feat.copy_from_slice(&input.feat);
        }
        Ok(problem)
    }

    /// Writes observation i's kernel inputs (cam, X, w, feat) to `args`.
    fn gather(&self, i: usize, args: &mut [f64]) {
        let [c, pt] = self.obs[i];
        args[..CAM].copy_from_slice(&self.cams[c * CAM..(c + 1) * CAM]);
        args[CAM..CAM + 3].copy_from_slice(&self.x[pt * 3..pt * 3 + 3]);
        args[CAM + 3] = self.w[i];
        args[COLS..ARGS].copy_from_slice(&self.feats[2 * i..2 * i + 2]);
    }

    /// The column of observation i's weight: after the cameras' and the points' columns.
    fn w_col(&self, i: usize) -> usize {
        CAM * self.n + 3 * self.m + i
    }
}

/// The checks of an input before anything is allocated: sizes the reference can represent,
/// parts of the right lengths.
fn check(source: Source<'_>, input: &Input) -> Result<()> {
    if input.n == 0 || input.m == 0 || input.p == 0 {
        return Err(source.error("n, m and p must be positive"));
    }
    for (what, got, expected) in [
        ("cam", input.cam.len(), CAM),
        ("x", input.x.len(), 3),
        ("feat", input.feat.len(), 2),
    ] {
        if got != expected {
            return Err(source.error(format!("{what} has {got} numbers, expected {expected}")));
        }
    }
    // Row offsets and columns are 32-bit (the reference's are `int`).
    let cols = CAM
        .checked_mul(input.n)
        .and_then(|c| c.checked_add(3usize.checked_mul(input.m)?))
        .and_then(|c| c.checked_add(input.p));
    let nonzeros = (BLOCK + 1).checked_mul(input.p);
    if cols.is_none_or(|c| c > i32::MAX as usize) || nonzeros.is_none_or(|z| z > i32::MAX as usize)
    {
        return Err(source.error(format!(
            "n = {}, m = {}, p = {} make a Jacobian too large for 32-bit indices",
            input.n, input.m, input.p
        )));
    }
    Ok(())
}

/// The objective of every observation.
struct Objective {
    reproj_err: Vec<f64>,
    w_err: Vec<f64>,
}

/// The Jacobian in the reference's CSR form: rows 2i, 2i+1 are observation i's reprojection
/// errors, row 2p + i its weight error.
struct Sparse {
    rows: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<f64>,
}

fn objective(k: &Kernels, problem: &Problem, out: &mut Objective) -> Result<()> {
    let mut args = [0.0; CHUNK * ARGS];
    for (c, errs) in out.reproj_err.chunks_mut(2 * CHUNK).enumerate() {
        let count = errs.len() / 2;
        for (j, a) in args[..count * ARGS].chunks_exact_mut(ARGS).enumerate() {
            problem.gather(c * CHUNK + j, a);
        }
        run_batch(&k.reproj, &args[..count * ARGS], errs)?;
    }
    run_batch(&k.weight, &problem.w, &mut out.w_err)
}

fn jacobian(source: Source<'_>, k: &Kernels, problem: &Problem) -> Result<Sparse> {
    let p = problem.p;
    let nonzeros = (BLOCK + 1) * p;
    let mut jac = Sparse {
        rows: zeros(source, 3 * p + 1, "the row offsets")?,
        cols: zeros(source, nonzeros, "the columns")?,
        vals: zeros(source, nonzeros, "the values")?,
    };
    // Two VJP points per observation, ȳ = (1, 0) then (0, 1), seeded once.
    let layout = k.reproj_vjp.layout();
    let (n_in, n_out) = (layout.n_inputs(), layout.n_outputs());
    let x_at = layout.input(Part::Inputs).start;
    let seed_at = layout.input(Part::Cotangent).start;
    let grad_at = layout.output(Part::Gradient).start;
    let mut input = vec![0.0; 2 * CHUNK * n_in];
    for (r, point) in input.chunks_exact_mut(n_in).enumerate() {
        point[seed_at + r % 2] = 1.0;
    }
    let mut output = vec![0.0; 2 * CHUNK * n_out];
    for (c, vals) in jac.vals[..BLOCK * p].chunks_mut(BLOCK * CHUNK).enumerate() {
        let count = vals.len() / BLOCK;
        for (j, pair) in input[..2 * count * n_in]
            .chunks_exact_mut(2 * n_in)
            .enumerate()
        {
            let (first, second) = pair.split_at_mut(n_in);
            let x = &mut first[x_at..x_at + ARGS];
            problem.gather(c * CHUNK + j, x);
            second[x_at..x_at + ARGS].copy_from_slice(x);
        }
        run_batch(
            &k.reproj_vjp,
            &input[..2 * count * n_in],
            &mut output[..2 * count * n_out],
        )?;
        for (row, out) in vals.chunks_exact_mut(COLS).zip(output.chunks_exact(n_out)) {
            row.copy_from_slice(&out[grad_at..grad_at + COLS]);
        }
    }
    // Checked in `check`: every offset and column fits in 32 bits.
    let index = |v: usize| v as u32;
    let point_cols = CAM * problem.n;
    for (i, &[c, pt]) in problem.obs.iter().enumerate() {
        for row in 0..2 {
            let at = BLOCK * i + COLS * row;
            let cols = &mut jac.cols[at..at + COLS];
            for (j, col) in cols[..CAM].iter_mut().enumerate() {
                *col = index(CAM * c + j);
            }
            for (j, col) in cols[CAM..CAM + 3].iter_mut().enumerate() {
                *col = index(point_cols + 3 * pt + j);
            }
            cols[CAM + 3] = index(problem.w_col(i));
            jac.rows[2 * i + row + 1] = index(at + COLS);
        }
    }
    // The weight rows: (1 − w², −2w) per weight, in batches.
    let mut grads = [0.0; 2 * CHUNK];
    for (c, w) in problem.w.chunks(CHUNK).enumerate() {
        run_batch(&k.weight_grad, w, &mut grads[..2 * w.len()])?;
        for (j, g) in grads[..2 * w.len()].chunks_exact(2).enumerate() {
            let i = c * CHUNK + j;
            let at = BLOCK * p + i;
            jac.vals[at] = g[1];
            jac.cols[at] = index(problem.w_col(i));
            jac.rows[2 * p + i + 1] = index(at + 1);
        }
    }
    Ok(jac)
}

/// The first 30 entries and the last, as the reference prints each CSR array (a shorter
/// array, p < 10 rows, is printed whole: the reference would read past its end).
fn prefix_and_last<T: Copy>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = v[..BLOCK.min(v.len().saturating_sub(1))].to_vec();
    out.extend(v.last());
    out
}

pub struct Ba {
    kernels: Option<Rc<Kernels>>,
}

impl Ba {
    pub fn new(_config: Config) -> Ba {
        Ba { kernels: None }
    }

    fn kernels(&mut self) -> Result<Rc<Kernels>> {
        if let Some(k) = &self.kernels {
            return Ok(k.clone());
        }
        let k = Rc::new(Kernels::new()?);
        Ok(self.kernels.insert(k).clone())
    }
}

impl Eval for Ba {
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation> {
        let source = Source {
            module: "ba",
            function,
        };
        let runs = Runs::of(input, source)?;
        let decoded: Input = source.decode(input)?;
        check(source, &decoded)?;
        let p = decoded.p;
        match function {
            "objective" => evaluate(
                runs,
                || -> Result<_> {
                    let k = self.kernels()?;
                    let problem = Problem::new(source, &decoded)?;
                    let out = RefCell::new(Objective {
                        reproj_err: zeros(source, 2 * p, "the reprojection errors")?,
                        w_err: zeros(source, p, "the weight errors")?,
                    });
                    Ok((k, problem, out))
                },
                |(k, problem, out)| {
                    let mut out = out.borrow_mut();
                    objective(k, problem, &mut out)?;
                    Ok([out.reproj_err[0], out.reproj_err[1], out.w_err[0]])
                },
                |[e0, e1, w]| {
                    json!({
                        "reproj_error": {"elements": [e0, e1], "repeated": p},
                        "w_err": {"element": w, "repeated": p},
                    })
                },
            ),
            "jacobian" => evaluate(
                runs,
                || -> Result<_> { Ok((self.kernels()?, Problem::new(source, &decoded)?)) },
                |(k, problem)| jacobian(source, k, problem),
                |jac| {
                    json!({
                        "rows": prefix_and_last(&jac.rows),
                        "cols": prefix_and_last(&jac.cols),
                        "vals": prefix_and_last(&jac.vals),
                    })
                },
            ),
            _ => Err(unknown_function("ba", function, "objective, jacobian")),
        }
    }
}
