//! The instruction scheduler: a permutation of the instructions (none changed, names kept),
//! operands still pointing backwards, bit-identical results on the interpreter and the JIT,
//! deterministic, fewer values live at once on the programs it is for, and no recursion.

mod common;

use std::collections::HashMap;

use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::{interpret, parse_function, verify, Builder, Function, Type, ValueDef};
use adjit_jit::{compile, schedule, JitOptions};
use common::assert_same;

/// `func` with every value named `u{index}`, so a scheduled copy can be matched back.
fn named(func: &Function) -> Function {
    let mut f = func.clone();
    for (i, data) in f.values.iter_mut().enumerate() {
        data.name = Some(format!("u{i}").into());
    }
    f
}

/// Schedule `func` and check every property of the pass; return the scheduled function.
fn check(func: &Function, points: &[Vec<f64>]) -> Function {
    let func = named(func);
    let s = schedule(&func);
    verify(&s).unwrap_or_else(|e| panic!("after pass schedule: {e}"));
    assert_eq!(s, schedule(&func), "@{}: deterministic", func.name);
    assert_eq!((s.n_values(), s.n_params), (func.n_values(), func.n_params));
    assert_eq!(s.ret_types, func.ret_types);
    // A permutation of the instructions, each unchanged up to renumbering, names kept.
    let old: HashMap<&str, usize> = func
        .values
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_deref().unwrap_or_default(), i))
        .collect();
    let new_to_old: Vec<usize> = s
        .values
        .iter()
        .map(|d| old[d.name.as_deref().unwrap_or_default()])
        .collect();
    let mut seen = vec![false; func.n_values()];
    for (i, &o) in new_to_old.iter().enumerate() {
        assert!(!seen[o], "value {o} emitted twice");
        seen[o] = true;
        assert_eq!(s.values[i].ty, func.values[o].ty);
        match (&s.values[i].def, &func.values[o].def) {
            (ValueDef::Param, ValueDef::Param) => assert_eq!(i, o, "parameters keep their place"),
            (ValueDef::Inst(a), ValueDef::Inst(b)) => {
                let back = a.map_values(|v| adjit_ir::Value::new(new_to_old[v.index()]));
                assert_eq!(&back, b, "instruction {o} changed");
            }
            _ => panic!("value {o} changed kind"),
        }
    }
    let rets: Vec<usize> = s.rets.iter().map(|r| new_to_old[r.index()]).collect();
    let want: Vec<usize> = func.rets.iter().map(|r| r.index()).collect();
    assert_eq!(rets, want, "returned values keep their order");
    // Same bits on the interpreter; and the JIT of the original agrees with both.
    let code = compile(&func, &JitOptions::default()).unwrap();
    let mut out = vec![0.0; code.n_outputs()];
    for x in points {
        let a = interpret(&func, x).unwrap();
        let b = interpret(&s, x).unwrap();
        assert_eq!(
            a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "@{} at {x:?}",
            func.name
        );
        code.call(x, &mut out).unwrap();
        assert_same(&func.name, x, &out, &a);
    }
    s
}

fn points(seed: u64, n: usize) -> Vec<Vec<f64>> {
    let mut rng = Rng::new(seed);
    (0..3).map(|_| rng.vector(n, -2.0, 2.0)).collect()
}

#[test]
fn random_programs_keep_their_results() {
    for seed in 0..120 {
        let opts = RandomOptions {
            n_params: 1 + (seed % 5) as usize,
            n_insts: 10 + (seed as usize * 53) % 400,
            n_outputs: 1 + (seed % 4) as usize,
            ty: if seed % 5 == 4 { Type::F32 } else { Type::F64 },
            window: [4, 16, 64][(seed % 3) as usize],
            non_smooth: seed % 2 == 1,
        };
        let func = random_function(seed, &opts);
        check(&func, &points(seed, func.n_params));
    }
}

#[test]
fn derivative_programs_keep_their_results() {
    for seed in 0..40 {
        let opts = RandomOptions {
            n_params: 2 + (seed % 3) as usize,
            n_insts: 30 + seed as usize * 7,
            non_smooth: seed % 2 == 0,
            ..RandomOptions::default()
        };
        let func = random_function(seed, &opts);
        for df in [adjit_diff::jvp(&func), adjit_diff::vjp(&func)] {
            let df = adjit_diff::simplify(&df);
            check(&df, &points(seed + 7, df.n_params));
        }
    }
}

/// Dead code, returned parameters, a value returned twice, no instructions at all.
#[test]
fn edge_cases_keep_their_results() {
    let mut b = Builder::new("edges");
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let dead = b.mul(x, y);
    let _dead2 = b.add(dead, 1.0);
    let s = b.add(x, y);
    let t = b.mul(s, s);
    let f = b.finish(&[t, x, t, s]);
    check(&f, &points(1, 2));
    let empty = Builder::new("empty").finish(&[]);
    check(&empty, &[vec![]]);
    let mut b = Builder::new("params_only");
    let x = b.param(Type::F64, "x");
    check(&b.finish(&[x, x]), &[vec![2.5]]);
}

/// The largest number of values live at once (defined, and used later) in program order.
fn max_live(func: &Function) -> usize {
    let mut last_use = vec![0usize; func.n_values()];
    for (v, inst) in func.insts() {
        inst.for_each_value(|a| last_use[a.index()] = v.index());
    }
    let mut ends = vec![0usize; func.n_values() + 1];
    for (v, &end) in last_use.iter().enumerate().skip(func.n_params) {
        if end > v {
            ends[end] += 1;
        }
    }
    let (mut live, mut max) = (0usize, 0usize);
    for (v, &e) in ends
        .iter()
        .enumerate()
        .take(func.n_values())
        .skip(func.n_params)
    {
        live -= e;
        if last_use[v] > v {
            live += 1;
        }
        max = max.max(live);
    }
    max
}

fn bench_program(name: &str) -> Function {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ir/bench")
        .join(name);
    parse_function(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Issue #10: the Rosenbrock-100 VJP kept its whole forward sweep live across the turn.
#[test]
fn rosenbrock_vjp_no_longer_keeps_the_forward_sweep_live() {
    let func = bench_program("rosenbrock100.ir");
    let vjp = adjit_diff::simplify(&adjit_diff::vjp(&func));
    let before = max_live(&vjp);
    let s = check(&vjp, &[vec![0.5; vjp.n_params], vec![-1.25; vjp.n_params]]);
    let after = max_live(&s);
    assert!(before > 200, "{before}");
    assert!(
        after <= 8,
        "max live after scheduling: {after} (before {before})"
    );
    // The primal's sum chain: walking the chain operand first keeps it short too.
    let primal = check(&func, &[vec![0.5; func.n_params]]);
    assert!(max_live(&primal) <= 6, "{}", max_live(&primal));
    let jvp = adjit_diff::simplify(&adjit_diff::jvp(&func));
    let s = check(&jvp, &[vec![0.5; jvp.n_params]]);
    assert!(max_live(&s) <= 10, "{}", max_live(&s));
}

/// Half a million instructions in one chain: explicit stacks, no recursion.
#[test]
fn long_chains_schedule_without_recursion() {
    let mut b = Builder::new("chain");
    let x = b.param(Type::F64, "x");
    let mut acc = x;
    for k in 0..500_000 {
        let t = b.mul(x, (k % 7) as f64);
        acc = b.add(t, acc);
    }
    let f = b.finish(&[acc]);
    let s = schedule(&f);
    verify(&s).unwrap();
    assert_eq!(max_live(&s), 2);
    assert_eq!(
        interpret(&s, &[0.25]).unwrap()[0].to_bits(),
        interpret(&f, &[0.25]).unwrap()[0].to_bits()
    );
}

/// The schedule of a small VJP, pinned: a change in the heuristic shows as a readable diff.
#[test]
fn small_vjp_schedule_is_pinned() {
    let func = parse_function(
        "func @f(%x: f64, %y: f64) -> f64 {\n    %a = mul %x, %y\n    %b = sin %a\n    \
         %c = mul %b, %x\n    ret %c\n}\n",
    )
    .unwrap();
    let vjp = adjit_diff::simplify(&adjit_diff::vjp(&func));
    let s = schedule(&vjp);
    let text = s.to_string();
    // The forward values are computed where the reverse sweep first needs them, and the
    // primal output `c` by the fill once `b` has one use left.
    let want = "\
func @f_vjp(%x: f64, %y: f64, %c_b: f64) -> (f64, f64, f64) {
    %a = mul %x, %y
    %v4 = cos %a
    %b = sin %a
    %b_b = mul %c_b, %x
    %a_b = mul %b_b, %v4
    %v8 = mul %c_b, %b
    %x_b = fma %a_b, %y, %v8
    %y_b = mul %a_b, %x
    %c = mul %b, %x
    ret %c, %x_b, %y_b
}
";
    assert_eq!(text, want, "schedule of the small vjp changed:\n{text}");
}

/// Stack spills (`movdqu`/`movsd` to or from `rsp`) in Cranelift's assembly of `func`.
fn stack_spills(func: &Function) -> usize {
    let asm = adjit_jit::asm_text(func, &JitOptions::default()).unwrap();
    asm.lines()
        .filter(|l| (l.contains("movdqu") || l.contains("movsd")) && l.contains("rsp"))
        .count()
}

/// Issue #10 counted 598 spill instructions in the Rosenbrock-100 VJP. With the schedule and
/// the Belady plan, the register budget keeps Cranelift from spilling at all on the
/// benchmark programs (x86-64 hosts only: the dump is host assembly).
#[test]
#[cfg(target_arch = "x86_64")]
fn benchmark_programs_do_not_spill() {
    for name in ["rosenbrock100.ir", "mlp.ir", "blackscholes.ir"] {
        let func = bench_program(name);
        let jvp = adjit_diff::simplify(&adjit_diff::jvp(&func));
        let vjp = adjit_diff::simplify(&adjit_diff::vjp(&func));
        for (mode, f) in [("primal", &func), ("jvp", &jvp), ("vjp", &vjp)] {
            let spills = stack_spills(f);
            assert_eq!(spills, 0, "{name} {mode}: {spills} stack spills");
        }
    }
}
