//! Compilation options. The defaults give fast code for the common case of small programs, and
//! keep compile time linear for huge ones (spill window, chunking, constant table).

/// Cranelift's optimisation level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OptLevel {
    /// No optimisation: fastest compile.
    None,
    /// Optimise for speed (e-graph rewrites, GVN). The default.
    #[default]
    Speed,
}

/// The register allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RegAlloc {
    /// `backtracking` for functions up to [`JitOptions::single_pass_above`] instructions,
    /// `single_pass` above (compiles several times faster, code somewhat slower).
    #[default]
    Auto,
    /// Always `backtracking` (best code).
    Backtracking,
    /// Always `single_pass` (fastest compile).
    SinglePass,
}

/// How to compile a function. `JitOptions::default()` is what the facade uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitOptions {
    pub opt_level: OptLevel,
    pub regalloc: RegAlloc,
    /// With [`RegAlloc::Auto`], programs with more instructions than this use `single_pass`.
    pub single_pass_above: usize,
    /// A value whose uses lie more than this many instructions after its definition (or after
    /// its previous use) is stored to the workspace at its definition and reloaded where used,
    /// so register pressure and allocation time stay bounded by the window.
    pub spill_window: usize,
    /// Programs with more instructions than this are split into chunk functions of at most
    /// this many instructions; values crossing chunks pass through the workspace.
    pub chunk_insts: usize,
    /// A chunk with more distinct float literals than this loads them from a constant table
    /// at each use instead of materialising them (Cranelift hoists constants, making every
    /// one live across the whole function).
    pub const_table_above: usize,
    /// Run Cranelift's IR verifier on every function (slower compile; for debugging).
    pub verify_clif: bool,
}

impl Default for JitOptions {
    fn default() -> JitOptions {
        JitOptions {
            opt_level: OptLevel::Speed,
            regalloc: RegAlloc::Auto,
            single_pass_above: 100_000,
            spill_window: 192,
            chunk_insts: 10_000,
            const_table_above: 64,
            verify_clif: false,
        }
    }
}
