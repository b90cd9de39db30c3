//! The front end at scale (issue #30 item 4): parse, verify and print of the chained
//! Rosenbrock (six instructions per term) at 10⁴, 10⁵ and 10⁶ lines, as written by the
//! printer and compactly (`%a=add %b,1.0`) and with names without digits (`%x_bc`, which the
//! parser finds through its hash table rather than its tables of numbered names), and its gradient (`vjp_seeded_with_one`, then
//! `simplify`, and `Gradient::new` from the function to callable code, usually and kept rolled
//! with `Options::rolled`, and a call of each) at 10⁴ and 10⁵. Each
//! phase should be linear: the time per line the same at every size, within one run.
//!
//! The group `rolled_shapes` times gradient calls of three shapes of repetition the usual way
//! and kept rolled.
//!
//! `cargo bench --bench frontend -- --warm-up-time 1 --measurement-time 5`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// The chained Rosenbrock of `n` terms as text, six instructions per term.
fn rosenbrock(n: usize, compact: bool) -> String {
    let (eq, comma, indent) = if compact {
        ("=", ",", "")
    } else {
        (" = ", ", ", "    ")
    };
    let params: Vec<String> = (0..=n).map(|i| format!("%x{i}: f64")).collect();
    let mut src = format!("func @rb({}) -> f64 {{\n", params.join(", "));
    src.push_str("    %s0 = const f64 0.0\n");
    for i in 0..n {
        let j = i + 1;
        let c = comma;
        for line in [
            format!("%n{i}{eq}neg %x{i}"),
            format!("%a{i}{eq}add %n{i}{c}1.0"),
            format!("%c{i}{eq}fma %n{i}{c}%x{i}{c}%x{j}"),
            format!("%d{i}{eq}mul %c{i}{c}%c{i}"),
            format!("%t{i}{eq}fma %d{i}{c}100.0{c}%s{i}"),
            format!("%s{j}{eq}fma %a{i}{c}%a{i}{c}%t{i}"),
        ] {
            src.push_str(indent);
            src.push_str(&line);
            src.push('\n');
        }
    }
    src.push_str(&format!("    ret %s{n}\n}}\n"));
    src
}

/// `src` with every digit of a value name spelled as a letter (`%x12` → `%x_bc`): the same
/// program, with no name the parser can number.
fn lettered(src: &str) -> String {
    let mut out = String::with_capacity(src.len() + src.len() / 8);
    let (mut in_name, mut in_digits) = (false, false);
    for c in src.chars() {
        if in_name && c.is_ascii_digit() {
            if !in_digits {
                out.push('_');
                in_digits = true;
            }
            out.push(char::from(b'a' + (c as u8 - b'0')));
            continue;
        }
        in_digits = false;
        if c == '%' {
            in_name = true;
        } else if !(c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            in_name = false;
        }
        out.push(c);
    }
    out
}

fn frontend(c: &mut Criterion) {
    let mut group = c.benchmark_group("frontend");
    group.sample_size(10);
    for lines in [10_000usize, 100_000, 1_000_000] {
        let n = lines / 6;
        group.throughput(Throughput::Elements(lines as u64));
        for layout in ["printed", "compact", "lettered"] {
            let src = match layout {
                "lettered" => lettered(&rosenbrock(n, false)),
                _ => rosenbrock(n, layout == "compact"),
            };
            group.bench_with_input(
                BenchmarkId::new(format!("parse/{layout}"), lines),
                &src,
                |b, src| b.iter(|| adjit::ir::parse(src).expect("parses")),
            );
        }
        let func = adjit::ir::parse_function(&rosenbrock(n, false)).expect("parses");
        group.bench_with_input(BenchmarkId::new("verify", lines), &func, |b, func| {
            b.iter(|| adjit::ir::verify(func).expect("verifies"))
        });
        group.bench_with_input(BenchmarkId::new("print", lines), &func, |b, func| {
            b.iter(|| func.to_string())
        });
        // The derivative front half at scale (the gradient has about 2.2 lines per primal one).
        if lines <= 100_000 {
            group.bench_with_input(BenchmarkId::new("vjp_seeded", lines), &func, |b, func| {
                b.iter(|| adjit::diff::derive::vjp_seeded_with_one(func))
            });
            let gradient = adjit::diff::derive::vjp_seeded_with_one(&func);
            group.bench_with_input(
                BenchmarkId::new("simplify_gradient", lines),
                &gradient,
                |b, gradient| b.iter(|| adjit::diff::simplify(gradient)),
            );
            // The whole way from a function to callable native code: derive, simplify in
            // place, schedule, roll (one loop here) and JIT.
            let usual = adjit::Options {
                rolled: adjit::KeepRolled::Never,
                ..adjit::Options::default()
            };
            group.bench_with_input(BenchmarkId::new("gradient_new", lines), &func, |b, func| {
                b.iter(|| adjit::Gradient::with_options(func, &usual).expect("compiles"))
            });
            // Derivatives on templates: the VJP line by line against the VJP of the program
            // held as its loops (the search for them timed apart).
            group.bench_with_input(BenchmarkId::new("vjp", lines), &func, |b, func| {
                b.iter(|| adjit::diff::vjp(func))
            });
            group.bench_with_input(BenchmarkId::new("rolled_from", lines), &func, |b, func| {
                b.iter(|| adjit::ir::Rolled::from_function(func))
            });
            let rolled = adjit::ir::Rolled::from_function(&func);
            group.bench_with_input(BenchmarkId::new("vjp_rolled", lines), &rolled, |b, r| {
                b.iter(|| adjit::diff::vjp_rolled(r))
            });
            // The same way kept rolled (`Options::rolled`): search, derive per template and
            // compile from the templates, against `gradient_new` above.
            let rolled_through = adjit::Options {
                rolled: adjit::KeepRolled::Always,
                ..adjit::Options::default()
            };
            group.bench_with_input(
                BenchmarkId::new("gradient_new_rolled", lines),
                &func,
                |b, func| {
                    b.iter(|| {
                        adjit::Gradient::with_options(func, &rolled_through).expect("compiles")
                    })
                },
            );
            // And their calls: the rolled loop (simplified on registers, two terms per trip)
            // against the usual pipeline's (should be equal).
            let x: Vec<f64> = (0..func.n_params)
                .map(|i| 0.5 + 0.01 * (i % 7) as f64)
                .collect();
            for (name, opts) in [
                ("gradient_call", &usual),
                ("gradient_call_rolled", &rolled_through),
            ] {
                let g = adjit::Gradient::with_options(&func, opts).expect("compiles");
                let mut grad = vec![0.0; func.n_params];
                group.bench_function(BenchmarkId::new(name, lines), |b| {
                    b.iter(|| g.call(&x, &mut grad).expect("lengths match"))
                });
            }
        }
    }
    group.finish();
}

/// Gradient calls of three shapes of repetition the usual way and kept rolled
/// (`KeepRolled::Always`): a 2-D grid energy traced row by row (its rows stay loops of their
/// own rolled), Lorenz's RK4 steps (a recurrence whose run starts a step late) and the
/// Rosenbrock function traced NumPy style (a loop per stage rolled, one fused loop the usual
/// way; `KeepRolled::Auto` takes the usual road for it). Compare the two rows of each shape.
fn rolled_shapes(c: &mut Criterion) {
    let mut group = c.benchmark_group("rolled_shapes");
    group.sample_size(20);
    let shapes = [
        ("grid_energy_100x100", adjit_testkit::grid_energy(100)),
        (
            "lorenz_2000_steps",
            adjit_testkit::lorenz_rk4(2_000, 0.01, adjit::Type::F64),
        ),
        (
            "staged_rosenbrock_10000",
            adjit_testkit::staged_rosenbrock(10_000),
        ),
    ];
    for (shape, func) in shapes {
        // Lorenz's three outputs: the gradient of the first (a VJP with its seed).
        let func = if func.n_outputs() > 1 {
            let mut f = func;
            f.rets.truncate(1);
            f.ret_types.truncate(1);
            f
        } else {
            func
        };
        let x: Vec<f64> = (0..func.n_params)
            .map(|i| 0.1 + 0.001 * (i % 13) as f64)
            .collect();
        for (road, rolled) in [
            ("usual", adjit::KeepRolled::Never),
            ("rolled", adjit::KeepRolled::Always),
        ] {
            let opts = adjit::Options {
                rolled,
                ..adjit::Options::default()
            };
            let g = adjit::Gradient::with_options(&func, &opts).expect("compiles");
            let mut grad = vec![0.0; func.n_params];
            group.bench_function(BenchmarkId::new(shape, road), |b| {
                b.iter(|| g.call(&x, &mut grad).expect("lengths match"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, frontend, rolled_shapes);
criterion_main!(benches);
