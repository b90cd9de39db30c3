//! AArch64 object files, linked with aarch64-linux-gnu-gcc and run under qemu-aarch64,
//! against the interpreter on the host: bit-exact where no libm routine is involved, within
//! 2 ulps where one is. Without the tools this prints SKIP and passes, unless
//! `ADJIT_REQUIRE_QEMU=1`.

mod common;

use adjit_jit::{JitOptions, MathImpl, Pairing};
use common::aot::{rolled_suite_options, run_rolled_suite, run_suite, tools_present, Toolchain};

const AARCH64: Toolchain = Toolchain {
    triple: "aarch64-unknown-linux-gnu",
    cc: "aarch64-linux-gnu-gcc",
    runner: Some(("qemu-aarch64", &["-L", "/usr/aarch64-linux-gnu"])),
};

#[test]
fn aarch64_objects_match_interpreter_under_qemu() {
    if !tools_present(&AARCH64) {
        return;
    }
    run_suite(&AARCH64, |i| {
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

/// Rolled programs and their rolled derivatives compiled from their templates
/// (`compile_object_rolled`): loops, fused reverse sweeps, pairs in vector lanes (every other
/// program paired by force), the identities on registers; the interpreter's results.
#[test]
fn rolled_objects_match_interpreter() {
    if !tools_present(&AARCH64) {
        return;
    }
    let from_templates = run_rolled_suite(&AARCH64, rolled_suite_options);
    assert!(
        from_templates >= 30,
        "{from_templates} compiled from their templates"
    );
}
