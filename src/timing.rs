//! Timing compiled code for benchmarks and examples: medians over several batches after a
//! warm-up, each batch long enough (≥ 10 ms) that timer resolution does not matter. Meant to be
//! compared *within* one run (gradient / primal), not across machines.

use std::time::{Duration, Instant};

use crate::error::Result;

/// Time `call` (which performs one evaluation) and return the median nanoseconds per call.
pub fn time_per_call(mut call: impl FnMut() -> Result<()>) -> Result<f64> {
    call()?; // warm-up, and surface errors before timing
    let mut iters: u64 = 1;
    loop {
        let start = Instant::now();
        for _ in 0..iters {
            call()?;
        }
        let elapsed = start.elapsed();
        if elapsed >= Duration::from_millis(10) || iters >= 1 << 30 {
            break;
        }
        iters *= 4;
    }
    let mut samples = Vec::with_capacity(7);
    for _ in 0..7 {
        let start = Instant::now();
        for _ in 0..iters {
            call()?;
        }
        samples.push(start.elapsed().as_nanos() as f64 / iters as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}
