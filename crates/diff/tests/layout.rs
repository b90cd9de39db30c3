//! Every layout matches the program its transform builds: lengths and types of every part, on
//! random programs (f64, f32, with a `bool` input and output, with `data` inputs) and every
//! mode. A layout that
//! drifted from its transform would make the compile-once objects read the wrong slots.

use adjit_diff::inverse::{dense_inverse, forward_inverse, reverse_inverse};
use adjit_diff::layout::{Kind, Layout, Part};
use adjit_diff::{derive, Mode};
use adjit_ir::random::{random_function, RandomOptions};
use adjit_ir::{interpret, Builder, Function, ParamKind, Type};

/// The type each slot of `part` must have, from the primal signature.
fn part_types(f: &Function, part: Part) -> Vec<Type> {
    // Seeds and adjoints: the differentiated float parameters (no `bool`, no `data`).
    let float_params: Vec<Type> = f.differentiated_params().map(|p| f.ty(p)).collect();
    let float_rets: Vec<Type> = f
        .ret_types
        .iter()
        .copied()
        .filter(|t| t.is_float())
        .collect();
    match part {
        Part::Inputs => f.param_types(),
        Part::Outputs => f.ret_types.clone(),
        Part::Tangent(_) | Part::Vector | Part::Gradient | Part::HessianVector => float_params,
        Part::Cotangent | Part::OutputTangent(_) => float_rets,
        Part::Product => f.param_types(),
        Part::Status => vec![Type::F64],
        Part::Pivot => vec![Type::F64, Type::F64],
        // Assembled by the facade's Jacobian and Hessian objects; no derived program has them.
        Part::Jacobian | Part::Hessian => unreachable!("{part:?} is not a program's part"),
        // One entry per nonzero of a pattern: see `check_sparse`.
        Part::Nonzeros => unreachable!("checked by check_sparse"),
    }
}

/// The sparse Jacobian (and, for one float output, the sparse Hessian) of `f`: `x` is every
/// parameter, `nz` has one slot per nonzero, typed like its row's output.
fn check_sparse(f: &Function) {
    use adjit_diff::sparsity::{
        best_jacobian_coloring, best_star_coloring, hessian_pattern, jacobian_pattern,
        sparse_hessian, sparse_jacobian,
    };
    let float_rets: Vec<Type> = f
        .ret_types
        .iter()
        .copied()
        .filter(|t| t.is_float())
        .collect();
    let pattern = jacobian_pattern(f);
    let program = sparse_jacobian(f, &pattern, &best_jacobian_coloring(&pattern));
    let layout = Layout::of(f, Kind::Nonzeros(pattern.nnz()));
    assert_eq!(program.param_types(), f.param_types(), "@{}", f.name);
    assert_eq!(
        program.param_types()[layout.input(Part::Inputs)],
        f.param_types()[..]
    );
    assert_eq!(
        layout.output(Part::Nonzeros),
        0..program.rets.len(),
        "@{}",
        f.name
    );
    for ((i, _), ty) in pattern.entries().zip(&program.ret_types) {
        assert_eq!(*ty, float_rets[i], "@{} sparse Jacobian row {i}", f.name);
    }
    if float_rets.len() == 1 {
        let full = hessian_pattern(f);
        let h = sparse_hessian(f, &full, &best_star_coloring(&full)).expect("a star colouring");
        let layout = Layout::of(f, Kind::Nonzeros(full.lower_triangle().nnz()));
        assert_eq!(h.param_types(), f.param_types());
        assert_eq!(
            layout.output(Part::Nonzeros),
            0..h.rets.len(),
            "@{}",
            f.name
        );
    }
}

fn check(f: &Function, derived: &Function, layout: &Layout, what: &str) {
    let params = derived.param_types();
    assert_eq!(layout.n_inputs(), params.len(), "{what}: inputs {layout}");
    assert_eq!(
        layout.n_outputs(),
        derived.ret_types.len(),
        "{what}: outputs {layout}"
    );
    for &(part, _) in layout.input_parts() {
        let expected = part_types(f, part);
        // J⁻¹·v takes v in the outputs' types (and returns the inputs'); J⁻ᵀ·v the reverse.
        let reverse_vector = what.contains("reverse-inverse") || what.contains("dense-inverse");
        let expected = if reverse_vector && part == Part::Vector {
            f.ret_types.clone()
        } else {
            expected
        };
        assert_eq!(
            params[layout.input(part)],
            expected[..],
            "{what}: input {part:?}"
        );
    }
    for &(part, _) in layout.output_parts() {
        let expected = part_types(f, part);
        let forward_product = what.contains("forward") && part == Part::Product;
        let expected = if forward_product {
            f.ret_types.clone()
        } else {
            expected
        };
        assert_eq!(
            derived.ret_types[layout.output(part)],
            expected[..],
            "{what}: output {part:?}"
        );
    }
}

/// `f` with every parameter whose index `is_data` accepts marked `data`.
fn with_data(f: &Function, is_data: impl Fn(usize) -> bool) -> Function {
    let mut g = f.clone();
    for p in f.params().filter(|p| is_data(p.index())) {
        g.set_param_kind(p, ParamKind::Data);
    }
    g.name = format!("{}_data", f.name);
    g
}

/// A program with a `bool` input and a `bool` output beside floats.
fn with_bools() -> Function {
    let mut b = Builder::new("mixed");
    let x = b.param(Type::F64, "x");
    let c = b.param(Type::Bool, "c");
    let y = b.param(Type::F64, "y");
    let s = b.select(c, x, y);
    let p = b.mul(s, x);
    let gt = b.fcmp(adjit_ir::CmpPred::Gt, x, y);
    b.finish(&[gt, p])
}

#[test]
fn layouts_match_the_derived_programs() {
    let mut programs = vec![with_bools()];
    for seed in 0..40 {
        let ty = if seed % 4 == 3 { Type::F32 } else { Type::F64 };
        let opts = RandomOptions {
            n_params: 1 + seed as usize % 4,
            n_outputs: 1 + seed as usize % 3,
            n_insts: 30,
            ty,
            ..RandomOptions::default()
        };
        let f = random_function(seed, &opts);
        // Data inputs: every other one, or all but the last.
        if seed % 5 == 1 {
            programs.push(with_data(&f, |i| i % 2 == 0));
        } else if seed % 5 == 2 {
            programs.push(with_data(&f, |i| i + 1 < opts.n_params));
        }
        programs.push(f);
    }
    programs.push(with_data(&with_bools(), |i| i != 2));
    programs.push(with_data(&with_bools(), |_| true));
    assert!(programs.iter().filter(|f| f.has_data_params()).count() >= 16);
    for f in &programs {
        check_sparse(f);
        let modes = [Mode::Primal, Mode::Jvp, Mode::JvpVector(3), Mode::Vjp];
        for mode in modes {
            let d = derive(f, mode).unwrap();
            check(f, &d.func, &d.layout, &format!("@{} {mode}", f.name));
        }
        if f.ret_types.len() == 1 {
            for mode in [Mode::Gradient, Mode::Hvp] {
                let d = derive(f, mode).unwrap();
                check(f, &d.func, &d.layout, &format!("@{} {mode}", f.name));
            }
        }
        let square = f.param_types().iter().all(|t| t.is_float())
            && f.ret_types.len() == f.n_params
            && !f.has_data_params();
        if square {
            let layout = Layout::of(f, Kind::Inverse);
            let opts = Default::default();
            if let Ok(p) = reverse_inverse(f, &opts) {
                check(f, &p, &layout, &format!("@{} reverse-inverse", f.name));
            }
            if let Ok(p) = forward_inverse(f, &opts) {
                check(f, &p, &layout, &format!("@{} forward-inverse", f.name));
            }
            if let Ok(p) = dense_inverse(f, &opts) {
                check(f, &p, &layout, &format!("@{} dense-inverse", f.name));
            }
        }
    }
}

#[test]
fn named_parts_hold_what_they_say() {
    // f(x, y) = x²·y: ∇ = (2xy, x²), H = [[2y, 2x], [2x, 0]].
    let f = adjit_ir::trace::trace(2, |x| x[0] * x[0] * x[1]);
    let g = derive(&f, Mode::Gradient).unwrap();
    let out = interpret(&g.func, &[3.0, 5.0]).unwrap();
    assert_eq!(&out[g.layout.output(Part::Outputs)], &[45.0]);
    assert_eq!(&out[g.layout.output(Part::Gradient)], &[30.0, 9.0]);
    let h = derive(&f, Mode::Hvp).unwrap();
    let mut input = vec![0.0; h.layout.n_inputs()];
    input[h.layout.input(Part::Inputs)].copy_from_slice(&[3.0, 5.0]);
    input[h.layout.input(Part::Vector)].copy_from_slice(&[1.0, 0.0]);
    let out = interpret(&h.func, &input).unwrap();
    assert_eq!(&out[h.layout.output(Part::HessianVector)], &[10.0, 6.0]);
    let j = derive(&f, Mode::JvpVector(2)).unwrap();
    assert_eq!(j.layout.input(Part::Tangent(1)), 4..6);
    assert_eq!(j.layout.describe_inputs(), "x (2) ++ ẋ1 (2) ++ ẋ2 (2)");
    assert_eq!(
        derive(&f, Mode::Jvp).unwrap().layout.to_string(),
        "(x (2) ++ ẋ (2)) -> (y (1) ++ ẏ (1))"
    );
}

#[test]
fn data_inputs_have_a_place_in_x_and_nowhere_else() {
    // f(a, t, b) = a·t + b² with t data: ∇ over (a, b) only.
    let mut b = Builder::new("f");
    let a = b.param(Type::F64, "a");
    let t = b.data_param(Type::F64, "t");
    let c = b.param(Type::F64, "b");
    let at = b.mul(a, t);
    let c2 = b.mul(c, c);
    let y = b.add(at, c2);
    b.set_name(y, "y");
    let f = b.finish(&[y]);
    let g = derive(&f, Mode::Gradient).unwrap();
    assert_eq!(g.layout.to_string(), "(x (3)) -> (y (1) ++ x̄ (2))");
    let out = interpret(&g.func, &[2.0, 5.0, 3.0]).unwrap();
    assert_eq!(&out[g.layout.output(Part::Gradient)], &[5.0, 6.0]);
    let h = derive(&f, Mode::Hvp).unwrap();
    assert_eq!(h.layout.input(Part::Vector), 3..5);
    let out = interpret(&h.func, &[2.0, 5.0, 3.0, 1.0, 1.0]).unwrap();
    assert_eq!(&out[h.layout.output(Part::HessianVector)], &[0.0, 2.0]);
    let j = derive(&f, Mode::JvpVector(2)).unwrap();
    assert_eq!(j.layout.describe_inputs(), "x (3) ++ ẋ1 (2) ++ ẋ2 (2)");
    // Tangent and adjoint parameters are named after the differentiated parameters only.
    let names = |f: &Function| -> Vec<String> {
        f.params()
            .map(|p| f.name_of(p).unwrap_or("?").to_string())
            .collect()
    };
    assert_eq!(
        names(&j.func),
        ["a", "t", "b", "da_1", "db_1", "da_2", "db_2"]
    );
    assert_eq!(
        names(&derive(&f, Mode::Vjp).unwrap().func),
        ["a", "t", "b", "y_b"]
    );
}
