//! Step transforms: the IR-to-IR passes behind iterated steps `s_{k+1} = step(s_k, θ)`.
//!
//! A *step* returns the next state: its `n` outputs are the state, and its first `n`
//! parameters are the state (the parameters after them, θ, are shared by every step). Two
//! passes turn a step or an objective into the programs an iterated-step driver compiles:
//!
//! * [`pass_through`] appends some parameters to a function's returns, so that the VJP of
//!   `step′(s, θ) = (step(s, θ), θ)` takes θ's running adjoint as the cotangent of the
//!   passed-through θ: each step's reverse then continues the unrolled reverse sweep's single
//!   chain of additions into θ̄ instead of adding per-step partial sums.
//! * [`running_sum`] carries a loss summed over the states as one more state entry: the step
//!   becomes `(s, acc, θ) ↦ (step(s, θ), acc + ℓ(step(s, θ), θ))`, and the objective
//!   `(s, acc, θ) ↦ acc` reads the sum, so any reversal schedule over the steps applies
//!   unchanged.
//!
//! Both leave the instructions they are given alone (copied or inlined in order, never
//! rewritten), so every number they compute is the input programs' own, bit for bit. They
//! assume verified functions and check the shapes they rely on.

use adjit_ir::{BinaryOp, Function, InstData, Type, Value};

/// Why a step transform cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error(
        "@{func} is not a step: a step returns the state and takes it first, but it has \
         {outputs} outputs and {params} parameters"
    )]
    NotAStep {
        func: String,
        outputs: usize,
        params: usize,
    },
    #[error(
        "@{loss} cannot be summed over the steps of @{step}: a summed loss takes the step's \
         parameters (state, then θ, with their types and kinds) and returns one float"
    )]
    LossSignature { loss: String, step: String },
    #[error(
        "@{func} has {n_params} parameters, so parameter {index} cannot be passed through; \
         give positions below {n_params}"
    )]
    NoSuchParam {
        func: String,
        index: usize,
        n_params: usize,
    },
}

/// `func` with its parameters at positions `at` appended to its returns, in that order.
///
/// For a step and its differentiated θ positions this is `step′(s, θ) = (step(s, θ), θ)`,
/// whose VJP takes θ's running adjoint as the cotangent of the appended returns.
///
/// ```
/// use adjit_diff::steps::pass_through;
/// let f = adjit_ir::trace::trace_multi("f", &[adjit_ir::Type::F64; 2], |x| vec![x[0] * x[1]]);
/// let g = pass_through(&f, &[1]).unwrap();
/// assert_eq!(adjit_ir::interpret(&g, &[3.0, 2.0]).unwrap(), vec![6.0, 2.0]);
/// ```
pub fn pass_through(func: &Function, at: &[usize]) -> Result<Function, StepError> {
    let mut f = func.clone();
    for &i in at {
        if i >= func.n_params {
            return Err(StepError::NoSuchParam {
                func: func.name.clone(),
                index: i,
                n_params: func.n_params,
            });
        }
        f.push_ret(Value::new(i));
    }
    Ok(f)
}

/// The step with a running sum of `loss` over the states it produces, and the objective that
/// reads the sum: `(s, acc, θ) ↦ (step(s, θ), acc + ℓ(step(s, θ), θ))` and
/// `(s, acc, θ) ↦ acc`.
///
/// `acc` is an `f64` parameter inserted after the state (named `loss_sum`, or with `_`
/// appended until no value of the step prints with that name), so an N-step run from
/// `acc = 0` ends with `acc = Σ_{k=1..N} ℓ(s_k, θ)`. The loss takes the step's parameters (the
/// new state, then the same θ) and returns one float; an `f32` loss is promoted before the
/// addition.
pub fn running_sum(step: &Function, loss: &Function) -> Result<(Function, Function), StepError> {
    let same_params = loss.n_params == step.n_params
        && step
            .params()
            .all(|p| loss.ty(p) == step.ty(p) && loss.is_data(p) == step.is_data(p));
    if !same_params || loss.ret_types.len() != 1 || !loss.ret_types[0].is_float() {
        return Err(StepError::LossSignature {
            loss: loss.name.clone(),
            step: step.name.clone(),
        });
    }
    let n_state = step.n_outputs();
    if n_state == 0 || step.n_params < n_state {
        return Err(StepError::NotAStep {
            func: step.name.clone(),
            outputs: n_state,
            params: step.n_params,
        });
    }
    let mut f = Function::new(format!("{}_with_{}", step.name, loss.name));
    let mut params: Vec<Value> = Vec::with_capacity(step.n_params + 1);
    for p in step.params() {
        if p.index() == n_state {
            f.add_param(Type::F64, Some(running_name(step).into()));
        }
        let v = f.add_param(step.ty(p), step.name(p).cloned());
        f.set_param_kind(v, step.param_kind(p));
        params.push(v);
    }
    let acc = Value::new(n_state);
    if step.n_params == n_state {
        f.add_param(Type::F64, Some(running_name(step).into()));
    }
    let next = f.inline(step, &params);
    // ℓ reads the new state and the same θ.
    let mut loss_params = next.clone();
    loss_params.extend_from_slice(&params[n_state..]);
    let l = f.inline(loss, &loss_params)[0];
    let l = if f.ty(l) == Type::F64 {
        l
    } else {
        f.push_inst(Type::F64, InstData::Fpromote { arg: l }, None)
    };
    let sum = f.push_inst(
        Type::F64,
        InstData::Binary {
            op: BinaryOp::Add,
            args: [acc.into(), l.into()],
        },
        None,
    );
    for v in next {
        f.push_ret(v);
    }
    f.push_ret(sum);
    let mut total = Function::new(format!("{}_total", f.name));
    for p in f.params() {
        let v = total.add_param(f.ty(p), f.name(p).cloned());
        total.set_param_kind(v, f.param_kind(p));
    }
    total.push_ret(acc);
    Ok((f, total))
}

/// A parameter name for the running sum that no value of the step prints with.
fn running_name(step: &Function) -> String {
    let names = adjit_ir::text::printed_names(step);
    let mut name = "loss_sum".to_string();
    while names.contains(&name) {
        name.push('_');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use adjit_ir::interpret;
    use adjit_ir::trace::{trace_multi, Var};
    use adjit_ir::ParamKind;

    /// s = (p, q), θ = a, and a data step size dt.
    fn step_fn<'t>(x: &[Var<'t>]) -> Vec<Var<'t>> {
        let (p, q, a, dt) = (x[0], x[1], x[2], x[3]);
        vec![p + q * dt, q - p.sin() * a * dt]
    }

    fn loss_fn<'t>(x: &[Var<'t>]) -> Var<'t> {
        x[0] * x[0] + x[1] * x[2]
    }

    fn with_data(mut f: Function) -> Function {
        f.set_param_kind(Value::new(3), ParamKind::Data);
        f
    }

    fn bits(xs: &[f64]) -> Vec<u64> {
        xs.iter().map(|x| x.to_bits()).collect()
    }

    /// Three steps of the augmented step from acc = 0 sum the loss exactly as the unrolled
    /// program does, state and sum bit for bit; the objective returns the sum.
    #[test]
    fn a_running_sum_equals_the_unrolled_sum() {
        let types = [Type::F64; 4];
        let step = with_data(trace_multi("osc", &types, step_fn));
        let loss = with_data(trace_multi("energy", &types, |x| vec![loss_fn(x)]));
        let (augmented, total) = running_sum(&step, &loss).unwrap();
        adjit_ir::verify(&augmented).unwrap();
        adjit_ir::verify(&total).unwrap();
        assert_eq!(augmented.n_params, 5);
        assert!(augmented.is_data(Value::new(4)));
        assert_eq!(adjit_ir::text::printed_names(&augmented)[2], "loss_sum");
        let unrolled = trace_multi("unrolled", &types, |x| {
            let mut s = vec![x[0], x[1]];
            let mut sum = x[0] * 0.0;
            for _ in 0..3 {
                s = step_fn(&[s[0], s[1], x[2], x[3]]);
                sum += loss_fn(&[s[0], s[1], x[2], x[3]]);
            }
            vec![s[0], s[1], sum]
        });
        let x = [0.3, -0.2, 1.1, 0.1];
        let expected = interpret(&unrolled, &x).unwrap();
        let mut state = vec![x[0], x[1], 0.0, x[2], x[3]];
        for _ in 0..3 {
            let out = interpret(&augmented, &state).unwrap();
            state[..3].copy_from_slice(&out);
        }
        assert_eq!(bits(&state[..3]), bits(&expected));
        assert_eq!(interpret(&total, &state).unwrap(), vec![state[2]]);
    }

    /// A stateless-θ step gets its sum as the last parameter; an f32 loss is promoted; a
    /// parameter already printed `loss_sum` is not shadowed.
    #[test]
    fn the_sum_parameter_is_placed_and_named_without_clashes() {
        let step = adjit_ir::trace::trace_named("half", &["loss_sum"], |x| x[0] * 0.5);
        let loss = trace_multi("sq", &[Type::F64], |x| vec![(x[0] * x[0]).to_f32()]);
        let (augmented, _) = running_sum(&step, &loss).unwrap();
        adjit_ir::verify(&augmented).unwrap();
        assert_eq!(adjit_ir::text::printed_names(&augmented)[1], "loss_sum_");
        let out = interpret(&augmented, &[3.0, 1.0]).unwrap();
        assert_eq!(out, vec![1.5, 1.0 + (2.25f32 as f64)]);
    }

    #[test]
    fn shapes_that_are_not_steps_are_errors() {
        let types = [Type::F64; 4];
        let step = with_data(trace_multi("osc", &types, step_fn));
        let wide = trace_multi("wide", &[Type::F64], |x| vec![x[0]; 2]);
        let one = trace_multi("one", &[Type::F64], |x| vec![x[0]]);
        let err = running_sum(&wide, &one).unwrap_err();
        assert!(
            err.to_string().contains("2 outputs and 1 parameters"),
            "{err}"
        );
        // The loss's dt is differentiated where the step's is data.
        let loss = trace_multi("energy", &types, |x| vec![loss_fn(x)]);
        let err = running_sum(&step, &loss).unwrap_err();
        assert!(
            err.to_string().contains("takes the step's parameters"),
            "{err}"
        );
        let err = pass_through(&step, &[2, 4]).unwrap_err();
        assert!(err.to_string().contains("parameter 4"), "{err}");
    }

    /// The passed-through parameters come back unchanged after the original returns, and the
    /// VJP of the result takes their cotangent as an extra input that is added into theirs.
    #[test]
    fn pass_through_appends_the_parameters() {
        let step = with_data(trace_multi("osc", &[Type::F64; 4], step_fn));
        let g = pass_through(&step, &[2]).unwrap();
        adjit_ir::verify(&g).unwrap();
        let x = [0.3, -0.2, 1.1, 0.1];
        let mut expected = interpret(&step, &x).unwrap();
        expected.push(x[2]);
        assert_eq!(bits(&interpret(&g, &x).unwrap()), bits(&expected));
        let vjp = crate::vjp(&g);
        // (x, s̄′, θ̄) -> (s′, θ, s̄, θ̄): with s̄′ = 0 the θ adjoint is the one fed in.
        let out = interpret(&vjp, &[x[0], x[1], x[2], x[3], 0.0, 0.0, 0.75]).unwrap();
        assert_eq!(out[out.len() - 1], 0.75);
    }
}
