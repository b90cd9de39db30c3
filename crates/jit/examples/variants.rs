//! Compare code speed of JIT option variants on the ir/bench programs, interleaved in one
//! process so that the ratios survive a noisy machine (minimum over rounds of short batches).
//!
//! `cargo run --release -p adjit-jit --example variants -- [ROUNDS] [PROGRAM...]`
//!
//! Prints per program and mode (primal, jvp, vjp; derivatives simplified as the facade does)
//! the ns per call of every variant, and the JVP/primal and VJP/primal ratios per variant.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use adjit_ir::{parse_function, Function};
use adjit_jit::{compile, CompiledFunction, JitOptions};

fn load(name: &str) -> Function {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ir/bench")
        .join(format!("{name}.ir"));
    let text = std::fs::read_to_string(&path).expect("ir/bench file");
    parse_function(&text).expect("benchmark program parses")
}

fn point(name: &str, n: usize) -> Vec<f64> {
    match name {
        "blackscholes" => vec![100.0, 95.0, 0.05, 0.2, 1.0],
        "lorenz" => vec![1.0; 3],
        _ => vec![0.5; n],
    }
}

fn variants() -> Vec<(String, JitOptions)> {
    let mut out = vec![(
        "program".to_string(),
        JitOptions {
            schedule: false,
            ..JitOptions::default()
        },
    )];
    // ADJIT_VARIANTS=registers:10,registers:14,speed adds variants of the default.
    let extra = std::env::var("ADJIT_VARIANTS").unwrap_or_default();
    out.push(("default".to_string(), JitOptions::default()));
    for spec in extra.split(',').filter(|s| !s.is_empty()) {
        let mut opts = JitOptions::default();
        match spec.split_once(':') {
            Some(("registers", n)) => opts.registers = n.parse().expect("registers:N"),
            Some(("const_table_above", n)) => opts.const_table_above = n.parse().expect("N"),
            _ if spec == "speed" => opts.opt_level = adjit_jit::OptLevel::Speed,
            _ => panic!("unknown variant {spec}"),
        }
        out.push((spec.to_string(), opts));
    }
    out
}

/// Minimum ns per call over `rounds` batches of about 2 ms, the variants interleaved.
fn time(codes: &[CompiledFunction], inputs: &[Vec<f64>], rounds: usize) -> Vec<f64> {
    let mut outs: Vec<Vec<f64>> = codes.iter().map(|c| vec![0.0; c.n_outputs()]).collect();
    let mut iters = vec![1u64; codes.len()];
    for (k, code) in codes.iter().enumerate() {
        loop {
            let start = Instant::now();
            for _ in 0..iters[k] {
                code.call(black_box(&inputs[k]), &mut outs[k])
                    .expect("call");
            }
            if start.elapsed().as_micros() >= 2000 {
                break;
            }
            iters[k] *= 2;
        }
    }
    let mut best = vec![f64::INFINITY; codes.len()];
    for _ in 0..rounds {
        for (k, code) in codes.iter().enumerate() {
            let start = Instant::now();
            for _ in 0..iters[k] {
                code.call(black_box(&inputs[k]), &mut outs[k])
                    .expect("call");
            }
            let ns = start.elapsed().as_nanos() as f64 / iters[k] as f64;
            best[k] = best[k].min(ns);
        }
    }
    best
}

/// Compile time of random programs of 100k and 1M instructions, per variant.
fn compile_times() {
    for n_insts in [100_000, 1_000_000] {
        let func = adjit_ir::random::random_function(
            42,
            &adjit_ir::random::RandomOptions {
                n_insts,
                ..Default::default()
            },
        );
        let start = Instant::now();
        let scheduled = adjit_jit::schedule(&func);
        let schedule_s = start.elapsed().as_secs_f64();
        black_box(scheduled);
        for (vname, opts) in variants() {
            let start = Instant::now();
            let code = compile(&func, &opts).expect("compiles");
            println!(
                "compile random {n_insts:8} {vname:10} {:6.2} s  ({} chunks, schedule alone {schedule_s:.3} s)",
                start.elapsed().as_secs_f64(),
                code.n_chunks()
            );
        }
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("compile") {
        return compile_times();
    }
    // `asm PROGRAM MODE`: the assembly of the last variant of ADJIT_VARIANTS.
    if std::env::args().nth(1).as_deref() == Some("asm") {
        let args: Vec<String> = std::env::args().collect();
        let func = load(&args[2]);
        let prog = match args[3].as_str() {
            "jvp" => adjit_diff::jvp(&func),
            "vjp" => adjit_diff::vjp(&func),
            _ => func,
        };
        let (_, opts) = variants().pop().expect("a variant");
        print!(
            "{}",
            adjit_jit::asm_text(&adjit_diff::simplify(&prog), &opts).expect("asm")
        );
        return;
    }
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(30);
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = [
            "seed001",
            "rosenbrock100",
            "rosenbrock1000",
            "mlp",
            "blackscholes",
            "lorenz",
        ]
        .map(String::from)
        .to_vec();
    }
    let variants = variants();
    for name in &names {
        let func = load(name);
        let x = point(name, func.n_params);
        let progs = [
            ("primal", adjit_diff::simplify(&func)),
            ("jvp", adjit_diff::simplify(&adjit_diff::jvp(&func))),
            ("vjp", adjit_diff::simplify(&adjit_diff::vjp(&func))),
        ];
        let mut table = Vec::new();
        for (mode, prog) in &progs {
            let mut codes = Vec::new();
            let mut inputs = Vec::new();
            let mut compile_ms = Vec::new();
            for (_, opts) in &variants {
                let start = Instant::now();
                let code = compile(prog, opts).expect("compiles");
                compile_ms.push(start.elapsed().as_secs_f64() * 1e3);
                let mut input = x.clone();
                input.resize(code.n_inputs(), 0.75);
                inputs.push(input);
                codes.push(code);
            }
            let ns = time(&codes, &inputs, rounds);
            table.push(ns.clone());
            for (k, (vname, _)) in variants.iter().enumerate() {
                println!(
                    "{name:15} {mode:6} {vname:10} {:10.1} ns  compile {:8.1} ms  work {} B",
                    ns[k],
                    compile_ms[k],
                    codes[k].workspace_bytes()
                );
            }
        }
        for (k, (vname, _)) in variants.iter().enumerate() {
            println!(
                "{name:15} ratios {vname:10} jvp/primal {:.2}  vjp/primal {:.2}",
                table[1][k] / table[0][k],
                table[2][k] / table[0][k]
            );
        }
    }
}
