//! Per-thread scratch buffers, so compile-once objects (`Gradient`, `CompiledInverse`) can
//! assemble the inputs and outputs of their native code without allocating on every call.

use std::cell::RefCell;

thread_local! {
    static SCRATCH: RefCell<(Vec<f64>, Vec<f64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Run `f` on buffers of `n_in` and `n_out` numbers, whose contents are unspecified (callers
/// overwrite every entry before reading). The buffers are reused across calls on one thread
/// (they grow once, and are not cleared per call); a nested call gets fresh ones instead of
/// panicking.
pub(crate) fn with_scratch<R>(
    n_in: usize,
    n_out: usize,
    f: impl FnOnce(&mut [f64], &mut [f64]) -> R,
) -> R {
    let mut f = Some(f);
    let reused = SCRATCH.with(|cell| {
        let mut guard = cell.try_borrow_mut().ok()?;
        let (inputs, outputs) = &mut *guard;
        if inputs.len() < n_in {
            inputs.resize(n_in, 0.0);
        }
        if outputs.len() < n_out {
            outputs.resize(n_out, 0.0);
        }
        let f = f.take()?;
        Some(f(&mut inputs[..n_in], &mut outputs[..n_out]))
    });
    match (reused, f) {
        (Some(r), _) => r,
        (None, Some(f)) => f(&mut vec![0.0; n_in], &mut vec![0.0; n_out]),
        (None, None) => unreachable!("the closure ran but returned no value"),
    }
}
