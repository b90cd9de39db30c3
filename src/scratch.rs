//! Per-thread scratch buffers, so compile-once objects (`Gradient`, `CompiledInverse`) can
//! assemble the inputs and outputs of their native code without allocating on every call.

use std::cell::RefCell;

thread_local! {
    static SCRATCH: RefCell<(Vec<f64>, Vec<f64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Run `f` on zeroed buffers of `n_in` and `n_out` numbers. The buffers are reused across calls
/// on one thread (they grow once); a nested call gets fresh ones instead of panicking.
pub(crate) fn with_scratch<R>(
    n_in: usize,
    n_out: usize,
    f: impl FnOnce(&mut [f64], &mut [f64]) -> R,
) -> R {
    let mut f = Some(f);
    let reused = SCRATCH.with(|cell| {
        let mut guard = cell.try_borrow_mut().ok()?;
        let (inputs, outputs) = &mut *guard;
        inputs.clear();
        inputs.resize(n_in, 0.0);
        outputs.clear();
        outputs.resize(n_out, 0.0);
        let f = f.take()?;
        Some(f(inputs, outputs))
    });
    match (reused, f) {
        (Some(r), _) => r,
        (None, Some(f)) => f(&mut vec![0.0; n_in], &mut vec![0.0; n_out]),
        (None, None) => unreachable!("the closure ran but returned no value"),
    }
}
