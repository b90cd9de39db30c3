//! One evaluator behind every compile-once object: the reference interpreter or native code.
//! Objects hold a [`Runner`] per program and never match on the engine themselves.

use adjit_ir::{Function, Interpreter};
use adjit_jit::CompiledFunction;

use crate::error::{Error, Result};
use crate::options::{Engine, Options};

/// A verified program, ready to run on the engine of the [`Options`] it was built with.
pub(crate) enum Runner {
    Interp(Function),
    Jit(Box<CompiledFunction>),
}

impl Runner {
    /// Prepare `program` (verified) on `opts.engine`.
    pub(crate) fn new(program: &Function, opts: &Options) -> Result<Runner> {
        Ok(match opts.engine {
            Engine::Interp => Runner::Interp(program.clone()),
            // SAFETY: every program given here is derived from a function the facade verified
            // (each entry point verifies its input before deriving), by transforms that keep
            // programs valid (the tests verify after every pass, and debug builds verify here).
            Engine::Jit => Runner::Jit(Box::new(unsafe {
                adjit_jit::compile_verified(program, &opts.jit)
            }?)),
        })
    }

    /// Evaluate on `inputs`, writing `outputs` (lengths are checked by the engine).
    #[inline]
    pub(crate) fn run(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
        match self {
            Runner::Jit(code) if code.try_call(inputs, outputs) => Ok(()),
            Runner::Jit(code) => Err(length_error(code, inputs, outputs)),
            Runner::Interp(func) => interpret(func, inputs, outputs),
        }
    }

    /// The native code, with [`Engine::Jit`].
    pub(crate) fn code(&self) -> Option<&CompiledFunction> {
        match self {
            Runner::Interp(_) => None,
            Runner::Jit(code) => Some(code),
        }
    }
}

/// The error of a native call with wrong lengths, built out of line so that no error value
/// enters the inlined hot path of [`Runner::run`].
#[cold]
#[inline(never)]
fn length_error(code: &CompiledFunction, inputs: &[f64], outputs: &[f64]) -> Error {
    code.length_error(inputs.len(), outputs.len()).into()
}

/// Out of line, so the native path of [`Runner::run`] inlines into its callers.
#[inline(never)]
fn interpret(func: &Function, inputs: &[f64], outputs: &mut [f64]) -> Result<()> {
    Interpreter::default().run(func, inputs, outputs)?;
    Ok(())
}
