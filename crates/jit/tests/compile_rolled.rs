//! `compile_rolled`: a rolled program compiled from its templates gives the interpreter's
//! bits (NaN = NaN) on random repeated programs (carried state, strides, interruptions, data
//! literals, f32), irregular ones and traces, and so do its rolled derivatives
//! (`jvp_rolled`, `jvp_vector_rolled`, `vjp_rolled`, forward over reverse), which are never
//! expanded; the code has loops and its size does not grow with the trips; a rolled program
//! whose rule is broken gives other numbers (the test can fail).

mod common;

use adjit_diff::{jvp_rolled, jvp_vector_rolled, vjp_rolled, vjp_rolled_seeded_with_one};
use adjit_ir::random::{
    campaign_cases, random_function, random_repeated, RandomOptions, RepeatOptions, Rng,
};
use adjit_ir::roll::Source;
use adjit_ir::trace::trace;
use adjit_ir::{verify, Function, Rolled};
use adjit_jit::{
    compile, compile_rolled, compile_templates, CompiledFunction, JitOptions, Pairing,
};
use adjit_testkit::{chained_rosenbrock as traced_rosenbrock, chained_rosenbrock_text};
use common::assert_same;

/// Rolled from any size (the default leaves programs under 20,000 instructions to `compile`).
fn opts() -> JitOptions {
    JitOptions {
        roll_above: 0,
        ..JitOptions::default()
    }
}

/// Compiled from the templates ([`compile_templates`], whatever the share of the program its
/// loops hold), one call per point against the rolled interpreter (itself checked against the
/// flat one in `adjit-ir`'s tests). `None` when the plan does not hold the program.
fn check(rolled: &Rolled, seed: u64) -> Option<CompiledFunction> {
    check_with(rolled, seed, &opts())
}

/// [`check`] with the options `opts`.
fn check_with(rolled: &Rolled, seed: u64, opts: &JitOptions) -> Option<CompiledFunction> {
    let name = &rolled.header().name;
    let code = compile_templates(rolled, opts).unwrap_or_else(|e| panic!("@{name}: {e}"))?;
    let mut rng = Rng::new(seed);
    let mut out = vec![0.0; code.n_outputs()];
    for _ in 0..3 {
        let x = rng.vector(rolled.n_params(), -2.0, 2.0);
        code.call(&x, &mut out).expect("lengths match");
        let want = rolled.interpret(&x).expect("interprets");
        assert_same(name, &x, &out, &want);
    }
    Some(code)
}

fn repeated(seed: u64, data: bool) -> Function {
    let func = random_repeated(seed, &RepeatOptions::of_seed(seed, data));
    verify(&func).expect("generated programs verify");
    func
}

/// The program and its derivatives, all compiled from their templates; how many of them the
/// plan held.
fn check_all(func: &Function, seed: u64) -> (usize, usize) {
    let rolled = Rolled::from_function(func);
    let g = vjp_rolled(&rolled);
    let mut programs = vec![jvp_rolled(&rolled), jvp_rolled(&g), g, rolled.clone()];
    if seed.is_multiple_of(3) {
        programs.push(jvp_vector_rolled(&rolled, 3));
    }
    let held = programs.iter().filter_map(|p| check(p, seed)).count();
    (held, programs.len())
}

#[test]
fn random_repeated_programs_and_their_derivatives() {
    let (mut held, mut all) = (0, 0);
    // Five programs compiled per seed: a third of the campaign's seeds.
    for seed in 0..campaign_cases().div_ceil(3) {
        let (h, a) = check_all(&repeated(seed, seed % 2 == 1), seed);
        held += h;
        all += a;
    }
    // Reads across a loop's end at a moving index are rare: nearly all are compiled rolled.
    assert!(held * 10 >= all * 9, "{held} of {all} held");
}

/// Every loop run two iterations per trip where any line is parallel (`Pairing::Always`),
/// fused loops included: the interpreter's bits still, on the random repeated programs and
/// their derivatives, and the code differs from the unpaired code in most of them (pairing
/// happened).
#[test]
fn paired_loops_keep_the_bits() {
    let with = |pairing| JitOptions {
        pair_loops: pairing,
        ..opts()
    };
    let (mut paired, mut held) = (0, 0);
    for seed in (0..campaign_cases().div_ceil(3)).step_by(2) {
        let rolled = Rolled::from_function(&repeated(seed, seed % 2 == 1));
        let g = vjp_rolled(&rolled);
        let seeded = vjp_rolled_seeded_with_one(&rolled);
        for p in [jvp_rolled(&rolled), jvp_rolled(&seeded), g, seeded, rolled] {
            let Some(on) = check_with(&p, seed, &with(Pairing::Always)) else {
                continue;
            };
            let off = check_with(&p, seed, &with(Pairing::Off)).expect("held both ways");
            held += 1;
            paired += usize::from(on.code_bytes() != off.code_bytes());
        }
    }
    assert!(paired * 2 >= held, "{paired} of {held} paired");
}

/// The traced Rosenbrock's gradient and HVP, kept rolled and fused, pair under the default
/// cost model: the code differs from the unpaired code, and the numbers are the
/// interpreter's.
#[test]
fn the_rosenbrock_gradient_pairs_by_default() {
    let n = 1001;
    let rolled = Rolled::from_function(&traced_rosenbrock(n));
    let seeded = vjp_rolled_seeded_with_one(&rolled);
    for p in [jvp_rolled(&seeded), seeded] {
        let auto = check_with(&p, 3, &opts()).expect("held");
        let off = JitOptions {
            pair_loops: Pairing::Off,
            ..opts()
        };
        let off = check_with(&p, 3, &off).expect("held");
        assert_eq!((auto.loops(), off.loops()), (1, 1), "fused");
        assert_ne!(auto.code_bytes(), off.code_bytes(), "paired");
    }
}

#[test]
fn irregular_programs_compile_from_their_straight_code() {
    for seed in 0..20 {
        let func = random_function(seed, &RandomOptions::of_seed(seed));
        let (held, all) = check_all(&func, seed);
        assert_eq!(held, all);
    }
}

/// `compile_rolled` of a program with little repetition is `compile` of its expansion: the
/// same code.
#[test]
fn little_repetition_compiles_as_before() {
    for seed in 0..10 {
        let func = random_function(seed, &RandomOptions::default());
        let rolled = Rolled::from_function(&func);
        let a = compile_rolled(&rolled, &opts()).expect("compiles");
        let b = compile(&func, &opts()).expect("compiles");
        assert_eq!(a.code_bytes(), b.code_bytes(), "@{}", func.name);
        assert_eq!(a.loops(), b.loops());
    }
}

#[test]
fn a_traced_gradient_is_loops_whose_code_does_not_grow_with_the_trips() {
    let mut sizes = Vec::new();
    for n in [300, 3_000] {
        let rolled = Rolled::from_function(&traced_rosenbrock(n));
        let g = vjp_rolled(&rolled);
        let code = check(&g, n as u64).expect("held");
        // The reverse loop runs inside the forward one: one loop, and no tape.
        assert_eq!(code.loops(), 1, "{code:?}");
        assert!(code.workspace_bytes() <= 16, "{code:?}");
        sizes.push(code.code_bytes());
        // The expansion is never built: the program held is a few dozen instructions.
        assert!(g.n_template_insts() < 100, "{}", g.n_template_insts());
    }
    assert_eq!(sizes[0], sizes[1], "code bytes at n = 300 and 3,000");
}

#[test]
fn a_grids_rows_reuse_the_work_slots_of_rows_done() {
    // Each row's loops are read by the next row's only, so the work holds the tape (about two
    // values a cell) and a few rows' adjoints, not ten values a cell for every row.
    for m in [40, 80] {
        let g = vjp_rolled_seeded_with_one(&Rolled::from_function(&adjit_testkit::grid_energy(m)));
        let code = check(&g, m as u64).expect("held");
        assert!(code.loops() > m, "rows stay loops of their own: {code:?}");
        let cells = (m - 2) * (m - 2);
        assert!(
            code.workspace_bytes() <= 8 * (3 * cells + 40 * m),
            "m = {m}: {} bytes of work for {cells} cells",
            code.workspace_bytes()
        );
    }
}

#[test]
fn a_recurrences_tape_holds_only_what_its_reverse_sweep_reads() {
    // Lorenz's RK4 steps: the run search starts the loop a step late, so the reverse sweep
    // reads the forward loop and the straight step before it. Those reads get arrays of the
    // positions they read, extended over that step, not a slot for every value of every step.
    for steps in [200, 1_000] {
        let f = adjit_testkit::lorenz_rk4(steps, 0.01, adjit_ir::Type::F64);
        let g = vjp_rolled(&Rolled::from_function(&f));
        let code = check(&g, steps as u64).expect("held");
        let per_step = code.workspace_bytes() / 8 / steps;
        assert!(per_step <= 16, "{steps} steps: {per_step} slots a step");
    }
}

/// A sum over terms of `x[i]` and `x[i + 1]` (an objective traced term by term), each term a
/// random chain of four operations, with a literal per term from data for odd seeds; every
/// third seed a three-point stencil (`x[i − 1]` too) added to the sum in two steps, whose
/// reverse sweep finishes an adjoint two terms later (lines that lag two terms).
fn random_sum(seed: u64, n: usize) -> Function {
    let mut rng = Rng::new(seed);
    let ops: Vec<usize> = (0..4).map(|_| rng.below(7)).collect();
    let data = rng.vector(n, 0.5, 1.5);
    let with_data = seed % 2 == 1;
    let stencil = seed.is_multiple_of(3);
    trace(n, |x| {
        let mut s = x[0] * 0.0;
        for i in 1..n - 1 {
            let (a, b) = (x[i], x[i + 1]);
            let mut t = a;
            for (k, &op) in ops.iter().enumerate() {
                let other = if k % 2 == 0 { b } else { a };
                t = match op {
                    0 => t * other,
                    1 => t + other.sin(),
                    2 => (t - other) * (t - other),
                    3 => (t * 0.25).exp() * other,
                    4 if with_data => t * data[i] + other,
                    5 => t.tanh() - other * 3.0,
                    _ => t.max(other) * 1.5,
                };
            }
            if stencil {
                s = (x[i - 1] * t).mul_add(0.5, s);
                s += (x[i - 1] - b) * (x[i - 1] - b);
            } else {
                s += t;
            }
        }
        s
    })
}

/// The gradients of sums fuse their reverse loop into the forward one (one loop, no tape),
/// with the interpreter's bits, at several lengths (the first and last terms are peeled).
#[test]
fn gradients_of_sums_fuse_and_keep_the_bits() {
    let mut fused = 0;
    let mut all = 0;
    for seed in 0..campaign_cases().div_ceil(5) {
        let n = 20 + (seed as usize * 7) % 50;
        let rolled = Rolled::from_function(&random_sum(seed, n));
        for g in [
            vjp_rolled(&rolled),
            vjp_rolled_seeded_with_one(&rolled),
            jvp_rolled(&vjp_rolled(&rolled)),
        ] {
            let code = check(&g, seed).expect("held");
            // Paired wherever a line is parallel, through the lags' joined lanes.
            let always = JitOptions {
                pair_loops: Pairing::Always,
                ..opts()
            };
            check_with(&g, seed, &always).expect("held");
            let loops = g.loops().iter().filter(|l| l.trips > 1).count();
            all += 1;
            if code.loops() < loops {
                fused += 1;
            }
        }
    }
    // (3 of 1,800 gradients of a 3,000-case run did not fuse, and ran unfused.)
    assert!(fused * 10 >= all * 9, "{fused} of {all} fused");
}

/// The chained Rosenbrock as `ir/bench` writes it (the sum threaded through two `fma`s per
/// term): its reverse sweep reads the forward loop's term after its own and lags two terms.
fn chained_rosenbrock(n: usize) -> Function {
    adjit_ir::parse_function(&chained_rosenbrock_text(n)).expect("parses")
}

#[test]
fn chained_sums_fuse_and_keep_the_bits() {
    for n in [12, 50, 333] {
        let rolled = Rolled::from_function(&chained_rosenbrock(n));
        for g in [
            vjp_rolled(&rolled),
            vjp_rolled_seeded_with_one(&rolled),
            jvp_rolled(&vjp_rolled_seeded_with_one(&rolled)),
        ] {
            let code = check(&g, n as u64).expect("held");
            assert_eq!(code.loops(), 1, "n = {n}: {code:?}");
        }
    }
}

/// A rolled program whose affine rule is broken (every read of `x` one further on) computes
/// other numbers: the comparison above sees a wrong index.
#[test]
fn a_broken_affine_index_gives_other_numbers() {
    let f = traced_rosenbrock(200);
    let good = Rolled::from_function(&f);
    let mut broken = Rolled::new(good.header().clone());
    let mut changed = false;
    for l in good.loops() {
        let mut l = l.clone();
        for srcs in &mut l.sources {
            for src in srcs {
                if let Source::Affine { base, step } = src {
                    if *step != 0 && !changed && l.trips > 1 {
                        *base += 1;
                        changed = true;
                    }
                }
            }
        }
        broken.push(l);
    }
    broken.set_rets(
        good.header().rets.clone(),
        good.header()
            .rets
            .iter()
            .map(|r| good.ty(r.index()))
            .collect(),
    );
    assert!(changed, "the trace reads x at a stride");
    let x: Vec<f64> = (0..200).map(|i| 0.01 * i as f64).collect();
    let run = |r: &Rolled| {
        let code = compile_rolled(r, &opts()).expect("compiles");
        assert!(code.loops() >= 1);
        let mut y = [0.0];
        code.call(&x, &mut y).expect("lengths match");
        y[0]
    };
    assert_eq!(run(&good), good.interpret(&x).unwrap()[0]);
    assert_ne!(run(&broken), run(&good));
}

#[test]
fn wrong_buffer_lengths_are_errors() {
    let rolled = Rolled::from_function(&traced_rosenbrock(100));
    let code = compile_rolled(&rolled, &opts()).expect("compiles");
    let mut y = [0.0];
    assert!(code.call(&[1.0; 99], &mut y).is_err());
    assert!(code.call(&[1.0; 100], &mut []).is_err());
}

/// A rolled program that reads a value after its own is refused with the verifier's error,
/// not lowered.
#[test]
fn an_unverified_rolled_program_is_an_error() {
    let good = Rolled::from_function(&traced_rosenbrock(100));
    let mut bad = Rolled::new(good.header().clone());
    for l in good.loops() {
        let mut l = l.clone();
        if l.trips > 1 {
            for src in l.sources.iter_mut().flatten() {
                if let Source::Affine { base, .. } = src {
                    *base = 1_000_000;
                }
            }
        }
        bad.push(l);
    }
    let err = compile_rolled(&bad, &opts()).expect_err("reads forward");
    assert!(
        matches!(err, adjit_jit::JitError::RolledNotVerified(_)),
        "{err}"
    );
}

/// A loop of `n` trips computing `y_j = line(x_j)` after a first line `%c = const c`; `line`
/// names the iteration's input `{x}` and the constant `%c`.
fn loop_with_constant(n: usize, c: f64, line: &str) -> Function {
    let params: Vec<String> = (0..n).map(|j| format!("%x{j}: f64")).collect();
    let rets: Vec<String> = (0..n).map(|_| "f64".to_string()).collect();
    let mut text = format!(
        "func @k({}) -> ({}) {{\n    %c = const f64 {c:?}\n",
        params.join(", "),
        rets.join(", ")
    );
    let mut outs = Vec::new();
    for j in 0..n {
        let body = line
            .replace("{x}", &format!("%x{j}"))
            .replace("{j}", &j.to_string());
        text.push_str(&body);
        outs.push(format!("%y{j}"));
    }
    text.push_str(&format!("    ret {}\n}}\n", outs.join(", ")));
    adjit_ir::parse_function(&text).expect("parses")
}

/// A template's lines read a loop invariant that is a constant: the simplifier's identities
/// apply to them (`x·1` is `x`, `fma 1, a, b` is `a + b`, `(x·1)·(−1) + b` is `b − x`), as
/// `simplify` applies them to the expansion: the loop is the same code as the one written
/// without them, and gives the interpreter's bits. With another constant, the code differs.
#[test]
fn a_template_reading_a_constant_is_simplified_by_the_identities() {
    let n = 64;
    let with = |c: f64| {
        loop_with_constant(
            n,
            c,
            "    %m{j} = mul {x}, %c\n    %f{j} = fma %c, %m{j}, {x}\n    \
             %g{j} = mul %m{j}, -1.0\n    %n{j} = neg %g{j}\n    %y{j} = add %f{j}, %n{j}\n",
        )
    };
    let plain = loop_with_constant(
        n,
        1.0,
        "    %f{j} = add {x}, {x}\n    %y{j} = add %f{j}, {x}\n",
    );
    let bytes = |func: &Function| {
        let rolled = Rolled::from_function(func);
        assert!(rolled.loops().iter().any(|l| l.trips == n));
        check(&rolled, 7).expect("held").code_bytes()
    };
    assert_eq!(bytes(&with(1.0)), bytes(&plain));
    assert_ne!(bytes(&with(3.0)), bytes(&plain));
}
