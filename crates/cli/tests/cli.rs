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
fn check_reports_verifier_errors_at_their_place_with_the_users_names() {
    let bad = temp_file(
        "check_verify.ir",
        "func @f(%x: f64) -> f64 {\n    %a = add %b, 1.0\n    %b = mul %x, %x\n    ret %a\n}\n",
    );
    let stderr = adjit(&["check", &bad]).fails(1).to_string();
    assert_eq!(
        stderr,
        format!("{bad}:2:5: error: %a uses %b before its definition\n    in: %a = add %b, 1.0\n"),
    );
    // A renamed duplicate is shown as the user wrote it, with the first definition's place.
    let twice = temp_file(
        "check_twice.ir",
        "func @f(%x: f64) -> f64 {\n    %r = neg %x\n    %r = sub %r, 2.0\n    ret %r\n}\n",
    );
    let stderr = adjit(&["check", &twice]).fails(1).to_string();
    assert!(
        stderr.contains(&format!(
            "{twice}:3:5: error: redefinition of %r (first defined at 2:5)"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("in: %r = sub %r, 2.0"), "{stderr}");
    let ret = temp_file(
        "check_ret.ir",
        "func @f(%x: f64) -> f32 {\n    %a = neg %x\n    ret %a\n}\n",
    );
    let stderr = adjit(&["check", &ret]).fails(1).to_string();
    assert!(stderr.contains(&format!("{ret}:3:5: error: ")), "{stderr}");
    assert!(stderr.contains("in: ret %a"), "{stderr}");
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
        "error: @rosenbrock is not square: 2 float inputs, 1 float outputs (inverse modes need n inputs and n outputs, all f32/f64)\n"
    );
    // Data inputs are named as the reason, also when they make the count differ.
    let data = temp_file(
        "inverse_data.ir",
        "func @f(%a: f64, data %t: f64, %b: f64) -> (f64, f64) {\n    %y = mul %a, %t\n    ret %y, %b\n}\n",
    );
    let run = adjit(&["inverse", &data, "--at", "1,2,3", "--vector", "1,1"]);
    assert!(
        run.fails(1).contains("@f has data inputs (%t)") && !run.stderr.contains("square"),
        "{}",
        run.stderr
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
fn dump_lanes_2_prints_the_two_point_kernels() {
    let rosen = example("rosenbrock.ir");
    let one = adjit(&["dump", &rosen, "--stage", "clif", "--mode", "vjp"])
        .ok()
        .to_string();
    let two = adjit(&[
        "dump", &rosen, "--stage", "clif", "--mode", "vjp", "--lanes", "2",
    ])
    .ok()
    .to_string();
    assert!(!one.contains("f64x2"), "{one}");
    // Inputs and outputs are whole vectors of the interleaved pair buffers.
    assert!(two.contains("load.f64x2"), "{two}");
    assert!(
        !two.contains("insertlane") && !two.contains("extractlane"),
        "{two}"
    );
    assert!(adjit(&["dump", &rosen, "--stage", "asm", "--lanes", "3"])
        .fails(2)
        .contains("3"));
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

/// `--rolled` adds a row per mode kept rolled through the pipeline: the 10,000-term
/// Rosenbrock's VJP compiles as one loop (code of a few hundred bytes, not the 10,000
/// terms' worth), and a program under the rolling threshold compiles as usual.
#[test]
fn bench_rolled_rows() {
    let rosen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/bench/rosenbrock10000.ir");
    let at = vec!["0.9"; 10_000].join(",");
    let rosen = rosen.to_str().expect("utf-8 path");
    let run = adjit(&[
        "bench", rosen, "--at", &at, "--modes", "vjp", "--rolled", "--json",
    ]);
    let json = run.ok();
    let rolled_at = json
        .find("{\"mode\": \"vjp\", \"strategy\": \"rolled\"")
        .unwrap_or_else(|| panic!("{json}"));
    let number_after = |key: &str, from: usize| -> f64 {
        let at = json[from..].find(&format!("\"{key}\": ")).unwrap() + from + key.len() + 4;
        let end = json[at..].find([',', '}']).unwrap() + at;
        json[at..end].parse().unwrap()
    };
    assert!(number_after("code_bytes", rolled_at) < 2_000.0, "{json}");
    // The reverse sweep runs inside the forward loop.
    assert_eq!(number_after("loops", rolled_at), 1.0, "{json}");
    let small_run = adjit(&[
        "bench",
        &example("rosenbrock.ir"),
        "--at",
        "1,2",
        "--modes",
        "primal",
        "--rolled",
    ]);
    let small = small_run.ok();
    assert!(small.contains("primal  rolled"), "{small}");
    let batch = adjit(&[
        "bench",
        &example("rosenbrock.ir"),
        "--at",
        "1,2",
        "--batch",
        "10",
        "--rolled",
    ]);
    assert!(batch.fails(2).contains("--rolled"));
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
        "check", "eval", "jvp", "vjp", "hvp", "jacobian", "hessian", "inverse", "dump", "bench",
        "compile",
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
        vec!["hessian", &rosen, "--at", "nan,inf"],
        vec!["hessian", &rosen, "--at", "1"],
        vec!["jacobian", &rosen, "--at", "1,2", "--mode", "sideways"],
        vec!["hvp", &rosen, "--at", "1,2", "--vector", ""],
        vec!["jvp", &rosen, "--at", "1,2", "--tangents", ";;"],
        vec!["jvp", &rosen, "--at", "1,2", "--tangents", "@/no/such/file"],
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

/// One memory model: the peak `bench` reports for the tape is a budget `bytes:N` accepts, and
/// one byte less is refused with that figure as the smallest that works.
#[test]
fn bench_tape_figure_is_a_budget_bytes_accepts() {
    let rosen = example("rosenbrock.ir");
    let run = adjit(&["bench", &rosen, "--at", "1,2", "--modes", "vjp", "--json"]);
    let json = run.ok();
    let at = json.find("\"peak_bytes\": ").expect("a peak_bytes field") + 14;
    let digits: String = json[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let peak: u64 = digits.parse().expect("a number");
    let fits = format!("bytes:{peak}");
    adjit(&["vjp", &rosen, "--at", "1,2", "--strategy", &fits]).ok();
    let tight = format!("bytes:{}", peak - 1);
    let refused = adjit(&["vjp", &rosen, "--at", "1,2", "--strategy", &tight]);
    let message = refused.fails(1);
    assert!(
        message.contains(&format!("the smallest that works needs {peak} bytes")),
        "{message}"
    );
}

// ---- Jacobians, Hessians, HVPs and several tangents ------------------------------------------

/// A JSON value as the CLI prints it: numbers (or "nan"/"inf"/"-inf"), arrays, objects.
#[derive(Debug, Clone)]
enum Json {
    Number(f64),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn parse(text: &str) -> Json {
        let mut chars = text.trim().chars().peekable();
        let value = Json::value(&mut chars);
        assert!(chars.next().is_none(), "trailing text in {text}");
        value
    }

    fn value(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Json {
        let skip = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        };
        let string = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            assert_eq!(chars.next(), Some('"'));
            chars.by_ref().take_while(|&c| c != '"').collect::<String>()
        };
        skip(chars);
        let value = match chars.peek().copied() {
            Some('{') | Some('[') => {
                let object = chars.next() == Some('{');
                let mut fields = Vec::new();
                let mut items = Vec::new();
                skip(chars);
                if matches!(chars.peek(), Some('}') | Some(']')) {
                    chars.next();
                } else {
                    loop {
                        skip(chars);
                        if object {
                            let key = string(chars);
                            skip(chars);
                            assert_eq!(chars.next(), Some(':'));
                            fields.push((key, Json::value(chars)));
                        } else {
                            items.push(Json::value(chars));
                        }
                        skip(chars);
                        match chars.next() {
                            Some(',') => continue,
                            Some('}') | Some(']') => break,
                            other => panic!("unexpected {other:?}"),
                        }
                    }
                }
                if object {
                    Json::Object(fields)
                } else {
                    Json::Array(items)
                }
            }
            Some('"') => Json::Number(match string(chars).as_str() {
                "nan" => f64::NAN,
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                other => panic!("unexpected string {other}"),
            }),
            _ => {
                let mut number = String::new();
                while chars
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || "+-.eE".contains(*c))
                {
                    number.extend(chars.next());
                }
                Json::Number(
                    number
                        .parse()
                        .unwrap_or_else(|_| panic!("bad number {number}")),
                )
            }
        };
        skip(chars);
        value
    }

    fn field(&self, key: &str) -> &Json {
        match self {
            Json::Object(fields) => fields
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v)
                .unwrap_or_else(|| panic!("no field {key} in {self:?}")),
            _ => panic!("not an object: {self:?}"),
        }
    }

    fn vector(&self) -> Vec<f64> {
        match self {
            Json::Array(items) => items
                .iter()
                .map(|item| match item {
                    Json::Number(x) => *x,
                    other => panic!("not a number: {other:?}"),
                })
                .collect(),
            other => panic!("not an array: {other:?}"),
        }
    }

    /// An array of rows, flattened row-major, with its row count.
    fn matrix(&self) -> (usize, Vec<f64>) {
        match self {
            Json::Array(rows) => (rows.len(), rows.iter().flat_map(Json::vector).collect()),
            other => panic!("not an array of rows: {other:?}"),
        }
    }
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn load(name: &str) -> adjit::Function {
    adjit::load(Path::new(&example(name))).unwrap().remove(0)
}

fn csv(x: &[f64]) -> String {
    x.iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `derivative` (one entry per output of `f`) against central differences of `f` along `dir`
/// at `x`, with the house tolerance (tests/corpus/derivs.rs): step h = 2⁻²⁰·max(1, |x|∞),
/// Richardson estimate of the truncation error, rounding noise, and 1e-10 relative.
fn check_fd(
    what: &str,
    f: &dyn Fn(&[f64]) -> Vec<f64>,
    x: &[f64],
    dir: &[f64],
    derivative: &[f64],
) {
    let h = 2f64.powi(-20) * x.iter().fold(1.0f64, |m, t| m.max(t.abs()));
    let at = |t: f64| {
        let xt: Vec<f64> = x.iter().zip(dir).map(|(a, d)| a + t * d).collect();
        f(&xt)
    };
    let (y, p1, m1, p2, m2) = (f(x), at(h), at(-h), at(2.0 * h), at(-2.0 * h));
    assert_eq!(y.len(), derivative.len(), "{what}");
    for r in 0..y.len() {
        let d1 = (p1[r] - m1[r]) / (2.0 * h);
        let d2 = (p2[r] - m2[r]) / (4.0 * h);
        let noise = 30.0 * f64::EPSILON * (y[r].abs() + 1.0) / h;
        let tol = 4.0 * (d1 - d2).abs() + noise + 1e-10 * d1.abs();
        assert!(
            (derivative[r] - d1).abs() <= tol,
            "{what}: entry {r} is {} but the finite difference is {d1} (tol {tol})",
            derivative[r]
        );
    }
}

fn unit(n: usize, j: usize) -> Vec<f64> {
    (0..n).map(|i| if i == j { 1.0 } else { 0.0 }).collect()
}

/// Points where every example below is smooth.
const JACOBIAN_CASES: &[(&str, &[f64])] = &[
    ("polar.ir", &[2.0, 0.5]),
    ("rosenbrock.ir", &[-1.2, 1.0]),
    ("mlp_small.ir", &[0.3, -0.7]),
    ("blackscholes.ir", &[100.0, 95.0, 0.05, 0.2, 0.5]),
    ("two.ir", &[0.5]),
    ("fit.ir", &[1.5, -0.5, 0.0, 0.5, 1.0, 1.2, 0.9, 0.7]),
];

#[test]
fn jacobian_matches_finite_differences_and_the_library() {
    for &(name, x) in JACOBIAN_CASES {
        let func = load(name);
        let (rows, cols) = (
            func.ret_types.iter().filter(|t| t.is_float()).count(),
            func.differentiated_params().count(),
        );
        let mut by_mode = Vec::new();
        for mode in ["forward", "reverse", "auto"] {
            let run = adjit(&[
                "jacobian",
                &example(name),
                "--at",
                &csv(x),
                "--mode",
                mode,
                "--json",
            ]);
            let json = Json::parse(run.ok());
            let (n_rows, jac) = json.field("jacobian").matrix();
            assert_eq!((n_rows, jac.len()), (rows, rows * cols), "{name} {mode}");
            let y = json.field("outputs").vector();
            // The CLI prints what the library object computes, bit for bit.
            let lib = adjit::Jacobian::with_mode(
                &func,
                mode.parse().unwrap(),
                &adjit::Options::default(),
            )
            .unwrap();
            let (mut ly, mut lj) = (vec![0.0; func.n_outputs()], vec![0.0; rows * cols]);
            lib.call(x, &mut ly, &mut lj).unwrap();
            assert_eq!(
                (bits(&y), bits(&jac)),
                (bits(&ly), bits(&lj)),
                "{name} {mode}"
            );
            // Column j against central differences along eⱼ (of the differentiated inputs).
            let float_outputs = |x: &[f64]| -> Vec<f64> {
                let y = adjit::eval(&func, adjit::Engine::Jit, x).unwrap();
                (0..y.len())
                    .filter(|&j| func.ret_types[j].is_float())
                    .map(|j| y[j])
                    .collect()
            };
            let diff: Vec<usize> = func.differentiated_params().map(|p| p.index()).collect();
            for (j, &i) in diff.iter().enumerate() {
                let column: Vec<f64> = (0..rows).map(|r| jac[r * cols + j]).collect();
                let what = format!("{name} {mode} column {j}");
                check_fd(&what, &float_outputs, x, &unit(x.len(), i), &column);
            }
            by_mode.push(jac);
        }
        for (a, b) in by_mode.iter().zip(&by_mode[1..]) {
            for (p, q) in a.iter().zip(b) {
                assert!(
                    (p - q).abs() <= 1e-12 * (1.0 + q.abs()),
                    "{name}: modes differ: {p} vs {q}"
                );
            }
        }
    }
}

#[test]
fn jacobian_forward_equals_reverse_on_random_non_square_programs() {
    use adjit::ir::random::{random_function, RandomOptions};
    for (seed, n, m) in [(21, 3, 6), (22, 7, 2), (23, 10, 12)] {
        let opts = RandomOptions {
            n_params: n,
            n_outputs: m,
            ..RandomOptions::default()
        };
        let text = random_function(seed, &opts).to_string();
        let file = temp_file(&format!("random{seed}.ir"), &text);
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let mut results = Vec::new();
        for mode in ["forward", "reverse"] {
            let run = adjit(&[
                "jacobian",
                &file,
                "--at",
                &csv(&x),
                "--mode",
                mode,
                "--json",
            ]);
            results.push(Json::parse(run.ok()).field("jacobian").matrix());
        }
        assert_eq!((results[0].0, results[0].1.len()), (m, m * n));
        for (p, q) in results[0].1.iter().zip(&results[1].1) {
            assert!(
                (p - q).abs() <= 1e-12 * (1.0 + q.abs()),
                "seed {seed}: {p} vs {q}"
            );
        }
    }
}

#[test]
fn hessian_matches_finite_differences_and_the_library() {
    for &(name, x) in JACOBIAN_CASES {
        let func = load(name);
        if func.ret_types.len() != 1 {
            continue;
        }
        let n = func.differentiated_params().count();
        let json = Json::parse(adjit(&["hessian", &example(name), "--at", &csv(x), "--json"]).ok());
        let (rows, h) = json.field("hessian").matrix();
        assert_eq!((rows, h.len()), (n, n * n), "{name}");
        let g = json.field("gradient").vector();
        let y = json.field("outputs").vector();
        let lib = adjit::Hessian::new(&func).unwrap();
        let (mut lg, mut lh) = (vec![0.0; n], vec![0.0; n * n]);
        let ly = lib.call(x, &mut lg, &mut lh).unwrap();
        assert_eq!(
            (bits(&y), bits(&g), bits(&h)),
            (bits(&[ly]), bits(&lg), bits(&lh)),
            "{name}"
        );
        // Column j against central differences of the gradient along eⱼ.
        let grad = adjit::Gradient::new(&func).unwrap();
        let gradient = |x: &[f64]| {
            let mut g = vec![0.0; n];
            grad.call(x, &mut g).unwrap();
            g
        };
        let diff: Vec<usize> = func.differentiated_params().map(|p| p.index()).collect();
        for (j, &i) in diff.iter().enumerate() {
            let column: Vec<f64> = (0..n).map(|r| h[r * n + j]).collect();
            check_fd(
                &format!("{name} column {j}"),
                &gradient,
                x,
                &unit(x.len(), i),
                &column,
            );
        }
    }
}

#[test]
fn hessian_of_rosenbrock_prints_aligned_rows() {
    let rosen = example("rosenbrock.ir");
    let run = adjit(&["hessian", &rosen, "--at", "-1.2,1"]);
    assert_eq!(
        run.ok(),
        "outputs: 24.199999999999996\ngradient: -215.59999999999997, -87.99999999999999\n\
         hessian (2×2):\n[[1330  480]\n [ 480  200]]\n"
    );
    let run = adjit(&[
        "hessian", &rosen, "--at", "1,1", "--engine", "interp", "--json",
    ]);
    assert_eq!(
        run.ok(),
        "{\"outputs\": [0.0], \"gradient\": [-0.0, 0.0], \"hessian\": [[802.0, -400.0], [-400.0, 200.0]]}\n"
    );
    let run = adjit(&["jacobian", &example("polar.ir"), "--at", "2,0"]);
    assert_eq!(
        run.ok(),
        "outputs: 2, 0\njacobian (2×2):\n[[1  0]\n [0  2]]\n"
    );
}

#[test]
fn hvp_matches_finite_differences_and_the_hessian() {
    for &(name, x) in JACOBIAN_CASES {
        let func = load(name);
        if func.ret_types.len() != 1 {
            continue;
        }
        let n = func.differentiated_params().count();
        let v: Vec<f64> = (0..n).map(|i| 1.0 - 0.3 * i as f64).collect();
        let json = Json::parse(
            adjit(&[
                "hvp",
                &example(name),
                "--at",
                &csv(x),
                "--vector",
                &csv(&v),
                "--json",
            ])
            .ok(),
        );
        let hv = json.field("hvp").vector();
        let (_, _, lib) = adjit::hvp(&func, adjit::Engine::Jit, x, &v).unwrap();
        assert_eq!(bits(&hv), bits(&lib), "{name}");
        let (_, _, h) = adjit::hessian(&func, adjit::Engine::Jit, x).unwrap();
        for (r, &got) in hv.iter().enumerate() {
            let expected: f64 = (0..n).map(|c| h[r * n + c] * v[c]).sum();
            assert!(
                (got - expected).abs() <= 1e-12 * (1.0 + expected.abs()),
                "{name}: {got} vs {expected}"
            );
        }
        let grad = adjit::Gradient::new(&func).unwrap();
        let gradient = |x: &[f64]| {
            let mut g = vec![0.0; n];
            grad.call(x, &mut g).unwrap();
            g
        };
        // v over the differentiated inputs, zero on the data inputs.
        let mut dir = vec![0.0; x.len()];
        for (k, p) in func.differentiated_params().enumerate() {
            dir[p.index()] = v[k];
        }
        check_fd(&format!("{name} H·v"), &gradient, x, &dir, &hv);
    }
}

#[test]
fn jvp_with_several_tangents_gives_one_row_per_direction() {
    let rosen = example("rosenbrock.ir");
    let dirs = temp_file(
        "dirs.txt",
        "# three directions\n1, 0\n\n0 1   # second\n0.5,-2\n",
    );
    let json = Json::parse(
        adjit(&[
            "jvp",
            &rosen,
            "--at",
            "-1.2,1",
            "--tangents",
            &format!("@{dirs}"),
            "--json",
        ])
        .ok(),
    );
    let (rows, tangents) = json.field("tangents").matrix();
    assert_eq!((rows, tangents.len()), (3, 3));
    let func = load("rosenbrock.ir");
    let f = |x: &[f64]| adjit::eval(&func, adjit::Engine::Jit, x).unwrap();
    for (k, dir) in [[1.0, 0.0], [0.0, 1.0], [0.5, -2.0]].iter().enumerate() {
        // Each direction of the vector JVP is bitwise the single-direction JVP.
        let single = Json::parse(
            adjit(&[
                "jvp",
                &rosen,
                "--at",
                "-1.2,1",
                "--tangent",
                &csv(dir),
                "--json",
            ])
            .ok(),
        );
        assert_eq!(
            bits(&single.field("tangents").vector()),
            bits(&tangents[k..k + 1])
        );
        check_fd(
            &format!("direction {k}"),
            &f,
            &[-1.2, 1.0],
            dir,
            &tangents[k..k + 1],
        );
    }
    let run = adjit(&[
        "jvp",
        &example("polar.ir"),
        "--at",
        "2,0",
        "--tangents",
        "1,0;0,1",
    ]);
    assert_eq!(
        run.ok(),
        "outputs: 2, 0\ntangents (2×2):\n[[1  0]\n [0  2]]\n"
    );
}

#[test]
fn matrix_commands_report_wrong_lengths_and_shapes() {
    let rosen = example("rosenbrock.ir");
    let polar = example("polar.ir");
    let cases: &[(&[&str], &str)] = &[
        (
            &["hessian", &rosen, "--at", "1"],
            "error: --at has 1 number, @rosenbrock takes 2 inputs\n",
        ),
        (
            &["jacobian", &rosen, "--at", "1,2,3"],
            "error: --at has 3 numbers, @rosenbrock takes 2 inputs\n",
        ),
        (
            &["hvp", &rosen, "--at", "1,2", "--vector", "1"],
            "error: --vector has 1 number, @rosenbrock takes 2 inputs\n",
        ),
        (
            &["jvp", &rosen, "--at", "1,2", "--tangents", "1,0;1"],
            "error: --tangents: line 2 has 1 number, @rosenbrock takes 2 inputs\n",
        ),
        (
            &["jvp", &rosen, "--at", "1,2", "--tangents", "1,0;1,x"],
            "error: --tangents: line 2, column 3: `x` is not a number\n",
        ),
        (
            &["hessian", &polar, "--at", "1,2"],
            "error: @polar has 2 float outputs; a Hessian needs exactly one\n",
        ),
        (
            &["hvp", &polar, "--at", "1,2", "--vector", "1,0"],
            "error: hvp needs a function with one float output; @polar returns (f64, f64)\n",
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(adjit(args).fails(1), *expected, "{args:?}");
    }
    let fit = example("fit.ir");
    let run = adjit(&["hvp", &fit, "--at", "1,2,3,4,5,6,7,8", "--vector", "1,0,0"]);
    assert!(
        run.fails(1).contains("its 6 data inputs get none"),
        "{}",
        run.describe()
    );
    let run = adjit(&["jacobian", &rosen, "--at", "1,2", "--mode", "sideways"]);
    assert!(run.fails(2).contains("sideways"), "{}", run.describe());
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

/// Compile the C driver `c_file` with `object` (and `-lm`) into `exe`, in `dir`.
fn link_with_c(dir: &Path, c_file: &Path, object: &Path, exe: &Path) {
    let built = Command::new("cc")
        .arg("-O1")
        .arg(c_file)
        .arg(object)
        .arg("-lm")
        .arg("-o")
        .arg(exe)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
}

/// `adjit compile` builds every mode: a vector JVP (`jvp2`) and an inverse mode, linked with a
/// C driver and run, give the JIT's numbers (skipped without a C compiler).
#[test]
fn compile_writes_vector_jvp_and_inverse_objects_that_run() {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler");
        return;
    }
    let polar = example("polar.ir");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests/aot_modes");
    std::fs::create_dir_all(&dir).unwrap();
    let cases: [(&str, &str, &[f64]); 2] = [
        (
            "reverse-inverse",
            "polar_reverse_inverse",
            &[2.0, 0.5, 1.0, 0.0],
        ),
        ("jvp2", "polar_jvp2", &[2.0, 0.5, 1.0, 0.0, 0.0, 1.0]),
    ];
    for (mode, symbol, inputs) in cases {
        let object = dir.join(format!("{symbol}.o"));
        let object_arg = object.to_string_lossy().into_owned();
        adjit(&["compile", &polar, "--mode", mode, "-o", &object_arg]).ok();
        let n_out = if mode == "jvp2" { 6 } else { 5 };
        let driver = format!(
            "#include <stdio.h>\n#include \"{symbol}.h\"\nint main(void) {{\n\
             double in[] = {{{}}}; double out[{n_out}]; double work[64];\n\
             adjit_{symbol}(in, out, work);\n\
             for (int i = 0; i < {n_out}; i++) printf(\"%.17g\\n\", out[i]);\n\
             return 0;\n}}\n",
            inputs
                .iter()
                .map(|x| format!("{x:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let c_file = dir.join(format!("{symbol}_main.c"));
        std::fs::write(&c_file, driver).unwrap();
        let exe = dir.join(symbol);
        link_with_c(&dir, &c_file, &object, &exe);
        let run = Command::new(&exe).output().unwrap();
        let native: Vec<f64> = String::from_utf8_lossy(&run.stdout)
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        let expected: Vec<f64> = if mode == "jvp2" {
            let json = adjit(&[
                "jvp",
                &polar,
                "--at",
                "2,0.5",
                "--tangents",
                "1,0;0,1",
                "--json",
            ]);
            // {"outputs": [y0, y1], "tangents": [[..], [..]]}: every number, in order (the keys
            // hold no digits) is the object's output order: y, then ẏ of each direction.
            json.ok()
                .split(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | 'e')))
                .filter_map(|t| t.parse().ok())
                .collect()
        } else {
            let json = adjit(&[
                "inverse", &polar, "--at", "2,0.5", "--vector", "1,0", "--json",
            ]);
            let mut v: Vec<f64> = json_vectors(json.ok())
                .into_iter()
                .flat_map(|(_, v)| v)
                .collect();
            v.push(0.0); // status: ok
            v
        };
        assert_eq!(native, expected, "{mode}");
    }
}

/// `adjit compile --lanes 2 --math inline` exports `SYMBOL_x2`: linked with C, each lane of
/// the two-point kernel equals the scalar entry at its own point bit for bit, and both agree
/// with the JIT's gradient (skipped without a C compiler).
#[test]
fn compile_lanes_2_exports_a_two_point_kernel_that_runs() {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler");
        return;
    }
    let bs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/bench/blackscholes.ir");
    let bs = bs.to_string_lossy().into_owned();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests/aot_pairs");
    std::fs::create_dir_all(&dir).unwrap();
    let object = dir.join("bs.o");
    let object_arg = object.to_string_lossy().into_owned();
    let args = [
        "compile", &bs, "--mode", "gradient", "--lanes", "2", "--math", "inline",
    ];
    adjit(&[&args[..], &["-o", &object_arg, "--symbol", "bs"]].concat()).ok();
    let header = std::fs::read_to_string(dir.join("bs.h")).unwrap();
    assert!(
        header.contains("void bs_x2(const double *inputs"),
        "{header}"
    );
    let driver = "#include <stdio.h>\n#include \"bs.h\"\n\
        int main(void) {\n\
          double a[5] = {100, 95, 0.05, 0.2, 1}, b[5] = {80, 110, 0.01, 0.4, 2.5};\n\
          double ya[6], yb[6], work[64];\n\
          double pin[10] __attribute__((aligned(16))), pout[12] __attribute__((aligned(16)));\n\
          double pwork[128] __attribute__((aligned(16)));\n\
          bs(a, ya, work); bs(b, yb, work);\n\
          for (int i = 0; i < 5; i++) { pin[2 * i] = a[i]; pin[2 * i + 1] = b[i]; }\n\
          bs_x2(pin, pout, pwork);\n\
          for (int j = 0; j < 6; j++) printf(\"%.17g %.17g %.17g %.17g\\n\", ya[j], yb[j], pout[2 * j], pout[2 * j + 1]);\n\
          return 0;\n}\n";
    let c_file = dir.join("bs_main.c");
    std::fs::write(&c_file, driver).unwrap();
    let exe = dir.join("bs_pairs");
    link_with_c(&dir, &c_file, &object, &exe);
    let run = Command::new(&exe).output().unwrap();
    let rows: Vec<Vec<f64>> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| l.split(' ').map(|t| t.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 6);
    for row in &rows {
        assert_eq!(row[0].to_bits(), row[2].to_bits(), "lane 0: {row:?}");
        assert_eq!(row[1].to_bits(), row[3].to_bits(), "lane 1: {row:?}");
    }
    // The gradient at the first point, against the JIT (C library routines: a few ulps apart).
    let json = adjit(&["vjp", &bs, "--at", "100,95,0.05,0.2,1", "--json"]);
    let jit: Vec<f64> = json_vectors(json.ok())
        .into_iter()
        .flat_map(|(_, v)| v)
        .collect();
    for (j, (&c, &r)) in rows.iter().map(|r| &r[0]).zip(&jit).enumerate() {
        assert!(
            (c - r).abs() <= 1e-13 * r.abs().max(1.0),
            "output {j}: {c} vs {r}"
        );
    }
    let refused = adjit(&[
        "compile",
        &bs,
        "--mode",
        "dense-inverse",
        "--lanes",
        "2",
        "-o",
        &object_arg,
    ]);
    assert!(refused.fails(1).contains("--lanes"), "{}", refused.stderr);
}

/// `bench` measures the drivers too: one row per mode for `--rows`, and per strategy for
/// `--steps` vjp, with the snapshot bytes and the re-advanced steps of the Revolve schedule.
#[test]
fn bench_rows_for_mapped_kernels_and_iterated_steps() {
    let points = temp_file("bench_points.txt", "0 1\n1 3\n2 5\n");
    let line = example("line.ir");
    let run = adjit(&["bench", &line, "--at", "1,1", "--rows", &points, "--json"]);
    let json = run.ok();
    assert_eq!(json.matches("\"mode\": ").count(), 3, "{json}");
    let decay = example("decay.ir");
    let run = adjit(&[
        "bench",
        &decay,
        "--at",
        "1,0.5",
        "--steps",
        "100",
        "--modes",
        "vjp",
        "--strategies",
        "tape,checkpoint:3",
        "--json",
    ]);
    let json = run.ok();
    assert!(json.contains("\"strategy\": \"checkpoint:3\""), "{json}");
    let expected = adjit::diff::checkpoint::revolve::min_advances(100, 3);
    assert!(
        json.contains(&format!("\"recomputed_ops\": {expected}")),
        "{json} (Revolve: {expected})"
    );
}

#[test]
fn dump_rolled_shows_the_loops_and_bench_counts_them() {
    // 2,000 terms: a VJP of about 3·10⁴ instructions, above the default threshold.
    let n = 2_000;
    let file = temp_file("rb2000.ir", &adjit_testkit::chained_rosenbrock_text(n));
    let run = adjit(&["dump", "--stage", "rolled", "--mode", "vjp", &file]);
    let out = run.ok();
    // Scheduled, each term's forward and reverse work is one iteration: one loop over
    // (almost) every term.
    assert!(out.contains("1 loop(s) cover"), "{out}");
    assert!(out.contains("1996 trips"), "{out}");
    // The program held as loops before derivation, its VJP per template, and that compiled
    // from the templates: one fused loop.
    let templates = out.lines().last().unwrap_or_default();
    assert!(
        templates.starts_with("; held as loops before derivation (adjit_ir::Rolled): ")
            && templates.contains("derived per template (adjit_diff::vjp_rolled")
            && templates
                .contains("compiled from the templates (adjit_jit::compile_templates): 1 loop(s)"),
        "{out}"
    );
    let small = adjit(&["dump", "--stage", "rolled", &example("rosenbrock.ir")]);
    assert!(small.ok().contains("nothing is rolled"));
    let at = vec!["0.5"; n].join(",");
    let bench = adjit(&["bench", &file, "--at", &at, "--modes", "vjp", "--json"]);
    assert!(bench.ok().contains("\"loops\": 1"), "{}", bench.stdout);
}
