//! Facade glue for the inverse modes: build the reverse-, forward- or dense-inverse program once
//! ([`adjit_diff::inverse`]), run it many times on an engine, and turn its `status` output into an
//! error that names the lump whose pivot was numerically singular, so callers never see silent
//! inf/NaN. Also renders the `lumps`, `dot`, `reverse-inverse` and `forward-inverse` dump stages.

use adjit_diff::inverse::{
    analyze, dense_inverse, forward_inverse, lumps_text, reverse_inverse, InverseError,
    InverseOptions,
};
use adjit_ir::{Function, Interpreter};

use crate::{Engine, Error, InverseMode, Result};

fn inverse_error(e: InverseError) -> Error {
    Error::Inverse(e)
}

/// The transformed program for `mode`: `(x.., v..) → (y.., product.., status)`.
pub fn inverse_program(
    func: &Function,
    mode: InverseMode,
    opts: &InverseOptions,
) -> Result<Function> {
    match mode {
        InverseMode::Reverse => reverse_inverse(func, opts),
        InverseMode::Forward => forward_inverse(func, opts),
        InverseMode::Dense => dense_inverse(func, opts),
    }
    .map_err(inverse_error)
}

enum Runner {
    Interp,
    Jit(Box<adjit_jit::CompiledFunction>),
}

/// An inverse product compiled once and called many times.
///
/// ```
/// use adjit::inverse::CompiledInverse;
/// use adjit::{Engine, InverseMode, Type};
/// // Polar to Cartesian coordinates: J = [[cos t, −r sin t], [sin t, r cos t]].
/// let f = adjit::trace_multi("polar", &[Type::F64; 2], |x| {
///     vec![x[0] * x[1].cos(), x[0] * x[1].sin()]
/// });
/// let inv = CompiledInverse::new(&f, InverseMode::Reverse, Engine::Jit, &Default::default()).unwrap();
/// let (mut y, mut xdot) = ([0.0; 2], [0.0; 2]);
/// inv.call(&[2.0, 0.0], &[1.0, 1.0], &mut y, &mut xdot).unwrap();
/// assert_eq!(xdot, [1.0, 0.5]); // J⁻¹·v
/// ```
pub struct CompiledInverse {
    mode: InverseMode,
    /// The user's function name, for error messages.
    func_name: String,
    n: usize,
    program: Function,
    /// "lump k (%first..%last)" for every lump, to name it in errors.
    lump_names: Vec<String>,
    pivot_tol: f64,
    runner: Runner,
}

impl CompiledInverse {
    /// Build the `mode` program for the square program `func` and prepare it on `engine`.
    pub fn new(
        func: &Function,
        mode: InverseMode,
        engine: Engine,
        opts: &InverseOptions,
    ) -> Result<CompiledInverse> {
        // Simplified like every other compiled mode (IEEE-preserving rewrites only).
        let program = adjit_diff::simplify(&inverse_program(func, mode, opts)?);
        let lump_names = match mode {
            InverseMode::Dense => vec!["the dense Jacobian".to_string()],
            _ => {
                let names = adjit_ir::text::printed_names(func);
                analyze(func)
                    .map_err(inverse_error)?
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
        let runner = match engine {
            Engine::Interp => Runner::Interp,
            Engine::Jit => Runner::Jit(Box::new(adjit_jit::compile(
                &program,
                &adjit_jit::JitOptions::default(),
            )?)),
        };
        Ok(CompiledInverse {
            mode,
            func_name: func.name.clone(),
            n: func.n_params,
            program,
            lump_names,
            pivot_tol: opts.pivot_tol,
            runner,
        })
    }

    /// Number of inputs (= outputs) of the square program.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The transformed (and simplified) program that runs.
    pub fn program(&self) -> &Function {
        &self.program
    }

    /// `y = f(x)` and `out = J⁻¹·v` (reverse, dense) or `J⁻ᵀ·v` (forward). All slices have
    /// length `n`. A numerically singular pivot is an error naming the lump.
    pub fn call(&self, x: &[f64], v: &[f64], y: &mut [f64], out: &mut [f64]) -> Result<()> {
        let n = self.n;
        for (what, len) in [
            ("x", x.len()),
            ("v", v.len()),
            ("y", y.len()),
            ("out", out.len()),
        ] {
            if len != n {
                return Err(Error::Usage(format!(
                    "inverse of @{}: `{what}` has {len} entries, expected {n}",
                    self.program.name
                )));
            }
        }
        let status = crate::scratch::with_scratch(2 * n, 2 * n + 1, |input, result| {
            input[..n].copy_from_slice(x);
            input[n..].copy_from_slice(v);
            match &self.runner {
                Runner::Interp => Interpreter::default().run(&self.program, input, result)?,
                Runner::Jit(code) => code.call(input, result)?,
            }
            y.copy_from_slice(&result[..n]);
            out.copy_from_slice(&result[n..2 * n]);
            Ok::<f64, Error>(result[2 * n])
        })?;
        if status == adjit_diff::inverse::NOT_FINITE {
            return Err(Error::SingularLump(format!(
                "{} of @{}: the product is not finite (inf or NaN): J is singular or too \
                 ill-conditioned at this point, or the vector is not finite; try the dense mode \
                 or another point",
                self.mode.name(),
                self.func_name,
            )));
        }
        if status != 0.0 {
            let k = status as usize;
            let name = self
                .lump_names
                .get(k.wrapping_sub(1))
                .cloned()
                .unwrap_or_else(|| format!("lump {k}"));
            return Err(Error::SingularLump(format!(
                "{} of @{}: {name} has a numerically singular pivot (|pivot| ≤ {:e}·scale): \
                 J is singular or too ill-conditioned there",
                self.mode.name(),
                self.func_name,
                self.pivot_tol
            )));
        }
        Ok(())
    }
}

/// One-shot inverse product: `(f(x), J⁻¹·v)` for `Reverse`/`Dense`, `(f(x), J⁻ᵀ·v)` for `Forward`.
pub fn inverse_product(
    func: &Function,
    mode: InverseMode,
    engine: Engine,
    x: &[f64],
    v: &[f64],
) -> Result<(Vec<f64>, Vec<f64>)> {
    let inv = CompiledInverse::new(func, mode, engine, &InverseOptions::default())?;
    let (mut y, mut out) = (vec![0.0; inv.n()], vec![0.0; inv.n()]);
    inv.call(x, v, &mut y, &mut out)?;
    Ok((y, out))
}

/// The inverse-mode dump stages: `lumps`, `dot`, `reverse-inverse`, `forward-inverse`
/// (`None` for any other stage name).
pub fn dump_stage(func: &Function, stage: &str) -> Option<Result<String>> {
    let opts = InverseOptions::default();
    Some(match stage {
        "lumps" => lumps_text(func, &opts).map_err(inverse_error),
        "dot" => Ok(adjit_diff::inverse::dot(func, &opts)),
        // Simplified, like the jvp/vjp stages and like the program CompiledInverse runs.
        "reverse-inverse" => inverse_program(func, InverseMode::Reverse, &opts)
            .map(|f| adjit_diff::simplify(&f).to_string()),
        "forward-inverse" => inverse_program(func, InverseMode::Forward, &opts)
            .map(|f| adjit_diff::simplify(&f).to_string()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
                let (yi, pi) = inverse_product(f, mode, Engine::Interp, x, &v).unwrap();
                let (yj, pj) = inverse_product(f, mode, Engine::Jit, x, &v).unwrap();
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
            assert!(inverse_product(&f, mode, Engine::Interp, &[1.0, 2.0], &[1.0, 1.0]).is_ok());
            let e = inverse_product(&f, mode, Engine::Interp, &[1.0, 0.0], &[1.0, 1.0])
                .unwrap_err()
                .to_string();
            let expected = if mode == InverseMode::Dense {
                "the dense Jacobian"
            } else {
                "lump 1 (%y0..%y0, l = 1)"
            };
            assert!(e.contains(expected) && e.contains("singular pivot"), "{e}");
        }
    }

    #[test]
    fn modes_agree_through_the_facade() {
        let f = coupling_network(8, 3, 4, 1);
        let x: Vec<f64> = (0..8).map(|i| 0.1 * i as f64 - 0.3).collect();
        let v: Vec<f64> = (0..8).map(|i| 1.0 - 0.2 * i as f64).collect();
        let (y, r) = inverse_product(&f, InverseMode::Reverse, Engine::Interp, &x, &v).unwrap();
        let (yd, d) = inverse_product(&f, InverseMode::Dense, Engine::Interp, &x, &v).unwrap();
        assert_eq!(y, yd);
        for (a, b) in r.iter().zip(&d) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
        }
        // ⟨J⁻ᵀ w, v⟩ = ⟨w, J⁻¹ v⟩ with w = v.
        let (_, fw) = inverse_product(&f, InverseMode::Forward, Engine::Interp, &x, &v).unwrap();
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
        for stage in ["lumps", "dot", "reverse-inverse", "forward-inverse"] {
            let text = dump_stage(&f, stage).expect("an inverse stage").unwrap();
            assert!(!text.is_empty());
        }
        assert!(dump_stage(&f, "ir").is_none());
        let printed = dump_stage(&f, "reverse-inverse").unwrap().unwrap();
        let parsed = adjit_ir::parse(&printed).expect("the printed program parses");
        assert_eq!(parsed.len(), 1);
    }
}
