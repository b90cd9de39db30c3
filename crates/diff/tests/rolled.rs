//! Derivatives of rolled programs: `jvp_rolled`, `jvp_vector_rolled` and `vjp_rolled` of
//! `Rolled::from_function(f)` expand to exactly `jvp(f)`, `jvp_vector(f, k)` and `vjp(f)`
//! (every line, literal and name), on random repeated
//! programs (carried state, strides, interruptions, data literals, `data` parameters, f32),
//! irregular programs and traces; the derivative holds a template's worth of lines, not the
//! trace's.

use adjit_diff::{
    activity, activity_rolled, jvp, jvp_rolled, jvp_vector, jvp_vector_rolled, vjp, vjp_rolled,
    vjp_rolled_seeded_with_one, vjp_seeded_with_one,
};
use adjit_ir::random::{random_function, random_repeated, RandomOptions, RepeatOptions, Rng};
use adjit_ir::trace::trace;
use adjit_ir::{interpret, verify, Function, ParamKind, Rolled, Value};

fn repeated(seed: u64, data: bool) -> Function {
    let func = random_repeated(seed, &RepeatOptions::of_seed(seed, data));
    verify(&func).expect("generated programs verify");
    func
}

/// Both modes: `(rolled, flat)`.
type Mode = (fn(&Rolled) -> Rolled, fn(&Function) -> Function);
const FORWARD: Mode = (jvp_rolled, jvp);
const REVERSE: Mode = (vjp_rolled, vjp);
const FORWARD3: Mode = (|r| jvp_vector_rolled(r, 3), |f| jvp_vector(f, 3));

/// Both modes of `func` rolled expand to the flat ones, verify, and their interpreters agree;
/// the JVP and the VJP.
fn check(func: &Function, seed: u64) -> (Rolled, Rolled) {
    assert_eq!(
        activity_rolled(&Rolled::from_function(func)),
        activity(func),
        "{}",
        func.name
    );
    let d = check_mode(func, seed, FORWARD);
    let g = check_mode(func, seed, REVERSE);
    if seed.is_multiple_of(3) {
        check_mode(func, seed, FORWARD3);
    }
    // The gradient mode's program: every cotangent the constant 1.
    assert!(
        vjp_rolled_seeded_with_one(&Rolled::from_function(func)).expand()
            == vjp_seeded_with_one(func),
        "seeded with one: {}",
        func.name
    );
    // Differentiated again: forward over reverse (a Hessian-vector product's lines).
    assert!(
        jvp_rolled(&g).expand() == jvp(&vjp(func)),
        "forward over reverse of {}",
        func.name
    );
    (d, g)
}

fn check_mode(func: &Function, seed: u64, (rolled_mode, flat_mode): Mode) -> Rolled {
    let rolled = Rolled::from_function(func);
    let d = rolled_mode(&rolled);
    if let Err(e) = d.verify() {
        panic!("{}: {e}\n{d}", d.header().name);
    }
    let want = flat_mode(func);
    let got = d.expand();
    if got != want {
        let n = got.n_values().min(want.n_values());
        let first = (0..n)
            .find(|&i| got.values[i] != want.values[i])
            .unwrap_or(n);
        panic!(
            "{}: expansions differ from value {first} (got {} values, want {})\n\
             got  {:?}\nwant {:?}",
            func.name,
            got.n_values(),
            want.n_values(),
            got.values.get(first),
            want.values.get(first),
        );
    }
    verify(&got).expect("the expansion verifies");
    let mut rng = Rng::new(seed);
    let x = rng.vector(want.n_params, -2.0, 2.0);
    let a = interpret(&want, &x).expect("runs");
    let b = d.interpret(&x).expect("runs");
    assert_eq!(
        a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    d
}

/// Programs per campaign: 120 in CI; `ADJIT_ROLL_CASES=5000` for a long run.
fn cases() -> u64 {
    adjit_ir::random::campaign_cases()
}

#[test]
fn repeated_programs() {
    let mut held_less = 0;
    let n = cases();
    for seed in 0..n {
        for data in [false, true] {
            let func = repeated(seed, data);
            let (d, g) = check(&func, seed);
            if d.n_template_insts() * 2 < jvp(&func).n_insts()
                && g.n_template_insts() * 2 < vjp(&func).n_insts()
            {
                held_less += 1;
            }
        }
    }
    assert!(
        held_less * 8 > n * 2 * 5,
        "{held_less} of {} held less than half",
        2 * n
    );
}

/// Some parameters `data`: iterations reading them at a stride have tangents in some
/// iterations and not in others, which cuts loops into segments.
#[test]
fn repeated_programs_with_data_parameters() {
    for seed in 0..cases() * 2 / 3 {
        let mut func = repeated(seed, seed % 2 == 0);
        let n = func.n_params;
        for p in 0..n {
            if (p * 7 + seed as usize) % 5 < 2 {
                func.set_param_kind(Value::new(p), ParamKind::Data);
            }
        }
        check(&func, seed);
    }
}

#[test]
fn irregular_programs() {
    for seed in 0..60 {
        check(&random_function(seed, &RandomOptions::of_seed(seed)), seed);
    }
}

fn rosenbrock(n: usize) -> Function {
    adjit_testkit::chained_rosenbrock(n)
}

/// Least squares over data traced in as literals: `Σ (θ₀ + θ₁·tᵢ − yᵢ)²`.
fn least_squares(n: usize) -> Function {
    let mut rng = Rng::new(7);
    let t: Vec<f64> = rng.vector(n, -1.0, 1.0);
    let y: Vec<f64> = rng.vector(n, -1.0, 1.0);
    trace(2, |th| {
        let mut s = th[0] * 0.0;
        for i in 0..n {
            let r = th[0] + th[1] * t[i] - y[i];
            s += r * r;
        }
        s
    })
}

#[test]
fn traced_sums_differentiate_per_template() {
    for n in [50, 500, 3000] {
        for func in [rosenbrock(n), least_squares(n)] {
            let (d, g) = check(&func, n as u64);
            for d in [d, g] {
                assert!(
                    d.n_template_insts() <= 100,
                    "{}: n = {n}: {} lines held\n{d}",
                    func.name,
                    d.n_template_insts()
                );
            }
        }
    }
}

/// Every program of the repository's `ir/` folder that parses and verifies (named values,
/// `f32`, `bool`s, `select`, data parameters, programs of 10⁴ terms).
#[test]
fn the_ir_corpus() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("ir/ is readable") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "ir") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut checked = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable");
        let Ok(funcs) = adjit_ir::parse(&text) else {
            continue;
        };
        for func in funcs {
            if verify(&func).is_err() || func.n_insts() > 20_000 {
                continue;
            }
            check(&func, checked);
            checked += 1;
        }
    }
    assert!(checked >= 25, "only {checked} programs");
}

/// Derived names that meet primal names get a suffix, and the name tables (which hold only
/// the primal names a derived name could equal) see every such meeting: `%dx` is taken, so
/// `x`'s tangent is `%dx_2`; `%x_b` is taken, so `x`'s adjoint is `%x_b_2`.
#[test]
fn derived_names_step_around_primal_ones() {
    let src = "func @clash(%x: f64, %y: f64) -> f64 {
  %dx = mul %x, %y
  %x_b = sin %dx
  %dy_2 = mul %x_b, %dx
  %z = add %dy_2, %x
  ret %z
}
";
    let func = adjit_ir::parse_function(src).expect("parses");
    verify(&func).expect("verifies");
    let d = jvp(&func);
    verify(&d).expect("the JVP's names are unique");
    assert_eq!(d.name_of(Value::new(2)), Some("dx_2"), "{d}");
    assert_eq!(d.name_of(Value::new(3)), Some("dy"), "{d}");
    let g = vjp(&func);
    verify(&g).expect("the VJP's names are unique");
    assert!(g.to_string().contains("%x_b_2"), "{g}");
    check(&func, 1);
}
