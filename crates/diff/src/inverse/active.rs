//! Which values of a program the inverse modes treat as active, read from [`crate::activity()`]
//! as one flag per value: the analysis every other inverse file starts from (the lump
//! partition, the greedy order, the renderings), so it sits below all of them.

use adjit_ir::{Function, Value};

/// Which values are active (see [`crate::activity()`]), indexed by value.
pub(crate) fn active_flags(func: &Function) -> Vec<bool> {
    let act = crate::activity(func);
    (0..func.n_values())
        .map(|i| act.is_active(Value::new(i)))
        .collect()
}
