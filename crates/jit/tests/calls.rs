//! The safe calling surface: length errors, batches, threads, verification errors, memory
//! reclaimed on drop, and huge programs (compile time, workspace, no stack overflow).

mod common;

use std::time::Instant;

use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::{interpret, Builder, Function, Operand, Type, ValueDef};
use adjit_jit::{compile, CompiledFunction, JitError, JitOptions};
use common::{assert_same, long_range_chain, seed001};

#[test]
fn compiled_function_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CompiledFunction>();
}

#[test]
fn seed001_example_computes_its_formula() {
    let code = compile(&seed001(), &JitOptions::default()).unwrap();
    let (x, y) = (1.5f64, -0.25f64);
    let p = 7.0 * x;
    let want = 2.0 * p * (p * x * 5.0) + 3.0 * (1.0 / y);
    let mut out = [0.0];
    code.call(&[x, y], &mut out).unwrap();
    assert_eq!(out[0], want);
    assert_eq!(
        (code.n_inputs(), code.n_outputs(), code.workspace_bytes()),
        (2, 1, 0)
    );
    assert!(code.code_bytes() > 0);
}

#[test]
fn wrong_lengths_are_errors_with_readable_messages() {
    let code = compile(&seed001(), &JitOptions::default()).unwrap();
    let mut out = [0.0];
    let err = code.call(&[1.0], &mut out).unwrap_err();
    assert_eq!(
        err,
        JitError::InputLength {
            expected: 2,
            got: 1
        }
    );
    assert_eq!(err.to_string(), "expected 2 inputs, got 1");
    let err = code.call(&[1.0, 2.0], &mut []).unwrap_err();
    assert_eq!(err.to_string(), "expected 1 outputs, got 0");
    let mut out3 = [0.0; 3];
    assert!(matches!(
        code.call_batch(&[1.0, 2.0, 3.0], &mut out3),
        Err(JitError::BatchLength { .. })
    ));
    assert!(matches!(
        code.call_batch(&[1.0, 2.0, 3.0, 4.0], &mut out3),
        Err(JitError::BatchLength { .. })
    ));
    assert!(matches!(
        code.call_batch_parallel(&[1.0, 2.0], &mut out3, 2),
        Err(JitError::BatchLength { .. })
    ));
}

#[test]
fn unverified_functions_are_rejected() {
    let mut f = seed001();
    // Make the first instruction use a value defined after it.
    let last = adjit_ir::Value::new(f.n_values() - 1);
    if let ValueDef::Inst(adjit_ir::InstData::Binary { args, .. }) = &mut f.values[2].def {
        args[1] = Operand::Value(last);
    }
    let err = compile(&f, &JitOptions::default()).unwrap_err();
    assert!(matches!(err, JitError::NotVerified(_)), "{err}");
    assert!(adjit_jit::clif_text(&f, &JitOptions::default()).is_err());
    assert!(
        adjit_jit::compile_object(&f, "x86_64-unknown-linux-gnu", &JitOptions::default()).is_err()
    );
}

#[test]
fn unknown_triples_are_errors() {
    let f = seed001();
    for triple in [
        "riscv64gc-unknown-linux-gnu",
        "not-a-triple-at-all",
        "x86_64-pc-windows-msvc",
    ] {
        let err = adjit_jit::compile_object(&f, triple, &JitOptions::default()).unwrap_err();
        assert!(
            matches!(err, JitError::UnknownTriple { .. }),
            "{triple}: {err}"
        );
    }
}

fn batch_fixture() -> (Function, CompiledFunction, Vec<f64>) {
    let func = random_function(
        11,
        &RandomOptions {
            n_params: 3,
            n_insts: 300,
            n_outputs: 2,
            window: 200,
            ..RandomOptions::default()
        },
    );
    // A small window forces a workspace, so batches exercise it too.
    let opts = JitOptions {
        registers: 4,
        ..JitOptions::default()
    };
    let code = compile(&func, &opts).unwrap();
    assert!(code.workspace_bytes() > 0);
    let inputs = Rng::new(5).vector(3 * 101, -2.0, 2.0);
    (func, code, inputs)
}

#[test]
fn batch_equals_repeated_calls() {
    let (func, code, inputs) = batch_fixture();
    let mut batch = vec![0.0; 2 * 101];
    code.call_batch(&inputs, &mut batch).unwrap();
    for p in 0..101 {
        let x = &inputs[3 * p..3 * p + 3];
        let mut one = [0.0; 2];
        code.call(x, &mut one).unwrap();
        assert_same("batch vs call", x, &batch[2 * p..2 * p + 2], &one);
        assert_same(
            "batch vs interpreter",
            x,
            &one,
            &interpret(&func, x).unwrap(),
        );
    }
}

#[test]
fn parallel_batch_equals_batch() {
    let (_, code, inputs) = batch_fixture();
    let mut batch = vec![0.0; 2 * 101];
    code.call_batch(&inputs, &mut batch).unwrap();
    for threads in [0, 1, 2, 3, 7, 200] {
        let mut par = vec![f64::NAN; 2 * 101];
        code.call_batch_parallel(&inputs, &mut par, threads)
            .unwrap();
        assert_eq!(
            par.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            batch.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{threads} threads"
        );
    }
    code.call_batch_parallel(&[], &mut [], 4).unwrap();
}

#[test]
fn functions_without_inputs_or_outputs() {
    let mut b = Builder::new("constant");
    let c = b.constant(Type::F64, 2.5);
    let f = b.finish(&[c, c]);
    let code = compile(&f, &JitOptions::default()).unwrap();
    let mut out = vec![0.0; 6];
    code.call_batch_parallel(&[], &mut out, 2).unwrap();
    assert_eq!(out, vec![2.5; 6]);

    let mut b = Builder::new("nothing");
    b.param(Type::F64, "x");
    let f = b.finish(&[]);
    let code = compile(&f, &JitOptions::default()).unwrap();
    code.call(&[1.0], &mut []).unwrap();
    code.call_batch(&[1.0, 2.0], &mut []).unwrap();

    // A returned parameter, twice, and a bool parameter returned as 0/1.
    let mut b = Builder::new("identity");
    let x = b.param(Type::F32, "x");
    let t = b.param(Type::Bool, "t");
    let f = b.finish(&[x, t, x]);
    let code = compile(&f, &JitOptions::default()).unwrap();
    let mut out = [0.0; 3];
    code.call(&[0.1, -3.0], &mut out).unwrap();
    assert_eq!(out, [0.1f32 as f64, 1.0, 0.1f32 as f64]);
}

/// A program where every instruction also uses a value from far back (long live ranges),
/// which makes unbounded register allocation quadratic.
fn long_range_program(n_insts: usize) -> Function {
    let (b, vals) = long_range_chain(n_insts, true);
    let n = vals.len();
    b.finish(&[vals[n - 1], vals[n / 2]])
}

#[test]
fn program_of_200k_instructions_with_long_live_ranges_compiles_quickly() {
    let func = long_range_program(200_000);
    let start = Instant::now();
    let code = compile(&func, &JitOptions::default()).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    eprintln!(
        "200k long-range program: {seconds:.2} s, {} chunks, {} workspace bytes, {} code bytes",
        code.n_chunks(),
        code.workspace_bytes(),
        code.code_bytes()
    );
    assert!(code.n_chunks() > 1);
    let x = [0.3, -0.7];
    let mut out = [0.0; 2];
    code.call(&x, &mut out).unwrap();
    assert_same("200k", &x, &out, &interpret(&func, &x).unwrap());
}

#[test]
fn program_of_a_million_instructions_runs_without_stack_overflow() {
    let func = random_function(
        1,
        &RandomOptions {
            n_insts: 1_000_000,
            ..RandomOptions::default()
        },
    );
    let code = compile(&func, &JitOptions::default()).unwrap();
    let x = [0.1, 0.2, 0.3];
    // On a thread with a small stack: the workspace must not live on it.
    let got = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn_scoped(scope, || {
                let mut out = [0.0; 2];
                code.call(&x, &mut out).map(|_| out)
            })
            .unwrap()
            .join()
            .unwrap()
    })
    .unwrap();
    assert_same("1M", &x, &got, &interpret(&func, &x).unwrap());
}
