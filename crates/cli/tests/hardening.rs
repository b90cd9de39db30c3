//! Traps a user meets with `adjit compile`: exported names that clash with the C library or
//! are keywords, and output paths that would destroy files.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn adjit(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_adjit"))
        .args(args)
        .output()
        .expect("run adjit");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

fn scratch(name: &str, text: Option<&str>) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-hardening");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    if let Some(text) = text {
        std::fs::write(&path, text).expect("write");
    }
    path
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `@floor` calls the C library's `floor` itself: exported as `floor` it would call itself.
const FLOOR: &str =
    "func @floor(%x: f64) -> f64 {\n    %y = floor %x\n    %z = mul %y, 2.0\n    ret %z\n}\n";

#[test]
fn symbols_that_clash_or_do_not_compile_are_refused() {
    let file = scratch("floor.ir", Some(FLOOR));
    let object = scratch("floor_out.o", None);
    let _ = std::fs::remove_file(&object);
    // By default the symbol is prefixed: `@floor` exports `adjit_floor`, which clashes with
    // nothing.
    let run = adjit(&["compile", &s(&file), "-o", &s(&object)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let header = std::fs::read_to_string(object.with_extension("h")).unwrap();
    assert!(
        header.contains("void adjit_floor(const double *inputs"),
        "{header}"
    );
    std::fs::remove_file(&object).unwrap();
    // Every named trap: C runtime symbols (the program's own `dlopen` would call the kernel)
    // and C header names (the header would not compile beside them), with the reason and a
    // name to use instead.
    for bad in [
        "floor",
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
        let run = adjit(&["compile", &s(&file), "-o", &s(&object), "--symbol", bad]);
        assert_eq!(run.code, 1, "--symbol {bad}");
        let why = run.stderr.contains("the C runtime libraries")
            || run
                .stderr
                .contains("the C standard or POSIX headers define");
        assert!(
            run.stderr
                .contains(&format!("cannot export the symbol `{bad}`"))
                && why
                && run.stderr.contains(&format!("`adjit_{bad}`"))
                && run.stderr.contains("--symbol NAME"),
            "{}",
            run.stderr
        );
        assert!(!object.exists(), "nothing is written on refusal");
    }
    for bad in ["int", "return", "memcpy", "_start", "__x", "sinf", "a-b"] {
        let run = adjit(&["compile", &s(&file), "-o", &s(&object), "--symbol", bad]);
        assert_eq!(run.code, 1, "--symbol {bad}");
        assert!(
            run.stderr.contains(&format!("symbol `{bad}`")),
            "{}",
            run.stderr
        );
    }
    // A chosen name works, and the object runs from C (when a C compiler is there).
    let run = adjit(&[
        "compile",
        &s(&file),
        "-o",
        &s(&object),
        "--symbol",
        "my_floor",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let header = std::fs::read_to_string(object.with_extension("h")).unwrap();
    assert!(
        header.contains("void my_floor(const double *inputs"),
        "{header}"
    );
    if Command::new("cc").arg("--version").output().is_err() {
        return;
    }
    let driver = scratch(
        "floor_main.c",
        Some(
            "#include <math.h>\n#include <stdio.h>\n#include \"floor_out.h\"\n\
             int main(void) { double in[1] = {2.7}, out[1]; my_floor(in, out, 0);\n\
             printf(\"%g %g\\n\", out[0], floor(-0.5)); return 0; }\n",
        ),
    );
    let exe = scratch("floor_main", None);
    let built = Command::new("cc")
        .args([s(&driver), s(&object), "-lm".into(), "-o".into(), s(&exe)])
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "4 -1\n");
}

#[test]
fn compile_never_destroys_a_file() {
    let program = "func @f(%x: f64) -> f64 {\n    %y = mul %x, %x\n    ret %y\n}\n";
    let file = scratch("keep.ir", Some(program));
    // -o the input itself.
    let run = adjit(&["compile", &s(&file), "-o", &s(&file)]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("writing it would destroy the input"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), program);
    // -o X.h: the header would land on the object.
    let header_only = scratch("keep_out.h", None);
    let run = adjit(&["compile", &s(&file), "-o", &s(&header_only)]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("would be the same file"),
        "{}",
        run.stderr
    );
    // An object next to a header the user wrote.
    let mine = scratch("mine.h", Some("int mine;\n"));
    let object = scratch("mine.o", None);
    let _ = std::fs::remove_file(&object);
    let run = adjit(&["compile", &s(&file), "-o", &s(&object)]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("was not written by adjit"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "int mine;\n");
    let run = adjit(&["compile", &s(&file), "-o", &s(&object), "--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Its own header is replaced without asking.
    let run = adjit(&["compile", &s(&file), "-o", &s(&object)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// Every output option, checked against the inputs and the other outputs: the file is left as
/// it was and the message names both options.
#[test]
fn no_output_overwrites_an_input_or_another_output() {
    let program = "func @f(%x: f64, %y: f64) -> f64 {\n    %p = mul %x, %y\n    %q = mul %p, %x\n    ret %q\n}\n";
    let file = scratch("io.ir", Some(program));
    let point = scratch("io_at.txt", Some("1, 2\n"));
    let f = s(&file);
    let at_file = format!("@{}", s(&point));
    // A hard link and a symbolic link to the input, and the input spelled with `..`.
    let hard = scratch("io_hard.ir", None);
    let _ = std::fs::remove_file(&hard);
    std::fs::hard_link(&file, &hard).unwrap();
    let soft = scratch("io_soft.svg", None);
    let _ = std::fs::remove_file(&soft);
    std::os::unix::fs::symlink(&file, &soft).unwrap();
    let dotted = file
        .parent()
        .unwrap()
        .join("..")
        .join("cli-hardening")
        .join("io.ir");
    let fresh = s(&scratch("io_fresh.mtx", None));
    let cases: Vec<(Vec<String>, &str, &str)> = vec![
        (
            vec![
                "jacobian".into(),
                f.clone(),
                "--at".into(),
                "1,2".into(),
                "--sparse".into(),
                "--mtx".into(),
                f.clone(),
            ],
            "--mtx",
            "FILE",
        ),
        (
            vec![
                "hessian".into(),
                f.clone(),
                "--at".into(),
                "1,2".into(),
                "--sparse".into(),
                "--spy".into(),
                s(&dotted),
            ],
            "--spy",
            "FILE",
        ),
        (
            vec![
                "jacobian".into(),
                f.clone(),
                "--at".into(),
                "1,2".into(),
                "--sparse".into(),
                "--spy".into(),
                s(&soft),
            ],
            "--spy",
            "FILE",
        ),
        (
            vec![
                "jacobian".into(),
                f.clone(),
                "--at".into(),
                at_file.clone(),
                "--sparse".into(),
                "--mtx".into(),
                s(&point),
            ],
            "--mtx",
            "--at",
        ),
        (
            vec![
                "jacobian".into(),
                f.clone(),
                "--at".into(),
                "1,2".into(),
                "--sparse".into(),
                "--mtx".into(),
                fresh.clone(),
                "--spy".into(),
                fresh.clone(),
            ],
            "--spy",
            "--mtx",
        ),
        (
            vec![
                "dump".into(),
                f.clone(),
                "--stage".into(),
                "vjp".into(),
                "-o".into(),
                f.clone(),
            ],
            "-o",
            "FILE",
        ),
        (
            vec![
                "dump".into(),
                f.clone(),
                "--stage".into(),
                "vjp".into(),
                "-o".into(),
                s(&hard),
            ],
            "-o",
            "FILE",
        ),
        (
            vec![
                "bench".into(),
                f.clone(),
                "--at".into(),
                "1,2".into(),
                "--modes".into(),
                "primal".into(),
                "--plot".into(),
                f.clone(),
            ],
            "--plot",
            "FILE",
        ),
        (
            vec!["compile".into(), f.clone(), "-o".into(), s(&hard)],
            "-o",
            "FILE",
        ),
        (
            vec!["compile".into(), f.clone(), "-o".into(), f.clone()],
            "-o",
            "FILE",
        ),
    ];
    for (args, output, input) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = adjit(&args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stdout);
        assert!(
            run.stderr.contains(&format!("{output} ")) && run.stderr.contains(&format!("{input} ")),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), program, "{args:?}");
        assert_eq!(
            std::fs::read_to_string(&point).unwrap(),
            "1, 2\n",
            "{args:?}"
        );
        assert!(!Path::new(&fresh).exists(), "{args:?}");
    }
    // Distinct files are fine, and /dev/null may take more than one output.
    let mtx = s(&scratch("io_out.mtx", None));
    let spy = s(&scratch("io_out.svg", None));
    let run = adjit(&[
        "jacobian", &f, "--at", "1,2", "--sparse", "--mtx", &mtx, "--spy", &spy,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = adjit(&[
        "jacobian",
        &f,
        "--at",
        "1,2",
        "--sparse",
        "--mtx",
        "/dev/null",
        "--spy",
        "/dev/null",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// A number that overflows `f32` for an `f32` input is an error, as `1e400` is for `f64`.
#[test]
fn f32_inputs_that_overflow_are_errors() {
    let file = scratch(
        "f32.ir",
        Some("func @g(%x: f32, %y: f64) -> f32 {\n    %z = mul %x, %x\n    ret %z\n}\n"),
    );
    for at in ["1e39,1", "-1e39,1", "3.5e38,0"] {
        let run = adjit(&["eval", &s(&file), "--at", at]);
        assert_eq!(run.code, 1, "{at}: {}", run.stdout);
        assert!(run.stderr.contains("overflows f32"), "{}", run.stderr);
    }
    // Within range (and an f64 input far beyond f32's) is fine; inf stays allowed.
    for at in ["3.4e38,1e300", "inf,1", "1,2"] {
        let run = adjit(&["eval", &s(&file), "--at", at]);
        assert_eq!(run.code, 0, "{at}: {}", run.stderr);
    }
}

/// `bench --steps` on a step with a data input: ẋ covers the differentiated inputs only.
#[test]
fn bench_steps_with_a_data_input() {
    let file = scratch(
        "decay_step.ir",
        Some("func @step(%s: f64, data %k: f64) -> f64 {\n    %d = mul %s, %k\n    %n = sub %s, %d\n    ret %n\n}\n"),
    );
    let run = adjit(&[
        "bench",
        &s(&file),
        "--at",
        "1,0.5",
        "--steps",
        "10",
        "--modes",
        "primal,jvp,vjp",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.matches("\"mode\"").count(), 3, "{}", run.stdout);
}

/// Counts beyond memory are errors with advice: a vector JVP with 10¹¹ directions, a taped
/// reverse sweep over 10¹² steps (8 TB of states), the √N scheme over usize::MAX steps.
#[test]
fn extreme_counts_are_errors_with_advice() {
    let rosen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples/rosenbrock.ir");
    let decay = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples/decay.ir");
    let object = scratch("many.o", None);
    for mode in ["jvp99999999999", "jvp18446744073709551615"] {
        let run = adjit(&["compile", &s(&rosen), "--mode", mode, "-o", &s(&object)]);
        assert_eq!(run.code, 1, "{mode}");
        assert!(
            run.stderr.contains("use fewer directions"),
            "{}",
            run.stderr
        );
    }
    let run = adjit(&[
        "dump",
        &s(&rosen),
        "--stage",
        "clif",
        "--mode",
        "jvp4000000000",
    ]);
    // `dump --mode` takes a named mode: a usage error (exit 2), not a crash.
    assert_eq!(run.code, 2);
    for (steps, strategy) in [
        ("1000000000000", "tape"),
        ("18446744073709551615", "uniform"),
    ] {
        let run = adjit(&[
            "vjp",
            &s(&decay),
            "--at",
            "1,0.5",
            "--steps",
            steps,
            "--strategy",
            strategy,
        ]);
        assert_eq!(run.code, 1, "{steps} {strategy}");
        assert!(
            run.stderr.contains("stored states") && run.stderr.contains("checkpoint:S"),
            "{}",
            run.stderr
        );
    }
}

/// `--rows`: `@FILE`, `@-` and `-` like every vector flag; an empty file and a strategy are
/// refused clearly; a function without data inputs takes whole input points per row.
#[test]
fn rows_read_like_vectors_and_refuse_what_they_cannot_do() {
    let line = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples/line.ir");
    let rosen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples/rosenbrock.ir");
    let points = scratch("points.txt", Some("1 2\n3 5\n"));
    let plain = adjit(&[
        "vjp",
        &s(&line),
        "--at",
        "1,1",
        "--rows",
        &s(&points),
        "--json",
    ]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let at_file = format!("@{}", s(&points));
    let run = adjit(&[
        "vjp",
        &s(&line),
        "--at",
        "1,1",
        "--rows",
        &at_file,
        "--json",
    ]);
    assert_eq!(run.stdout, plain.stdout);
    for stdin_name in ["-", "@-"] {
        let out = Command::new(env!("CARGO_BIN_EXE_adjit"))
            .args([
                "vjp",
                &s(&line),
                "--at",
                "1,1",
                "--rows",
                stdin_name,
                "--json",
            ])
            .stdin(std::fs::File::open(&points).unwrap())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            plain.stdout,
            "{stdin_name}"
        );
    }
    let empty = scratch("empty_rows.txt", Some("# nothing here\n\n"));
    let run = adjit(&["eval", &s(&line), "--at", "1,1", "--rows", &s(&empty)]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("no rows"), "{}", run.stderr);
    let run = adjit(&[
        "vjp",
        &s(&line),
        "--at",
        "1,1",
        "--rows",
        &s(&points),
        "--strategy",
        "checkpoint:2",
    ]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("applies to --steps"), "{}", run.stderr);
    // Whole points: the same numbers as one call per point.
    let run = adjit(&["vjp", &s(&rosen), "--rows", &s(&points), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let one = adjit(&["vjp", &s(&rosen), "--at", "3,5", "--json"]);
    assert!(
        one.stdout.contains("\"gradient\": [4804.0, -800.0]"),
        "{}",
        one.stdout
    );
    assert!(
        run.stdout.contains("\"gradient\": [4804.0, -800.0]"),
        "{}",
        run.stdout
    );
    // Without --rows, --at stays required.
    let run = adjit(&["eval", &s(&rosen)]);
    assert_eq!(run.code, 2, "a usage error");
    assert!(run.stderr.contains("--at is required"), "{}", run.stderr);
}

/// One float output beside a `bool` output has a gradient, an HVP and a Hessian; errors name
/// the command they come from.
#[test]
fn a_bool_output_beside_the_float_one_is_fine() {
    let file = scratch(
        "float_and_bool.ir",
        Some(
            "func @f(%x: f64, %y: f64) -> (bool, f64) {\n    %p = mul %x, %y\n    \
             %q = mul %p, %x\n    %c = fcmp.gt %x, %y\n    ret %c, %q\n}\n",
        ),
    );
    let run = adjit(&["hessian", &s(&file), "--at", "2,3", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("\"hessian\": [[6.0, 4.0], [4.0, 0.0]]"),
        "{}",
        run.stdout
    );
    let run = adjit(&["hvp", &s(&file), "--at", "2,3", "--vector", "1,0", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"hvp\": [6.0, 4.0]"), "{}", run.stdout);
    let run = adjit(&["hessian", &s(&file), "--at", "2,3", "--sparse", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let polar = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples/polar.ir");
    let run = adjit(&["hessian", &s(&polar), "--at", "1,2"]);
    assert!(
        run.stderr.contains("a Hessian needs") && !run.stderr.contains("hvp"),
        "{}",
        run.stderr
    );
}

/// `--steps` returns the trajectory and sums a loss over the states, under any strategy.
#[test]
fn steps_trajectory_and_summed_loss() {
    let file = scratch(
        "affine_steps.ir",
        Some(
            "func @step(%s: f64, %theta: f64) -> f64 {\n    %h = mul %s, 0.5\n    \
             %n = add %h, %theta\n    ret %n\n}\n\
             func @square(%s: f64, %theta: f64) -> f64 {\n    %q = mul %s, %s\n    ret %q\n}\n",
        ),
    );
    let f = s(&file);
    let run = adjit(&[
        "eval",
        &f,
        "--func",
        "step",
        "--at",
        "1,0",
        "--steps",
        "3",
        "--trajectory",
    ]);
    assert_eq!(
        run.stdout, "state: 0.5\nstate: 0.25\nstate: 0.125\n",
        "{}",
        run.stderr
    );
    for strategy in ["tape", "checkpoint:1", "uniform"] {
        let run = adjit(&[
            "vjp",
            &f,
            "--func",
            "step",
            "--at",
            "1,0",
            "--steps",
            "3",
            "--sum-loss",
            "square",
            "--strategy",
            strategy,
            "--json",
        ]);
        assert_eq!(
            run.stdout, "{\"loss\": [0.328125], \"gradient\": [0.65625, 2.1875]}\n",
            "{strategy}: {}",
            run.stderr
        );
    }
    let run = adjit(&[
        "jvp",
        &f,
        "--func",
        "step",
        "--at",
        "1,0",
        "--steps",
        "3",
        "--tangent",
        "1,0",
        "--trajectory",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("--trajectory goes with eval"),
        "{}",
        run.stderr
    );
}

/// A deterministic campaign of mutated command lines: each takes a valid invocation and
/// replaces one value by an extreme count or an odd name. None may panic, hang or exit with
/// anything but 0, 1 or 2. `ADJIT_CLI_FUZZ` sets the number of invocations (default 240; a
/// campaign runs thousands).
#[test]
fn mutated_command_lines_never_panic() {
    let rosen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples/rosenbrock.ir");
    let decay = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples/decay.ir");
    let line = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples/line.ir");
    let (r, d, l) = (s(&rosen), s(&decay), s(&line));
    let object = s(&scratch("fuzz_out.o", None));
    let points = s(&scratch("fuzz_points.txt", Some("1 2\n3 4\n")));
    let bases: Vec<Vec<String>> = [
        vec!["eval", &r, "--at", "1,2"],
        vec!["jvp", &r, "--at", "1,2", "--tangent", "1,0"],
        vec!["vjp", &r, "--at", "1,2", "--strategy", "checkpoint:2"],
        vec![
            "vjp",
            &d,
            "--at",
            "1,0.5",
            "--steps",
            "3",
            "--strategy",
            "tape",
        ],
        vec!["jacobian", &r, "--at", "1,2", "--sparse"],
        vec!["hessian", &r, "--at", "1,2", "--sparse", "--json"],
        vec![
            "compile", &r, "--mode", "jvp2", "-o", &object, "--symbol", "fuzz_sym",
        ],
        vec!["dump", &r, "--stage", "sparsity"],
        vec!["vjp", &l, "--at", "1,1", "--rows", &points],
        vec![
            "bench",
            &r,
            "--at",
            "1,2",
            "--modes",
            "primal",
            "--strategies",
            "tape",
        ],
    ]
    .iter()
    .map(|v| v.iter().map(|a| a.to_string()).collect())
    .collect();
    let extremes = [
        "0",
        "-1",
        "4294967296",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
        "1e400",
        "nan",
        "",
        " ",
        "checkpoint:0",
        "checkpoint:18446744073709551615",
        "bytes:0",
        "bytes:1e300",
        "jvp0",
        "jvp18446744073709551615",
        "int",
        "main",
        "floor",
        "__x",
        "a-b",
        "ü",
        "@",
        "@-",
        "-",
        "@/no/such/file",
        ";;",
        ",,,",
        "1,2,3,4,5,6,7,8,9,10,11,12",
    ];
    let runs: u64 = std::env::var("ADJIT_CLI_FUZZ")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(240);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % n
    };
    // Mutated output names (`--out 0`, `-`, …) are written somewhere: not into the crate.
    let scratch = std::env::temp_dir().join(format!("adjit-cli-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    for k in 0..runs {
        let mut args = bases[next(bases.len())].clone();
        // Replace a value (an argument after a flag, or the file) by an extreme token.
        let slots: Vec<usize> = (1..args.len())
            .filter(|&i| !args[i].starts_with("--"))
            .collect();
        let at = slots[next(slots.len())];
        args[at] = extremes[next(extremes.len())].to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_adjit"))
            .args(&args)
            .current_dir(&scratch)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn adjit");
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if start.elapsed() > std::time::Duration::from_secs(20) {
                let _ = child.kill();
                panic!("invocation {k} hung: adjit {args:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        let out = child.wait_with_output().expect("output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && matches!(status.code(), Some(0..=2)),
            "invocation {k}: adjit {args:?} exited {status:?}\n{stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `bench --batch N --lanes L --threads T` reports time per point for each mode.
#[test]
fn bench_batches_report_time_per_point() {
    let rosen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples/rosenbrock.ir");
    for lanes in ["1", "2"] {
        let run = adjit(&[
            "bench",
            &s(&rosen),
            "--at",
            "1,2",
            "--batch",
            "501",
            "--lanes",
            lanes,
            "--threads",
            "2",
            "--modes",
            "primal,jvp,vjp",
            "--json",
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(
            run.stdout.matches("\"ns_per_point\"").count(),
            3,
            "{}",
            run.stdout
        );
        assert!(run
            .stdout
            .contains(&format!("\"lanes\": {lanes}, \"threads\": 2")));
    }
    let run = adjit(&[
        "bench",
        &s(&rosen),
        "--at",
        "1,2",
        "--batch",
        "10",
        "--modes",
        "dense",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("measures primal, jvp and vjp"),
        "{}",
        run.stderr
    );
    let run = adjit(&[
        "bench",
        &s(&rosen),
        "--at",
        "1,2",
        "--batch",
        "18446744073709551615",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
}
