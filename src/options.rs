//! The facade's vocabulary of options: the named enums (stages, engines, modes) with their
//! spelling and parser, and the [`Options`] of the compile-once objects.

use adjit_diff::checkpoint::Strategy;
use adjit_diff::inverse::InverseOptions;
use adjit_diff::Mode;
use adjit_jit::JitOptions;

/// A fixed set of names (stages, engines, modes) with their spelling and parser.
macro_rules! named {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($variant:ident => $text:literal, $help:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $(#[doc = $help] $variant),*
        }

        impl $name {
            /// Every variant, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The spelling in messages and on the command line.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }

            /// One line saying what the variant is (command-line help).
            pub fn help(self) -> &'static str {
                match self {
                    $($name::$variant => $help),*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $name {
            type Err = adjit_diff::UnknownName;

            fn from_str(s: &str) -> std::result::Result<$name, adjit_diff::UnknownName> {
                $name::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| adjit_diff::UnknownName {
                    what: $what,
                    name: s.to_string(),
                    expected: $name::ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", "),
                })
            }
        }
    };
}
pub(crate) use named;

named! {
    /// Which evaluator runs a function.
    Engine, "engine" {
        Jit => "jit", "Native code from Cranelift",
        Interp => "interp", "The reference interpreter",
    }
}

// The enum comes from `named!`, which does not take `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for Engine {
    fn default() -> Engine {
        Engine::Jit
    }
}

named! {
    /// Which inverse product to compute for a square program.
    InverseMode, "inverse mode" {
        Reverse => "reverse-inverse", "J⁻¹·v, lumps last to first (Pearlmutter & Siskind)",
        Forward => "forward-inverse", "J⁻ᵀ·v, lumps first to last, no tape",
        Dense => "dense-inverse", "J⁻¹·v by the dense Jacobian and one LU (the baseline)",
    }
}

named! {
    /// How a [`Jacobian`](crate::Jacobian) assembles its matrix.
    JacobianMode, "Jacobian mode" {
        Auto => "auto", "Sparse when a colouring needs fewer sweeps than rows and columns, else forward when there are no more inputs than outputs, else reverse",
        Forward => "forward", "Columns by vector JVPs (several directions per call)",
        Reverse => "reverse", "Rows by VJPs (one per output)",
        Sparse => "sparse", "Every nonzero from one compiled program (a colouring baked in), scattered into the dense matrix",
    }
}

named! {
    /// A stage of the pipeline that [`dump`](crate::dump) renders.
    Stage, "stage" {
        Ir => "ir", "The function as parsed",
        Simplified => "simplified", "After constant folding, IEEE-exact identities, CSE and DCE",
        Jvp => "jvp", "The simplified JVP program",
        Vjp => "vjp", "The simplified VJP program",
        Clif => "clif", "Cranelift IR of the program chosen by the mode",
        Asm => "asm", "Machine code of the program chosen by the mode",
        Rolled => "rolled", "The loops the JIT makes of repeated instruction groups in the program chosen by the mode: regions, trips, the share they cover, each loop's body",
        Schedule => "schedule", "The checkpointing schedule of the strategy",
        Lumps => "lumps", "The lump analysis of a square program",
        Dot => "dot", "Graphviz source with the lumps as clusters",
        ReverseInverse => "reverse-inverse", "The simplified reverse-inverse program",
        ForwardInverse => "forward-inverse", "The simplified forward-inverse program",
        Sparsity => "sparsity", "Jacobian and Hessian patterns, colour counts per ordering, ASCII spy plots",
        SparseJacobian => "sparse-jacobian", "The simplified program of the Jacobian's nonzeros",
        SparseHessian => "sparse-hessian", "The simplified program of the Hessian's lower-triangle nonzeros",
    }
}

/// How the compile-once objects ([`Compiled`](crate::Compiled),
/// [`Gradient`](crate::Gradient), [`Jacobian`](crate::Jacobian), [`Hessian`](crate::Hessian),
/// [`checkpoint::CheckpointedGradient`](crate::checkpoint::CheckpointedGradient),
/// [`inverse::CompiledInverse`](crate::inverse::CompiledInverse)) evaluate their programs.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Interpreter or native code (default).
    pub engine: Engine,
    /// Code generation, with [`Engine::Jit`].
    pub jit: JitOptions,
    /// Lump sizes and pivot tolerance, for the inverse modes.
    pub inverse: InverseOptions,
    /// Whether a large program's repetition is kept rolled from derivation to machine code
    /// ([`KeepRolled`]); by default, from [`KeepRolled::AUTO_ABOVE`] instructions.
    pub rolled: KeepRolled,
}

/// Whether [`Compiled`](crate::Compiled) and [`Gradient`](crate::Gradient) keep a program's
/// repetition rolled from derivation to machine code, in the primal, JVP (one or several
/// directions), VJP, gradient and HVP modes on native code: the program is held as its loops
/// ([`adjit_ir::Rolled`]), differentiated per template and compiled from the templates, never
/// expanded, so compile time and memory follow its distinct work rather than its length. The
/// traced Rosenbrock at 10⁶ terms (8·10⁶ instructions): gradient 1.5–2.5 s and 1.15 GB from
/// the trace to the callable against 11.6–12.6 s and 3.4 GB, HVP 4.8–5.2 s and 1.7 GB against
/// 37–39 s and 7.6 GB. Calls run at the usual pipeline's speed (the traced Rosenbrock in
/// every mode, Lorenz's RK4 steps, a 2-D grid's gradient and HVP: 0.79–1.03×, one run each,
/// since the rolled loops too run two iterations per trip in vector lanes, in a scheduled
/// order, and store only what later loops read), though a 2-D grid's rows stay a loop each
/// where the usual pipeline nests them. Programs under
/// [`JitOptions::roll_above`](adjit_jit::JitOptions::roll_above) instructions, with little
/// repetition, or that the rolled plan does not hold compile as usual. See docs/rolling.md.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeepRolled {
    /// Rolled from [`KeepRolled::AUTO_ABOVE`] instructions, where the usual pipeline's compile
    /// takes a second or more (seconds on 2-D grids); as usual below. A program that is mostly
    /// vectorised stages (NumPy style) is rolled only from [`KeepRolled::STAGED_ABOVE`].
    #[default]
    Auto,
    /// Rolled whenever it applies (from `roll_above` instructions).
    Always,
    /// Never: the usual pipeline (derive, simplify, schedule, find the loops, compile).
    Never,
}

impl KeepRolled {
    /// The size of a program (in instructions) from which [`KeepRolled::Auto`] keeps it
    /// rolled: the traced Rosenbrock of 2.5·10⁴ terms, whose gradient the usual pipeline
    /// compiles in 0.2 s and the rolled road in 0.04 s, at the same call speed; a 2-D grid of
    /// 200 × 200 unknowns (4·10⁵ instructions) compiles its gradient in 3.8 s against 0.16 s
    /// and calls it at 0.95–0.97× the usual time rolled.
    pub const AUTO_ABOVE: usize = 200_000;

    /// The size from which [`KeepRolled::Auto`] keeps a *staged* program rolled (most of it
    /// vectorised stages, [`adjit_ir::Rolled::staged_share`]: NumPy-style traces): the usual
    /// pipeline interleaves the stages into one loop, which the rolled road does not (the
    /// NumPy-style Rosenbrock gradient at 10⁵ elements: 1.27 ns/element against 4.37 rolled,
    /// compiled in 0.80 s against 0.15). Past this size the usual compile takes seconds and
    /// GBs.
    pub const STAGED_ABOVE: usize = 2_000_000;

    /// Whether a program of `insts` instructions, `staged` share of them in vectorised stages
    /// ([`adjit_ir::Rolled::staged_share`]), is kept rolled (given it repeats enough).
    pub fn keeps_staged(self, insts: usize, staged: f64) -> bool {
        match self {
            KeepRolled::Auto if staged >= 0.5 => insts >= KeepRolled::STAGED_ABOVE,
            other => other.keeps(insts),
        }
    }

    /// Whether a program of `insts` instructions is kept rolled (given it repeats enough).
    pub fn keeps(self, insts: usize) -> bool {
        match self {
            KeepRolled::Auto => insts >= KeepRolled::AUTO_ABOVE,
            KeepRolled::Always => true,
            KeepRolled::Never => false,
        }
    }
}

impl Options {
    /// The default options on `engine`.
    pub fn on(engine: Engine) -> Options {
        Options {
            engine,
            ..Options::default()
        }
    }
}

/// Options of [`dump`](crate::dump).
#[derive(Clone, Copy, Debug, Default)]
pub struct DumpOptions {
    /// For [`Stage::Clif`], [`Stage::Asm`] and [`Stage::Rolled`]: which program to lower
    /// (default: the primal).
    pub mode: Mode,
    /// For [`Stage::Schedule`]: the strategy.
    pub strategy: Strategy,
    /// For [`Stage::Clif`] and [`Stage::Asm`]: 2 prints the two-point (`F64X2`) kernels that
    /// batches run with [`JitOptions::batch_lanes`] = 2; 0 or 1 the scalar code.
    pub lanes: usize,
    /// For [`Stage::Clif`] and [`Stage::Asm`]: C library calls or adjit's inline routines.
    pub math: adjit_jit::MathImpl,
}
