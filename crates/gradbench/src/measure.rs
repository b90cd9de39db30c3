//! Repeating an evaluation as the eval asks (`min_runs`, `min_seconds`) and reporting one
//! `"evaluate"` timing per run, after one `"prepare"` timing.

use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::input::Source;

/// Runs beyond `min_runs` stop here even before `min_seconds`: a 50 ns evaluation (det at
/// ℓ = 5) would otherwise answer with 2·10⁷ timings, a 700 MB line that GradBench's eval process
/// failed on ("broken pipe"). 10⁶ timings keep the mean exact to the clock and the line ~35 MB.
pub const MAX_TIMINGS: u64 = 1_000_000;

/// One named duration of a response's `timings`.
#[derive(Clone, Debug, Serialize)]
pub struct Timing {
    pub name: &'static str,
    pub nanoseconds: u128,
}

/// How often to run: at least `min_runs` times (never fewer than once) and until
/// `min_seconds` of evaluation have passed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Runs {
    pub min_runs: u64,
    pub min_seconds: f64,
}

impl Runs {
    /// The `min_runs` (default 1) and `min_seconds` (default 0) of an input.
    pub fn of(input: &Value, source: Source<'_>) -> Result<Runs> {
        let min_runs = match input.get("min_runs") {
            None | Some(Value::Null) => 1,
            Some(v) => v
                .as_u64()
                .ok_or_else(|| source.error(format!("min_runs is {v}, expected a count")))?,
        };
        let min_seconds = match input.get("min_seconds") {
            None | Some(Value::Null) => 0.0,
            Some(v) => v
                .as_f64()
                .filter(|s| s.is_finite())
                .ok_or_else(|| source.error(format!("min_seconds is {v}, expected seconds")))?,
        };
        Ok(Runs {
            min_runs,
            min_seconds,
        })
    }
}

/// The output of an evaluation and its timings.
#[derive(Debug)]
pub struct Evaluation {
    pub output: Value,
    pub timings: Vec<Timing>,
}

/// Time `prepare` (trace, derive, compile, lay out the data) once, then `run` as `runs`
/// asks (at most [`MAX_TIMINGS`] runs once `min_runs` are done); the output is made from the
/// last run's result by `to_json`, outside the timings.
pub fn evaluate<P, T>(
    runs: Runs,
    prepare: impl FnOnce() -> Result<P>,
    mut run: impl FnMut(&P) -> Result<T>,
    to_json: impl FnOnce(T) -> Value,
) -> Result<Evaluation> {
    evaluate_into(
        runs,
        prepare,
        |prepared, out: &mut Option<T>| {
            *out = Some(run(prepared)?);
            Ok(())
        },
        |out| out.map_or(Value::Null, to_json),
    )
}

/// [`evaluate`] with one output value that every run overwrites, as GradBench's C++ tools
/// reuse theirs (`manual` resizes one output vector): a large output is then allocated, and
/// its pages faulted in, once rather than in every timed run.
pub fn evaluate_into<P, T: Default>(
    runs: Runs,
    prepare: impl FnOnce() -> Result<P>,
    mut run: impl FnMut(&P, &mut T) -> Result<()>,
    to_json: impl FnOnce(T) -> Value,
) -> Result<Evaluation> {
    let start = Instant::now();
    let prepared = prepare()?;
    let mut timings = vec![Timing {
        name: "prepare",
        nanoseconds: start.elapsed().as_nanos(),
    }];
    let mut elapsed = 0.0;
    let mut done = 0;
    let mut output = T::default();
    while done < runs.min_runs.max(1) || (elapsed < runs.min_seconds && done < MAX_TIMINGS) {
        let start = Instant::now();
        run(&prepared, &mut output)?;
        let took = start.elapsed();
        timings.push(Timing {
            name: "evaluate",
            nanoseconds: took.as_nanos(),
        });
        elapsed += took.as_secs_f64();
        done += 1;
    }
    Ok(Evaluation {
        output: to_json(output),
        timings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_seconds_stops_at_max_timings_but_min_runs_does_not() {
        let forever = Runs {
            min_runs: 1,
            min_seconds: 1e9,
        };
        let e = evaluate(forever, || Ok(()), |_| Ok(1), Value::from).unwrap();
        assert_eq!(
            e.timings.len() as u64,
            1 + MAX_TIMINGS,
            "prepare + capped runs"
        );
        let many = Runs {
            min_runs: MAX_TIMINGS + 5,
            min_seconds: 0.0,
        };
        let e = evaluate(many, || Ok(()), |_| Ok(1), Value::from).unwrap();
        assert_eq!(
            e.timings.len() as u64,
            1 + MAX_TIMINGS + 5,
            "min_runs is honoured"
        );
    }
}
