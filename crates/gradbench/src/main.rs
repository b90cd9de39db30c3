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

fn main() -> ExitCode {
    let stdin = io::stdin().lock();
    let stdout = BufWriter::new(io::stdout().lock());
    match protocol::serve(stdin, stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gradbench-adjit: {e}");
            ExitCode::FAILURE
        }
    }
}
