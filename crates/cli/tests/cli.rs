//! The `adjit` binary, run as a user runs it: outputs, JSON contracts, exit codes and error
//! messages, on the example corpus (`ir/examples/*.ir`) and on files written here.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of the binary produced.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn describe(&self) -> String {
        format!(
            "exit {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// Exit 0, empty stderr; returns stdout.
    fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "expected success\n{}", self.describe());
        assert!(
            self.stderr.is_empty(),
            "unexpected stderr\n{}",
            self.describe()
        );
        &self.stdout
    }

    /// Exit `code`, nothing on stdout, no panic; returns stderr.
    fn fails(&self, code: i32) -> &str {
        assert_eq!(self.code, code, "wrong exit status\n{}", self.describe());
        assert!(
            self.stdout.is_empty(),
            "unexpected stdout\n{}",
            self.describe()
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.describe());
        &self.stderr
    }
}

fn adjit<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_adjit"))
        .args(args)
        .output()
        .expect("run adjit");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ir/examples")
        .join(name);
    path.to_string_lossy().into_owned()
}

/// Write `text` to a fresh file named `name` in the test scratch directory.
fn temp_file(name: &str, text: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, text).expect("write scratch file");
    path.to_string_lossy().into_owned()
}

/// Parse `{"key": [numbers or "nan"/"inf"/"-inf"], ...}` as printed by the CLI.
fn json_vectors(json: &str) -> Vec<(String, Vec<f64>)> {
    let body = json
        .trim()
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not a JSON object: {json}"));
    let mut out = Vec::new();
    for field in body.split(']').filter(|f| !f.trim().is_empty()) {
        let field = field.trim().trim_start_matches(',').trim();
        let (key, values) = field
            .split_once(": [")
            .unwrap_or_else(|| panic!("bad field {field}"));
        let key = key.trim_matches('"').to_string();
        let values = values
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| match v {
                "\"nan\"" => f64::NAN,
                "\"inf\"" => f64::INFINITY,
                "\"-inf\"" => f64::NEG_INFINITY,
                number => number
                    .parse()
                    .unwrap_or_else(|_| panic!("bad number {number}")),
            })
            .collect();
        out.push((key, values));
    }
    out
}

const TWO_FUNCS: &str = "\
func @first(%x: f64) -> f64 {
    %y = mul %x, 2.0
    ret %y
}
func @second(%x: f64, %y: f64) -> f64 {
    %z = add %x, %y
    ret %z
}
";

const POLAR: &str = "\
; (r, t) -> (r cos t, r sin t): a square function for the inverse modes.
func @polar(%r: f64, %t: f64) -> (f64, f64) {
    %c = cos %t
    %s = sin %t
    %x = mul %r, %c
    %y = mul %r, %s
    ret %x, %y
}
";

// ---------------------------------------------------------------- check

#[test]
fn check_reports_every_example_ok() {
    let files = [
        "rosenbrock.ir",
        "two.ir",
        "f32.ir",
        "every_op.ir",
        "blackscholes.ir",
        "mlp_small.ir",
        "piecewise.ir",
        "seed000.ir",
        "seed001.ir",
    ]
    .map(example);
    let args: Vec<&str> = std::iter::once("check")
        .chain(files.iter().map(String::as_str))
        .collect();
    let run = adjit(&args);
    let stdout = run.ok();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), files.len(), "{stdout}");
    for (line, file) in lines.iter().zip(&files) {
        assert_eq!(*line, format!("{file}: ok (1 function)"));
    }
    let two = temp_file("check_two.ir", TWO_FUNCS);
    assert_eq!(
        adjit(&["check", &two]).ok(),
        format!("{two}: ok (2 functions)\n")
    );
}

#[test]
fn check_bad_file_shows_line_and_column_and_exits_1() {
    let good = example("rosenbrock.ir");
    let bad = temp_file(
        "check_bad.ir",
        "func @f(%x: f64) -> f64 {\n    %y = mul %x, 2.0\n    %z = sine %y\n    ret %z\n}\n",
    );
    let run = adjit(&["check", &good, &bad]);
    assert_eq!(run.code, 1, "{}", run.describe());
    assert_eq!(run.stdout, format!("{good}: ok (1 function)\n"));
    let expected_prefix = format!("{bad}:3:");
    assert!(
        run.stderr.starts_with(&expected_prefix) && run.stderr.contains(": error: "),
        "{}",
        run.describe()
    );
    assert!(run.stderr.contains("sine"), "{}", run.describe());
}

#[test]
fn check_reads_every_line_end_and_a_byte_order_mark() {
    // CR-only line ends after a comment used to read as one comment line: "ok (0 functions)".
    let cr = temp_file(
        "cr_only.ir",
        "; old Mac line ends\rfunc @f(%x: f64) -> f64 {\r    ret %x\r}\r",
    );
    let bom = temp_file(
        "bom.ir",
        "\u{FEFF}; saved with a byte order mark\r\nfunc @f(%x: f64) -> f64 {\r\n    ret %x\r\n}\r\n",
    );
    assert_eq!(
        adjit(&["check", &cr, &bom]).ok(),
        format!("{cr}: ok (1 function)\n{bom}: ok (1 function)\n")
    );
    let bad = temp_file(
        "cr_only_bad.ir",
        "; comment\rfunc @f(%x: f64) -> f64 {\r    %y = sine %x\r    ret %y\r}\r",
    );
    assert_eq!(
        adjit(&["check", &bad]).fails(1),
        format!("{bad}:3:10: error: unknown opcode 'sine' (did you mean 'sin'?)\n")
    );
}

#[test]
fn check_reports_verifier_errors_with_the_file_name() {
    let bad = temp_file(
        "check_verify.ir",
        "func @f(%x: f64) -> f64 {\n    %a = add %b, 1.0\n    %b = mul %x, %x\n    ret %a\n}\n",
    );
    let stderr = adjit(&["check", &bad]).fails(1).to_string();
    assert!(
        stderr.starts_with(&format!("error: {bad}: @f: ")),
        "{stderr}"
    );
    assert!(stderr.contains("%b"), "{stderr}");
}

#[test]
fn errors_on_eval_are_prefixed_once() {
    let bad = temp_file(
        "eval_bad.ir",
        "func @f(%x: f64) -> f64 {\n    ret %nope\n}\n",
    );
    let stderr = adjit(&["eval", &bad, "--at", "1", "--engine", "interp"])
        .fails(1)
        .to_string();
    assert!(stderr.starts_with(&format!("{bad}:2:")), "{stderr}");
    assert!(!stderr.starts_with("error: error"), "{stderr}");
    let missing = adjit(&["eval", "no/such/file.ir", "--at", "1"])
        .fails(1)
        .to_string();
    assert!(missing.starts_with("error: no/such/file.ir: "), "{missing}");
}

// ---------------------------------------------------------------- eval

#[test]
fn eval_human_and_json() {
    let rosen = example("rosenbrock.ir");
    let human = adjit(&["eval", &rosen, "--at", "1,2", "--engine", "interp"]);
    assert_eq!(human.ok(), "outputs: 100\n");
    let json = adjit(&[
        "eval", &rosen, "--at", "1,2", "--engine", "interp", "--json",
    ]);
    assert_eq!(json.ok(), "{\"outputs\": [100.0]}\n");

    // Two outputs, printed so they round-trip exactly.
    let two = example("two.ir");
    let json = adjit(&["eval", &two, "--at=0.3", "--engine", "interp", "--json"]);
    let fields = json_vectors(json.ok());
    assert_eq!(fields[0].0, "outputs");
    assert_eq!(fields[0].1[0].to_bits(), 0.3f64.sin().to_bits());
    assert_eq!(fields[0].1[1].to_bits(), (0.3f64 * 0.3 * 0.3).to_bits());
    let human = adjit(&["eval", &two, "--at", "0.5", "--engine", "interp"]);
    assert_eq!(human.ok(), format!("outputs: {}, 0.125\n", 0.5f64.sin()));
}

#[test]
fn eval_negative_numbers_and_non_finite_results() {
    let file = temp_file(
        "nonfinite.ir",
        "func @g(%x: f64) -> (f64, f64, f64, f64) {\n    %r = div 1.0, %x\n    %n = neg %r\n    \
         %l = log %x\n    %t = mul %x, 1e-300\n    ret %r, %n, %l, %t\n}\n",
    );
    let json = adjit(&["eval", &file, "--at", "0", "--engine", "interp", "--json"]);
    assert_eq!(
        json.ok(),
        "{\"outputs\": [\"inf\", \"-inf\", \"-inf\", 0.0]}\n"
    );
    let json = adjit(&["eval", &file, "--at", "-2", "--engine", "interp", "--json"]);
    assert_eq!(json.ok(), "{\"outputs\": [-0.5, 0.5, \"nan\", -2e-300]}\n");
    let human = adjit(&["eval", &file, "--at", "-2", "--engine", "interp"]);
    assert_eq!(human.ok(), "outputs: -0.5, 0.5, nan, -2e-300\n");
}

#[test]
fn vectors_from_files_with_comments() {
    let rosen = example("rosenbrock.ir");
    let point = temp_file("point.txt", "# the point\n1.5   # x\n-2\t# y\n");
    let run = adjit(&[
        "eval",
        &rosen,
        "--at",
        &format!("@{point}"),
        "--engine",
        "interp",
    ]);
    // (1 - 1.5)^2 + 100 (-2 - 2.25)^2
    let expected = (1.0f64 - 1.5) * (1.0 - 1.5) + 100.0 * ((-2.0 - 2.25) * (-2.0 - 2.25));
    assert_eq!(run.ok(), format!("outputs: {expected}\n"));
    let spaced = adjit(&["eval", &rosen, "--at", "1.5 -2", "--engine", "interp"]);
    assert_eq!(spaced.ok(), format!("outputs: {expected}\n"));
}

#[test]
fn bad_vectors_are_explained() {
    let rosen = example("rosenbrock.ir");
    let short = adjit(&["eval", &rosen, "--at", "1", "--engine", "interp"]);
    assert_eq!(
        short.fails(1),
        "error: --at has 1 number, @rosenbrock takes 2 inputs\n"
    );
    let long = adjit(&["eval", &rosen, "--at", "1,2,3", "--engine", "interp"]);
    assert_eq!(
        long.fails(1),
        "error: --at has 3 numbers, @rosenbrock takes 2 inputs\n"
    );
    let word = adjit(&["eval", &rosen, "--at", "1,two", "--engine", "interp"]);
    assert_eq!(
        word.fails(1),
        "error: --at: column 3: `two` is not a number\n"
    );
    let in_file = temp_file("bad_point.txt", "1\n2 x\n");
    let run = adjit(&["eval", &rosen, "--at", &format!("@{in_file}")]);
    assert_eq!(
        run.fails(1),
        format!("error: --at @{in_file}: line 2, column 3: `x` is not a number\n")
    );
    let missing = adjit(&["eval", &rosen, "--at", "@/no/such/vector.txt"]);
    assert!(missing
        .fails(1)
        .starts_with("error: --at @/no/such/vector.txt: cannot read"));
}

#[test]
fn empty_vector_entries_are_errors_at_their_place() {
    let rosen = example("rosenbrock.ir");
    let cases = [
        (
            "1,,2",
            "column 3: empty entry (two commas with no number between them)",
        ),
        (
            "1,,2,3",
            "column 3: empty entry (two commas with no number between them)",
        ),
        (
            "1, ,2",
            "column 4: empty entry (two commas with no number between them)",
        ),
        (
            ",1,2",
            "column 1: empty entry (a comma before the first number)",
        ),
        (
            "1,2,",
            "column 4: empty entry (a comma after the last number)",
        ),
        (
            ",",
            "column 1: empty entry (a comma before the first number)",
        ),
    ];
    for (at, message) in cases {
        let run = adjit(&["eval", &rosen, "--at", at, "--engine", "interp"]);
        assert_eq!(
            run.fails(1),
            format!("error: --at: {message}\n"),
            "--at {at:?}"
        );
    }
    // In a file, a comma may end a line: the next number follows it.
    let file = temp_file("commas.txt", "1,\n2\n");
    let ok = adjit(&[
        "eval",
        &rosen,
        "--at",
        &format!("@{file}"),
        "--engine",
        "interp",
    ]);
    assert_eq!(ok.ok(), "outputs: 100\n");
    let file = temp_file("empty_entry.txt", "1,\n, 2\n");
    let run = adjit(&["eval", &rosen, "--at", &format!("@{file}")]);
    assert_eq!(
        run.fails(1),
        format!(
            "error: --at @{file}: line 2, column 1: empty entry (two commas with no number between them)\n"
        )
    );
}

#[test]
fn vector_numbers_out_of_range_are_errors_not_infinity() {
    let rosen = example("rosenbrock.ir");
    let run = adjit(&["eval", &rosen, "--at", "1e400,1", "--engine", "interp"]);
    assert_eq!(
        run.fails(1),
        "error: --at: column 1: `1e400` is out of range for f64\n"
    );
    let run = adjit(&["eval", &rosen, "--at", "1, -1e400", "--engine", "interp"]);
    assert_eq!(
        run.fails(1),
        "error: --at: column 4: `-1e400` is out of range for f64\n"
    );
    // Infinity and NaN spelled out stay accepted, and so does a number that underflows to 0.
    let run = adjit(&[
        "eval",
        &rosen,
        "--at",
        "inf,1e-400",
        "--engine",
        "interp",
        "--json",
    ]);
    assert_eq!(
        json_vectors(run.ok()),
        [("outputs".to_string(), vec![f64::INFINITY])]
    );
    let run = adjit(&[
        "eval", &rosen, "--at", "-inf,nan", "--engine", "interp", "--json",
    ]);
    assert!(json_vectors(run.ok())[0].1[0].is_nan());
}

#[test]
fn a_write_error_on_standard_output_is_reported() {
    // Linux (and most Unixes) have /dev/full, where every write fails with ENOSPC.
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("no /dev/full here: skipped");
        return;
    };
    let rosen = example("rosenbrock.ir");
    let out = Command::new(env!("CARGO_BIN_EXE_adjit"))
        .args(["eval", &rosen, "--at", "1,2", "--engine", "interp"])
        .stdout(full)
        .output()
        .expect("run adjit");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.starts_with("error: writing output: No space left on device"),
        "stderr: {stderr}"
    );
    // Help text goes to standard output as well.
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_adjit"))
        .arg("--help")
        .stdout(full)
        .output()
        .expect("run adjit");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.starts_with("error: writing output: No space left on device"),
        "stderr: {stderr}"
    );
    // A closed pipe is not an error: the reader stopped on purpose.
    let mut child = Command::new(env!("CARGO_BIN_EXE_adjit"))
        .args(["dump", &rosen, "--stage", "ir"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run adjit");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait for adjit");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
}

#[test]
fn function_choice() {
    let file = temp_file("choose.ir", TWO_FUNCS);
    let run = adjit(&["eval", &file, "--at", "1", "--engine", "interp"]);
    assert_eq!(
        run.fails(1),
        format!(
            "error: {file} defines 2 functions (@first, @second); choose one with --func NAME\n"
        )
    );
    let first = adjit(&[
        "eval", &file, "--func", "first", "--at", "4", "--engine", "interp",
    ]);
    assert_eq!(first.ok(), "outputs: 8\n");
    let second = adjit(&[
        "eval", &file, "--func", "@second", "--at", "4,0.5", "--engine", "interp",
    ]);
    assert_eq!(second.ok(), "outputs: 4.5\n");
    let unknown = adjit(&[
        "eval", &file, "--func", "third", "--at", "1", "--engine", "interp",
    ]);
    assert_eq!(
        unknown.fails(1),
        format!("error: {file} has no function @third; it defines @first, @second\n")
    );
}

#[test]
fn eval_uses_the_jit_by_default() {
    let rosen = example("rosenbrock.ir");
    assert_eq!(
        adjit(&["eval", &rosen, "--at", "1,2"]).ok(),
        "outputs: 100\n"
    );
    let jit = adjit(&[
        "eval",
        &example("blackscholes.ir"),
        "--at",
        "100,95,0.05,0.2,1",
        "--json",
    ]);
    let interp = adjit(&[
        "eval",
        &example("blackscholes.ir"),
        "--at",
        "100,95,0.05,0.2,1",
        "--json",
        "--engine",
        "interp",
    ]);
    assert_eq!(jit.ok(), interp.ok());
}

// ---------------------------------------------------------------- derivatives

#[test]
fn jvp_of_rosenbrock() {
    let rosen = example("rosenbrock.ir");
    // ∂f/∂x = -2(1-x) - 400x(y-x²), ∂f/∂y = 200(y-x²); at (0,0): (-2, 0).
    let run = adjit(&[
        "jvp",
        &rosen,
        "--at",
        "0,0",
        "--tangent",
        "1,0",
        "--engine",
        "interp",
    ]);
    assert_eq!(run.ok(), "outputs: 1\ntangents: -2\n");
    // At (1,2): f = 100, ∇f = (-400, 200); tangent (0.5, 1) gives -200 + 200 = 0.
    let run = adjit(&[
        "jvp",
        &rosen,
        "--at",
        "1,2",
        "--tangent",
        "0.5,1",
        "--engine",
        "interp",
        "--json",
    ]);
    assert_eq!(run.ok(), "{\"outputs\": [100.0], \"tangents\": [0.0]}\n");
    let short = adjit(&[
        "jvp",
        &rosen,
        "--at",
        "1,2",
        "--tangent",
        "1",
        "--engine",
        "interp",
    ]);
    assert_eq!(
        short.fails(1),
        "error: --tangent has 1 number, @rosenbrock takes 2 inputs\n"
    );
}

#[test]
fn vjp_of_rosenbrock_with_implicit_cotangent() {
    let rosen = example("rosenbrock.ir");
    let at_min = adjit(&["vjp", &rosen, "--at", "1,1", "--engine", "interp", "--json"]);
    // Compared as numbers: the exact zero may carry either sign.
    let fields = json_vectors(at_min.ok());
    assert_eq!(fields[0], ("outputs".to_string(), vec![0.0]));
    assert_eq!(fields[1], ("gradient".to_string(), vec![0.0, 0.0]));
    let at_origin = adjit(&["vjp", &rosen, "--at", "0,0", "--engine", "interp"]);
    assert_eq!(at_origin.ok(), "outputs: 1\ngradient: -2, 0\n");
    let scaled = adjit(&[
        "vjp",
        &rosen,
        "--at",
        "1,2",
        "--cotangent",
        "0.5",
        "--engine",
        "interp",
    ]);
    assert_eq!(scaled.ok(), "outputs: 100\ngradient: -200, 100\n");
}

#[test]
fn vjp_of_several_outputs_needs_a_cotangent() {
    let two = example("two.ir");
    let run = adjit(&["vjp", &two, "--at", "0.5", "--engine", "interp"]);
    assert_eq!(
        run.fails(1),
        "error: --cotangent is required: @two returns 2 float outputs\n"
    );
    let run = adjit(&[
        "vjp",
        &two,
        "--at",
        "0.5",
        "--cotangent",
        "1",
        "--engine",
        "interp",
    ]);
    assert_eq!(
        run.fails(1),
        "error: --cotangent has 1 number, @two returns 2 outputs\n"
    );
    // d/dx (w0 sin x + w1 x³) at 0.5 with w = (0, 2): 6 · 0.25.
    let run = adjit(&[
        "vjp",
        &two,
        "--at",
        "0.5",
        "--cotangent",
        "0,2",
        "--engine",
        "interp",
    ]);
    assert_eq!(
        run.ok(),
        format!("outputs: {}, 0.125\ngradient: 1.5\n", 0.5f64.sin())
    );
}

#[test]
fn vjp_strategies_agree_with_the_tape() {
    let rosen = example("rosenbrock.ir");
    for strategy in [
        "tape",
        "checkpoint:1",
        "checkpoint:3",
        "bytes:4096",
        "uniform",
    ] {
        let run = adjit(&[
            "vjp",
            &rosen,
            "--at",
            "0,0",
            "--strategy",
            strategy,
            "--json",
        ]);
        assert_eq!(
            run.ok(),
            "{\"outputs\": [1.0], \"gradient\": [-2.0, 0.0]}\n",
            "{strategy}"
        );
    }
}

#[test]
fn vjp_strategies_agree_on_a_longer_program() {
    let file = example("blackscholes.ir");
    let run = |strategy: &str| {
        let args = [
            "vjp",
            &file,
            "--at",
            "100,95,0.05,0.2,1",
            "--strategy",
            strategy,
            "--json",
        ];
        json_vectors(adjit(&args).ok())
    };
    let tape = run("tape");
    assert_eq!(tape[1].1.len(), 5);
    for strategy in ["checkpoint:1", "checkpoint:2", "bytes:320", "uniform"] {
        let other = run(strategy);
        assert_eq!(other[0], tape[0], "{strategy}: outputs differ");
        for (a, b) in other[1].1.iter().zip(&tape[1].1) {
            assert!(
                (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                "{strategy}: {other:?} vs {tape:?}"
            );
        }
    }
}

#[test]
fn inverse_modes_of_polar() {
    let polar = temp_file("polar.ir", POLAR);
    // At (r, t) = (2, 0): J = [[1, 0], [0, 2]], so J⁻¹(0, 1) = J⁻ᵀ(0, 1) = (0, 0.5).
    for mode in ["reverse", "forward", "dense"] {
        let run = adjit(&[
            "inverse", &polar, "--at", "2,0", "--vector", "0,1", "--mode", mode, "--engine",
            "interp", "--json",
        ]);
        assert_eq!(
            run.ok(),
            "{\"outputs\": [2.0, 0.0], \"result\": [0.0, 0.5]}\n",
            "{mode}"
        );
    }
}

#[test]
fn inverse_undoes_jvp_and_vjp_on_both_engines() {
    // J⁻¹(J v) = v and J⁻ᵀ(Jᵀ w) = w at a point where J is dense, chaining the CLI's own
    // JSON output back into its input.
    let polar = temp_file("polar_roundtrip.ir", POLAR);
    let at = "1.5,0.7";
    let seed = [0.25, -2.0];
    let seed_arg = "0.25,-2";
    let vector = |args: &[&str], key: &str| -> Vec<f64> {
        let fields = json_vectors(adjit(args).ok());
        fields
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .unwrap()
    };
    let as_arg = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:?}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    for engine in ["jit", "interp"] {
        let jv = vector(
            &[
                "jvp",
                &polar,
                "--at",
                at,
                "--tangent",
                seed_arg,
                "--engine",
                engine,
                "--json",
            ],
            "tangents",
        );
        let jtw = vector(
            &[
                "vjp",
                &polar,
                "--at",
                at,
                "--cotangent",
                seed_arg,
                "--engine",
                engine,
                "--json",
            ],
            "gradient",
        );
        for (mode, product) in [("reverse", &jv), ("dense", &jv), ("forward", &jtw)] {
            let back = vector(
                &[
                    "inverse",
                    &polar,
                    "--at",
                    at,
                    "--vector",
                    &as_arg(product),
                    "--mode",
                    mode,
                    "--engine",
                    engine,
                    "--json",
                ],
                "result",
            );
            for (b, s) in back.iter().zip(seed) {
                assert!(
                    (b - s).abs() <= 1e-13,
                    "{engine} {mode}: {back:?} vs {seed:?}"
                );
            }
        }
    }
}

#[test]
fn inverse_needs_a_square_function() {
    let rosen = example("rosenbrock.ir");
    let run = adjit(&[
        "inverse", &rosen, "--at", "1,2", "--vector", "1", "--mode", "dense",
    ]);
    assert_eq!(
        run.fails(1),
        "error: inverse modes need a square function, but @rosenbrock takes 2 inputs and returns 1 outputs\n"
    );
    let polar = temp_file("polar_short.ir", POLAR);
    let run = adjit(&["inverse", &polar, "--at", "2,0", "--vector", "1"]);
    assert_eq!(
        run.fails(1),
        "error: --vector has 1 number, @polar takes 2 inputs\n"
    );
}

// ---------------------------------------------------------------- dump, bench, compile

#[test]
fn dump_ir_to_stdout_and_file() {
    let rosen = example("rosenbrock.ir");
    let printed = adjit(&["dump", &rosen, "--stage", "ir"]).ok().to_string();
    assert!(
        printed.starts_with("func @rosenbrock(%x: f64, %y: f64) -> f64 {\n"),
        "{printed}"
    );
    assert!(printed.contains("    %a = sub 1.0, %x\n"), "{printed}");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests/rosen_dump.ir");
    let _ = std::fs::remove_file(&out);
    let out_arg = out.to_string_lossy().into_owned();
    let run = adjit(&["dump", &rosen, "--stage", "ir", "-o", &out_arg]);
    assert_eq!(run.ok(), "");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), printed);
    // The dumped text is a valid file again.
    let reread = adjit(&["check", &out_arg]);
    assert!(reread.ok().ends_with(": ok (1 function)\n"));
}

#[test]
fn dump_vjp_is_a_program_of_inputs_and_cotangents() {
    let rosen = example("rosenbrock.ir");
    let text = adjit(&["dump", &rosen, "--stage", "vjp"]).ok().to_string();
    let header = text.lines().next().unwrap_or("");
    // Three parameters (x, y and the cotangent), three results (f and the gradient).
    assert_eq!(header.matches(": f64").count(), 3, "{text}");
    assert!(header.ends_with("-> (f64, f64, f64) {"), "{text}");
}

#[test]
fn usage_errors_exit_2() {
    let rosen = example("rosenbrock.ir");
    assert!(adjit(&["eval", &rosen]).fails(2).contains("--at"));
    assert!(adjit(&["dump", &rosen, "--stage", "nonsense"])
        .fails(2)
        .contains("nonsense"));
    let bad_strategy = adjit(&["vjp", &rosen, "--at", "0,0", "--strategy", "revolve"]);
    assert!(bad_strategy.fails(2).contains("unknown strategy `revolve`"));
    assert!(adjit(&["frobnicate"]).fails(2).contains("frobnicate"));
    assert!(adjit::<&str>(&[]).fails(2).contains("Usage"));
}

#[test]
fn bench_json_rows() {
    let rosen = example("rosenbrock.ir");
    let run = adjit(&[
        "bench",
        &rosen,
        "--at",
        "1,2",
        "--modes",
        "primal,jvp,vjp",
        "--json",
    ]);
    let json = run.ok();
    assert!(
        json.starts_with("{\"rows\": [{\"mode\": \"primal\", \"strategy\": null, "),
        "{json}"
    );
    assert!(
        json.contains("{\"mode\": \"jvp\", \"strategy\": null, \"compile_ms\": "),
        "{json}"
    );
    assert!(
        json.contains("{\"mode\": \"vjp\", \"strategy\": \"tape\", \"compile_ms\": "),
        "{json}"
    );
    for key in ["compile_ms", "ns_per_call", "peak_bytes", "recomputed_ops"] {
        assert_eq!(
            json.matches(&format!("\"{key}\": ")).count(),
            3,
            "{key}: {json}"
        );
    }
    // Times are positive numbers; a tape holds at least one f64.
    let number_after = |key: &str, from: usize| -> f64 {
        let at = json[from..].find(&format!("\"{key}\": ")).unwrap() + from + key.len() + 4;
        let end = json[at..].find([',', '}']).unwrap() + at;
        json[at..end].parse().unwrap()
    };
    let vjp_at = json.find("\"vjp\"").unwrap();
    assert!(number_after("ns_per_call", vjp_at) > 0.0, "{json}");
    assert!(number_after("compile_ms", vjp_at) > 0.0, "{json}");
    assert!(number_after("peak_bytes", vjp_at) >= 8.0, "{json}");
    assert_eq!(number_after("recomputed_ops", vjp_at), 0.0, "{json}");
}

#[test]
fn bench_json_rows_for_checkpointing() {
    let rosen = example("rosenbrock.ir");
    let run = adjit(&[
        "bench",
        &rosen,
        "--at",
        "1,2",
        "--modes",
        "primal,vjp",
        "--strategies",
        "tape,checkpoint:2",
        "--json",
    ]);
    let json = run.ok();
    assert!(
        json.starts_with("{\"rows\": [{\"mode\": \"primal\", \"strategy\": null, "),
        "{json}"
    );
    assert!(
        json.contains("{\"mode\": \"vjp\", \"strategy\": \"tape\", \"compile_ms\": "),
        "{json}"
    );
    assert!(json.contains("\"strategy\": \"checkpoint:2\""), "{json}");
    for key in ["compile_ms", "ns_per_call", "peak_bytes", "recomputed_ops"] {
        assert_eq!(
            json.matches(&format!("\"{key}\": ")).count(),
            3,
            "{key}: {json}"
        );
    }
}

#[test]
fn bench_table_and_plot() {
    let rosen = example("rosenbrock.ir");
    let plot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests/rosen_bench.svg");
    let _ = std::fs::remove_file(&plot);
    let plot_arg = plot.to_string_lossy().into_owned();
    let run = adjit(&[
        "bench",
        &rosen,
        "--at",
        "1,2",
        "--modes",
        "primal,jvp,vjp",
        "--plot",
        &plot_arg,
    ]);
    // Not a terminal: no progress on stderr (`ok` checks it is empty).
    let table = run.ok();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[0].starts_with("mode"), "{table}");
    assert!(lines[1].starts_with("primal  -"), "{table}");
    assert!(lines[2].starts_with("jvp     -"), "{table}");
    assert!(lines[3].starts_with("vjp     tape"), "{table}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    // Time against memory: only the tape row stores intermediates (primal and jvp keep none).
    assert_eq!(svg.matches("<circle").count(), 1, "{svg}");
    assert!(svg.contains(">vjp tape</text>"), "{svg}");
    assert!(svg.contains("time per call against peak memory"), "{svg}");
}

#[test]
fn compile_writes_object_and_header() {
    let rosen = example("rosenbrock.ir");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests/rosen_vjp.o");
    let run = adjit(&[
        "compile".as_ref(),
        rosen.as_ref(),
        "--mode".as_ref(),
        "vjp".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(run.ok().starts_with("wrote "));
    let object = std::fs::read(&out).unwrap();
    assert!(object.starts_with(b"\x7fELF") || object.starts_with(&[0xcf, 0xfa, 0xed, 0xfe]));
    let header = std::fs::read_to_string(out.with_extension("h")).unwrap();
    assert!(header.contains("rosenbrock"), "{header}");
}

// ---------------------------------------------------------------- help and robustness

#[test]
fn help_documents_every_command_with_examples() {
    let top = adjit(&["--help"]);
    let text = top.ok();
    for command in [
        "check", "eval", "jvp", "vjp", "inverse", "dump", "bench", "compile",
    ] {
        assert!(text.contains(command), "{command} missing from --help");
        let sub = adjit(&[command, "--help"]);
        let help = sub.ok();
        assert!(help.contains("Example"), "{command} --help has no example");
    }
    let eval_help = adjit(&["eval", "--help"]).ok().to_string();
    assert!(eval_help.contains("\"nan\""), "{eval_help}");
    assert!(eval_help.contains("@PATH"), "{eval_help}");
}

#[test]
fn never_panics_on_odd_input() {
    let rosen = example("rosenbrock.ir");
    let empty = temp_file("empty.ir", "");
    let garbage = temp_file("garbage.ir", "\u{0}\u{1}func @(((%%% -> ->\n}}}}\n");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .to_string_lossy()
        .into_owned();
    let cases: Vec<Vec<&str>> = vec![
        vec!["check", &empty],
        vec!["check", &garbage],
        vec!["check", &dir],
        vec!["eval", &empty, "--at", "1"],
        vec!["eval", &garbage, "--at", "1"],
        vec!["eval", &rosen, "--at", ""],
        vec!["eval", &rosen, "--at", ",,,"],
        vec!["eval", &rosen, "--at", "@"],
        vec!["eval", &rosen, "--at", "1e999999,nan", "--engine", "interp"],
        vec!["eval", &rosen, "--func", "", "--at", "1,2"],
        vec![
            "vjp",
            &rosen,
            "--at",
            "1,2",
            "--cotangent",
            "",
            "--engine",
            "interp",
        ],
        vec![
            "vjp",
            &rosen,
            "--at",
            "1,2",
            "--strategy",
            "checkpoint:99999999999999999999",
        ],
        vec![
            "dump",
            &rosen,
            "--stage",
            "ir",
            "-o",
            "/no/such/dir/out.txt",
        ],
        vec![
            "bench",
            &rosen,
            "--at",
            "1,2",
            "--modes",
            "dense",
            "--plot",
            "/no/such/dir/p.svg",
        ],
    ];
    for args in cases {
        let run = adjit(&args);
        assert!(
            !run.stderr.contains("panicked"),
            "{args:?}\n{}",
            run.describe()
        );
        assert!(
            run.code == 0 || run.code == 1 || run.code == 2,
            "{args:?}\n{}",
            run.describe()
        );
        if run.code != 0 {
            assert!(
                run.stderr.contains("error"),
                "{args:?}: failure without a message\n{}",
                run.describe()
            );
        }
    }
}

#[test]
fn jit_and_interpreter_agree_through_the_cli() {
    // Every example, at a point where all its operations are smooth: the JIT's JSON numbers
    // match the interpreter's (exactly, or within 1 ulp where math-library calls are involved).
    let mut files: Vec<PathBuf> = std::fs::read_dir(example(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for file in files {
        let funcs = adjit::load(&file).unwrap();
        let path = file.to_string_lossy().into_owned();
        for func in funcs {
            let at: Vec<String> = (0..func.n_params)
                .map(|i| format!("{}", 0.3 + 0.1 * i as f64))
                .collect();
            let at = at.join(",");
            for command in ["eval", "vjp"] {
                if command == "vjp" && func.ret_types.iter().filter(|t| t.is_float()).count() != 1 {
                    continue;
                }
                let run = |engine: &str| {
                    let args = [command, &path, "--func", &func.name, "--at", &at, "--json"];
                    let mut args: Vec<&str> = args.to_vec();
                    args.extend(["--engine", engine]);
                    json_vectors(adjit(&args).ok())
                };
                let (jit, interp) = (run("jit"), run("interp"));
                assert_eq!(jit.len(), interp.len());
                for ((key, a), (_, b)) in jit.iter().zip(&interp) {
                    assert_eq!(a.len(), b.len());
                    for (x, y) in a.iter().zip(b) {
                        let ulps = (x.to_bits() as i64 - y.to_bits() as i64).unsigned_abs();
                        assert!(
                            ulps <= 1 || (x.is_nan() && y.is_nan()),
                            "{command} @{} {key}: jit {x:?} vs interp {y:?}",
                            func.name
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn data_inputs_get_no_tangents_or_adjoints() {
    let fit = example("fit.ir");
    let at = "2,-0.5,0,1,2,2.1,1.2,0.7";
    let jvp = adjit(&["jvp", &fit, "--at", at, "--tangent", "1,0", "--json"]);
    let jvp = jvp.ok();
    assert_eq!(json_vectors(jvp)[1].1.len(), 1, "{jvp}");
    for strategy in ["tape", "checkpoint:1", "uniform"] {
        let run = adjit(&["vjp", &fit, "--at", at, "--strategy", strategy, "--json"]);
        let vjp = run.ok();
        let gradient = &json_vectors(vjp)[1].1;
        assert_eq!(gradient.len(), 2, "{strategy}: {vjp}");
    }
    let wrong = adjit(&["jvp", &fit, "--at", at, "--tangent", "1,0,0,0,0,0,0,0"]);
    let message = wrong.fails(1);
    assert!(
        message.contains("@fit takes 2 differentiated inputs (its 6 data inputs get none)"),
        "{message}"
    );
}

#[test]
fn bool_inputs_take_only_zero_or_one() {
    let f = temp_file(
        "pick.ir",
        "func @pick(%c: bool, %x: f64) -> f64 {\n    %y = select %c, %x, 2.0\n    ret %y\n}\n",
    );
    assert!(adjit(&["eval", &f, "--at", "1,3"]).ok().contains("3"));
    for bad in ["0.5,3", "nan,3", "2,3"] {
        let run = adjit(&["eval", &f, "--at", bad]);
        let message = run.fails(1);
        assert!(
            message.contains("is a bool: give 0 or 1"),
            "{bad}: {message}"
        );
    }
}

const LINE_FIT: &str = "func @line(%a: f64, %b: f64, data %t: f64, data %y: f64) -> f64 {
  %p = mul %a, %t
  %q = add %p, %b
  %r = sub %q, %y
  %s = mul %r, %r
  ret %s
}
";

#[test]
fn rows_give_one_output_row_per_data_row() {
    let ir = temp_file("line_fit.ir", LINE_FIT);
    let rows = temp_file("line_rows.txt", "0 1\n1, 3\n# a comment\n\n2 5\n");
    let at = ["--at", "1,1", "--rows", &rows];
    let run = adjit(&[&["eval", &ir][..], &at].concat());
    assert_eq!(run.ok(), "outputs: 0\noutputs: 1\noutputs: 4\n");
    let run = adjit(&[&["vjp", &ir, "--json"][..], &at].concat());
    assert_eq!(
        run.ok(),
        "[{\"outputs\": [0.0], \"gradient\": [0.0, 0.0]},\n \
         {\"outputs\": [1.0], \"gradient\": [-2.0, -2.0]},\n \
         {\"outputs\": [4.0], \"gradient\": [-8.0, -4.0]}]\n"
    );
    let run = adjit(&[&["jvp", &ir, "--tangent", "1,0"][..], &at].concat());
    assert_eq!(
        run.ok(),
        "outputs: 0; tangents: 0\noutputs: 1; tangents: -2\noutputs: 4; tangents: -8\n"
    );
    let bad = temp_file("line_bad_rows.txt", "1 2\n1 2 3\n");
    let run = adjit(&["eval", &ir, "--at", "1,1", "--rows", &bad]);
    assert!(
        run.fails(1)
            .contains("line 2 has 3 numbers, expected 2 (one per data input)"),
        "{}",
        run.stderr
    );
}

#[test]
fn steps_iterate_a_step_function_under_every_strategy() {
    let ir = temp_file(
        "decay_step.ir",
        "func @decay(%s: f64, %k: f64) -> f64 {\n  %a = mul %k, %s\n  %b = mul 0.1, %a\n  %n = sub %s, %b\n  ret %n\n}\n",
    );
    let tape = adjit(&["vjp", &ir, "--at", "1,0.5", "--steps", "100"]);
    for strategy in ["checkpoint:3", "uniform", "bytes:4096"] {
        let run = adjit(&[
            "vjp",
            &ir,
            "--at",
            "1,0.5",
            "--steps",
            "100",
            "--strategy",
            strategy,
        ]);
        assert_eq!(run.ok(), tape.ok(), "{strategy}");
    }
    let eval = adjit(&["eval", &ir, "--at", "1,0.5", "--steps", "100"]);
    assert!(tape.ok().starts_with(eval.ok()), "{}", eval.stdout);
    let run = adjit(&["eval", &ir, "--at", "1", "--steps", "3"]);
    assert!(
        run.fails(1).contains("x has 1 numbers, expected 2"),
        "{}",
        run.stderr
    );
}
