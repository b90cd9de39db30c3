//! `--sparse` on `adjit jacobian` and `adjit hessian`, the sparse stages of `dump`, the sparse
//! rows of `bench` and `compile --mode sparse-*`, run as a user would run them.

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

fn ok(args: &[&str]) -> String {
    let run = adjit(args);
    assert_eq!(run.code, 0, "adjit {args:?}: {}", run.stderr);
    run.stdout
}

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ir/examples")
        .join(name);
    path.to_string_lossy().into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-sparse");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

/// The numbers of the JSON array `"key": [...]`.
fn array(json: &str, key: &str) -> Vec<f64> {
    let start = json.find(&format!("\"{key}\": [")).expect(key) + key.len() + 5;
    let end = start + json[start..].find(']').expect("]");
    json[start..end]
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().trim_matches('"').parse().expect("a number"))
        .collect()
}

/// The rows of `"jacobian": [[...], ...]` or `"hessian": [[...]]` of the dense commands.
fn dense(json: &str, key: &str) -> Vec<Vec<f64>> {
    let start = json.find(&format!("\"{key}\": [")).expect(key) + key.len() + 4;
    let body = &json[start..];
    let end = body.find("]]").expect("]]") + 1;
    body[..end]
        .split("],")
        .map(|row| {
            row.trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .map(|s| s.trim().parse().expect("a number"))
                .collect()
        })
        .collect()
}

const BRATU_AT: &str = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9";

#[test]
fn sparse_jacobian_json_matches_the_dense_command() {
    let file = example("bratu3.ir");
    let json = ok(&["jacobian", &file, "--at", BRATU_AT, "--sparse", "--json"]);
    assert!(
        json.contains("\"shape\": [9, 9], \"nnz\": 33, \"colors\": 5"),
        "{json}"
    );
    assert!(json.contains("\"format\": \"csr\""));
    let (indptr, indices, values) = (
        array(&json, "indptr"),
        array(&json, "indices"),
        array(&json, "values"),
    );
    let full = dense(
        &ok(&["jacobian", &file, "--at", BRATU_AT, "--json"]),
        "jacobian",
    );
    let mut seen = 0;
    for (i, row) in full.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            let (a, b) = (indptr[i] as usize, indptr[i + 1] as usize);
            match indices[a..b].iter().position(|&c| c as usize == j) {
                Some(k) => {
                    assert_eq!(values[a + k], v, "J[{i}][{j}]");
                    seen += 1;
                }
                None => assert_eq!(v, 0.0, "J[{i}][{j}] outside the pattern"),
            }
        }
    }
    assert_eq!(seen, 33);
    // The interpreter gives the same bits.
    let interp = ok(&[
        "jacobian", &file, "--at", BRATU_AT, "--sparse", "--json", "--engine", "interp",
    ]);
    assert_eq!(interp, json);
}

#[test]
fn sparse_hessian_prints_both_triangles_and_writes_matrix_market() {
    let file = example("chain4.ir");
    let mtx = scratch("chain4.mtx");
    let mtx_arg = mtx.to_string_lossy().into_owned();
    let at = "-1.2,1,0.5,2";
    let json = ok(&[
        "hessian", &file, "--at", at, "--sparse", "--json", "--mtx", &mtx_arg,
    ]);
    assert!(
        json.contains("\"shape\": [4, 4], \"nnz\": 10, \"colors\": 3"),
        "{json}"
    );
    let full = dense(&ok(&["hessian", &file, "--at", at, "--json"]), "hessian");
    let (indptr, indices, values) = (
        array(&json, "indptr"),
        array(&json, "indices"),
        array(&json, "values"),
    );
    for i in 0..4 {
        for k in indptr[i] as usize..indptr[i + 1] as usize {
            let j = indices[k] as usize;
            let d = full[i][j];
            assert!((values[k] - d).abs() <= 1e-12 * d.abs(), "H[{i}][{j}]");
        }
    }
    let text = std::fs::read_to_string(&mtx).expect("the .mtx file");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("%%MatrixMarket matrix coordinate real symmetric")
    );
    assert!(text.contains("\n4 4 7\n"), "{text}");
    assert!(text.contains("\n2 1 "), "lower triangle, 1-based: {text}");
    assert!(!text.contains("\n1 2 "), "no upper entries: {text}");
}

#[test]
fn human_output_and_spy_plot() {
    let file = example("bratu3.ir");
    let svg = scratch("bratu3.svg");
    let svg_arg = svg.to_string_lossy().into_owned();
    let out = ok(&[
        "jacobian", &file, "--at", BRATU_AT, "--sparse", "--spy", &svg_arg,
    ]);
    assert!(
        out.starts_with("sparse Jacobian of @bratu3: 9×9, 33 nonzeros, 5 colours (columns"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 34, "a line per entry: {out}");
    let picture = std::fs::read_to_string(&svg).expect("the SVG");
    assert!(picture.starts_with("<svg"));
    // One square per entry, plus the background, the frame and one legend square per colour.
    assert_eq!(picture.matches("<rect").count(), 33 + 2 + 5);
}

#[test]
fn dump_bench_and_compile_know_the_sparse_modes() {
    let file = example("bratu3.ir");
    let dump = ok(&["dump", &file, "--stage", "sparsity"]);
    assert!(dump.contains("densest row 5"), "{dump}");
    assert!(dump.contains("chosen: 5 colours"), "{dump}");
    let bench = ok(&[
        "bench",
        &file,
        "--at",
        BRATU_AT,
        "--modes",
        "primal,sparse-jacobian",
        "--json",
    ]);
    assert!(bench.contains("\"mode\": \"sparse-jacobian\""), "{bench}");
    assert!(bench.contains("\"nnz\": 33, \"colors\": 5"), "{bench}");
    let object = scratch("bratu3_sj.o");
    let object_arg = object.to_string_lossy().into_owned();
    ok(&[
        "compile",
        &file,
        "--mode",
        "sparse-jacobian",
        "-o",
        &object_arg,
    ]);
    let header = std::fs::read_to_string(object.with_extension("h")).expect("the header");
    assert!(
        header.contains("#define ADJIT_BRATU3_SPARSE_JACOBIAN_NNZ 33"),
        "{header}"
    );
    assert!(header.contains("adjit_bratu3_sparse_jacobian_indptr[9 + 1] = {0, 3, 7,"));
    if Command::new("cc").arg("--version").output().is_err() {
        return;
    }
    // A C program that includes the header, calls the object and prints every nonzero.
    let driver = "#include <stdio.h>\n#include \"bratu3_sj.h\"\nint main(void) {\n\
        double in[9] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};\n\
        double out[ADJIT_BRATU3_SPARSE_JACOBIAN_NNZ], work[ADJIT_BRATU3_SPARSE_JACOBIAN_WORK_LEN + 1];\n\
        adjit_bratu3_sparse_jacobian(in, out, work);\n\
        for (unsigned long i = 0; i < ADJIT_BRATU3_SPARSE_JACOBIAN_ROWS; i++)\n\
          for (unsigned long k = adjit_bratu3_sparse_jacobian_indptr[i]; \
        k < adjit_bratu3_sparse_jacobian_indptr[i + 1]; k++)\n\
            printf(\"%.17g\\n\", out[k]);\n\
        return 0;\n}\n";
    let c_file = scratch("bratu3_sj_main.c");
    std::fs::write(&c_file, driver).unwrap();
    let exe = scratch("bratu3_sj");
    let built = Command::new("cc")
        .arg(&c_file)
        .arg(&object)
        .arg("-lm")
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let native: Vec<f64> = String::from_utf8_lossy(&Command::new(&exe).output().unwrap().stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let json = ok(&["jacobian", &file, "--at", BRATU_AT, "--sparse", "--json"]);
    assert_eq!(native, array(&json, "values"));
}

#[test]
fn sparse_errors_are_clear() {
    let polar = example("polar.ir");
    let run = adjit(&["hessian", &polar, "--at", "1,2", "--sparse"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("a Hessian needs exactly one"),
        "{}",
        run.stderr
    );
    let run = adjit(&["jacobian", &polar, "--at", "1,2", "--mtx", "x.mtx"]);
    assert_eq!(run.code, 2, "--mtx needs --sparse: {}", run.stderr);
    let run = adjit(&["jacobian", &polar, "--at", "1", "--sparse"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("--at"), "{}", run.stderr);
}

/// The header's "densest row" is the pattern's, as `adjit dump --stage sparsity` says: a
/// product of four inputs has one dense row (4 entries) and is coloured by rows, whose bound,
/// the densest column (1), was once printed as the densest row.
#[test]
fn densest_row_agrees_with_the_dump() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("prod4.ir");
    std::fs::write(
        &file,
        "func @prod(%a: f64, %b: f64, %c: f64, %d: f64) -> f64 {\n    %p = mul %a, %b\n    \
         %q = mul %p, %c\n    %r = mul %q, %d\n    ret %r\n}\n",
    )
    .unwrap();
    let file = file.to_string_lossy().into_owned();
    let densest = |text: &str| -> usize {
        let at = text.find("densest row ").expect("a densest row") + "densest row ".len();
        text[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a number")
    };
    let jacobian = ok(&["jacobian", &file, "--at", "1,2,3,4", "--sparse"]);
    assert!(jacobian.contains("(rows, "), "{jacobian}");
    let dump = ok(&["dump", &file, "--stage", "sparsity"]);
    assert_eq!(densest(&jacobian), densest(&dump), "{jacobian}\n{dump}");
    assert_eq!(densest(&jacobian), 4);
    // The Hessian's header against the dump's Hessian section.
    let hessian = ok(&["hessian", &file, "--at", "1,2,3,4", "--sparse"]);
    let hessian_dump = &dump[dump.find("; Hessian").expect("a Hessian section")..];
    assert_eq!(
        densest(&hessian),
        densest(hessian_dump),
        "{hessian}\n{dump}"
    );
}

/// A dense 10⁵ × 10⁵ Jacobian (80 GB) is refused before anything is allocated: exit code 1 and
/// a message with the size and the sparse alternative, not an abort in the allocator; with
/// `--sparse` the same function is 10⁵ nonzeros.
#[test]
fn a_dense_jacobian_beyond_memory_is_an_error_naming_size_and_sparse() {
    let n = 100_000;
    let params: Vec<String> = (0..n).map(|i| format!("%x{i}: f64")).collect();
    let mut text = format!(
        "func @wide({}) -> ({}) {{\n",
        params.join(", "),
        vec!["f64"; n].join(", ")
    );
    for i in 0..n {
        text.push_str(&format!("    %y{i} = neg %x{i}\n"));
    }
    let rets: Vec<String> = (0..n).map(|i| format!("%y{i}")).collect();
    text.push_str(&format!("    ret {}\n}}\n", rets.join(", ")));
    let file = scratch("wide.ir");
    std::fs::write(&file, text).expect("write");
    let at = scratch("wide_at.txt");
    std::fs::write(&at, vec!["0.5"; n].join(",")).expect("write");
    let (file, at) = (file.to_string_lossy(), format!("@{}", at.to_string_lossy()));
    let run = adjit(&["jacobian", &file, "--at", &at]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("the dense Jacobian (100000 × 100000) needs 80 GB")
            && run.stderr.contains("--sparse"),
        "{}",
        run.stderr
    );
    let sparse = ok(&[
        "jacobian", &file, "--at", &at, "--sparse", "--engine", "interp",
    ]);
    assert!(sparse.contains("100000 nonzeros"), "{}", &sparse[..200]);
}
