//! Compilation options. The defaults give fast code for the common case of small programs, and
//! keep compile time linear for huge ones (schedule, register budget, chunking, constant table).

/// Cranelift's optimisation level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OptLevel {
    /// `None` when [`JitOptions::schedule`] is on: Cranelift's e-graph elaborates every pure
    /// instruction again from the stores that use it, which throws the schedule away
    /// (Rosenbrock-100 VJP: 513 ns with `Speed`, 259 ns with `None`, both scheduled).
    /// Without scheduling, `Speed` for programs of at most [`JitOptions::optimize_up_to`]
    /// instructions, `None` above. Cranelift's e-graph sinks every pure instruction to its first ordered use; in a
    /// long straight-line function with few stores that is the final output store, and
    /// elaborating a deep expression tree there keeps thousands of values live (measured on
    /// the chained Rosenbrock, n = 1000: 4 s to compile and code 2x slower than `None`).
    #[default]
    Auto,
    /// No optimisation: instructions stay in program order; fastest compile.
    None,
    /// Optimise for speed (e-graph rewrites, GVN).
    Speed,
}

/// The register allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RegAlloc {
    /// `backtracking` for functions up to [`JitOptions::single_pass_above`] instructions,
    /// `single_pass` above (compiles several times faster, code slower: measured on the
    /// Lorenz RK4 VJP, 121k instructions, backtracking runs 1.9x faster for 1.3x the compile
    /// time; chunking keeps its cost linear).
    #[default]
    Auto,
    /// Always `backtracking` (best code).
    Backtracking,
    /// Always `single_pass` (fastest compile).
    SinglePass,
}

/// How the generated code computes transcendentals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MathImpl {
    /// Per routine, the faster of adjit's inline routine and the C library among those within
    /// 1 ulp of the correctly rounded value ([`adjit_ir::mathlib::default_unary`]: `tanh`,
    /// `sinh`, `cosh`, `cos`, `tan`, `erf`, `atan` and `log1p` inline, the rest called): exactly
    /// what the interpreter
    /// computes ([`adjit_ir::math`]), so JIT and interpreter agree bit for bit. The default.
    #[default]
    Auto,
    /// Call the platform math library for every routine. In two-lane code each call runs once
    /// per lane; object files import the C library's names. Agrees with the interpreter except
    /// on the routines [`MathImpl::Auto`] inlines (by at most the two routines' errors: glibc's
    /// `tanh` is 2 ulp, its `tan` up to 14 ulp from the correctly rounded value).
    Libm,
    /// adjit's own routines ([`adjit_ir::mathlib`]: every transcendental of the IR, `pow` and
    /// `atan2`) emitted inline, in vector lanes too: no call, no spilled registers, ≤ 1 ulp everywhere,
    /// the same bits as [`adjit_ir::mathlib::unary_f64`] in every lane and on every target, and
    /// object files that need no math library. Results differ from the interpreter on the
    /// routines the default calls from the C library by at most the two routines' errors
    /// (≤ 2 ulps).
    Inline,
}

impl MathImpl {
    /// Every choice, in order.
    pub const ALL: &'static [MathImpl] = &[MathImpl::Auto, MathImpl::Libm, MathImpl::Inline];

    /// The spelling on the command line and in Python (`math="inline"`).
    pub fn name(self) -> &'static str {
        match self {
            MathImpl::Auto => "auto",
            MathImpl::Libm => "libm",
            MathImpl::Inline => "inline",
        }
    }

    /// One line saying what the choice is (command-line help).
    pub fn help(self) -> &'static str {
        match self {
            MathImpl::Auto => {
                "Per routine the faster of adjit's inline routine and the C library within 1 ulp \
                 (tanh, sinh, cosh, cos, tan, erf, atan, log1p inline), as the interpreter computes"
            }
            MathImpl::Libm => "Call the C math library for every routine (once per lane)",
            MathImpl::Inline => {
                "adjit's own math routines inline (every transcendental, pow), vectorised in two lanes"
            }
        }
    }

    /// The choice spelled `name` ([`MathImpl::name`]).
    pub fn from_name(name: &str) -> Option<MathImpl> {
        MathImpl::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// Whether unary `op` is emitted inline (from [`adjit_ir::mathlib`]) rather than called.
    pub fn inlines_unary(self, op: adjit_ir::UnaryOp) -> bool {
        use adjit_ir::mathlib;
        match self {
            MathImpl::Auto => mathlib::default_unary(op),
            MathImpl::Libm => false,
            MathImpl::Inline => mathlib::has_unary(op),
        }
    }

    /// Whether binary `op` (`pow`, `atan2`) is emitted inline rather than called.
    pub fn inlines_binary(self, op: adjit_ir::BinaryOp) -> bool {
        use adjit_ir::mathlib;
        match self {
            MathImpl::Auto => mathlib::default_binary(op),
            MathImpl::Libm => false,
            MathImpl::Inline => mathlib::has_binary(op),
        }
    }
}

/// How to compile a function. `JitOptions::default()` is what the facade uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitOptions {
    /// Reorder instructions with [`crate::schedule`] before planning (fewer values live at
    /// once, fewer spills). Never changes results.
    pub schedule: bool,
    pub opt_level: OptLevel,
    /// With [`OptLevel::Auto`], programs with at most this many instructions use `Speed`.
    pub optimize_up_to: usize,
    pub regalloc: RegAlloc,
    /// With [`RegAlloc::Auto`], programs with more instructions than this use `single_pass`.
    pub single_pass_above: usize,
    /// The register budget of the storage plan (the Belady simulation of `plan.rs`): at most
    /// this many values are kept in registers at once; others are reloaded from the
    /// workspace (stored once, at their definition). Below the target's 16 (x86-64) or 32
    /// (AArch64) float registers, leaving room for the temporaries of `min`/`max`/`select`
    /// and literals. At least 4.
    pub registers: usize,
    /// Programs with more instructions than this are split into chunk functions of at most
    /// this many instructions; values crossing chunks pass through the workspace.
    pub chunk_insts: usize,
    /// A chunk with more distinct float literals than this loads them from a constant table
    /// at each use instead of materialising them with `f64const`. The default, 0, tables
    /// every literal: x86-64 rebuilds an `f64const` at each use (`movabsq` + `vmovq`, or
    /// for `neg`'s sign mask three instructions), while a table load is one instruction or
    /// folds into the arithmetic (`vmulsd`/`vfmadd132sd` with a memory operand). Measured:
    /// Lorenz JVP 38.3 -> 27.7 us, Rosenbrock-1000 VJP 2.69 -> 2.48 us, others within noise.
    pub const_table_above: usize,
    /// Run Cranelift's IR verifier on every function (slower compile; for debugging).
    pub verify_clif: bool,
    /// Points per generated batch kernel. 1 (the default): [`crate::CompiledFunction::call_batch`]
    /// loops the scalar code. 2 (or more, which means 2): also compile two-point kernels that
    /// carry every value of two consecutive points in the two lanes of a 128-bit vector
    /// (`F64X2`; `f32` in `F32X4`), bitwise equal to the scalar code; batches then run pairs
    /// of points through them, and an odd last point through the scalar code. Costs a
    /// second compilation (about doubling compile time and code size) and pays where
    /// arithmetic dominates (see `docs/performance.md`), including the inline math routines
    /// ([`MathImpl::Inline`]); calls to the math library gain nothing, as they run once per lane. If the host cannot
    /// compile the vector form, the function keeps scalar batches
    /// ([`crate::CompiledFunction::batch_lanes`] says which). Single calls are unaffected;
    /// object files ([`crate::compile_object`]) also export the two-point kernels as
    /// `SYMBOL_x2` on interleaved buffers (see [`crate::ObjectCode::pair_symbol`]).
    pub batch_lanes: usize,
    /// Inline math routines or C library calls (see [`MathImpl`]).
    pub math: MathImpl,
    /// Lower repeated instruction groups as loops (see `docs/rolling.md`): runs of
    /// isomorphic iterations whose operands are parameters at affine indices, values of the
    /// same or the previous iteration, or loop invariants become one counted loop each, so
    /// code size and compile time follow the template, not the trip count. Results are bitwise
    /// those of the straight-line code (each iteration computes the same operations in the
    /// same order).
    pub roll: bool,
    /// With [`JitOptions::roll`], programs of fewer instructions than this are not searched
    /// for runs and compile exactly as without rolling (their straight-line code is small and
    /// compiles in well under 0.1 s). Runs are found in the scheduled program, where a
    /// gradient's forward and reverse work for one term are one iteration, so the loop runs
    /// at the straight-line code's speed from small sizes on (Rosenbrock gradient: 3.0–3.9 ns
    /// per term rolled from 10³ to 10⁵ terms; unrolled 3.4–4.1 at 10³ and 50–74 at 10⁵) and
    /// compiles 2–4× faster.
    pub roll_above: usize,
    /// On x86-64, lower a one-lane `select` between floats with bit masks (`x & m | y & !m`)
    /// instead of Cranelift's `select`, which is a conditional jump there. A jump costs a
    /// misprediction wherever the condition follows the data (the reverse sweep of `min`,
    /// `max`, `abs`, ReLU at varying points); the mask costs a few instructions and a side
    /// that is the literal +0.0 (how reverse mode routes a cotangent) one `and`. Bitwise the
    /// same results either way. AArch64's float `select` is `fcsel`, without a jump, and
    /// two-lane code always uses masks; there this option changes nothing.
    pub mask_selects: bool,
    /// Which rolled loops run two iterations per trip (see [`Pairing`]).
    pub pair_loops: Pairing,
    /// With [`JitOptions::roll`], move runs of nearly equal trips that lie a few straight
    /// instructions apart next to each other, so that one loop runs them all (a gradient's
    /// per-weight sums over data rows: one loop advancing every sum instead of one loop per
    /// sum, each waiting on its own additions). Each sum keeps its order, so results are
    /// bitwise the same either way. Taken only when it leaves fewer loops and rolls at least
    /// as many instructions.
    pub fuse_loops: bool,
}

/// Whether one-lane code runs a rolled loop two iterations per trip. The part of the loop's
/// body that depends on no value carried from the previous iteration (the elementwise work:
/// inline `tanh`, `sqrt`, divisions, products) computes iterations `j` and `j + 1` in the two
/// lanes of one vector; the carried part (running sums, recurrent state) runs for `j` and
/// then `j + 1` in scalar registers, in order. Each lane computes exactly what the scalar code
/// computes, so results are bitwise the same under every choice. Two-lane batches already
/// fill the lanes with points and are never paired. A nest's inner loop is paired alike in
/// every row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Pairing {
    /// Loops whose parallel part is estimated to save time: a cost model weighs the work a
    /// vector does for two iterations (and the loop's counter and branch, paid once for two)
    /// against the lanes extracted for the carried part, memory that is not contiguous and
    /// routines called from the C library, and leaves mostly carried bodies as they are.
    /// The default (gradients with `tanh`, `sqrt` or divisions per term: 0.54–0.70× the time
    /// of the unpaired loop, measured on this project's machine; see `docs/rolling.md`).
    #[default]
    Auto,
    /// Every loop that can be paired, whatever the estimate (for tests and measurements).
    Always,
    /// No loop: one iteration per trip.
    Off,
}

impl Default for JitOptions {
    fn default() -> JitOptions {
        JitOptions {
            schedule: true,
            opt_level: OptLevel::Auto,
            optimize_up_to: 2000,
            regalloc: RegAlloc::Auto,
            single_pass_above: 500_000,
            registers: 14,
            chunk_insts: 10_000,
            const_table_above: 0,
            verify_clif: false,
            batch_lanes: 1,
            math: MathImpl::Auto,
            roll: true,
            roll_above: 20_000,
            mask_selects: true,
            pair_loops: Pairing::Auto,
            fuse_loops: true,
        }
    }
}
