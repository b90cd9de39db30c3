//! One-lane float `select`s on x86-64 are bit masks, not branches (`lower.rs`,
//! `masked_select`). Each must return the chosen operand bit for bit: a +0.0 side is one
//! `and`, a −0.0 side is not mistaken for +0.0, two selects on one condition share its masks
//! (also across chunks and loops, where they must not), and a literal side that is a table's
//! entry (0.0 in the first iteration only) is loaded in every iteration. Everything is
//! compared with the interpreter, bit for bit (NaN payloads included), in one and two lanes.

use adjit_ir::{interpret, parse_function, Function};
use adjit_jit::{compile, JitOptions};

fn program(src: &str) -> Function {
    parse_function(src).expect("parses")
}

/// The JIT's outputs are the interpreter's, bit for bit, at every point, one call at a time
/// and as one batch.
fn check(func: &Function, opts: &JitOptions, points: &[Vec<f64>]) {
    let code = compile(func, opts).expect("compiles");
    let flat: Vec<f64> = points.concat();
    let mut batch = vec![f64::NAN; code.n_outputs() * points.len()];
    code.call_batch(&flat, &mut batch).expect("lengths match");
    for (x, from_batch) in points.iter().zip(batch.chunks(code.n_outputs())) {
        let want = interpret(func, x).expect("interprets");
        let mut out = vec![f64::NAN; code.n_outputs()];
        code.call(x, &mut out).expect("lengths match");
        for got in [&out[..], from_batch] {
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "{}: output {i} at {x:?}: jit {g:e}, interpreter {w:e}",
                    func.name
                );
            }
        }
    }
}

fn every_layout(func: &Function, points: &[Vec<f64>]) {
    let base = JitOptions {
        roll_above: 0,
        ..JitOptions::default()
    };
    let layouts = [
        base.clone(),
        JitOptions {
            batch_lanes: 2,
            ..base.clone()
        },
        JitOptions {
            chunk_insts: 3,
            registers: 4,
            ..base.clone()
        },
        JitOptions {
            schedule: false,
            ..base
        },
    ];
    for opts in &layouts {
        check(func, opts, points);
    }
}

/// Every pair (x, y) of `values`.
fn pairs(values: &[f64]) -> Vec<Vec<f64>> {
    values
        .iter()
        .flat_map(|&x| values.iter().map(move |&y| vec![x, y]))
        .collect()
}

/// A quiet NaN with a payload, to see that a select moves bits and computes nothing.
fn nan_with_payload() -> f64 {
    f64::from_bits(0x7ff8_0000_dead_beef)
}

#[test]
fn every_side_is_the_chosen_operand_bit_for_bit() {
    let func = program(
        "func @sides(%x: f64, %y: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64) {
            %c = fcmp.gt %x, 0.0
            %a = select %c, %x, 0.0
            %b = select %c, 0.0, %y
            %n = select %c, %x, -0.0
            %m = select %c, -0.0, %y
            %both = select %c, %x, %y
            %zero = const f64 0.0
            %zeros = select %c, %zero, 0.0
            %u = fcmp.ne %y, %y
            %p = select %u, %y, 0.0
            %q = select %u, 0.0, %x
            %two = const f64 2.5
            %lit = select %c, %two, -7.0
            ret %a, %b, %n, %m, %both, %zeros, %p, %q, %lit
        }",
    );
    let values = [
        1.5,
        -2.0,
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        nan_with_payload(),
        -nan_with_payload(),
        f64::MIN_POSITIVE / 4.0,
    ];
    every_layout(&func, &pairs(&values));
}

/// An `f32` and an `f64` select on one condition need masks of two widths.
#[test]
fn f32_selects_are_the_chosen_operand() {
    let func = program(
        "func @narrow(%x: f32, %y: f32) -> (f32, f32, f32, f32, f64) {
            %c = fcmp.lt %x, %y
            %a = select %c, %x, 0.0
            %wide = fpromote %y
            %f = select %c, %wide, 0.0
            %b = select %c, 0.0, %y
            %d = select %c, %y, %x
            %e = select %c, -0.0, %x
            ret %a, %b, %d, %e, %f
        }",
    );
    let values = [1.5, -2.0, 0.0, -0.0, f64::INFINITY, 3.25e-39, -1e30];
    every_layout(&func, &pairs(&values));
}

/// Selects on one condition in a row share its masks; with other selects and conditions
/// between them, in tiny chunks and in loops, every one still reads its own condition.
#[test]
fn selects_sharing_a_condition_read_the_right_one() {
    let mut src = String::from("func @shared(");
    let n = 48;
    src += &(0..n)
        .map(|i| format!("%x{i}: f64"))
        .collect::<Vec<_>>()
        .join(", ");
    src += ") -> (";
    src += &vec!["f64"; 2 * n].join(", ");
    src += ") {\n";
    for i in 0..n {
        let j = (i + 1) % n;
        src += &format!("    %c{i} = fcmp.gt %x{i}, %x{j}\n");
        src += &format!("    %a{i} = select %c{i}, %x{i}, 0.0\n");
        src += &format!("    %b{i} = select %c{i}, 0.0, %x{j}\n");
    }
    let rets: Vec<String> = (0..n)
        .flat_map(|i| [format!("%a{i}"), format!("%b{i}")])
        .collect();
    src += &format!("    ret {}\n}}", rets.join(", "));
    let func = program(&src);
    let mut rng = adjit_ir::random::Rng::new(11);
    let points: Vec<Vec<f64>> = (0..6).map(|_| rng.vector(n, -1.0, 1.0)).collect();
    every_layout(&func, &points);
    let code = compile(
        &func,
        &JitOptions {
            roll_above: 0,
            ..JitOptions::default()
        },
    )
    .expect("compiles");
    assert!(code.loops() >= 1, "the repeated selects roll");
}

/// A literal side that differs between iterations is a table; its first entry is +0.0 here,
/// which must not turn the select into a mask of +0.0 for every iteration.
#[test]
fn a_tabled_side_that_starts_at_zero_is_read_in_every_iteration() {
    let n = 40;
    let mut src = String::from("func @tabled(");
    src += &(0..n)
        .map(|i| format!("%x{i}: f64"))
        .collect::<Vec<_>>()
        .join(", ");
    src += ") -> (";
    src += &vec!["f64"; n].join(", ");
    src += ") {\n";
    for i in 0..n {
        let literal = if i == 0 { 0.0 } else { 0.5 * i as f64 };
        src += &format!("    %c{i} = fcmp.gt %x{i}, 0.0\n");
        src += &format!("    %r{i} = select %c{i}, %x{i}, {literal:?}\n");
        src += &format!("    %s{i} = select %c{i}, 0.0, %x{i}\n");
        src += &format!("    %t{i} = add %r{i}, %s{i}\n");
    }
    let rets: Vec<String> = (0..n).map(|i| format!("%t{i}")).collect();
    src += &format!("    ret {}\n}}", rets.join(", "));
    let func = program(&src);
    let opts = JitOptions {
        roll_above: 0,
        ..JitOptions::default()
    };
    let regions = adjit_jit::regions(&func, &opts);
    assert!(
        regions.iter().any(|r| r.literal_tables > 0),
        "the literals roll as a table: {regions:?}"
    );
    let negative = vec![-1.0; n];
    let mixed: Vec<f64> = (0..n)
        .map(|i| if i % 3 == 0 { 2.0 } else { -0.5 })
        .collect();
    every_layout(&func, &[negative.clone(), mixed]);
    // The values themselves, not only agreement: x < 0 selects the literal 0.5·i.
    let code = compile(&func, &opts).expect("compiles");
    let mut out = vec![f64::NAN; n];
    code.call(&negative, &mut out).expect("lengths match");
    let want: Vec<f64> = (0..n).map(|i| 0.5 * i as f64 - 1.0).collect();
    assert_eq!(out, want);
}
