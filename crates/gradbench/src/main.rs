//! `gradbench-adjit`: a [GradBench](https://github.com/gradbench/gradbench) tool backed by
//! adjit. It reads one JSON message per line on stdin and answers each with one JSON line on
//! stdout (the GradBench tool protocol: `start`, `define`, `evaluate`, `analysis`).
//!
//! Every eval traces its function (or one per-row kernel) with adjit's tracer once per size,
//! derives and JIT-compiles it, and caches the compiled objects; that work is reported as the
//! unscored `"prepare"` timing, the calls themselves as one `"evaluate"` timing per run.
//!
//! The tool never panics on what it reads: a line that is not a message, an input of the
//! wrong shape or an unknown eval or function is answered with `"success": false` and an
//! `"error"` text, and the session goes on.

mod error;
mod evals;
mod input;
mod measure;
mod protocol;

use std::io::{self, BufWriter};
use std::process::ExitCode;

const USAGE: &str = "usage: gradbench-adjit [--threads N]   (N = 0: every core; default 1, like GradBench's C++ tools)";

/// The configuration from the command line.
fn config(args: impl Iterator<Item = String>) -> Result<evals::Config, String> {
    let mut config = evals::Config::default();
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--threads" => {
                let n = args.next().ok_or("--threads needs a number")?;
                config.threads = n.parse().map_err(|e| format!("--threads {n}: {e}"))?;
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(config)
}

fn main() -> ExitCode {
    let config = match config(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("gradbench-adjit: {message}");
            return ExitCode::from(2);
        }
    };
    let stdin = io::stdin().lock();
    let stdout = BufWriter::new(io::stdout().lock());
    match protocol::serve(config, stdin, stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gradbench-adjit: {e}");
            ExitCode::FAILURE
        }
    }
}
