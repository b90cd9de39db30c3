//! Facade glue for the inverse modes: build the reverse-, forward- or dense-inverse program once
//! ([`adjit_diff::inverse`]), prepare it on an engine, and turn its `status` output into an
//! error that names the lump whose pivot was numerically singular (or says the product is not
//! finite), so callers never see silent inf/NaN. Also renders the `lumps`, `dot`,
//! `reverse-inverse` and `forward-inverse` dump stages.

use adjit_diff::inverse::{
    analyze, check_dense, dense_inverse, forward_inverse, lumps_text, reverse_inverse,
    InverseOptions, NOT_FINITE,
};
use adjit_diff::layout::{Kind, Layout, Part};
use adjit_ir::Function;

use crate::error::{Error, Result};
use crate::jacobian::Jacobian;
use crate::options::InverseMode;
use crate::options::Options;
use crate::prepared::{check_lengths, parts_error, Prepared};
use crate::runner::Runner;

/// The simplified program of `mode` for the verified square `func`:
/// `(x.., v..) → (y.., product.., status)` (the [`Kind::Inverse`] layout).
pub fn inverse_program(
    func: &Function,
    mode: InverseMode,
    opts: &InverseOptions,
) -> Result<Function> {
    let program = match mode {
        InverseMode::Reverse => reverse_inverse(func, opts),
        InverseMode::Forward => forward_inverse(func, opts),
        InverseMode::Dense => dense_inverse(func, opts),
    }?;
    // Simplified like every other compiled mode (IEEE-preserving rewrites only).
    Ok(adjit_diff::simplify_owned(program))
}

/// An inverse product prepared once and called many times.
///
/// ```
/// use adjit::inverse::CompiledInverse;
/// use adjit::{InverseMode, Type};
/// // Polar to Cartesian coordinates: J = [[cos t, −r sin t], [sin t, r cos t]].
/// let f = adjit::trace_multi("polar", &[Type::F64; 2], |x| {
///     vec![x[0] * x[1].cos(), x[0] * x[1].sin()]
/// });
/// let inv = CompiledInverse::new(&f, InverseMode::Reverse).unwrap();
/// let (mut y, mut xdot) = ([0.0; 2], [0.0; 2]);
/// inv.call(&[2.0, 0.0], &[1.0, 1.0], &mut y, &mut xdot).unwrap();
/// assert_eq!(xdot, [1.0, 0.5]); // J⁻¹·v
/// ```
pub struct CompiledInverse {
    mode: InverseMode,
    /// The user's function name, for error messages.
    func_name: String,
    /// `(x ++ v) -> (y ++ product)`: what a call takes and fills.
    layout: Layout,
    /// The program's layout: the object's, then the status and pivot words.
    program_layout: Layout,
    program: Function,
    /// "lump k (%first..%last, l = …)" for every lump, to name it in errors.
    lump_names: Vec<String>,
    pivot_tol: f64,
    solver: Solver,
}

impl std::fmt::Debug for CompiledInverse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledInverse")
            .field("func", &self.func_name)
            .field("mode", &self.mode)
            .field("layout", &self.layout.to_string())
            .field("lumps", &self.lump_names.len())
            .finish_non_exhaustive()
    }
}

/// How the product is computed.
enum Solver {
    /// The reverse- or forward-inverse program, with its status and pivot outputs.
    Program(Runner),
    /// The dense mode: `J` from a compiled [`Jacobian`] (sparse when a colouring pays, else
    /// forward), rows equilibrated, then `faer`'s LU with partial pivoting. Emitting the `n × n`
    /// elimination as straight-line code instead took 14–17 s to compile at n = 400.
    Dense(Box<Jacobian>),
}

impl CompiledInverse {
    /// Build the `mode` program for the square program `func` and JIT-compile it.
    pub fn new(func: &Function, mode: InverseMode) -> Result<CompiledInverse> {
        CompiledInverse::with_options(func, mode, &Options::default())
    }

    /// [`CompiledInverse::new`] on the engine, with the code-generation and inverse options
    /// (`max_lump`, `pivot_tol`) of `opts`.
    pub fn with_options(
        func: &Function,
        mode: InverseMode,
        opts: &Options,
    ) -> Result<CompiledInverse> {
        adjit_ir::verify(func)?;
        if mode == InverseMode::Dense {
            check_dense(func, &opts.inverse)?;
            let jacobian = Jacobian::with_options(func, opts)?;
            return Ok(CompiledInverse {
                mode,
                func_name: func.name.clone(),
                layout: Layout::of(func, Kind::Inverse).keep_outputs(2),
                program_layout: Layout::of(func, Kind::Inverse),
                program: func.clone(),
                lump_names: vec!["the dense Jacobian".to_string()],
                pivot_tol: opts.inverse.pivot_tol,
                solver: Solver::Dense(Box::new(jacobian)),
            });
        }
        let program = inverse_program(func, mode, &opts.inverse)?;
        let lump_names = match mode {
            InverseMode::Dense => vec!["the dense Jacobian".to_string()],
            _ => {
                let names = adjit_ir::text::printed_names(func);
                analyze(func)?
                    .lumps
                    .iter()
                    .map(|l| {
                        format!(
                            "lump {} (%{}..%{}, l = {})",
                            l.index,
                            names[l.insts[0].index()],
                            names[l.insts[l.insts.len() - 1].index()],
                            l.size()
                        )
                    })
                    .collect()
            }
        };
        Ok(CompiledInverse {
            mode,
            func_name: func.name.clone(),
            layout: Layout::of(func, Kind::Inverse).keep_outputs(2),
            program_layout: Layout::of(func, Kind::Inverse),
            solver: Solver::Program(Runner::new(&program, opts)?),
            program,
            lump_names,
            pivot_tol: opts.inverse.pivot_tol,
        })
    }

    /// Number of inputs (= outputs) of the square program.
    pub fn n(&self) -> usize {
        self.layout.input(Part::Inputs).len()
    }

    /// The transformed (and simplified) program that runs; in the dense mode, the function
    /// itself (its Jacobian is compiled by a [`Jacobian`] and factored by `faer` at run time;
    /// [`inverse_program`] still emits the straight-line dense program, e.g. for AOT objects).
    pub fn program(&self) -> &Function {
        &self.program
    }

    /// `(x ++ v) -> (y ++ product)`: the parts a call takes and fills.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The layout of the program that runs: [`CompiledInverse::layout`], then its status word
    /// and pivot (checked by each call, which turns them into [`Error::Singular`] and
    /// [`Error::NotFinite`]).
    pub fn program_layout(&self) -> &Layout {
        &self.program_layout
    }

    /// `y = f(x)` and `out = J⁻¹·v` (reverse, dense) or `J⁻ᵀ·v` (forward). All slices have
    /// length `n`. A numerically singular pivot or a non-finite product is an error.
    pub fn call(&self, x: &[f64], v: &[f64], y: &mut [f64], out: &mut [f64]) -> Result<()> {
        let name = &self.program.name;
        check_lengths(
            name,
            &self.layout,
            [x.len(), v.len()].into_iter(),
            self.layout.output_parts(),
            [y.len(), out.len()].into_iter(),
        )?;
        let layout = &self.program_layout;
        let runner = match &self.solver {
            Solver::Program(runner) => runner,
            Solver::Dense(jacobian) => return self.dense(jacobian, x, v, y, out),
        };
        let status = crate::scratch::with_scratch(
            layout.n_inputs(),
            layout.n_outputs(),
            |input, result| {
                input[layout.input(Part::Inputs)].copy_from_slice(x);
                input[layout.input(Part::Vector)].copy_from_slice(v);
                runner.run(input, result)?;
                y.copy_from_slice(&result[layout.output(Part::Outputs)]);
                out.copy_from_slice(&result[layout.output(Part::Product)]);
                let pivot = &result[layout.output(Part::Pivot)];
                Ok::<[f64; 3], Error>([
                    result[layout.output(Part::Status).start],
                    pivot[0],
                    pivot[1],
                ])
            },
        )?;
        let [status, pivot, threshold] = status;
        if status == NOT_FINITE {
            return Err(Error::NotFinite {
                mode: self.mode,
                func: self.func_name.clone(),
            });
        }
        if status != 0.0 {
            let k = status as usize;
            return Err(Error::Singular {
                mode: self.mode,
                func: self.func_name.clone(),
                lump: self
                    .lump_names
                    .get(k.wrapping_sub(1))
                    .cloned()
                    .unwrap_or_else(|| format!("lump {k}")),
                pivot,
                threshold,
                pivot_tol: self.pivot_tol,
            });
        }
        Ok(())
    }
}

impl CompiledInverse {
    /// The dense mode: `J` at `x`, each row scaled by its largest magnitude (so the pivot test
    /// does not depend on the scale of J, like the lump modes'), an LU with partial pivoting,
    /// and `J⁻¹·v`. A pivot of magnitude `≤ pivot_tol` (of the equilibrated matrix) is
    /// [`Error::Singular`]; a non-finite product [`Error::NotFinite`].
    fn dense(
        &self,
        jacobian: &Jacobian,
        x: &[f64],
        v: &[f64],
        y: &mut [f64],
        out: &mut [f64],
    ) -> Result<()> {
        use faer::linalg::solvers::Solve;
        let n = v.len();
        let mut j = vec![0.0; n * n];
        jacobian.call(x, y, &mut j)?;
        let mut rhs = faer::Mat::<f64>::zeros(n, 1);
        let mut scaled = faer::Mat::<f64>::zeros(n, n);
        let mut smallest = f64::INFINITY;
        for i in 0..n {
            let row = &j[i * n..(i + 1) * n];
            let scale = row.iter().fold(0.0f64, |m, e| m.max(e.abs()));
            if !row.iter().chain(&v[i..=i]).all(|e| e.is_finite()) {
                return Err(Error::NotFinite {
                    mode: self.mode,
                    func: self.func_name.clone(),
                });
            }
            if scale == 0.0 {
                smallest = 0.0;
                continue;
            }
            for (k, &e) in row.iter().enumerate() {
                scaled[(i, k)] = e / scale;
            }
            rhs[(i, 0)] = v[i] / scale;
        }
        if smallest > 0.0 {
            let lu = scaled.partial_piv_lu();
            let u = lu.U();
            for k in 0..n {
                smallest = smallest.min(u[(k, k)].abs());
            }
            if smallest > self.pivot_tol {
                lu.solve_in_place(&mut rhs);
                for (o, k) in out.iter_mut().zip(0..n) {
                    *o = rhs[(k, 0)];
                }
                if out.iter().all(|o| o.is_finite()) {
                    return Ok(());
                }
                return Err(Error::NotFinite {
                    mode: self.mode,
                    func: self.func_name.clone(),
                });
            }
        }
        Err(Error::Singular {
            mode: self.mode,
            func: self.func_name.clone(),
            lump: self.lump_names[0].clone(),
            pivot: if smallest.is_nan() { 0.0 } else { smallest },
            threshold: self.pivot_tol,
            pivot_tol: self.pivot_tol,
        })
    }
}

/// The text of an inverse-mode dump stage of the verified `func`.
pub(crate) fn dump_lumps(func: &Function, graph: bool) -> Result<String> {
    let opts = InverseOptions::default();
    if graph {
        Ok(adjit_diff::inverse::dot(func, &opts))
    } else {
        Ok(lumps_text(func, &opts)?)
    }
}

impl Prepared for CompiledInverse {
    fn name(&self) -> &str {
        &self.func_name
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn call_parts(&self, inputs: &[&[f64]], outputs: &mut [&mut [f64]]) -> Result<()> {
        match (inputs, outputs) {
            ([x, v], [y, product]) => self.call(x, v, y, product),
            (inputs, outputs) => Err(parts_error(self, inputs.len(), outputs.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engine;
    use adjit_ir::{Builder, Type};
    use adjit_testkit::lorenz_rk4;
    use adjit_testkit::{coupling_network, fig2};

    const MODES: [InverseMode; 3] = [
        InverseMode::Reverse,
        InverseMode::Forward,
        InverseMode::Dense,
    ];

    #[test]
    fn jit_agrees_with_the_interpreter() {
        let programs = [
            (lorenz_rk4(10, 0.002, Type::F64), vec![1.0, 1.5, 20.0]),
            (lorenz_rk4(5, 0.002, Type::F32), vec![1.0, 1.5, 20.0]),
            (
                coupling_network(16, 4, 6, 3),
                (0..16).map(|i| 0.05 * i as f64 - 0.4).collect(),
            ),
            (fig2(), vec![0.3, -1.2, 0.7]),
        ];
        for (f, x) in &programs {
            let v: Vec<f64> = (0..x.len()).map(|i| 0.5 - 0.13 * i as f64).collect();
            for mode in MODES {
                let (yi, pi) = crate::inverse(f, Engine::Interp, mode, x, &v).unwrap();
                let (yj, pj) = crate::inverse(f, Engine::Jit, mode, x, &v).unwrap();
                assert_eq!(yi, yj, "@{} {mode:?}: primal", f.name);
                for (a, b) in pi.iter().zip(&pj) {
                    // Same IR, same operations: only libm-vs-native transcendentals may differ.
                    assert!(
                        (a - b).abs() <= 1e-12 * (1.0 + a.abs()),
                        "@{} {mode:?}: {a} vs {b}",
                        f.name
                    );
                }
            }
        }
    }

    #[test]
    fn singular_pivot_is_an_error_naming_the_lump() {
        let mut b = Builder::new("g");
        let a = b.param(Type::F64, "a");
        let c = b.param(Type::F64, "c");
        let y0 = b.mul(a, c);
        b.set_name(y0, "y0");
        let s = b.unary(adjit_ir::UnaryOp::Sin, y0);
        let y1 = b.add(c, s);
        let f = b.finish(&[y0, y1]);
        for mode in [
            InverseMode::Reverse,
            InverseMode::Forward,
            InverseMode::Dense,
        ] {
            assert!(crate::inverse(&f, Engine::Interp, mode, &[1.0, 2.0], &[1.0, 1.0]).is_ok());
            let e = crate::inverse(&f, Engine::Interp, mode, &[1.0, 0.0], &[1.0, 1.0])
                .unwrap_err()
                .to_string();
            let expected = if mode == InverseMode::Dense {
                "the dense Jacobian"
            } else {
                "lump 1 (%y0..%y0, l = 1)"
            };
            assert!(e.contains(expected) && e.contains("singular pivot"), "{e}");
            // The pivot and the condition estimate are reported; the advice fits the mode.
            assert!(
                e.contains("|pivot| relative to the largest entry of its row of J is ")
                    && e.contains(", not above 1e-12 (pivot_tol)")
                    && e.contains("condition estimate ≥ inf"),
                "{e}"
            );
            assert_eq!(
                e.contains("try the dense mode"),
                mode != InverseMode::Dense,
                "{e}"
            );
        }
    }

    /// The ratio printed is the one that failed: at (0, 0) the row of `a·c` is zero, so its
    /// pivot is 0/0 = NaN, while the other row's pivot (1 against 3) passes. The message once
    /// printed that passing 3.3e-1 as "≤ 1e-12".
    #[test]
    fn singular_pivot_message_prints_the_ratio_that_failed() {
        let mut b = Builder::new("g");
        let a = b.param(Type::F64, "a");
        let c = b.param(Type::F64, "c");
        let y0 = b.mul(a, c);
        let t = b.mul(c, 3.0);
        let y1 = b.add(a, t);
        let f = b.finish(&[y0, y1]);
        for mode in MODES {
            for engine in [Engine::Interp, Engine::Jit] {
                let Err(Error::Singular {
                    pivot, threshold, ..
                }) = crate::inverse(&f, engine, mode, &[0.0, 0.0], &[1.0, 1.0])
                else {
                    panic!("{mode:?} {engine:?}: expected a singular pivot");
                };
                // Whatever is printed fails the test it was judged by: not above the threshold.
                assert!(
                    pivot.partial_cmp(&threshold) != Some(std::cmp::Ordering::Greater),
                    "{mode:?} {engine:?}: {pivot} vs {threshold}"
                );
                assert_eq!(threshold, 1e-12);
            }
            let e = crate::inverse(&f, Engine::Jit, mode, &[0.0, 0.0], &[1.0, 1.0])
                .unwrap_err()
                .to_string();
            assert!(!e.contains("3.333333333333333e-1"), "{e}");
            assert!(
                e.contains("NaN (0/0: its row of J is zero at this point)") || e.contains("is 0e0"),
                "{e}"
            );
        }
    }

    #[test]
    fn modes_agree_through_the_facade() {
        let f = coupling_network(8, 3, 4, 1);
        let x: Vec<f64> = (0..8).map(|i| 0.1 * i as f64 - 0.3).collect();
        let v: Vec<f64> = (0..8).map(|i| 1.0 - 0.2 * i as f64).collect();
        let (y, r) = crate::inverse(&f, Engine::Interp, InverseMode::Reverse, &x, &v).unwrap();
        let (yd, d) = crate::inverse(&f, Engine::Interp, InverseMode::Dense, &x, &v).unwrap();
        assert_eq!(y, yd);
        for (a, b) in r.iter().zip(&d) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
        }
        // ⟨J⁻ᵀ w, v⟩ = ⟨w, J⁻¹ v⟩ with w = v.
        let (_, fw) = crate::inverse(&f, Engine::Interp, InverseMode::Forward, &x, &v).unwrap();
        let lhs: f64 = fw.iter().zip(&v).map(|(a, b)| a * b).sum();
        let rhs: f64 = v.iter().zip(&r).map(|(a, b)| a * b).sum();
        assert!(
            (lhs - rhs).abs() <= 1e-12 * (lhs.abs() + 1.0),
            "{lhs} vs {rhs}"
        );
    }

    #[test]
    fn dump_stages_render() {
        let f = fig2();
        for stage in [
            crate::Stage::Lumps,
            crate::Stage::Dot,
            crate::Stage::ReverseInverse,
            crate::Stage::ForwardInverse,
        ] {
            let text = crate::dump(&f, stage, &Default::default()).unwrap();
            assert!(!text.is_empty());
        }
        let printed = crate::dump(&f, crate::Stage::ReverseInverse, &Default::default()).unwrap();
        let parsed = adjit_ir::parse(&printed).expect("the printed program parses");
        assert_eq!(parsed.len(), 1);
    }
}
