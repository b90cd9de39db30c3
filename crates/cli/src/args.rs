//! The command line: every subcommand and flag, with the help texts users read.
//!
//! Parsing only: values that need the loaded function to be checked (vector lengths, which
//! function) are kept as given and checked by `commands`.

use std::path::PathBuf;

use std::str::FromStr;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
use clap::{Args, Parser, Subcommand};

use crate::measure::BenchMode;

const VECTOR_HELP: &str =
    "Vectors (--at, --tangent, --cotangent, --vector) are numbers separated by commas \
and/or whitespace (`1,2.5,-3`, `\"1 2 3\"`, `nan`, `inf`), or `@PATH` to read them from a file \
(`#` starts a comment that runs to the end of the line; `@-` reads standard input). Their \
length must match the function's input (or output) count.";

const JSON_HELP: &str =
    "With --json the result is one JSON object on standard output. Numbers print \
with the shortest decimal that reads back to the same f64 (`0.1`, `1e-7`, `2.0`); the non-finite \
values are the strings \"nan\", \"inf\" and \"-inf\".";

const MATRIX_HELP: &str =
    "Matrices print as aligned rows, like numpy (`label (ROWS×COLS):` then `[[a  b]` / ` [c  d]]`).";

/// adjit: derivatives of straight-line numeric programs, JIT-compiled.
///
/// Reads `.ir` files (the adjit text format), evaluates them, and computes forward (JVP),
/// reverse (VJP, with tape or checkpointing) and inverse derivative products. A file may hold
/// several functions; pick one with --func NAME.
#[derive(Debug, Parser)]
#[command(
    name = "adjit",
    version,
    after_help = "Examples:\n  \
adjit check ir/examples/*.ir\n  \
adjit eval ir/examples/rosenbrock.ir --at 1,2\n  \
adjit vjp ir/examples/rosenbrock.ir --at 0,0 --json\n  \
adjit jvp ir/examples/two.ir --at 0.5 --tangent 1\n  \
adjit hessian ir/examples/rosenbrock.ir --at -1.2,1\n  \
adjit dump ir/examples/rosenbrock.ir --stage vjp\n\n\
Errors are printed as `error: ...` on standard error with exit status 1; invalid command \
lines exit with status 2."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse and verify files; print `FILE: ok (N functions)` or the errors.
    ///
    /// Exits with status 1 when any file fails.
    #[command(after_help = "Example:\n  adjit check ir/examples/*.ir")]
    Check {
        /// The `.ir` files to check.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },

    /// Evaluate a function at a point.
    #[command(after_help = format!("Examples:\n  \
adjit eval rosen.ir --at 1,2            # outputs: 100\n  \
adjit eval f.ir --func g --at @x.txt --json\n\n{VECTOR_HELP}\n\n{JSON_HELP}\n\
JSON: {{\"outputs\": [...]}}"))]
    Eval {
        #[command(flatten)]
        target: FunctionArgs,
        #[command(flatten)]
        point: PointArgs,
        #[command(flatten)]
        driver: DriverArgs,
        #[command(flatten)]
        output: OutputArgs,
    },

    /// Forward mode: outputs f(x) and the directional derivative J·v (or one J·vᵢ per
    /// direction with --tangents).
    #[command(after_help = format!("Examples:\n  \
adjit jvp rosen.ir --at 1,2 --tangent 1,0 --json\n  \
adjit jvp rosen.ir --at 1,2 --tangents @dirs.txt   # one direction per line, one call\n\n\
{VECTOR_HELP}\n\n{MATRIX_HELP}\n\n{JSON_HELP}\n\
JSON: {{\"outputs\": [...], \"tangents\": [...]}}; with --tangents, \"tangents\" is an array \
of rows, one per direction."),
    group(clap::ArgGroup::new("direction").required(true).args(["tangent", "tangents"])))]
    Jvp {
        #[command(flatten)]
        target: FunctionArgs,
        #[command(flatten)]
        point: PointArgs,
        #[command(flatten)]
        driver: DriverArgs,
        /// The tangent v (one number per input).
        #[arg(long, value_name = "V", allow_hyphen_values = true)]
        tangent: Option<String>,
        /// Several tangents, one per line (`@FILE`, `@-`; inline, `;` also ends a line):
        /// all directions in one call of a vector JVP; prints one row of J·vᵢ per direction.
        #[arg(long, value_name = "VS", allow_hyphen_values = true)]
        tangents: Option<String>,
        #[command(flatten)]
        output: OutputArgs,
    },

    /// Reverse mode: outputs f(x) and the gradient Jᵀ·w.
    #[command(after_help = format!("Examples:\n  \
adjit vjp rosen.ir --at 0,0                      # gradient: -2, 0\n  \
adjit vjp f.ir --at @x.txt --cotangent 1,0 --strategy checkpoint:3\n\n\
Strategies: tape (store every intermediate, the default), checkpoint:S (binomial checkpointing \
with S snapshots), bytes:N (the cheapest checkpointing schedule within N bytes of memory), \
uniform (about √N stages).\n\n{VECTOR_HELP}\n\n{JSON_HELP}\n\
JSON: {{\"outputs\": [...], \"gradient\": [...]}}"))]
    Vjp {
        #[command(flatten)]
        target: FunctionArgs,
        #[command(flatten)]
        point: PointArgs,
        #[command(flatten)]
        driver: DriverArgs,
        /// The cotangent w (one number per output); may be omitted for one-output functions,
        /// where it is 1.
        #[arg(long, value_name = "W", allow_hyphen_values = true)]
        cotangent: Option<String>,
        /// How reverse mode obtains the intermediate values it needs.
        #[arg(long, value_name = "STRATEGY", default_value = "tape", value_parser = parse_strategy)]
        strategy: adjit::Strategy,
        #[command(flatten)]
        output: OutputArgs,
    },

    /// Hessian-vector product of a one-output function: f(x), its gradient and H·v.
    #[command(after_help = format!("Example:\n  \
adjit hvp rosen.ir --at -1.2,1 --vector 1,0     # hvp: 1330, 480\n\n\
Forward-over-reverse (jvp of the gradient), JIT-compiled; one call.\n\n{VECTOR_HELP}\n\n\
{JSON_HELP}\n\
JSON: {{\"outputs\": [...], \"gradient\": [...], \"hvp\": [...]}}"))]
    Hvp {
        #[command(flatten)]
        target: FunctionArgs,
        #[command(flatten)]
        point: PointArgs,
        /// The vector v (one number per differentiated input).
        #[arg(long, value_name = "V", allow_hyphen_values = true)]
        vector: String,
        #[command(flatten)]
        output: OutputArgs,
    },

    /// The dense Jacobian J (one row per float output, one column per differentiated input).
    #[command(after_help = format!("Examples:\n  \
adjit jacobian polar.ir --at 2,0                 # [[1 0] [0 2]]\n  \
adjit jacobian f.ir --at @x.txt --mode reverse --json\n\n\
Forward mode computes columns by vector JVPs (up to 8 directions per call), reverse mode rows by \
VJPs; auto (the default) picks forward when there are no more inputs than outputs.\n\n\
{VECTOR_HELP}\n\n{MATRIX_HELP}\n\n{JSON_HELP}\n\
JSON: {{\"outputs\": [...], \"jacobian\": [[...], ...]}} (rows)"))]
    Jacobian {
        #[command(flatten)]
        target: FunctionArgs,
        #[command(flatten)]
        point: PointArgs,
        /// How to assemble J.
        #[arg(long, value_parser = jacobian_mode_parser(), default_value = "auto")]
        mode: adjit::JacobianMode,
        #[command(flatten)]
        sparse: SparseArgs,
        #[command(flatten)]
        output: OutputArgs,
    },

    /// The dense Hessian H of a one-output function, with f(x) and its gradient.
    #[command(after_help = format!("Example:\n  \
adjit hessian rosen.ir --at -1.2,1              # [[1330 480] [480 200]]\n\n\
Column j is H·eⱼ from the compiled Hessian-vector product (one call per input); H is not \
symmetrised, so H[i][j] and H[j][i] may differ in the last bits.\n\n\
{VECTOR_HELP}\n\n{MATRIX_HELP}\n\n{JSON_HELP}\n\
JSON: {{\"outputs\": [...], \"gradient\": [...], \"hessian\": [[...], ...]}} (rows)"))]
    Hessian {
        #[command(flatten)]
        target: FunctionArgs,
        #[command(flatten)]
        point: PointArgs,
        #[command(flatten)]
        sparse: SparseArgs,
        #[command(flatten)]
        output: OutputArgs,
    },

    /// Inverse modes for square functions: J⁻¹·v (reverse, dense) or J⁻ᵀ·v (forward).
    #[command(after_help = format!("Example:\n  \
adjit inverse polar.ir --at 1,0.5 --vector 1,0 --mode reverse --json\n\n{VECTOR_HELP}\n\n{JSON_HELP}\n\
JSON: {{\"outputs\": [...], \"result\": [...]}}"))]
    Inverse {
        #[command(flatten)]
        target: FunctionArgs,
        #[command(flatten)]
        point: PointArgs,
        /// The vector to multiply (one number per input).
        #[arg(long, value_name = "V", allow_hyphen_values = true)]
        vector: String,
        /// Which inverse product: reverse-inverse (J⁻¹·v), forward-inverse (J⁻ᵀ·v) or the
        /// dense fallback (LU of the Jacobian, J⁻¹·v).
        #[arg(long, value_parser = inverse_mode_parser(), default_value = "reverse-inverse")]
        mode: adjit::InverseMode,
        #[command(flatten)]
        output: OutputArgs,
    },

    /// Print one stage of the pipeline as text.
    #[command(after_help = "Examples:\n  \
adjit dump rosen.ir --stage vjp\n  \
adjit dump rosen.ir --stage asm --mode jvp\n  \
adjit dump rosen.ir --stage schedule --strategy checkpoint:2 -o schedule.txt\n  \
adjit dump f.ir --stage dot -o f.dot")]
    Dump {
        #[command(flatten)]
        target: FunctionArgs,
        /// The stage to print.
        #[arg(long, value_parser = stage_parser())]
        stage: adjit::Stage,
        /// For clif/asm: which program to lower.
        #[arg(long, value_parser = mode_parser())]
        mode: Option<adjit::Mode>,
        /// For schedule: the checkpointing strategy (see `adjit vjp --help`).
        #[arg(long, value_name = "STRATEGY", value_parser = parse_strategy)]
        strategy: Option<adjit::Strategy>,
        /// For clif/asm: 2 prints the two-point (SIMD) kernels that `bench --batch N --lanes 2`
        /// runs, 1 the scalar code.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
        lanes: u8,
        /// For clif/asm: `libm` calls the C math library, `inline` emits adjit's own math
        /// routines (every transcendental and `pow`) in the code.
        #[arg(long, value_name = "IMPL", default_value = "auto", value_parser = math_parser())]
        math: adjit::jit::MathImpl,
        /// Write to this file instead of standard output.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },

    /// Measure compile time, time per call and memory of each mode and strategy.
    #[command(after_help = format!("Examples:\n  \
adjit bench f.ir --at 1,2,3\n  \
adjit bench f.ir --at @x.txt --modes vjp --strategies tape,checkpoint:2,uniform --json\n  \
adjit bench f.ir --at 1,2,3 --plot bench.svg\n\n\
Modes: primal, jvp, vjp, reverse-inverse, forward-inverse, dense-inverse (or dense). Strategies apply to vjp \
rows; other rows have strategy null (`-` in the table).\n\n{VECTOR_HELP}\n\n{JSON_HELP}\n\
JSON: {{\"rows\": [{{\"mode\": \"vjp\", \"strategy\": \"tape\", \"compile_ms\": F, \
\"ns_per_call\": F, \"peak_bytes\": N, \"recomputed_ops\": N}}, ...]}}"))]
    Bench {
        #[command(flatten)]
        target: FunctionArgs,
        #[command(flatten)]
        point: PointArgs,
        #[command(flatten)]
        driver: DriverArgs,
        /// Comma-separated strategies for the vjp rows.
        #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "tape",
              value_parser = parse_strategy)]
        strategies: Vec<adjit::Strategy>,
        /// Comma-separated modes to measure.
        #[arg(
            long,
            value_name = "LIST",
            value_delimiter = ',',
            value_enum,
            default_value = "primal,jvp,vjp"
        )]
        modes: Vec<BenchMode>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also measure the primal, jvp and taped vjp rows kept rolled from derivation to
        /// machine code (rows with strategy `rolled`): for programs of 20,000 instructions or
        /// more that repeat, compile time and memory follow the distinct work, calls may be
        /// slower (see docs/rolling.md). From 200,000 instructions the other rows are kept
        /// rolled too, as every compiled object is by default (vectorised stages, NumPy style,
        /// from 2,000,000).
        #[arg(long, conflicts_with = "batch")]
        rolled: bool,
        /// Also write an SVG plot of time per call against peak memory (one point per row that
        /// stores intermediates: compare strategies by it).
        #[arg(long, value_name = "OUT.svg")]
        plot: Option<PathBuf>,
        /// Measure batches: each mode (primal, jvp, vjp with a tape) over N points spread ±10 %
        /// around --at in one batched call; rows report ns_per_point.
        #[arg(long, value_name = "N", conflicts_with_all = ["rows", "steps"])]
        batch: Option<usize>,
        /// With --batch: points per kernel call, 1 or 2 (two-lane F64X2 kernels).
        #[arg(long, value_name = "L", default_value_t = 1, requires = "batch",
              value_parser = clap::value_parser!(u8).range(1..=2))]
        lanes: u8,
        /// With --batch: threads (0 = every core, or one for a batch too short to pay for handing
        /// work to threads).
        #[arg(long, value_name = "T", default_value_t = 1, requires = "batch")]
        threads: usize,
        /// With --batch: `libm` calls the C math library (once per lane; the default), `inline`
        /// emits adjit's own math routines in the code (vectorised in two lanes).
        #[arg(long, value_name = "IMPL", default_value = "auto", requires = "batch",
              value_parser = math_parser())]
        math: adjit::jit::MathImpl,
    },

    /// Compile a function to a native object file plus a C header.
    #[command(after_help = "Example:\n  \
adjit compile rosen.ir --mode vjp -o rosen_vjp.o     # writes rosen_vjp.o and rosen_vjp.h\n  \
adjit compile rosen.ir --target aarch64-unknown-linux-gnu -o rosen.o")]
    Compile {
        #[command(flatten)]
        target: FunctionArgs,
        /// Which program to compile: primal, jvp, jvpK (K directions), vjp, gradient, hvp, an
        /// inverse mode of a square function (reverse-inverse, forward-inverse, dense-inverse),
        /// or the nonzeros of a sparse matrix (sparse-jacobian, sparse-hessian: the header
        /// holds the CSR pattern as static arrays).
        #[arg(long, value_parser = parse_compile_mode, default_value = "primal")]
        mode: CompileMode,
        /// Target triple (default: the host).
        #[arg(long = "target", value_name = "TRIPLE")]
        triple: Option<String>,
        /// The object file to write; the header goes next to it with extension `.h`.
        #[arg(short, long, value_name = "OUT.o")]
        output: PathBuf,
        /// The exported C symbol (default: `adjit_` and the derived program's name, e.g.
        /// `adjit_rosen_vjp`). C/C++ keywords, reserved identifiers, symbols of the C runtime
        /// libraries (`floor`, `dlopen`, `main`) and names the C standard or POSIX headers
        /// define (`NULL`, `size_t`) are refused.
        #[arg(long, value_name = "NAME")]
        symbol: Option<String>,
        /// 2 also exports the two-point (SIMD) kernels as `SYMBOL_x2`, which evaluate two
        /// points at once on interleaved buffers (the header says how); derived modes only.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
        lanes: u8,
        /// `libm` imports the C math library's routines; `inline` emits adjit's own math
        /// routines in the code, so the object needs no math library (derived modes only).
        #[arg(long, value_name = "IMPL", default_value = "auto", value_parser = math_parser())]
        math: adjit::jit::MathImpl,
        /// Replace an existing header that adjit did not write.
        #[arg(long)]
        force: bool,
    },
}

/// The sparse form of `jacobian` and `hessian`.
#[derive(Debug, Args)]
pub struct SparseArgs {
    /// Only the structurally nonzero entries, from one compiled program (exact pattern from the
    /// IR, a colouring baked in); printed as (row, column) value lines, or CSR with --json.
    #[arg(long)]
    pub sparse: bool,
    /// With --sparse: also write the matrix to FILE in Matrix Market format (a Hessian as its
    /// symmetric lower triangle).
    #[arg(long, value_name = "FILE", requires = "sparse")]
    pub mtx: Option<PathBuf>,
    /// With --sparse: also draw a spy plot to FILE (SVG), each entry coloured by the colour
    /// class it is computed in.
    #[arg(long, value_name = "FILE.svg", requires = "sparse")]
    pub spy: Option<PathBuf>,
}

/// Which function of which file.
#[derive(Debug, Args)]
pub struct FunctionArgs {
    /// The `.ir` file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The function to use (with or without `@`); required when the file defines several.
    #[arg(long, value_name = "NAME")]
    pub func: Option<String>,
}

/// The evaluation point and engine.
#[derive(Debug, Args)]
pub struct PointArgs {
    /// The point x (one number per input). Required, except with --rows on a function without
    /// data inputs, where every row is a whole point.
    #[arg(long, value_name = "X", allow_hyphen_values = true)]
    pub at: Option<String>,
    /// Which evaluator runs the program.
    #[arg(long, value_parser = engine_parser(), default_value = "jit")]
    pub engine: adjit::Engine,
}

impl PointArgs {
    /// `--at`, which every command needs except a `--rows` run whose rows are whole points.
    pub fn at(&self) -> Result<&str, crate::CliError> {
        self.at
            .as_deref()
            .ok_or_else(|| crate::CliError::Usage("--at is required (the point x)".into()))
    }
}

/// Drivers over the function: map it over data rows, or iterate it as a step.
#[derive(Debug, Args)]
pub struct DriverArgs {
    /// Map the function over the rows of FILE (one row per line, numbers separated by commas
    /// and/or whitespace; `-` or `@-` reads standard input, `@FILE` is FILE): its `data` inputs
    /// are one row, --at gives the others (θ), and each row gives one output row (--json: a
    /// JSON array). For a function without data inputs every row is a whole input point.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "steps",
        allow_hyphen_values = true
    )]
    pub rows: Option<std::path::PathBuf>,
    /// Iterate the function as a step N times: its outputs are the state, its first inputs
    /// the state and the rest θ (shared by every step); --at gives (s₀, θ). vjp's --strategy
    /// is Revolve over the steps.
    #[arg(long, value_name = "N")]
    pub steps: Option<usize>,
    /// With --steps and eval: print every state s₁ … s_N, one row per step.
    #[arg(long, requires = "steps")]
    pub trajectory: bool,
    /// With --steps: sum the function NAME of this file (the step's parameters, one float
    /// output) over the states s₁ … s_N; eval prints the sum L, vjp L and its gradient (s̄₀, θ̄),
    /// under --strategy.
    #[arg(long, value_name = "NAME", requires = "steps")]
    pub sum_loss: Option<String>,
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Print JSON instead of human-readable lines.
    #[arg(long)]
    pub json: bool,
}

/// A value parser for a library enum: its spellings (with help lines) as the possible values,
/// plus `aliases` (`(alias, name)`), parsed by the library's `FromStr`. The library owns the
/// names; nothing here repeats them.
fn library_values<T>(
    all: &'static [T],
    name: fn(T) -> &'static str,
    help: fn(T) -> &'static str,
    aliases: &'static [(&'static str, &'static str)],
) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: Copy + Send + Sync + FromStr<Err = adjit::UnknownName> + 'static,
{
    let values = all.iter().map(move |&v| {
        let mut value = PossibleValue::new(name(v)).help(help(v));
        for (alias, target) in aliases {
            if *target == name(v) {
                value = value.alias(alias);
            }
        }
        value
    });
    PossibleValuesParser::new(values).try_map(move |text: String| {
        let text = aliases
            .iter()
            .find(|(alias, _)| *alias == text)
            .map_or(text.as_str(), |(_, target)| target);
        text.parse::<T>()
    })
}

pub fn engine_parser() -> impl clap::builder::TypedValueParser<Value = adjit::Engine> {
    library_values(
        adjit::Engine::ALL,
        adjit::Engine::name,
        adjit::Engine::help,
        &[],
    )
}

pub fn stage_parser() -> impl clap::builder::TypedValueParser<Value = adjit::Stage> {
    library_values(
        adjit::Stage::ALL,
        adjit::Stage::name,
        adjit::Stage::help,
        &[],
    )
}

/// `--math`: the C library or adjit's inline routines.
pub fn math_parser() -> impl clap::builder::TypedValueParser<Value = adjit::jit::MathImpl> {
    use adjit::jit::MathImpl;
    let values = MathImpl::ALL
        .iter()
        .map(|&m| PossibleValue::new(m.name()).help(m.help()));
    // The possible values already refused any other spelling.
    PossibleValuesParser::new(values)
        .map(|text: String| MathImpl::from_name(&text).unwrap_or_default())
}

/// `--mode` of `inverse`: the library's names, and the short ones the command line has always
/// taken (`reverse`, `forward`, `dense`).
pub fn inverse_mode_parser() -> impl clap::builder::TypedValueParser<Value = adjit::InverseMode> {
    library_values(
        adjit::InverseMode::ALL,
        adjit::InverseMode::name,
        adjit::InverseMode::help,
        &[
            ("reverse", "reverse-inverse"),
            ("forward", "forward-inverse"),
            ("dense", "dense-inverse"),
        ],
    )
}

/// `--mode` of `jacobian`: `auto`, `forward` or `reverse` (the library's names).
pub fn jacobian_mode_parser() -> impl clap::builder::TypedValueParser<Value = adjit::JacobianMode> {
    library_values(
        adjit::JacobianMode::ALL,
        adjit::JacobianMode::name,
        adjit::JacobianMode::help,
        &[],
    )
}

/// The named program modes (`primal`, `jvp`, `vjp`, `gradient`, `hvp`).
pub fn mode_parser() -> impl clap::builder::TypedValueParser<Value = adjit::Mode> {
    library_values(
        &adjit::Mode::NAMED,
        adjit::Mode::keyword,
        adjit::Mode::help,
        &[],
    )
}

/// What `adjit compile` builds: a derived program or an inverse program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompileMode {
    Derived(adjit::Mode),
    Inverse(adjit::InverseMode),
    Sparse(adjit::SparseKind),
}

/// A program mode (`jvpK` included, by the library's `FromStr`) or an inverse mode's name.
pub fn parse_compile_mode(s: &str) -> Result<CompileMode, String> {
    if let Ok(mode) = s.parse::<adjit::Mode>() {
        return Ok(CompileMode::Derived(mode));
    }
    if let Ok(kind) = s.parse::<adjit::SparseKind>() {
        return Ok(CompileMode::Sparse(kind));
    }
    s.parse::<adjit::InverseMode>()
        .map(CompileMode::Inverse)
        .map_err(|_| {
            format!(
                "unknown mode `{s}`: expected primal, jvp, jvpK, vjp, gradient, hvp, \
                 reverse-inverse, forward-inverse, dense-inverse, sparse-jacobian or \
                 sparse-hessian"
            )
        })
}

/// Parse `tape`, `checkpoint:S`, `bytes:N` or `uniform` (the library's `FromStr`).
pub fn parse_strategy(s: &str) -> Result<adjit::Strategy, String> {
    s.parse()
        .map_err(|e: adjit::diff::checkpoint::ParseStrategyError| e.to_string())
}

/// The command-line spelling of a strategy (inverse of [`parse_strategy`]).
pub fn strategy_name(s: adjit::Strategy) -> String {
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_parse_and_print_back() {
        for text in ["tape", "uniform", "checkpoint:3", "bytes:4096"] {
            let parsed = parse_strategy(text).unwrap();
            assert_eq!(strategy_name(parsed), text);
        }
        assert!(parse_strategy("checkpoint:0").is_err());
        assert!(parse_strategy("checkpoint:x")
            .unwrap_err()
            .contains("whole number"));
        assert!(parse_strategy("revolve")
            .unwrap_err()
            .contains("unknown strategy"));
    }

    #[test]
    fn library_names_parse_on_the_command_line() {
        use clap::builder::TypedValueParser;
        let cmd = clap::Command::new("t");
        let parse = |p: &dyn Fn(&str) -> bool, text: &str| p(text);
        let stage = |t: &str| stage_parser().parse_ref(&cmd, None, t.as_ref()).is_ok();
        for s in adjit::Stage::ALL {
            assert!(parse(&stage, s.name()), "{s}");
        }
        assert!(!parse(&stage, "lump"));
        let inverse = |t: &str| inverse_mode_parser().parse_ref(&cmd, None, t.as_ref()).ok();
        assert_eq!(inverse("dense"), Some(adjit::InverseMode::Dense));
        assert_eq!(
            inverse("forward-inverse"),
            Some(adjit::InverseMode::Forward)
        );
        let mode = |t: &str| mode_parser().parse_ref(&cmd, None, t.as_ref()).ok();
        for m in adjit::Mode::NAMED {
            assert_eq!(mode(&m.to_string()), Some(m));
        }
    }

    #[test]
    fn command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
