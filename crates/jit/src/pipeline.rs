//! The shared compilation pipeline: verify, plan, build the constant table, and lower every
//! chunk into a Cranelift module (JIT or object), handing each finished function to a caller
//! hook that compiles, prints or disassembles it. Also the Cranelift flags both back ends use.

use adjit_ir::Function;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::{FuncId, Linkage, Module};

use crate::abi::{kernel_signature, MathNames};
use crate::constants::ConstTable;
use crate::error::JitError;
use crate::lanes::Lanes;
use crate::lower::paired::serial_positions;
use crate::lower::{lower_chunk, new_cache, Imports, LowerInput};
use crate::options::{JitOptions, OptLevel, RegAlloc};
use crate::plan::{plan, Plan};
use crate::regroup::regroup;
use crate::roll::{find_runs, find_runs_after, Found, Region, Run};
use crate::schedule::{reorder_tail, schedule};

/// Cranelift shared flags for compiling `func` under `opts`.
/// `lowered` is the number of IR instructions the lowering emits ([`lowered_insts`]).
pub(crate) fn shared_flags(
    lowered: usize,
    opts: &JitOptions,
    is_pic: bool,
) -> Result<settings::Flags, JitError> {
    let mut flags = settings::builder();
    let regalloc = match opts.regalloc {
        RegAlloc::Backtracking => "backtracking",
        RegAlloc::SinglePass => "single_pass",
        RegAlloc::Auto if lowered > opts.single_pass_above => "single_pass",
        RegAlloc::Auto => "backtracking",
    };
    let opt_level = match opts.opt_level {
        OptLevel::None => "none",
        OptLevel::Speed => "speed",
        // The e-graph re-places every pure instruction at its first use by a store, undoing
        // the schedule (measured on Rosenbrock-100: VJP 513 ns with it, 259 ns without).
        OptLevel::Auto if opts.schedule => "none",
        OptLevel::Auto if lowered <= opts.optimize_up_to => "speed",
        OptLevel::Auto => "none",
    };
    let settings: [(&str, &str); 5] = [
        ("opt_level", opt_level),
        ("regalloc_algorithm", regalloc),
        (
            "enable_verifier",
            if opts.verify_clif { "true" } else { "false" },
        ),
        ("is_pic", if is_pic { "true" } else { "false" }),
        ("use_colocated_libcalls", "false"),
    ];
    for (name, value) in settings {
        flags
            .set(name, value)
            .map_err(|e| JitError::cranelift(format!("setting {name}={value}"), e))?;
    }
    Ok(settings::Flags::new(flags))
}

/// The runs of `func` when rolling is on and the program has at least
/// [`JitOptions::roll_above`] instructions, and whether they cover at least half of it (the
/// condition to roll).
fn search(func: &Function, opts: &JitOptions) -> (Found, bool) {
    if !opts.roll || func.n_insts() < opts.roll_above {
        return (Found::default(), false);
    }
    let found = find_runs(func);
    let covered: usize = found.runs.iter().map(Run::insts).sum();
    let enough = 2 * covered >= func.n_insts();
    (found, enough)
}

/// The runs to lower: those of `func` if they cover enough, else none.
fn rolled_runs(func: &Function, opts: &JitOptions) -> Found {
    match search(func, opts) {
        (found, true) => found,
        _ => Found::default(),
    }
}

/// The program the back ends lower and the runs of it they emit as loops.
pub(crate) struct Prepared {
    /// `func` reordered by [`schedule`] (and [`regroup`]), or `None` when it is lowered in its
    /// own order.
    reordered: Option<Function>,
    /// The runs to lower (`found.runs`), and as first found.
    found: Found,
}

impl Prepared {
    /// The program to lower: the reordered one, or `func` itself.
    pub fn program<'a>(&'a self, func: &'a Function) -> &'a Function {
        self.reordered.as_ref().unwrap_or(func)
    }

    /// The runs to lower as loops, in order.
    pub fn runs(&self) -> &[Run] {
        &self.found.runs
    }
}

/// Schedule `func` (verified; with [`JitOptions::schedule`]) and find the runs of the
/// scheduled program: the schedule computes each term's values where they are needed, so a
/// gradient's forward and reverse work for one term become one iteration of one loop
/// (Rosenbrock: one loop of 14 instructions instead of a forward loop that stores a tape and
/// a reverse loop that reads it). When the schedule leaves some but too little repetition, the
/// runs of the program order are taken instead, and the program is lowered in that order.
/// Then, with [`JitOptions::fuse_loops`], runs of nearly equal trips a few instructions apart
/// are moved side by side ([`regroup`]) and found again, fused into one loop.
pub(crate) fn prepare(func: &Function, opts: &JitOptions) -> Prepared {
    let mut prepared = prepare_unfused(func, opts);
    if !opts.fuse_loops {
        return prepared;
    }
    // Regroup while it leaves fewer loops and not much more straight code (a group's peeled
    // and extra iterations); a second round fuses what the first left a few values apart.
    let straight = |runs: &[Run]| func.n_insts() - runs.iter().map(Run::insts).sum::<usize>();
    let allowance = (func.n_insts() / 64).max(1024);
    let mut loose = Vec::new();
    for _ in 0..REGROUP_ROUNDS {
        if prepared.runs().len() < 2 {
            break;
        }
        let Some(plan) = regroup(prepared.program(func), prepared.runs(), &loose) else {
            break;
        };
        // Reorder in place, and search again only from the first value that moved: the
        // runs before it hold as they are.
        let own = prepared.reordered.is_some();
        let mut program = prepared.reordered.take().unwrap_or_else(|| func.clone());
        let undo = reorder_tail(&mut program, plan.from, &plan.order);
        let found = find_runs_after(&program, &plan.loose, plan.from, &prepared.found);
        if found.runs.len() >= prepared.runs().len()
            || straight(&found.runs) > straight(prepared.runs()) + allowance
        {
            if own {
                reorder_tail(&mut program, plan.from, &undo);
                prepared.reordered = Some(program);
            }
            break;
        }
        prepared = Prepared {
            reordered: Some(program),
            found,
        };
        loose = plan.loose;
    }
    prepared
}

/// Most rounds of regrouping [`prepare`] runs.
const REGROUP_ROUNDS: usize = 3;

/// [`prepare`] before regrouping.
fn prepare_unfused(func: &Function, opts: &JitOptions) -> Prepared {
    if !opts.schedule {
        return Prepared {
            reordered: None,
            found: rolled_runs(func, opts),
        };
    }
    let scheduled = schedule(func);
    let (found, enough) = search(&scheduled, opts);
    if enough {
        return Prepared {
            reordered: Some(scheduled),
            found,
        };
    }
    // Some repetition, but the schedule interleaved too much of it: the program order may
    // keep it. A program without any run (irregular code) is not searched twice.
    if !found.runs.is_empty() {
        let in_order = rolled_runs(func, opts);
        if !in_order.runs.is_empty() {
            return Prepared {
                reordered: None,
                found: in_order,
            };
        }
    }
    Prepared {
        reordered: Some(scheduled),
        found: Found::default(),
    }
}

/// The IR instructions lowered for `func` with `runs`: each run's template (and a nest's gap)
/// once.
pub(crate) fn lowered_insts(func: &Function, runs: &[Run]) -> usize {
    let rolled: usize = runs.iter().map(|r| r.insts() - r.lowered()).sum();
    func.n_insts() - rolled
}

/// The program [`crate::compile`] and [`crate::compile_object`] lower for `func` (verified)
/// under `opts` (`func` reordered by [`schedule`], unless rolling found its repetition in
/// program order) and the regions of it they emit as loops, in order (empty when nothing is
/// rolled). Region value indices refer to the returned program.
pub fn rolled_program(func: &Function, opts: &JitOptions) -> (Function, Vec<Region>) {
    let prepared = prepare(func, opts);
    let program = prepared.reordered.as_ref().unwrap_or(func);
    let regions = prepared
        .runs()
        .iter()
        .map(|r| {
            let mut template = r.lowered_values();
            let between = template.split_off(r.period);
            Region {
                start: r.start,
                period: r.period,
                trips: r.trips,
                template,
                rows: r.outer.as_ref().map_or(1, |o| o.trips),
                row_period: r.outer.as_ref().map_or(r.row_len(), |o| o.period),
                between,
                literal_tables: r.tables.len() + r.outer.as_ref().map_or(0, |o| o.gap_tables.len()),
                paired: serial_positions(program, prepared.runs(), r, opts.pair_loops, opts.math)
                    .is_some(),
            }
        })
        .collect();
    let program = prepared.reordered.unwrap_or_else(|| func.clone());
    (program, regions)
}

/// The regions of [`rolled_program`].
pub fn regions(func: &Function, opts: &JitOptions) -> Vec<Region> {
    rolled_program(func, opts).1
}

/// A change made to the runs before lowering (tests only).
#[cfg(test)]
pub(crate) type Mutation = fn(&mut [Run]);

#[cfg(test)]
thread_local! {
    /// A change made to the runs before lowering, on this thread (tests only: they show
    /// that a wrong run gives wrong numbers, so the comparisons would catch one).
    pub(crate) static MUTATE_RUNS: std::cell::Cell<Option<Mutation>> =
        const { std::cell::Cell::new(None) };
}

/// What lowering produced.
pub(crate) struct Lowered {
    pub plan: Plan,
    /// The chunk functions, in execution order.
    pub chunk_ids: Vec<FuncId>,
}

/// Lower every chunk of `func` (verified, and already in the order to lower: the program of
/// [`prepare`]) into `module`, for one point per call or two (`lanes`; the plan is the same),
/// with `runs` as loops. Chunk `i` of `n` is declared with the name
/// and linkage `chunk_name(i, n)`, built into a context, and passed to `finish`, which must
/// define or otherwise consume it (the context is cleared afterwards).
#[allow(
    clippy::too_many_arguments,
    reason = "one call site per back end, each naming every choice"
)]
pub(crate) fn lower_function<M: Module>(
    module: &mut M,
    func: &Function,
    opts: &JitOptions,
    names: MathNames,
    chunk_name: impl Fn(usize, usize) -> (String, Linkage),
    lanes: Lanes,
    runs: &[Run],
    mut finish: impl FnMut(&mut M, FuncId, &mut Context, usize) -> Result<(), JitError>,
) -> Result<Lowered, JitError> {
    #[cfg(test)]
    let mutated;
    #[cfg(test)]
    let runs = match MUTATE_RUNS.with(|m| m.get()) {
        Some(mutate) => {
            let mut copy = runs.to_vec();
            mutate(&mut copy);
            mutated = copy;
            &mutated[..]
        }
        None => runs,
    };
    let plan = plan(func, opts, runs);
    let mut consts = ConstTable::build(func, &plan, runs, opts.const_table_above, lanes.count());
    let n_chunks = plan.chunks.len();
    consts.define(module, &format!("{}.constants", chunk_name(0, n_chunks).0))?;
    let input = LowerInput {
        func,
        plan: &plan,
        runs,
        consts: &consts,
        lanes,
        math: opts.math,
        mask_selects: opts.mask_selects
            && module.isa().triple().architecture == target_lexicon::Architecture::X86_64,
        pair_loops: opts.pair_loops,
    };
    let mut imports = Imports::new(names);
    let mut cache = new_cache(func);
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let sig = kernel_signature(module);
    let mut chunk_ids = Vec::with_capacity(plan.chunks.len());
    for chunk in 0..n_chunks {
        let (name, linkage) = chunk_name(chunk, n_chunks);
        let id = module
            .declare_function(&name, linkage, &sig)
            .map_err(|e| JitError::cranelift(format!("declaring `{name}`"), e))?;
        lower_chunk(
            module,
            &mut imports,
            &input,
            chunk,
            &mut cache,
            &mut ctx.func,
            &mut fctx,
        )?;
        finish(module, id, &mut ctx, chunk)?;
        module.clear_context(&mut ctx);
        chunk_ids.push(id);
    }
    Ok(Lowered { plan, chunk_ids })
}
