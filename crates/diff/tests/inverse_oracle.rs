//! The exhaustive order oracle: checked against brute force over every topological order on tiny
//! programs, then used to measure how often the greedy order reaches the optimal largest lump on
//! many random small programs (the paper's conjecture). Prints the statistics and one
//! counterexample when there is one (`cargo test --test inverse_oracle -- --nocapture`).

mod oracle;

use adjit_diff::inverse::{analyze_order, greedy_order, InverseError};
use adjit_ir::random::{random_function, RandomOptions};
use adjit_ir::{Function, Value};
use adjit_testkit::{fig2, random_triangular};
use oracle::optimal_largest_lump;

/// Every topological order of `func`'s instructions (small programs only).
fn all_orders(func: &Function) -> Vec<Vec<Value>> {
    let insts: Vec<Value> = func.insts().map(|(v, _)| v).collect();
    let mut out = Vec::new();
    let mut current = Vec::new();
    let mut done = vec![false; func.n_values()];
    fn rec(
        func: &Function,
        insts: &[Value],
        done: &mut Vec<bool>,
        current: &mut Vec<Value>,
        out: &mut Vec<Vec<Value>>,
    ) {
        if current.len() == insts.len() {
            out.push(current.clone());
            return;
        }
        for &v in insts {
            if done[v.index()] {
                continue;
            }
            let mut ready = true;
            func.inst(v)
                .unwrap()
                .for_each_value(|o| ready &= func.is_param(o) || done[o.index()]);
            if ready {
                done[v.index()] = true;
                current.push(v);
                rec(func, insts, done, current, out);
                current.pop();
                done[v.index()] = false;
            }
        }
    }
    rec(func, &insts, &mut done, &mut current, &mut out);
    out
}

/// The smallest largest lump by trying every order, `None` if some order has a narrow cut.
fn brute_force(func: &Function) -> Option<usize> {
    let mut best = usize::MAX;
    for order in all_orders(func) {
        match analyze_order(func, order, "brute") {
            Ok(a) => best = best.min(a.largest_lump()),
            Err(_) => return None,
        }
    }
    Some(best)
}

fn small_programs() -> Vec<Function> {
    let mut out = Vec::new();
    for seed in 0..4000u64 {
        let n = 2 + (seed % 2) as usize;
        let opts = RandomOptions {
            n_params: n,
            n_outputs: n,
            n_insts: 4 + (seed % 9) as usize,
            window: 4,
            ..Default::default()
        };
        out.push(random_function(seed, &opts));
    }
    for seed in 0..400u64 {
        let n = 2 + (seed % 2) as usize;
        let f = random_triangular(n, 1 + (seed % 3) as usize, seed);
        if f.n_insts() <= 12 {
            out.push(f);
        }
    }
    out
}

#[test]
fn oracle_agrees_with_brute_force_on_tiny_programs() {
    let mut compared = 0;
    for f in small_programs() {
        if f.n_insts() > 8 {
            continue;
        }
        let oracle = optimal_largest_lump(&f);
        let program_order = f.insts().map(|(v, _)| v).collect();
        let checked = analyze_order(&f, program_order, "program");
        // Not square, or singular whatever the order (unused input, passive output, …).
        if checked.is_err_and(|e| !matches!(e, InverseError::NarrowCut { .. })) {
            assert_eq!(oracle, None);
            continue;
        }
        assert_eq!(oracle, brute_force(&f), "{f}");
        compared += oracle.is_some() as usize;
    }
    assert!(compared >= 30, "only {compared} tiny programs compared");
    assert_eq!(optimal_largest_lump(&fig2()), Some(1));
}

#[test]
fn greedy_versus_optimal_largest_lump() {
    let mut total = 0;
    let mut optimal = 0;
    let mut worst: Option<(usize, usize, Function)> = None;
    for f in small_programs() {
        let Some(best) = optimal_largest_lump(&f) else {
            continue;
        };
        let greedy = analyze_order(&f, greedy_order(&f), "greedy")
            .expect("no order has a narrow cut")
            .largest_lump();
        assert!(greedy >= best, "the oracle was beaten by greedy\n{f}");
        total += 1;
        if greedy == best {
            optimal += 1;
        } else if worst.as_ref().is_none_or(|(g, b, w)| {
            greedy - best > g - b || (greedy - best == g - b && f.n_insts() < w.n_insts())
        }) {
            worst = Some((greedy, best, f.clone()));
        }
    }
    println!(
        "greedy reached the optimal largest lump on {optimal} of {total} random small programs"
    );
    if let Some((g, b, f)) = &worst {
        println!("counterexample: greedy largest lump {g}, optimal {b}\n{f}");
    }
    assert!(
        total >= 200,
        "only {total} programs were square and nonsingular"
    );
}
