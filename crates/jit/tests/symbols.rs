//! Exported AOT names: the lists of C runtime symbols and C header names are not stale, every
//! named trap is refused with a reason and a way out, and objects exported under their default
//! names link and run beside a C program that uses the C runtime's own `dlopen`, `dlsym`,
//! `mprotect`, `pthread_create`, `sigaction`, `syscall` and `environ` (x86-64 natively,
//! AArch64 under qemu; each skipped without its tools).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use adjit_ir::{interpret, Builder, Function, Type};
use adjit_jit::{compile_object, compile_object_as, JitError, JitOptions};
use common::aot::{tools_present, Toolchain};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Regenerating the lists on this machine gives nothing the shipped lists lack: a new glibc,
/// header or library shows up here instead of slipping through.
#[test]
fn shipped_lists_hold_what_this_machine_defines() {
    if !available("gcc") || !available("nm") || !available("bash") {
        eprintln!("SKIP: needs gcc, nm and bash to regenerate the symbol lists");
        return;
    }
    let fresh = std::env::temp_dir().join(format!("adjit_symbol_lists_{}", std::process::id()));
    std::fs::create_dir_all(&fresh).unwrap();
    let script = data_dir().join("regenerate.sh");
    let run = Command::new("bash")
        .arg(&script)
        .arg(&fresh)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for list in ["c_runtime.txt", "c_headers.txt"] {
        let shipped = std::fs::read_to_string(data_dir().join(list)).unwrap();
        let shipped: std::collections::BTreeSet<&str> = shipped.lines().collect();
        let generated = std::fs::read_to_string(fresh.join(list)).unwrap();
        assert!(generated.lines().count() > 1000, "{list}: {generated}");
        let missing: Vec<&str> = generated
            .lines()
            .filter(|name| !shipped.contains(name))
            .collect();
        assert!(
            missing.is_empty(),
            "{list} lacks {} names this machine defines (run crates/jit/data/regenerate.sh): {:?}",
            missing.len(),
            &missing[..missing.len().min(20)]
        );
        // Sorted bytewise and free of duplicates, as `regenerate.sh` writes them.
        let text = std::fs::read_to_string(data_dir().join(list)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.windows(2).all(|w| w[0] < w[1]),
            "{list} is not sorted"
        );
    }
    let _ = std::fs::remove_dir_all(&fresh);
}

/// `f(x, y) = x·y + x`: exact arithmetic, so C must print the interpreter's numbers.
fn program(name: &str) -> Function {
    let mut b = Builder::new(name);
    let x = b.param(Type::F64, "x");
    let y = b.param(Type::F64, "y");
    let p = b.mul(x, y);
    let s = b.add(p, x);
    b.finish(&[s])
}

#[test]
fn named_traps_are_refused_with_the_reason_and_a_way_out() {
    let func = program("f");
    for bad in [
        "dlopen",
        "dlsym",
        "mprotect",
        "pthread_create",
        "sigaction",
        "syscall",
        "environ",
        "NULL",
        "size_t",
        "INFINITY",
        "I",
        "errno",
        "stdin",
        "main",
    ] {
        for triple in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
            let e = compile_object_as(&func, triple, &JitOptions::default(), bad).expect_err(bad);
            assert!(matches!(e, JitError::Symbol { .. }), "{bad}: {e}");
            let text = e.to_string();
            let why = text.contains("the C runtime libraries")
                || text.contains("the C standard or POSIX headers define");
            assert!(
                why && text.contains(&format!("`adjit_{bad}`")) && text.contains("--symbol"),
                "{text}"
            );
        }
    }
}

/// Names the object or its header defines besides the entry are checked too: `_private` is a
/// fine symbol, but its header would define the reserved macro `_PRIVATE_N_INPUTS`.
#[test]
fn every_defined_name_is_checked() {
    let func = program("f");
    let opts = JitOptions {
        batch_lanes: 2,
        ..JitOptions::default()
    };
    let e = compile_object_as(&func, "x86_64-unknown-linux-gnu", &opts, "_private")
        .expect_err("reserved macro");
    assert!(e.to_string().contains("`_PRIVATE_N_INPUTS`"), "{e}");
    let ok = compile_object_as(&func, "x86_64-unknown-linux-gnu", &opts, "private_f").unwrap();
    assert_eq!(ok.pair_symbol.as_deref(), Some("private_f_x2"));
}

/// Programs named after C runtime functions compile under their default names (`adjit_` and
/// the name) and link beside a C program that calls those functions for real.
fn links_beside_the_c_runtime(tc: &Toolchain) {
    let names = ["dlopen", "dlsym", "mprotect", "sigaction", "syscall", "sin"];
    let dir = std::env::temp_dir().join(format!(
        "adjit_symbols_{}_{}",
        tc.triple,
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut objects = Vec::new();
    let mut includes = String::new();
    let mut calls = String::new();
    let x = [1.5, -2.25];
    for name in names {
        let func = program(name);
        let obj = compile_object(&func, tc.triple, &JitOptions::default())
            .unwrap_or_else(|e| panic!("@{name}: {e}"));
        assert_eq!(obj.symbol, format!("adjit_{name}"));
        let o = dir.join(format!("{name}.o"));
        std::fs::write(&o, &obj.bytes).unwrap();
        std::fs::write(dir.join(format!("{name}.h")), &obj.header).unwrap();
        objects.push(o);
        includes += &format!("#include \"{name}.h\"\n");
        calls += &format!(
            "  {{ double in[2] = {{{:?}, {:?}}}, out[1]; {}(in, out, 0); printf(\"%.17g\\n\", out[0]); }}\n",
            x[0], x[1], obj.symbol
        );
    }
    let driver = format!(
        "#define _GNU_SOURCE\n\
         #include <complex.h>\n#include <dlfcn.h>\n#include <errno.h>\n#include <math.h>\n\
         #include <pthread.h>\n#include <signal.h>\n#include <stddef.h>\n#include <stdio.h>\n\
         #include <stdlib.h>\n#include <string.h>\n#include <sys/mman.h>\n\
         #include <sys/syscall.h>\n#include <unistd.h>\n{includes}\
         extern char **environ;\n\
         static volatile sig_atomic_t seen;\n\
         static void on_usr1(int sig) {{ seen = sig; }}\n\
         static void *thread_main(void *arg) {{ return arg; }}\n\
         int main(void) {{\n\
           void *self = dlopen(NULL, RTLD_NOW);\n\
           if (!self) return 10;\n\
           void *found = dlsym(self, \"malloc\");\n\
           if (!found) return 11;\n\
           long page = sysconf(_SC_PAGESIZE);\n\
           char *mem = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n\
           if (mem == MAP_FAILED) return 12;\n\
           mem[0] = 7;\n\
           if (mprotect(mem, page, PROT_READ) != 0 || mem[0] != 7) return 13;\n\
           pthread_t t; void *back = NULL; int token = 5;\n\
           if (pthread_create(&t, NULL, thread_main, &token) != 0) return 14;\n\
           if (pthread_join(t, &back) != 0 || back != &token) return 15;\n\
           struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = on_usr1;\n\
           if (sigaction(SIGUSR1, &sa, NULL) != 0) return 16;\n\
           raise(SIGUSR1);\n\
           if (seen != SIGUSR1) return 17;\n\
           if (syscall(SYS_getpid) != getpid()) return 18;\n\
           if (!environ) return 19;\n\
           errno = 0;\n\
           if (NULL != (void *)0 || sizeof(size_t) < 4 || !isinf(INFINITY) || cimag(I) != 1.0) return 20;\n\
           printf(\"%.17g\\n\", sin(0.5));\n\
         {calls}\
           return 0;\n\
         }}\n"
    );
    let c_file = dir.join("main.c");
    std::fs::write(&c_file, driver).unwrap();
    let exe = dir.join("main");
    let built = Command::new(tc.cc)
        .arg("-o")
        .arg(&exe)
        .arg(&c_file)
        .args(&objects)
        .args(["-ldl", "-lpthread", "-lm"])
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = match tc.runner {
        Some((runner, args)) => Command::new(runner).args(args).arg(&exe).output(),
        None => Command::new(&exe).output(),
    }
    .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}: {}",
        tc.triple,
        String::from_utf8_lossy(&run.stderr)
    );
    let printed: Vec<f64> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let expected_y = interpret(&program("f"), &x).unwrap()[0];
    let mut expected = vec![0.5f64.sin()];
    expected.extend(names.iter().map(|_| expected_y));
    assert_eq!(printed.len(), expected.len(), "{printed:?}");
    // `sin` is the C library's (it may differ from Rust's in the last bit); the kernels are
    // exact arithmetic and must match bit for bit.
    assert!((printed[0] - expected[0]).abs() <= 1e-15, "{printed:?}");
    assert_eq!(printed[1..], expected[1..], "{}", tc.triple);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn x86_64_objects_link_beside_the_c_runtime() {
    let tc = Toolchain {
        triple: "x86_64-unknown-linux-gnu",
        cc: "cc",
        runner: None,
    };
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) || !tools_present(&tc) {
        eprintln!("SKIP: not an x86-64 Linux host with a C compiler");
        return;
    }
    links_beside_the_c_runtime(&tc);
}

#[test]
fn aarch64_objects_link_beside_the_c_runtime_under_qemu() {
    let tc = Toolchain {
        triple: "aarch64-unknown-linux-gnu",
        cc: "aarch64-linux-gnu-gcc",
        runner: Some(("qemu-aarch64", &["-L", "/usr/aarch64-linux-gnu"])),
    };
    if !tools_present(&tc) {
        return;
    }
    links_beside_the_c_runtime(&tc);
}
