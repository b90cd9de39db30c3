//! Protocol tests: recorded exchanges with the `gradbench-adjit` binary, small sizes, expected
//! outputs from analytic formulas and from central finite differences of the tool's own
//! primal. (CI cannot fetch GradBench; these exchanges follow its protocol and output shapes.)

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// Send `lines` (one message each, written as given) and return the answers, one per
/// non-empty line, checking the tool exits cleanly and answers every line.
fn exchange_raw(lines: &[&[u8]]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gradbench-adjit"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tool starts");
    let mut stdin = child.stdin.take().expect("stdin");
    for line in lines {
        stdin.write_all(line).expect("write");
        stdin.write_all(b"\n").expect("write");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("the tool ends");
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = String::from_utf8(out.stdout)
        .expect("UTF-8 answers")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each answer is one JSON line"))
        .collect();
    assert_eq!(
        answers.len(),
        lines.len(),
        "one answer per line: {answers:?}"
    );
    answers
}

fn exchange(messages: &[Value]) -> Vec<Value> {
    let lines: Vec<String> = messages.iter().map(Value::to_string).collect();
    let bytes: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    exchange_raw(&bytes)
}

/// Answers with the timings checked (one `prepare`, then ≥ 1 `evaluate`, all counts of
/// nanoseconds) and replaced by the number of `evaluate` timings, so they compare exactly.
fn check(messages: &[Value], expected: &[Value]) {
    let answers: Vec<Value> = exchange(messages).into_iter().map(strip_timings).collect();
    assert_eq!(answers, expected);
}

fn strip_timings(mut answer: Value) -> Value {
    if let Some(timings) = answer.get("timings").cloned() {
        answer["timings"] = json!(evaluate_runs(&timings));
    }
    answer
}

fn evaluate_runs(timings: &Value) -> usize {
    let timings = timings.as_array().expect("timings is a list");
    let names: Vec<&str> = timings
        .iter()
        .map(|t| {
            assert!(t["nanoseconds"].is_u64(), "{t}");
            t["name"].as_str().expect("a name")
        })
        .collect();
    assert_eq!(names.first(), Some(&"prepare"), "{names:?}");
    assert!(names[1..].iter().all(|&n| n == "evaluate"), "{names:?}");
    assert!(names.len() >= 2, "{names:?}");
    names.len() - 1
}

fn start(eval: &str) -> [Value; 2] {
    [
        json!({"id": 0, "kind": "start", "eval": eval}),
        json!({"id": 1, "kind": "define", "module": eval}),
    ]
}

fn evaluate(id: u64, module: &str, function: &str, input: Value) -> Value {
    json!({"id": id, "kind": "evaluate", "module": module, "function": function,
           "input": input, "description": "test"})
}

/// The `output` of one evaluation of `function` of `module` on `input`.
fn output(module: &str, function: &str, input: Value) -> Value {
    let [s, d] = start(module);
    let answers = exchange(&[s, d, evaluate(2, module, function, input)]);
    assert_eq!(answers[2]["success"], json!(true), "{}", answers[2]);
    answers[2]["output"].clone()
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn assert_close(got: &[f64], expected: &[f64], tol: f64) {
    assert_eq!(got.len(), expected.len(), "{got:?} vs {expected:?}");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        // GradBench's own measure: |x − y| / max(|x| + |y|, 1).
        let diff = (g - e).abs() / (g.abs() + e.abs()).max(1.0);
        assert!(diff <= tol, "[{i}]: {g} vs {e} (difference {diff:e})");
    }
}

/// Central differences of the tool's primal (the scalar output of `primal`) with respect
/// to the vector `input[key]`, all perturbed inputs sent in one session.
fn fd_gradient(module: &str, primal: &str, input: &Value, key: &str, h: f64) -> Vec<f64> {
    let x = numbers(&input[key]);
    let [s, d] = start(module);
    let mut messages = vec![s, d];
    for j in 0..x.len() {
        for sign in [1.0, -1.0] {
            let mut shifted = input.clone();
            shifted[key][j] = json!(x[j] + sign * h);
            messages.push(evaluate(messages.len() as u64, module, primal, shifted));
        }
    }
    let answers = exchange(&messages);
    (0..x.len())
        .map(|j| {
            let plus = answers[2 + 2 * j]["output"].as_f64().expect("a number");
            let minus = answers[3 + 2 * j]["output"].as_f64().expect("a number");
            (plus - minus) / (2.0 * h)
        })
        .collect()
}

#[test]
fn hello_exchange() {
    let [s, d] = start("hello");
    check(
        &[
            s,
            d,
            evaluate(2, "hello", "square", json!(3.0)),
            evaluate(3, "hello", "double", json!(9.0)),
            json!({"id": 4, "kind": "analysis", "of": 3, "valid": true}),
        ],
        &[
            json!({"id": 0, "tool": "adjit"}),
            json!({"id": 1, "success": true}),
            json!({"id": 2, "success": true, "output": 9.0, "timings": 1}),
            json!({"id": 3, "success": true, "output": 18.0, "timings": 1}),
            json!({"id": 4}),
        ],
    );
}

#[test]
fn unimplemented_evals_and_functions_answer_with_an_error() {
    let answers = exchange(&[
        json!({"id": 0, "kind": "start", "eval": "particle"}),
        json!({"id": 1, "kind": "define", "module": "particle"}),
        evaluate(2, "particle", "rr", json!({})),
        json!({"id": 3, "kind": "define", "module": "hello"}),
        evaluate(4, "hello", "cube", json!(2.0)),
    ]);
    assert_eq!(answers[0], json!({"id": 0, "tool": "adjit"}));
    for (i, needle) in [
        (1, "does not implement the eval \"particle\""),
        (2, "module \"particle\" was not defined"),
        (4, "has no function \"cube\" (it has: square, double)"),
    ] {
        assert_eq!(answers[i]["id"], json!(i), "{}", answers[i]);
        assert_eq!(answers[i]["success"], json!(false), "{}", answers[i]);
        let error = answers[i]["error"].as_str().expect("an error text");
        assert!(error.contains(needle), "{error}");
        assert!(answers[i].get("output").is_none(), "{}", answers[i]);
    }
    assert_eq!(answers[3], json!({"id": 3, "success": true}));
}

#[test]
fn malformed_lines_get_an_error_and_the_session_goes_on() {
    let answers = exchange_raw(&[
        b"not json",
        b"{\"id\": 7, \"kind\": \"launch\"}",
        b"{\"id\": 8, \"kind\": \"evaluate\", \"module\": \"hello\"}",
        b"[1, 2",
        b"\xff\xfe{}",
        b"{\"id\": 9, \"kind\": \"define\", \"module\": \"kmeans\"}",
        br#"{"id": 10, "kind": "evaluate", "module": "kmeans", "function": "cost", "input": {"points": [[1, 2], [3]], "centroids": [[0, 0]]}}"#,
        br#"{"id": 11, "kind": "evaluate", "module": "kmeans", "function": "cost", "input": {"points": "many"}}"#,
        br#"{"id": 12, "kind": "evaluate", "module": "kmeans", "function": "cost", "input": {"points": [], "centroids": []}}"#,
        br#"{"id": 13, "kind": "evaluate", "module": "kmeans", "function": "cost", "input": {"points": [[1]], "centroids": [[0]], "min_runs": -1}}"#,
        b"{\"id\": 14, \"kind\": \"start\"}",
    ]);
    let ids = [
        json!(null),
        json!(7),
        json!(8),
        json!(null),
        json!(null),
        json!(9),
        json!(10),
        json!(11),
        json!(12),
        json!(13),
        json!(14),
    ];
    for (answer, id) in answers.iter().zip(&ids) {
        assert_eq!(&answer["id"], id, "{answer}");
    }
    for (i, needle) in [
        (0, "line 1: not a GradBench message"),
        (1, "unknown variant `launch`"),
        (2, "missing field"),
        (3, "line 4"),
        (4, "line 5"),
        (6, "points[1] has 1 numbers, expected 2"),
        (7, "input of kmeans.cost"),
        (8, "must not be empty"),
        (9, "min_runs is -1"),
    ] {
        assert_eq!(answers[i]["success"], json!(false), "{}", answers[i]);
        let error = answers[i]["error"].as_str().expect("an error text");
        assert!(error.contains(needle), "{error} should contain {needle}");
    }
    assert_eq!(answers[5], json!({"id": 9, "success": true}));
    assert_eq!(answers[10], json!({"id": 14, "tool": "adjit"}));
}

#[test]
fn min_runs_and_min_seconds_are_honoured() {
    let [s, d] = start("hello");
    let answers = exchange(&[
        s,
        d,
        evaluate(2, "hello", "square", json!({})), // not a number: an error
        json!({"id": 3, "kind": "define", "module": "llsq"}),
        evaluate(
            4,
            "llsq",
            "gradient",
            json!({"x": [0.5], "n": 4, "min_runs": 7}),
        ),
        evaluate(
            5,
            "llsq",
            "primal",
            json!({"x": [0.5], "n": 4, "min_runs": 1,
                                              "min_seconds": 0.05}),
        ),
        evaluate(
            6,
            "llsq",
            "primal",
            json!({"x": [0.5], "n": 4, "min_runs": 0}),
        ),
    ]);
    assert_eq!(answers[2]["success"], json!(false));
    assert_eq!(evaluate_runs(&answers[4]["timings"]), 7);
    let timings = answers[5]["timings"].as_array().expect("timings");
    let seconds: u64 = timings[1..]
        .iter()
        .map(|t| t["nanoseconds"].as_u64().expect("nanoseconds"))
        .sum();
    assert!(seconds >= 50_000_000, "{seconds} ns");
    assert_eq!(evaluate_runs(&answers[6]["timings"]), 1, "at least one run");
}

/// llsq by its definition, in f64, and its analytic gradient −Σᵢ rᵢ tᵢʲ.
fn llsq_reference(x: &[f64], n: usize) -> (f64, Vec<f64>) {
    let (mut sum, mut grad) = (0.0, vec![0.0; x.len()]);
    for i in 0..n {
        let t = -1.0 + 2.0 * i as f64 / (n as f64 - 1.0);
        let s = if t > 0.0 {
            1.0
        } else if t < 0.0 {
            -1.0
        } else {
            0.0
        };
        let r = s - (0..x.len()).map(|j| x[j] * t.powi(j as i32)).sum::<f64>();
        sum += r * r;
        for (j, g) in grad.iter_mut().enumerate() {
            *g -= r * t.powi(j as i32);
        }
    }
    (sum / 2.0, grad)
}

#[test]
fn llsq_matches_its_definition_and_finite_differences() {
    let x = [0.3, -0.7, 0.25, 0.9, -0.1];
    for n in [1, 2, 7, 1500] {
        let input = json!({"x": x, "n": n});
        let primal = output("llsq", "primal", input.clone());
        if n == 1 {
            // t = −1 + 0·2/0 is NaN, as in the reference: JSON has no NaN, it prints null.
            assert!(primal.is_null(), "{primal}");
            continue;
        }
        let grad = numbers(&output("llsq", "gradient", input.clone()));
        let (y, g) = llsq_reference(&x, n);
        assert_close(&[primal.as_f64().expect("a number")], &[y], 1e-12);
        assert_close(&grad, &g, 1e-12);
        assert_close(
            &grad,
            &fd_gradient("llsq", "primal", &input, "x", 1e-5),
            1e-6,
        );
    }
}

#[test]
fn lse_matches_its_definition_and_finite_differences() {
    // Chunks of 32 entries, 64 per batched call: one short chunk, a chunk and a tail, one
    // whole call, several calls with a tail. Three runs each: the gradient vector is reused.
    for n in [1, 3, 33, 1024, 2048, 2500] {
        let x: Vec<f64> = (0..n)
            .map(|i| ((i * 37 % 101) as f64 / 101.0) * 4.0 - 2.0)
            .collect();
        let input = json!({"x": x, "min_runs": 3});
        let primal = output("lse", "primal", input.clone())
            .as_f64()
            .expect("a number");
        let grad = numbers(&output("lse", "gradient", input.clone()));
        let s: f64 = x.iter().map(|xi| xi.exp()).sum();
        assert_close(&[primal], &[s.ln()], 1e-12);
        let softmax: Vec<f64> = x.iter().map(|xi| xi.exp() / s).collect();
        assert_close(&grad, &softmax, 1e-12);
        if n <= 3 {
            assert_close(
                &grad,
                &fd_gradient("lse", "primal", &input, "x", 1e-5),
                1e-8,
            );
        }
    }
    // Large entries: the max trick keeps it finite.
    let primal = output("lse", "primal", json!({"x": [1000.0, 1000.0]}));
    assert_close(
        &[primal.as_f64().expect("a number")],
        &[1000.0 + 2f64.ln()],
        1e-15,
    );
}

#[test]
fn kmeans_cost_and_newton_direction() {
    // Points on a small grid, centroids chosen among them (every cluster nonempty).
    let points: Vec<Vec<f64>> = (0..23)
        .map(|i| {
            vec![
                (i % 5) as f64 * 0.3,
                (i / 5) as f64 * 0.2,
                ((i * 7) % 11) as f64 * 0.1,
            ]
        })
        .collect();
    let centroids: Vec<Vec<f64>> = points[points.len() - 4..].to_vec();
    let input = json!({"points": points, "centroids": centroids});
    let dist = |a: &[f64], c: &[f64]| a.iter().zip(c).map(|(x, y)| (x - y).powi(2)).sum::<f64>();
    let closest = |a: &[f64]| {
        (0..centroids.len())
            .min_by(|&i, &j| dist(a, &centroids[i]).total_cmp(&dist(a, &centroids[j])))
            .expect("centroids")
    };
    let cost: f64 = points.iter().map(|a| dist(a, &centroids[closest(a)])).sum();
    // dir = ∇/diag(H) = c − mean of the cluster.
    let mut sums = vec![vec![0.0; 3]; centroids.len()];
    let mut sizes = vec![0.0; centroids.len()];
    for a in &points {
        let j = closest(a);
        sizes[j] += 1.0;
        for l in 0..3 {
            sums[j][l] += a[l];
        }
    }
    let got = output("kmeans", "cost", input.clone())
        .as_f64()
        .expect("a number");
    assert_close(&[got], &[cost], 1e-12);
    let dir = output("kmeans", "dir", input);
    let rows = dir.as_array().expect("k rows");
    assert_eq!(rows.len(), centroids.len());
    for (j, row) in rows.iter().enumerate() {
        let expected: Vec<f64> = (0..3)
            .map(|l| centroids[j][l] - sums[j][l] / sizes[j])
            .collect();
        assert_close(&numbers(row), &expected, 1e-12);
    }
}

/// A GMM input of d = 3, k = 2, n = 4 built from a flat θ = (α, μ, q, l).
fn gmm_input(theta: &[f64]) -> Value {
    let (d, k) = (3, 2);
    let (alpha, rest) = theta.split_at(k);
    let (mu, rest) = rest.split_at(k * d);
    let (q, l) = rest.split_at(k * d);
    let x: Vec<Vec<f64>> = (0..4)
        .map(|i| {
            (0..d)
                .map(|j| ((i * 5 + j * 3) % 7) as f64 * 0.3 - 1.0)
                .collect()
        })
        .collect();
    json!({"d": d, "k": k, "n": 4, "m": 1, "gamma": 1.5, "x": x, "alpha": alpha,
           "mu": mu.chunks(d).collect::<Vec<_>>(), "q": q.chunks(d).collect::<Vec<_>>(),
           "l": l.chunks(3).collect::<Vec<_>>()})
}

/// The GMM log-posterior, written out plainly (no max trick; Γ by its recurrence).
fn gmm_reference(input: &Value) -> f64 {
    let (d, k, n) = (3usize, 2usize, 4usize);
    let (gamma, m) = (1.5f64, 1usize);
    let get = |v: &Value| numbers(v);
    let alpha = get(&input["alpha"]);
    let rows = |key: &str| -> Vec<Vec<f64>> {
        input[key]
            .as_array()
            .expect("rows")
            .iter()
            .map(get)
            .collect()
    };
    let (mu, q, l, x) = (rows("mu"), rows("q"), rows("l"), rows("x"));
    let mut total = -(n as f64) * d as f64 * 0.5 * (2.0 * std::f64::consts::PI).ln();
    for xi in &x {
        let mut s = 0.0;
        for j in 0..k {
            // Q = diag(exp q) + strictly lower triangle, column by column.
            let mut big_q = [[0.0; 3]; 3];
            let mut at = 0;
            for c in 0..d {
                big_q[c][c] = q[j][c].exp();
                for row in big_q.iter_mut().skip(c + 1) {
                    row[c] = l[j][at];
                    at += 1;
                }
            }
            let y: Vec<f64> = (0..d)
                .map(|r| (0..d).map(|c| big_q[r][c] * (xi[c] - mu[j][c])).sum())
                .collect();
            let norm: f64 = y.iter().map(|v| v * v).sum();
            s += (alpha[j] + q[j].iter().sum::<f64>() - 0.5 * norm).exp();
        }
        total += s.ln();
    }
    total -= n as f64 * alpha.iter().map(|a| a.exp()).sum::<f64>().ln();
    // Wishart prior with n' = d + m + 1 degrees of freedom; Γ(2.5), Γ(2), Γ(1.5) exactly.
    let dof = (d + m + 1) as f64;
    let pi = std::f64::consts::PI;
    let log_gamma_3 =
        0.75 * 2.0 * pi.ln() + (0.75 * pi.sqrt()).ln() + 1f64.ln() + (0.5 * pi.sqrt()).ln();
    let c = dof * d as f64 * (gamma.ln() - 0.5 * 2f64.ln()) - log_gamma_3;
    for j in 0..k {
        let frobenius: f64 = q[j].iter().map(|v| (2.0 * v).exp()).sum::<f64>()
            + l[j].iter().map(|v| v * v).sum::<f64>();
        total -= 0.5 * gamma * gamma * frobenius - m as f64 * q[j].iter().sum::<f64>();
    }
    total + k as f64 * c
}

#[test]
fn gmm_matches_its_definition_and_finite_differences() {
    let theta: Vec<f64> = (0..2 * (1 + 3 + 3 + 3))
        .map(|i| ((i * 13 % 17) as f64 / 17.0 - 0.5) * 1.2)
        .collect();
    let input = gmm_input(&theta);
    let objective = output("gmm", "objective", input.clone())
        .as_f64()
        .expect("a number");
    assert_close(&[objective], &[gmm_reference(&input)], 1e-12);
    let jacobian = output("gmm", "jacobian", input);
    let flat: Vec<f64> = ["alpha", "mu", "q", "l"]
        .iter()
        .flat_map(|key| match &jacobian[key] {
            Value::Array(items) if items.iter().all(Value::is_array) => {
                items.iter().flat_map(numbers).collect()
            }
            other => numbers(other),
        })
        .collect();
    // Central differences of the tool's objective, θ perturbed entry by entry.
    let [s, d] = start("gmm");
    let mut messages = vec![s, d];
    let h = 1e-5;
    for j in 0..theta.len() {
        for sign in [1.0, -1.0] {
            let mut shifted = theta.clone();
            shifted[j] += sign * h;
            messages.push(evaluate(
                messages.len() as u64,
                "gmm",
                "objective",
                gmm_input(&shifted),
            ));
        }
    }
    let answers = exchange(&messages);
    let fd: Vec<f64> = (0..theta.len())
        .map(|j| {
            let plus = answers[2 + 2 * j]["output"].as_f64().expect("a number");
            let minus = answers[3 + 2 * j]["output"].as_f64().expect("a number");
            (plus - minus) / (2.0 * h)
        })
        .collect();
    assert_close(&flat, &fd, 1e-6);
    let keys: Vec<&String> = jacobian.as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["alpha", "l", "mu", "q"]);
    assert_eq!(jacobian["l"].as_array().map(Vec::len), Some(2));
}

/// A small `ba` input: one camera, point, weight and feature, expanded by the tool to n
/// cameras, m points and p observations (p ≥ 10, so every printed CSR prefix is full).
fn ba_input(cam: &[f64], x: &[f64], w: f64) -> Value {
    json!({"n": 2, "m": 3, "p": 12, "cam": cam, "x": x, "w": w, "feat": [0.3, -0.2],
           "min_runs": 1, "min_seconds": 0})
}

/// w·(proj(cam, X) − feat) written out with f64 (Rodrigues, then radial distortion).
fn ba_reference(cam: &[f64], x: &[f64], w: f64, feat: [f64; 2]) -> [f64; 2] {
    let xo = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    let r = [cam[0], cam[1], cam[2]];
    let theta = (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt();
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let xcam: [f64; 3] = if theta == 0.0 {
        let c = cross(r, xo);
        std::array::from_fn(|i| xo[i] + c[i])
    } else {
        let k = r.map(|v| v / theta);
        let c = cross(k, xo);
        let dot = k[0] * xo[0] + k[1] * xo[1] + k[2] * xo[2];
        std::array::from_fn(|i| {
            xo[i] * theta.cos() + c[i] * theta.sin() + k[i] * dot * (1.0 - theta.cos())
        })
    };
    let proj = [xcam[0] / xcam[2], xcam[1] / xcam[2]];
    let rsq = proj[0] * proj[0] + proj[1] * proj[1];
    let l = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq;
    std::array::from_fn(|i| w * (proj[i] * l * cam[6] + cam[7 + i] - feat[i]))
}

/// The Jacobian of `ba` at (cam, x, w) against its definition's structure and against central
/// differences of the tool's own objective: the first observation's two rows depend on the
/// first camera, point and weight only, and perturbing the one camera (point, weight) of the
/// input perturbs them.
fn ba_check_jacobian(cam: &[f64], x: &[f64], w: f64) {
    let objective = output("ba", "objective", ba_input(cam, x, w));
    let errors = numbers(&objective["reproj_error"]["elements"]);
    assert_close(&errors, &ba_reference(cam, x, w, [0.3, -0.2]), 1e-12);
    assert_eq!(objective["reproj_error"]["repeated"], json!(12));
    assert_close(
        &[objective["w_err"]["element"].as_f64().expect("a number")],
        &[1.0 - w * w],
        0.0,
    );
    assert_eq!(objective["w_err"]["repeated"], json!(12));

    let jacobian = output("ba", "jacobian", ba_input(cam, x, w));
    let keys: Vec<&String> = jacobian.as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["cols", "rows", "vals"]);
    // CSR of 3p = 36 rows over 11n + 3m + p = 43 columns: offsets 15r for the 2p = 24
    // reprojection rows, then one entry per weight row (361, …), the first 30 and the last
    // (30p + p = 372); the first observation sees camera 0, point 0, weight 0 (column 31);
    // the last entry is weight 11's (column 42).
    let offset = |r: usize| if r <= 24 { 15 * r } else { 360 + (r - 24) };
    let rows: Vec<f64> = (0..30).chain([36]).map(|r| offset(r) as f64).collect();
    assert_eq!(numbers(&jacobian["rows"]), rows);
    let one_row = (0..11).chain(22..25).chain([31]);
    let cols: Vec<f64> = one_row
        .clone()
        .chain(one_row)
        .chain([42])
        .map(f64::from)
        .collect();
    assert_eq!(numbers(&jacobian["cols"]), cols);
    let vals = numbers(&jacobian["vals"]);
    assert_eq!(vals.len(), 31);
    assert_close(&vals[30..], &[-2.0 * w], 0.0);

    // Central differences over θ = (cam, x, w), all in one session.
    let theta: Vec<f64> = cam.iter().chain(x).copied().chain([w]).collect();
    let input_at = |t: &[f64]| ba_input(&t[..11], &t[11..14], t[14]);
    let [s, d] = start("ba");
    let mut messages = vec![s, d];
    let steps: Vec<f64> = theta.iter().map(|t| 1e-6 * t.abs().max(1.0)).collect();
    for (j, h) in steps.iter().enumerate() {
        for sign in [1.0, -1.0] {
            let mut shifted = theta.clone();
            shifted[j] += sign * h;
            messages.push(evaluate(
                messages.len() as u64,
                "ba",
                "objective",
                input_at(&shifted),
            ));
        }
    }
    let answers = exchange(&messages);
    let errors_of = |a: &Value| numbers(&a["output"]["reproj_error"]["elements"]);
    for (j, h) in steps.iter().enumerate() {
        let (plus, minus) = (
            errors_of(&answers[2 + 2 * j]),
            errors_of(&answers[3 + 2 * j]),
        );
        for row in 0..2 {
            let fd = (plus[row] - minus[row]) / (2.0 * h);
            let got = vals[15 * row + j];
            // Truncation O(h²) relative, plus the rounding of the two values over 2h.
            let rounding = 4.0 * f64::EPSILON * (plus[row].abs() + minus[row].abs()) / (2.0 * h);
            let tol = 1e-6 * (got.abs() + fd.abs()).max(1.0) + rounding;
            assert!(
                (got - fd).abs() <= tol,
                "∂err{row}/∂θ{j}: {got} vs {fd} (tolerance {tol:e})"
            );
        }
    }
}

#[test]
fn ba_matches_its_definition_and_finite_differences() {
    let cam = [
        -0.3, 0.2, 0.15, 0.1, -0.2, -4.0, 2.0, 0.05, -0.03, 0.08, -0.01,
    ];
    ba_check_jacobian(&cam, &[0.4, -0.3, 1.5], 0.7);
}

#[test]
fn ba_zero_rotation_takes_the_first_order_branch_with_finite_derivatives() {
    let cam = [
        0.0, 0.0, 0.0, 0.1, -0.2, -4.0, 2.0, 0.05, -0.03, 0.08, -0.01,
    ];
    ba_check_jacobian(&cam, &[0.4, -0.3, 1.5], 0.7);
}

#[test]
fn ba_bad_inputs_answer_with_an_error() {
    let good = ba_input(&[0.1; 11], &[0.0, 0.0, 5.0], 0.5);
    let with = |key: &str, value: Value| {
        let mut input = good.clone();
        input[key] = value;
        input
    };
    let [s, d] = start("ba");
    let cases = [
        (with("n", json!(0)), "n, m and p must be positive"),
        (with("p", json!(-3)), "invalid value"),
        (
            with("cam", json!([1.0, 2.0])),
            "cam has 2 numbers, expected 11",
        ),
        (with("feat", json!([1.0])), "feat has 1 numbers, expected 2"),
        (with("p", json!(1u64 << 40)), "too large for 32-bit indices"),
        (json!({"n": 1}), "missing field"),
    ];
    let mut messages = vec![s, d];
    for (input, _) in &cases {
        messages.push(evaluate(
            messages.len() as u64,
            "ba",
            "jacobian",
            input.clone(),
        ));
    }
    messages.push(evaluate(messages.len() as u64, "ba", "objective", good));
    let answers = exchange(&messages);
    for (i, (_, needle)) in cases.iter().enumerate() {
        let answer = &answers[2 + i];
        assert_eq!(answer["success"], json!(false), "{answer}");
        let error = answer["error"].as_str().expect("an error text");
        assert!(error.contains(needle), "{error}");
    }
    assert_eq!(answers.last().expect("answers")["success"], json!(true));
}

/// det by Gaussian elimination with partial pivoting (row-major ℓ×ℓ), independent of the
/// expansion by minors the tool uses.
fn det_by_elimination(a: &[f64], ell: usize) -> f64 {
    let mut m = a.to_vec();
    let mut det = 1.0;
    for col in 0..ell {
        let pivot = (col..ell)
            .max_by(|&i, &j| m[i * ell + col].abs().total_cmp(&m[j * ell + col].abs()))
            .expect("a row");
        if pivot != col {
            for k in 0..ell {
                m.swap(pivot * ell + k, col * ell + k);
            }
            det = -det;
        }
        let p = m[col * ell + col];
        det *= p;
        for i in col + 1..ell {
            let f = m[i * ell + col] / p;
            for k in col..ell {
                m[i * ell + k] -= f * m[col * ell + k];
            }
        }
    }
    det
}

/// The cofactor matrix (∂det/∂A, row-major): (−1)^(i+j) det of A without row i and column j.
fn cofactors(a: &[f64], ell: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(ell * ell);
    for i in 0..ell {
        for j in 0..ell {
            let minor: Vec<f64> = (0..ell)
                .filter(|&r| r != i)
                .flat_map(|r| (0..ell).filter(move |&c| c != j).map(move |c| (r, c)))
                .map(|(r, c)| a[r * ell + c])
                .collect();
            let sign = if (i + j) % 2 == 0 { 1.0 } else { -1.0 };
            out.push(sign * det_by_elimination(&minor, ell - 1));
        }
    }
    out
}

#[test]
fn det_matches_closed_forms_and_elimination() {
    // ℓ = 1 and 2 by hand: det [a] = a; det [[a, b], [c, d]] = ad − bc, gradient (d, −c, −b, a).
    assert_close(
        &[output("det", "primal", json!({"A": [3.5], "ell": 1}))
            .as_f64()
            .unwrap()],
        &[3.5],
        0.0,
    );
    assert_close(
        &numbers(&output("det", "gradient", json!({"A": [3.5], "ell": 1}))),
        &[1.0],
        0.0,
    );
    let a2 = [2.0, 3.0, 5.0, 7.0];
    let y = output("det", "primal", json!({"A": a2, "ell": 2}));
    assert_close(&[y.as_f64().unwrap()], &[2.0 * 7.0 - 3.0 * 5.0], 1e-15);
    let g = numbers(&output("det", "gradient", json!({"A": a2, "ell": 2})));
    assert_close(&g, &[7.0, -5.0, -3.0, 2.0], 1e-15);
    // ℓ = 3 by the rule of Sarrus.
    let a3 = [0.3, -1.2, 2.0, 0.7, 0.5, -0.4, 1.1, 0.9, 0.25];
    let [a, b, c, d, e, f, g3, h, i] = a3;
    let sarrus = a * e * i + b * f * g3 + c * d * h - c * e * g3 - b * d * i - a * f * h;
    let y = output("det", "primal", json!({"A": a3, "ell": 3}));
    assert_close(&[y.as_f64().unwrap()], &[sarrus], 1e-14);
    // ℓ = 3 … 9 (the tool shares minors from ℓ = 3 on): elimination and cofactors, on the
    // non-symmetric matrix Aᵢⱼ = sin(1 + 3i + 7j) + [i = j] (so a transposed answer fails).
    for ell in [3, 4, 6, 9] {
        let a: Vec<f64> = (0..ell * ell)
            .map(|k| {
                (1.0 + 3.0 * (k / ell) as f64 + 7.0 * (k % ell) as f64).sin()
                    + f64::from(u8::from(k / ell == k % ell))
            })
            .collect();
        let input = json!({"A": a, "ell": ell});
        let y = output("det", "primal", input.clone());
        assert_close(
            &[y.as_f64().unwrap()],
            &[det_by_elimination(&a, ell)],
            1e-12,
        );
        let g = numbers(&output("det", "gradient", input));
        assert_close(&g, &cofactors(&a, ell), 1e-12);
    }
}

#[test]
fn det_rejects_bad_sizes() {
    let [s, d] = start("det");
    let answers = exchange(&[
        s,
        d,
        evaluate(2, "det", "primal", json!({"A": [], "ell": 0})),
        evaluate(
            3,
            "det",
            "gradient",
            json!({"A": [1.0, 2.0, 3.0], "ell": 2}),
        ),
        evaluate(4, "det", "primal", json!({"A": [1.0], "ell": 40})),
        evaluate(5, "det", "primal", json!({"A": [1.0], "ell": -1})),
        evaluate(6, "det", "hessian", json!({"A": [1.0], "ell": 1})),
        evaluate(7, "det", "primal", json!({"A": [2.0], "ell": 1})),
    ]);
    for (i, needle) in [
        (2, "ell is 0"),
        (3, "A has 3 numbers, expected ell² = 4"),
        (4, "ell is 40"),
        (5, "expected usize"),
        (6, "has no function \"hessian\""),
    ] {
        assert_eq!(answers[i]["success"], json!(false), "{}", answers[i]);
        let error = answers[i]["error"].as_str().expect("an error text");
        assert!(error.contains(needle), "{error}");
    }
    assert_eq!(answers[7]["output"], json!(2.0));
}

/// The reference's RK4 loop, written out directly (no chunks, no halo).
fn ode_reference(x: &[f64], s: usize) -> Vec<f64> {
    let n = x.len();
    let h = 2.0 / s as f64;
    let f = |y: &[f64]| -> Vec<f64> {
        (0..n)
            .map(|i| if i == 0 { x[0] } else { x[i] * y[i - 1] })
            .collect()
    };
    let mut y = vec![0.0; n];
    for _ in 0..s {
        let k1 = f(&y);
        let t: Vec<f64> = (0..n).map(|i| y[i] + h * k1[i] / 2.0).collect();
        let k2 = f(&t);
        let t: Vec<f64> = (0..n).map(|i| y[i] + h * k2[i] / 2.0).collect();
        let k3 = f(&t);
        let t: Vec<f64> = (0..n).map(|i| y[i] + h * k3[i]).collect();
        let k4 = f(&t);
        for i in 0..n {
            y[i] += h * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) / 6.0;
        }
    }
    y
}

#[test]
fn ode_primal_matches_the_reference_loop() {
    // One chunk, several chunks with a short last one (chunks of 256), s ≥ 1.
    for (n, s) in [(1, 1), (5, 2), (10, 3), (600, 7), (700, 200)] {
        let x: Vec<f64> = (0..n)
            .map(|i| 0.5 + 0.6 * ((i * 7919) % 101) as f64 / 101.0)
            .collect();
        let y = numbers(&output("ode", "primal", json!({"x": x, "s": s})));
        assert_close(&y, &ode_reference(&x, s), 1e-14);
    }
}

#[test]
fn ode_gradient_matches_finite_differences() {
    // The last state entry depends on x only when n ≤ 4s (each RK4 step carries the
    // solution four entries further), so the sizes keep n ≤ 4s; n = 300 spans two chunks.
    // xᵢ ~ 50 at n = 300 keeps y_{n−1} ~ Πxᵢ·2ⁿ/n! from underflowing.
    for (n, s, size, tol) in [
        (1, 1, 1.0, 1e-8),
        (6, 2, 1.0, 1e-8),
        (12, 5, 1.0, 1e-8),
        (300, 100, 50.0, 1e-6),
    ] {
        let x: Vec<f64> = (0..n)
            .map(|i| size * (1.0 + 0.8 * ((i * 7919) % 97) as f64 / 97.0))
            .collect();
        let g = numbers(&output("ode", "gradient", json!({"x": x, "s": s})));
        // Central differences of the tool's own primal; step h: error ~ h²·f‴ + ε·|f|/h.
        // One session per shifted input (a long exchange would fill the pipes); for large n
        // the entries around the chunk boundary and the ends.
        let h = 1e-5;
        let at: Vec<usize> = if n <= 12 {
            (0..n).collect()
        } else {
            vec![0, 1, 100, 254, 255, 256, 257, n - 2, n - 1]
        };
        let last = |x: Vec<f64>| numbers(&output("ode", "primal", json!({"x": x, "s": s})))[n - 1];
        let shifted = |j: usize, d: f64| {
            let mut x = x.clone();
            x[j] += d;
            last(x)
        };
        let fd: Vec<f64> = at
            .iter()
            .map(|&j| (shifted(j, h) - shifted(j, -h)) / (2.0 * h))
            .collect();
        let g: Vec<f64> = at.iter().map(|&j| g[j]).collect();
        // Relative to the gradient's scale, which may be far below GradBench's floor of 1.
        let scale = fd.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(scale > 0.0, "n={n} s={s}: a zero gradient tests nothing");
        let scaled = |v: &[f64]| v.iter().map(|x| x / scale).collect::<Vec<_>>();
        assert_close(&scaled(&g), &scaled(&fd), tol);
    }
}

#[test]
fn ode_rejects_bad_input() {
    let [s, d] = start("ode");
    let answers = exchange(&[
        s,
        d,
        evaluate(2, "ode", "primal", json!({"x": [1.0], "s": 0})),
        evaluate(3, "ode", "gradient", json!({"x": [], "s": 3})),
        evaluate(4, "ode", "primal", json!({"x": ["a"], "s": 3})),
        evaluate(
            5,
            "ode",
            "gradient",
            json!({"x": vec![1.0; 100], "s": 4_000_000_000u64}),
        ),
        evaluate(6, "ode", "primal", json!({"x": [1.0, 1.0], "s": 1})),
    ]);
    for (i, needle) in [
        (2, "s is 0"),
        (3, "x is empty"),
        (4, "input of ode.primal"),
        (5, "too large for the gradient's tape"),
    ] {
        assert_eq!(answers[i]["success"], json!(false), "{}", answers[i]);
        let error = answers[i]["error"].as_str().expect("an error text");
        assert!(error.contains(needle), "{error}");
    }
    // n = 2, s = 1, h = 2: y₀ = 2·x₀ = 2, y₁ = h²·x₀x₁/2 = 2 (RK4 is exact on this polynomial).
    assert_eq!(answers[6]["output"], json!([2.0, 2.0]));
}
