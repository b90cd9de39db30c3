//! x86-64 object files, linked with the host C compiler and run natively, against the
//! interpreter: bit-exact where no libm routine is involved, within 2 ulps where one is (the
//! object calls the C library while the interpreter calls Rust's; `erf` differs).

mod common;

use adjit_jit::{compile_object, JitOptions, MathImpl, Pairing};
use common::aot::{rolled_suite_options, run_rolled_suite, run_suite, tools_present, Toolchain};

const X86_64: Toolchain = Toolchain {
    triple: "x86_64-unknown-linux-gnu",
    cc: "cc",
    runner: None,
};

#[test]
fn x86_64_objects_match_interpreter() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) || !tools_present(&X86_64) {
        eprintln!("SKIP: not an x86-64 Linux host with a C compiler");
        return;
    }
    // Every third program chunked into tiny pieces with spills and a constant table, so the
    // exported entry that calls chunk functions is exercised too.
    run_suite(&X86_64, |i| {
        if i % 3 == 1 {
            JitOptions {
                chunk_insts: 13,
                registers: 4,
                const_table_above: 2,
                ..JitOptions::default()
            }
        } else if i % 3 == 2 {
            // adjit's own math routines, reading their tables from the object's data.
            JitOptions {
                math: MathImpl::Inline,
                ..JitOptions::default()
            }
        } else {
            // Every loop of the repeated programs two iterations per trip.
            JitOptions {
                pair_loops: Pairing::Always,
                ..JitOptions::default()
            }
        }
    });
}

#[test]
fn header_declares_the_abi() {
    let obj = compile_object(
        &common::seed001(),
        "x86_64-unknown-linux-gnu",
        &JitOptions::default(),
    )
    .unwrap();
    // The default symbol is prefixed, so no program name can clash with the C runtime.
    assert_eq!(obj.symbol, "adjit_seed001");
    for needle in [
        "void adjit_seed001(const double *inputs, double *outputs, double *work);",
        "#define ADJIT_SEED001_N_INPUTS 2",
        "#define ADJIT_SEED001_N_OUTPUTS 1",
        "#define ADJIT_SEED001_WORK_LEN 0",
        "#ifndef ADJIT_SEED001_H",
    ] {
        assert!(
            obj.header.contains(needle),
            "missing `{needle}` in\n{}",
            obj.header
        );
    }
    assert_eq!(&obj.bytes[..4], b"\x7fELF");
    assert_eq!(adjit_jit::c_symbol("3d.model-x"), "_3d_model_x");
}

/// Rolled programs and their rolled derivatives compiled from their templates
/// (`compile_object_rolled`): loops, fused reverse sweeps, pairs in vector lanes (every other
/// program paired by force), the identities on registers; the interpreter's results.
#[test]
fn rolled_objects_match_interpreter() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) || !tools_present(&X86_64) {
        eprintln!("SKIP: not an x86-64 Linux host with a C compiler");
        return;
    }
    let from_templates = run_rolled_suite(&X86_64, rolled_suite_options);
    assert!(
        from_templates >= 30,
        "{from_templates} compiled from their templates"
    );
}
