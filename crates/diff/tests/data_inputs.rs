//! Data (non-differentiated) inputs: a `data` parameter is a plain input of every derived
//! program and has no seed, adjoint or Hessian slot. The derivatives of a program with data
//! inputs equal, bit for bit, those of the same program with the data baked in as literals
//! (the arithmetic is the same), and finite differences agree.

mod support;

use adjit_diff::inverse::{dense_inverse, forward_inverse, reverse_inverse, InverseError};
use adjit_diff::layout::{Kind, Layout, Part};
use adjit_diff::{activity, derive, hessian, hvp, jvp, jvp_vector, vjp, Mode};
use adjit_ir::trace::{trace, trace_with_data, Var};
use adjit_ir::{interpret, parse_function, Function};

use support::{check_derivatives, verified};

const N_POINTS: usize = 32;

/// The sample times and noisy-looking observations of the fit (deterministic).
fn samples() -> (Vec<f64>, Vec<f64>) {
    let t: Vec<f64> = (0..N_POINTS).map(|i| i as f64 / 8.0).collect();
    let y = t
        .iter()
        .enumerate()
        .map(|(i, &t)| 2.0 * (-0.7 * t).exp() + 0.5 + 0.01 * ((i * 7) % 5) as f64)
        .collect();
    (t, y)
}

/// Σ (a·exp(b·tᵢ) + c − yᵢ)², the data given by `point(i)` as (t, y) traced values or
/// literals: one macro so both programs perform the same operations.
macro_rules! least_squares {
    ($p:expr, $point:expr) => {{
        let p: &[Var<'_>] = $p;
        let mut terms = (0..N_POINTS).map(|i| {
            let (t, y) = $point(i);
            let r = p[0] * (p[1] * t).exp() + p[2] - y;
            r * r
        });
        let first = terms.next().expect("at least one point");
        terms.fold(first, |acc, r2| acc + r2)
    }};
}

/// The fit with the 64 data values as `data` inputs after the 3 parameters.
fn fit_with_data() -> Function {
    trace_with_data(3, 2 * N_POINTS, |p, d| {
        least_squares!(p, |i: usize| (d[i], d[N_POINTS + i]))
    })
}

/// The same fit with the data as literals.
fn fit_baked() -> Function {
    let (t, y) = samples();
    trace(3, |p| least_squares!(p, |i: usize| (t[i], y[i])))
}

const P: [f64; 3] = [1.8, -0.6, 0.4];

fn data_input(p: &[f64]) -> Vec<f64> {
    let (t, y) = samples();
    [p, &t[..], &y[..]].concat()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_three_parameter_fit_to_32_points_has_three_derivatives() {
    let f = fit_with_data();
    assert_eq!(f.n_params, 3 + 64);
    let g = derive(&f, Mode::Gradient).unwrap();
    assert_eq!(g.layout.output(Part::Gradient).len(), 3);
    assert_eq!(
        g.func.n_outputs(),
        1 + 3,
        "y and three derivatives\n{}",
        g.func
    );
    assert_eq!(g.func.n_params, 3 + 64, "the data stay plain inputs");
    let out = interpret(&g.func, &data_input(&P)).unwrap();
    assert_eq!(out.len(), 4);

    let v = derive(&f, Mode::Vjp).unwrap();
    assert_eq!(
        v.layout.to_string(),
        "(x (67) ++ ȳ (1)) -> (y (1) ++ x̄ (3))"
    );
    let j = derive(&f, Mode::JvpVector(2)).unwrap();
    assert_eq!(
        j.layout.to_string(),
        "(x (67) ++ ẋ1 (3) ++ ẋ2 (3)) -> (y (1) ++ ẏ1 (1) ++ ẏ2 (1))"
    );
    let h = derive(&f, Mode::Hvp).unwrap();
    assert_eq!(
        h.layout.to_string(),
        "(x (67) ++ v (3)) -> (y (1) ++ x̄ (3) ++ H·v (3))"
    );
    for d in [&v, &j, &h] {
        assert_eq!(d.func.n_params, d.layout.n_inputs());
        assert_eq!(d.func.n_outputs(), d.layout.n_outputs());
    }
}

#[test]
fn derivatives_with_data_inputs_equal_those_with_the_data_baked_in() {
    let (f, baked) = (fit_with_data(), fit_baked());
    let x = data_input(&P);
    let run = |g: &Function, input: &[f64]| interpret(g, input).unwrap();
    assert_eq!(bits(&run(&f, &x)), bits(&run(&baked, &P)));

    let dir = [0.25, -1.0, 0.5];
    let jv = run(&verified(jvp(&f), "jvp"), &[&x[..], &dir].concat());
    let jv_baked = run(&jvp(&baked), &[&P[..], &dir].concat());
    assert_eq!(bits(&jv), bits(&jv_baked), "jvp");

    let dirs = [0.25, -1.0, 0.5, 1.0, 0.0, -2.0];
    let jv2 = run(
        &verified(jvp_vector(&f, 2), "jvp2"),
        &[&x[..], &dirs].concat(),
    );
    let jv2_baked = run(&jvp_vector(&baked, 2), &[&P[..], &dirs].concat());
    assert_eq!(bits(&jv2), bits(&jv2_baked), "jvp2");

    let gr = run(&verified(vjp(&f), "vjp"), &[&x[..], &[1.5]].concat());
    let gr_baked = run(&vjp(&baked), &[&P[..], &[1.5]].concat());
    assert_eq!(bits(&gr), bits(&gr_baked), "vjp");

    let hv = run(&verified(hvp(&f), "hvp"), &[&x[..], &dir].concat());
    let hv_baked = run(&hvp(&baked), &[&P[..], &dir].concat());
    assert_eq!(bits(&hv), bits(&hv_baked), "hvp");

    for mode in [Mode::Gradient, Mode::Hvp, Mode::Vjp, Mode::Jvp] {
        let d = derive(&f, mode).unwrap();
        let db = derive(&baked, mode).unwrap();
        let extra = vec![0.75; d.layout.n_inputs() - f.n_params];
        let got = run(&d.func, &[&x[..], &extra].concat());
        let want = run(&db.func, &[&P[..], &extra].concat());
        assert_eq!(bits(&got), bits(&want), "{mode}");
    }

    let h = hessian(&f, &x).unwrap();
    assert_eq!(h, hessian(&baked, &P).unwrap());
    assert_eq!((h.len(), h[0].len()), (3, 3));
}

#[test]
fn derivatives_with_data_inputs_match_finite_differences() {
    // Only the differentiated parameters are perturbed (support::float_params).
    check_derivatives(&fit_with_data(), &data_input(&P));
    let f = parse_function(
        "func @mixed(data %s: f32, %a: f64, data %flag: bool, %b: f64, data %t: f64) -> (f64, f64) {
    %sw = fpromote %s
    %u = mul %a, %sw
    %w = select %flag, %u, %b
    %e = exp %t
    %z = fma %w, %e, %b
    %q = div %z, %a
    ret %z, %q
}",
    )
    .unwrap();
    for x in [[0.5, 1.25, 1.0, -0.75, 0.3], [2.0, -0.5, 0.0, 1.5, -1.0]] {
        check_derivatives(&f, &x);
    }
}

#[test]
fn what_only_data_feed_gets_no_derivative_code() {
    let f = parse_function(
        "func @f(%a: f64, data %t: f64) -> f64 {
    %tt = mul %t, %t
    %s = sin %tt
    %y = mul %a, %s
    ret %y
}",
    )
    .unwrap();
    let act = activity(&f);
    let [a, t, tt, s, y] = [0, 1, 2, 3, 4].map(adjit_ir::Value::new);
    assert!(act.is_active(a) && act.is_active(y));
    for v in [t, tt, s] {
        assert!(!act.is_varied(v) && !act.is_active(v), "{v}");
    }
    // Three primal lines and one tangent line (ẏ = ȧ·s): no cos, no 2t.
    let df = jvp(&f);
    assert_eq!(df.n_insts(), 4, "{df}");
    assert_eq!(
        df.to_string(),
        "func @f_jvp(%a: f64, data %t: f64, %da: f64) -> (f64, f64) {
    %tt = mul %t, %t
    %s = sin %tt
    %y = mul %a, %s
    %dy = mul %da, %s
    ret %y, %dy
}
"
    );
    let gf = vjp(&f);
    assert_eq!(
        gf.to_string(),
        "func @f_vjp(%a: f64, data %t: f64, %y_b: f64) -> (f64, f64) {
    %tt = mul %t, %t
    %s = sin %tt
    %y = mul %a, %s
    %a_b = mul %y_b, %s
    ret %y, %a_b
}
"
    );
}

#[test]
fn a_function_whose_inputs_are_all_data_has_no_derivative_slots() {
    let f =
        parse_function("func @f(data %t: f64) -> f64 {\n    %y = exp %t\n    ret %y\n}\n").unwrap();
    let g = derive(&f, Mode::Gradient).unwrap();
    assert_eq!(g.layout.to_string(), "(x (1)) -> (y (1) ++ x̄ (0))");
    assert_eq!(interpret(&g.func, &[0.0]).unwrap(), vec![1.0]);
    let j = derive(&f, Mode::Jvp).unwrap();
    assert_eq!(interpret(&j.func, &[0.0]).unwrap(), vec![1.0, 0.0]);
    assert_eq!(hessian(&f, &[0.0]).unwrap(), Vec::<Vec<f64>>::new());
}

#[test]
fn derived_programs_keep_data_inputs_data() {
    let f = fit_with_data();
    for mode in [Mode::Jvp, Mode::Vjp, Mode::Gradient, Mode::Hvp] {
        let d = derive(&f, mode).unwrap();
        let x = Layout::of(&f, mode.kind()).input(Part::Inputs);
        let data: Vec<usize> = d.func.data_params().map(|p| p.index()).collect();
        assert_eq!(data, (3..x.end).collect::<Vec<_>>(), "{mode}");
        // Differentiating the derived program again does not differentiate the data either.
        let again = Layout::of(&d.func, Kind::Vjp);
        assert_eq!(
            again.output(Part::Gradient).len(),
            d.layout.n_inputs() - 64,
            "{mode}"
        );
    }
}

#[test]
fn inverse_modes_reject_data_inputs_by_name() {
    let f = parse_function(
        "func @f(%a: f64, data %t: f64) -> f64 {\n    %y = mul %a, %t\n    ret %y\n}\n",
    )
    .unwrap();
    let opts = Default::default();
    let expected = InverseError::DataInputs {
        func: "f".into(),
        inputs: "%t".into(),
    };
    assert_eq!(reverse_inverse(&f, &opts), Err(expected.clone()));
    assert_eq!(forward_inverse(&f, &opts), Err(expected.clone()));
    assert_eq!(dense_inverse(&f, &opts), Err(expected.clone()));
    assert!(expected.to_string().contains("data inputs (%t)"));
}
