//! A deterministic mutation fuzzer for the text format (the stand-in for `fuzz/`, which needs
//! nightly): every corpus file and some random programs are mutated by byte and token
//! insertions, deletions, swaps, duplications and truncations, and random token soup is added.
//! For every input, parse → verify → print must not panic, and every function that verifies
//! must print to text that parses back to the identical function, printing being a fixpoint.
//! Byte-level mutations (invalid UTF-8, line ends, byte order marks) go through
//! `text::decode_source` first, as a file read from disk does.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::text::decode_source;
use adjit_ir::{parse, verify};

/// Tokens worth inserting: every keyword, opcode, type and punctuation of the format, and
/// literals at the edges of what is representable.
const TOKENS: &[&str] = &[
    "func",
    "ret",
    "@f",
    "@g",
    "%x",
    "%y",
    "%a",
    "%b",
    "%x.1",
    "%0",
    "(",
    ")",
    "{",
    "}",
    ",",
    ":",
    "=",
    "->",
    "f32",
    "f64",
    "bool",
    "float",
    "const",
    "neg",
    "abs",
    "sqrt",
    "exp",
    "log",
    "sin",
    "tanh",
    "erf",
    "floor",
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "atan2",
    "min",
    "max",
    "fma",
    "powi",
    "fcmp.lt",
    "fcmp.ne",
    "fcmp.",
    "select",
    "fpromote",
    "fdemote",
    "1.0",
    "-0.0",
    "0.1",
    "1e999",
    "1e-400",
    "-1e39",
    "0x1p-1074",
    "0x1.fffffffffffff8p1023",
    "0x1p-149",
    "0x",
    "0x1q",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "true",
    "false",
    "99999999999",
    "-2147483648",
    "2147483647",
    "1.5.5",
    "; comment",
    "\n",
    "\n",
    "\n",
    " ",
    "\t",
    "\0",
    "β",
    "∞",
    "%",
    "@",
    "-",
    "+",
    ".",
    "$",
    "\r\n",
    "\r",
    "\u{FEFF}",
    "\u{200B}",
];

/// Files larger than this (the `ir/bench/` programs, up to 1.5 MB) are left out: mutating them
/// 20,000 times would take minutes and exercise nothing the small files do not.
const MAX_SEED_BYTES: usize = 16 * 1024;

/// The corpus files: those that load cleanly, and the error files (`ir/errors/`).
fn corpus_sources() -> (Vec<String>, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "ir") {
                if let Ok(s) = std::fs::read_to_string(&p) {
                    if s.len() > MAX_SEED_BYTES {
                        continue;
                    }
                    out.push((p.to_string_lossy().contains("errors"), s));
                }
            }
        }
    }
    out.sort();
    let (broken, valid): (Vec<_>, Vec<_>) = out.into_iter().partition(|(b, _)| *b);
    (
        valid.into_iter().map(|(_, s)| s).collect(),
        broken.into_iter().map(|(_, s)| s).collect(),
    )
}

/// A char boundary of `s` at or before `i`.
fn boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mutate(rng: &mut Rng, src: &str) -> String {
    let mut s = src.to_string();
    let n_mutations = if rng.chance(0.5) { 1 } else { 2 + rng.below(3) };
    for _ in 0..n_mutations {
        let len = s.len().max(1);
        let at = boundary(&s, rng.below(len + 1));
        match rng.below(7) {
            0 => {
                let tok = TOKENS[rng.below(TOKENS.len())];
                s.insert_str(at, tok);
            }
            1 => {
                let byte = (rng.below(95) as u8 + 32) as char;
                s.insert(at, byte);
            }
            2 => {
                let end = boundary(&s, at + 1 + rng.below(12));
                s.replace_range(at..end.max(at), "");
            }
            3 => s.truncate(at),
            4 => {
                // Swap two lines.
                let mut lines: Vec<&str> = s.lines().collect();
                if lines.len() > 1 {
                    let a = rng.below(lines.len());
                    let b = rng.below(lines.len());
                    lines.swap(a, b);
                }
                s = lines.join("\n");
            }
            5 => {
                // Duplicate a line.
                let mut lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let a = rng.below(lines.len());
                    lines.insert(rng.below(lines.len()), lines[a]);
                }
                s = lines.join("\n");
            }
            _ => {
                // Replace one whitespace-separated word by a token.
                let words: Vec<&str> = s.split(' ').collect();
                if !words.is_empty() {
                    let k = rng.below(words.len());
                    let tok = TOKENS[rng.below(TOKENS.len())];
                    s = words
                        .iter()
                        .enumerate()
                        .map(|(i, w)| if i == k { tok } else { w })
                        .collect::<Vec<_>>()
                        .join(" ");
                }
            }
        }
    }
    s
}

fn token_soup(rng: &mut Rng) -> String {
    let n = rng.below(60);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(TOKENS[rng.below(TOKENS.len())]);
        if rng.chance(0.7) {
            s.push(' ');
        }
    }
    s
}

/// Parse, verify and print `src`; the round trip must hold for every function that verifies.
/// Returns how many functions verified.
fn check(src: &str) -> usize {
    // Every error is located: parse errors at a line and column of the source (or the line
    // after its end), verifier errors at the place of their value or `ret`.
    let n_lines = adjit_ir::text::source_lines(src).count();
    let located = |line: usize, col: usize| line >= 1 && col >= 1 && line <= n_lines + 1;
    let parsed = match adjit_ir::text::parse_with_source(src) {
        Ok(parsed) => parsed,
        Err(errs) => {
            for e in &errs.errors {
                assert!(located(e.line, e.col), "unlocated parse error {e}\n{src:?}");
            }
            return 0;
        }
    };
    let mut n_verified = 0;
    for (f, map) in &parsed {
        let printed = f.to_string();
        if let Err(errs) = verify(f) {
            for e in &errs.errors {
                let (line, col) = map.place(e.value);
                assert!(located(line, col), "unlocated verifier error {e}\n{src:?}");
            }
            // Printing an unverified function must still be safe, and so is reading it back.
            let _ = parse(&printed);
            continue;
        }
        n_verified += 1;
        let again = match parse(&printed) {
            Ok(mut g) if g.len() == 1 => g.remove(0),
            other => panic!("a verified function did not reparse: {other:?}\n{printed}"),
        };
        assert_eq!(f, &again, "round trip changed the function\n{printed}");
        assert_eq!(printed, again.to_string(), "printing is not a fixpoint");
    }
    n_verified
}

#[test]
fn mutated_inputs_never_panic_and_round_trip() {
    let (mut seeds, broken) = corpus_sources();
    assert!(
        seeds.len() >= 9 && broken.len() >= 15,
        "expected the ir/ corpus, found {} valid and {} error files",
        seeds.len(),
        broken.len()
    );
    for seed in 0..8 {
        let opts = RandomOptions {
            n_insts: 12,
            non_smooth: seed % 2 == 0,
            ..RandomOptions::default()
        };
        seeds.push(random_function(seed, &opts).to_string());
    }
    // CI runs 20,000 inputs; a campaign sets ADJIT_FUZZ_INPUTS (e.g. 1000000) and a seed.
    let rounds: usize = std::env::var("ADJIT_FUZZ_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let seed: u64 = std::env::var("ADJIT_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let mut rng = Rng::new(seed);
    let mut n_inputs = 0;
    let mut n_verified = 0;
    for round in 0..rounds {
        let input = if round % 10 == 9 {
            token_soup(&mut rng)
        } else if round % 10 == 8 {
            let k = rng.below(broken.len());
            mutate(&mut rng, &broken[k])
        } else {
            let k = rng.below(seeds.len());
            mutate(&mut rng, &seeds[k])
        };
        let result = catch_unwind(AssertUnwindSafe(|| check(&input)));
        match result {
            Ok(n) => n_verified += n,
            Err(_) => panic!("input {round} panicked:\n{input:?}"),
        }
        n_inputs += 1;
    }
    assert_eq!(n_inputs, rounds);
    if rounds != 20_000 {
        println!("{n_inputs} mutated inputs, {n_verified} verified functions round-tripped");
    }
    // The mutations must leave enough programs valid for the round trip to be exercised.
    assert!(
        n_verified > 1_000,
        "only {n_verified} mutated functions verified"
    );
}

#[test]
fn pathological_inputs_do_not_panic() {
    let long_name = format!(
        "func @f(%{}: f64) -> f64 {{\n    ret %{0}\n}}\n",
        "x".repeat(10_000)
    );
    let mut many_lines = "func @f(%v0: f64) -> f64 {\n".to_string();
    for i in 1..5000 {
        many_lines += &format!("    %v{i} = neg %v{}\n", i - 1);
    }
    many_lines += "    ret %v4999\n}\n";
    let redefinitions = "func @f(%x: f64) -> f64 {\n".to_string()
        + &"    %x = neg %x\n".repeat(200)
        + "    ret %x\n}\n";
    let inputs = [
        String::new(),
        "\0\0\0".into(),
        "func".into(),
        "func @f(".into(),
        "func @f(%x: f64) -> f64 {".into(),
        "}".into(),
        format!(
            "func @f(%x: f64) -> f64 {{\n    %a = add %x, 1{}\n    ret %a\n}}\n",
            "0".repeat(5000)
        ),
        format!(
            "func @f(%x: f64) -> f64 {{\n    %a = add %x, 0x1p{}\n    ret %a\n}}\n",
            "9".repeat(50)
        ),
        format!(
            "func @f(%x: f64) -> f64 {{\n    %a = add %x, 0x{}p-99999999999\n    ret %a\n}}\n",
            "f".repeat(200)
        ),
        "func @f(%x: f64) -> f64 {\n    %a = powi %x, 99999999999\n    ret %a\n}\n".into(),
        "func @f(%x: f64) -> f64 {\n    %a = powi %x, -2147483649\n    ret %a\n}\n".into(),
        "func @é(%ü: f64) -> f64 {\n    ret %ü\n}\n".into(),
        "(((((((((((((((((((((((((((((((((((((((((".repeat(1000),
        long_name,
        many_lines,
        redefinitions,
    ];
    for input in &inputs {
        check(input);
    }
}

/// `src` with every line end replaced by `end`.
fn with_line_ends(src: &str, end: &str) -> String {
    let mut out = String::with_capacity(src.len());
    for line in adjit_ir::text::source_lines(src) {
        out.push_str(line);
        out.push_str(end);
    }
    out
}

/// Decode `bytes` as a file is decoded, then parse, verify and print. A refusal must be a
/// located `invalid UTF-8` error; text that decodes goes through [`check`].
fn check_bytes(bytes: &[u8]) -> usize {
    match decode_source(bytes) {
        Ok(text) => check(text),
        Err(e) => {
            assert!(
                e.line >= 1 && e.col >= 1 && e.message.starts_with("invalid UTF-8"),
                "{e}"
            );
            let n_line_ends = bytes.iter().filter(|&&b| b == b'\n' || b == b'\r').count();
            assert!(e.line <= n_line_ends + 1, "{e}: past the last line");
            0
        }
    }
}

#[test]
fn line_ends_and_byte_order_marks_do_not_change_the_functions() {
    let (seeds, _) = corpus_sources();
    for seed in &seeds {
        let expected = parse(seed).unwrap_or_else(|e| panic!("{e}\n{seed}"));
        for end in ["\n", "\r\n", "\r"] {
            for bom in ["", "\u{FEFF}"] {
                let variant = format!("{bom}{}", with_line_ends(seed, end));
                let text = decode_source(variant.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    parse(text).as_ref(),
                    Ok(&expected),
                    "{end:?} {bom:?}\n{seed}"
                );
            }
        }
    }
}

#[test]
fn mutated_bytes_never_panic() {
    let (mut seeds, broken) = corpus_sources();
    seeds.extend(broken);
    let mut rng = Rng::new(0xb17e5);
    let mut n_refused = 0;
    for round in 0..5_000 {
        let seed = &seeds[rng.below(seeds.len())];
        let ends = ["\n", "\r\n", "\r"][rng.below(3)];
        let mut bytes = with_line_ends(seed, ends).into_bytes();
        if rng.chance(0.2) {
            bytes.splice(0..0, "\u{FEFF}".bytes());
        }
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(bytes.len() + 1);
            match rng.below(4) {
                // Any byte, most often one that cannot stand alone in UTF-8.
                0 => bytes.insert(at, rng.below(256) as u8),
                1 => bytes.insert(at, 0x80 + rng.below(128) as u8),
                // A character cut short: the first bytes of a multi-byte one.
                2 => {
                    let cut = &"∞".as_bytes()[..1 + rng.below(2)];
                    bytes.splice(at..at, cut.iter().copied());
                }
                _ => bytes.truncate(at),
            }
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            let n = check_bytes(&bytes);
            n == 0 && decode_source(&bytes).is_err()
        }));
        match result {
            Ok(refused) => n_refused += usize::from(refused),
            Err(_) => panic!("byte input {round} panicked:\n{bytes:?}"),
        }
    }
    // Most mutations break the encoding; the rest must still have been parsed.
    assert!(
        (1_000..5_000).contains(&n_refused),
        "{n_refused} of 5000 refused"
    );
}
