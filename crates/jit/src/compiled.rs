//! The safe handle to JIT-compiled code: length-checked calls, batches, and the workspace.
//!
//! Compiled with [`crate::JitOptions::batch_lanes`] = 2, a function also holds two-point
//! kernels (see [`crate::lower`]): batches run consecutive pairs of points through them,
//! transposed into interleaved buffers of 16-byte slots aligned to 16 (with the workspace),
//! and an odd last point through the scalar code.
//!
//! A call needs `workspace_bytes()` of scratch memory for spilled and chunk-crossing values.
//! It never heap-allocates per call: small workspaces live on the stack, larger ones in a
//! thread-local buffer that grows once and is reused. The machine code is freed when the
//! handle is dropped.

use std::cell::RefCell;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ptr::NonNull;

use cranelift_jit::JITModule;

use crate::error::JitError;

/// `outputs` as slots that need not be initialised (for the batch paths, which only write).
fn as_uninit(outputs: &mut [f64]) -> &mut [MaybeUninit<f64>] {
    // SAFETY: `MaybeUninit<f64>` has the size, alignment and validity of `f64`; the batch
    // paths that take the result only write initialised `f64`s through it, so `outputs`
    // stays initialised.
    unsafe { &mut *(outputs as *mut [f64] as *mut [MaybeUninit<f64>]) }
}

/// The type of every generated function.
pub(crate) type KernelFn = unsafe extern "C" fn(*const f64, *mut f64, *mut f64);

/// Below this much machine code run by a batch (points × bytes of the scalar kernels),
/// [`CompiledFunction::call_batch_parallel`] with `threads: 0` runs on the caller's thread
/// alone. On a 2-core VM, handing a batch to the pool's threads and waiting for them costs
/// about 20 µs (a 4-point batch took 20× its one-thread time), and straight-line code runs
/// about 17 bytes a nanosecond, so two threads pay from about 1 MB of code run (60 µs).
pub const PARALLEL_CODE_BYTES: usize = 1_000_000;

/// The one thread rule of adjit: how many threads a call runs on when `asked` threads are
/// asked for, with `items` pieces of work that can run apart (points, rows, blocks) and
/// `parallel_pays` saying whether the whole call is long enough to repay handing work to the
/// pool (each caller measures that in its own unit: [`PARALLEL_CODE_BYTES`] of machine code for
/// a batch, instruction-rows for `adjit::map`).
///
/// `asked: 0` is automatic: one thread (the caller's) when the pool would not pay, else the
/// pool's threads (as many as cores unless the program configured rayon's global pool). Any
/// other count is granted as asked. Never more threads than items, never fewer than one.
/// The JIT's batches, `adjit::map`, `adjit::compose`, gradbench and the Python batches all call
/// this; `tests/one_rule.rs` checks that no second copy exists.
pub fn threads_for(asked: usize, items: usize, parallel_pays: bool) -> usize {
    match asked {
        0 if !parallel_pays => 1,
        0 => rayon::current_num_threads(),
        t => t,
    }
    .min(items)
    .max(1)
}

/// Two-point batches whose outputs reach this many bytes write them with non-temporal
/// stores. The outputs of a batch this large do not stay in the cache, and written after
/// each pair's kernel in one burst, the ordinary stores waited for every line to be read
/// first: a 20,000-point Rosenbrock-100 gradient (16 MB of outputs) ran 1.04–1.55× faster
/// with streaming (docs/performance.md).
pub const STREAM_BYTES: usize = 4 << 20;

/// Workspaces up to this many `f64` slots live on the stack of `call`.
const STACK_SLOTS: usize = 256;

/// One workspace slot of the two-point kernels: two `f64` lanes, aligned like a vector.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct PairSlot(pub(crate) [f64; 2]);

/// Workspaces of pair batches up to this many slots (the same 2 KiB) live on the stack.
const STACK_PAIR_SLOTS: usize = STACK_SLOTS / 2;

thread_local! {
    /// Reused workspace for calls needing more than `STACK_SLOTS` slots.
    static WORKSPACE: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
    /// Reused workspace for pair batches needing more than `STACK_PAIR_SLOTS` slots.
    static PAIR_WORKSPACE: RefCell<Vec<PairSlot>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with a pointer to `n` writable slots of `T` (as `f64`s): none for `n = 0`, a stack
/// buffer up to `STACK` slots, else the thread's reused buffer `tls` (grown with `zero`).
fn with_slots<T: Copy, const STACK: usize, R>(
    n: usize,
    tls: &'static std::thread::LocalKey<RefCell<Vec<T>>>,
    zero: T,
    f: impl FnOnce(*mut f64) -> R,
) -> R {
    if n == 0 {
        return f(NonNull::<f64>::dangling().as_ptr());
    }
    if n <= STACK {
        let mut buf = MaybeUninit::<[T; STACK]>::uninit();
        return f(buf.as_mut_ptr().cast());
    }
    tls.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < n {
                buf.resize(n, zero);
            }
            f(buf.as_mut_ptr().cast())
        }
        // Only reachable if `f` itself re-entered (it does not); stay correct anyway.
        Err(_) => f(vec![zero; n].as_mut_ptr().cast()),
    })
}

/// Write `x0[i]` and `x1[i]` as pair slot `i` of `dst`, each slot with one 16-byte store: the
/// kernel reads each slot with one vector load, which two 8-byte stores could not forward to
/// (a store-forwarding stall per input).
///
/// # Safety
/// `dst` must be valid for writing `x0.len()` slots; `x1.len() == x0.len()`.
unsafe fn interleave(x0: &[f64], x1: &[f64], dst: *mut PairSlot) {
    debug_assert_eq!(x0.len(), x1.len());
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_loadu_pd, _mm_store_pd, _mm_unpackhi_pd, _mm_unpacklo_pd};
        let (pairs0, pairs1) = (x0.chunks_exact(2), x1.chunks_exact(2));
        let done = x0.len() - pairs0.remainder().len();
        for (i, (a, b)) in pairs0.zip(pairs1).enumerate() {
            // SAFETY: SSE2 is part of x86-64; `a` and `b` hold two `f64`s each, and slots
            // `2i` and `2i + 1` are in bounds of `dst` (aligned to 16, as `PairSlot` is).
            unsafe {
                let (a, b) = (_mm_loadu_pd(a.as_ptr()), _mm_loadu_pd(b.as_ptr()));
                _mm_store_pd(dst.add(2 * i).cast(), _mm_unpacklo_pd(a, b));
                _mm_store_pd(dst.add(2 * i + 1).cast(), _mm_unpackhi_pd(a, b));
            }
        }
        if done < x0.len() {
            // SAFETY: slot `done` is in bounds (the caller's contract).
            unsafe { dst.add(done).write(PairSlot([x0[done], x1[done]])) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for (i, (&a, &b)) in x0.iter().zip(x1).enumerate() {
        // SAFETY: slot `i` is in bounds (the caller's contract).
        unsafe { dst.add(i).write(PairSlot([a, b])) }
    }
}

/// Ask for the cache lines of `data` (a hint: no effect on results, none on other targets).
fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(data);
        let start = data.as_ptr().cast::<i8>();
        for at in (0..bytes).step_by(64) {
            // SAFETY: a prefetch never faults and reads nothing the program sees; `at` is
            // within `data`, so the pointer arithmetic stays in bounds.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.add(at)) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// [`deinterleave`] with non-temporal stores: the outputs go to memory without first reading
/// their cache lines (a batch's outputs beyond [`STREAM_BYTES`] would not stay in the cache
/// anyway). Needs an `sfence` before the outputs are read by another thread; on other targets
/// it is [`deinterleave`].
///
/// # Safety
/// As [`deinterleave`].
unsafe fn deinterleave_streaming(
    src: *const PairSlot,
    y0: &mut [MaybeUninit<f64>],
    y1: &mut [MaybeUninit<f64>],
) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::_mm_stream_si64;
        debug_assert_eq!(y0.len(), y1.len());
        for (j, (a, b)) in y0.iter_mut().zip(y1).enumerate() {
            // SAFETY: slot `j` is in bounds and initialised (the caller's contract); `a` and
            // `b` are valid, 8-byte aligned `f64` slots, written whole (as their bits).
            unsafe {
                let PairSlot([u, v]) = src.add(j).read();
                _mm_stream_si64(a.as_mut_ptr().cast(), u.to_bits() as i64);
                _mm_stream_si64(b.as_mut_ptr().cast(), v.to_bits() as i64);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract is `deinterleave`'s.
    unsafe {
        deinterleave(src, y0, y1)
    }
}

/// Make the non-temporal stores of this thread visible before any later store (and so before
/// the batch reports it is done).
fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` is part of SSE, which x86-64 always has; it only orders stores.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
}

/// Read pair slot `j` of `src` into `y0[j]` and `y1[j]` (the inverse of [`interleave`]).
///
/// # Safety
/// `src` must be valid for reading `y0.len()` initialised slots; `y1.len() == y0.len()`.
unsafe fn deinterleave(
    src: *const PairSlot,
    y0: &mut [MaybeUninit<f64>],
    y1: &mut [MaybeUninit<f64>],
) {
    debug_assert_eq!(y0.len(), y1.len());
    for (j, (a, b)) in y0.iter_mut().zip(y1).enumerate() {
        // SAFETY: slot `j` is in bounds and initialised (the caller's contract).
        let PairSlot([u, v]) = unsafe { src.add(j).read() };
        a.write(u);
        b.write(v);
    }
}

/// The chunk functions of one compilation and the module owning their code.
pub(crate) struct Kernels {
    pub module: OwnedModule,
    /// Chunk functions, run in order on the same buffers.
    pub chunks: Vec<KernelFn>,
    /// Workspace slots one call needs (8 bytes each for one point, 16 for two).
    pub n_slots: usize,
    pub code_bytes: usize,
    /// Loops the rolling made of repeated instruction groups (a nest counts once).
    pub loops: usize,
    /// Bytes of code one call executes: `code_bytes`, scaled by the trips of its loops.
    pub executed_bytes: usize,
}

/// Run `chunks` in order.
///
/// # Safety
/// `chunks` must be the kernels of one compilation and the buffers large enough for them:
/// for scalar kernels `n_inputs` readable and `n_outputs` writable `f64`s and `n_slots`
/// writable `f64`s of `work`; for two-point kernels as many 16-byte slots of each, every
/// buffer aligned to 16 and `inputs`/`outputs` interleaved (see [`crate::lower`]).
/// `inputs` and `outputs` must not overlap.
pub(crate) unsafe fn run_chunks(
    chunks: &[KernelFn],
    inputs: *const f64,
    outputs: *mut f64,
    work: *mut f64,
) {
    for chunk in chunks {
        // SAFETY: guaranteed by the caller; each chunk reads and writes only within these
        // buffers (offsets were planned against the same sizes).
        unsafe { chunk(inputs, outputs, work) }
    }
}

/// The machine-code entry of a one-chunk program without workspace
/// ([`CompiledFunction::raw_entry`]), borrowed from the [`CompiledFunction`] that owns the
/// code, so it cannot outlive it.
#[derive(Clone, Copy)]
pub struct RawEntry<'a> {
    entry: KernelFn,
    _code: std::marker::PhantomData<&'a CompiledFunction>,
}

impl std::fmt::Debug for RawEntry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawEntry").finish_non_exhaustive()
    }
}

impl RawEntry<'_> {
    /// Run the program: read `n_inputs()` numbers at `inputs`, write `n_outputs()` numbers at
    /// `outputs` (as [`CompiledFunction::call`] does, without checking anything).
    ///
    /// # Safety
    /// `inputs` must be valid for reading `n_inputs()` `f64`s and `outputs` valid for writing
    /// `n_outputs()` `f64`s of the [`CompiledFunction`] this entry came from, and the two
    /// ranges must not overlap. The code reads nothing else and keeps no pointer.
    #[inline]
    pub unsafe fn call(self, inputs: *const f64, outputs: *mut f64) {
        // SAFETY: the caller upholds the buffer contract above; the program has no workspace,
        // so the work pointer is never dereferenced.
        unsafe { (self.entry)(inputs, outputs, NonNull::<f64>::dangling().as_ptr()) }
    }
}

/// A JIT module that frees its code when dropped.
pub(crate) struct OwnedModule(ManuallyDrop<JITModule>);

impl OwnedModule {
    pub fn new(module: JITModule) -> OwnedModule {
        OwnedModule(ManuallyDrop::new(module))
    }

    pub fn module_mut(&mut self) -> &mut JITModule {
        &mut self.0
    }
}

impl Drop for OwnedModule {
    fn drop(&mut self) {
        // SAFETY: the module is taken exactly once, here. Its code is only reachable through
        // the function pointers of the `CompiledFunction` owning this module, which is being
        // dropped, so no pointer into the freed memory is called afterwards.
        unsafe { ManuallyDrop::take(&mut self.0).free_memory() }
    }
}

/// A function compiled to host machine code. Cheap to call from many threads at once.
pub struct CompiledFunction {
    /// Chunk functions, run in order on the same buffers.
    chunks: Vec<KernelFn>,
    /// The only chunk, when there is one and it uses no workspace: called directly.
    direct: Option<KernelFn>,
    n_inputs: usize,
    n_outputs: usize,
    n_slots: usize,
    code_bytes: usize,
    loops: usize,
    /// Bytes of scalar code one point executes (straight-line code once, a loop's body once
    /// per trip): the cost of a point that decides whether a batch is worth threads.
    point_bytes: usize,
    /// Two-point kernels, when asked for and the host could compile them. Same plan, so
    /// the same `n_slots` (of 16 bytes).
    pairs: Option<Kernels>,
    /// Owns the code `chunks` point into; declared last so it is dropped last.
    _module: OwnedModule,
}

// SAFETY: after finalization the module is never accessed again except by `Drop` (which has
// `&mut self`); the generated code is immutable, reentrant and keeps no state outside the
// buffers passed to each call, so sharing the function pointers between threads is sound.
unsafe impl Sync for CompiledFunction {}

impl std::fmt::Debug for CompiledFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledFunction")
            .field("n_inputs", &self.n_inputs)
            .field("n_outputs", &self.n_outputs)
            .field("chunks", &self.chunks.len())
            .field("workspace_bytes", &self.workspace_bytes())
            .field("code_bytes", &self.code_bytes)
            .field("loops", &self.loops)
            .field("batch_lanes", &self.batch_lanes())
            .finish()
    }
}

impl CompiledFunction {
    pub(crate) fn new(
        scalar: Kernels,
        pairs: Option<Kernels>,
        n_inputs: usize,
        n_outputs: usize,
    ) -> CompiledFunction {
        let Kernels {
            module,
            chunks,
            n_slots,
            code_bytes,
            loops,
            executed_bytes,
        } = scalar;
        let direct = match chunks[..] {
            [only] if n_slots == 0 => Some(only),
            _ => None,
        };
        debug_assert!(pairs.as_ref().is_none_or(|p| p.n_slots == n_slots));
        CompiledFunction {
            chunks,
            direct,
            n_inputs,
            n_outputs,
            n_slots,
            code_bytes: code_bytes + pairs.as_ref().map_or(0, |p| p.code_bytes),
            point_bytes: executed_bytes,
            loops,
            pairs,
            _module: module,
        }
    }

    /// The unchecked entry point of a program compiled to one function without workspace
    /// (most small programs), for callers who check their buffers once and call millions of
    /// times; `None` when the program needs several chunks or a workspace (use
    /// [`CompiledFunction::call`]). See [`RawEntry::call`] for the contract.
    ///
    /// ```
    /// let f = adjit_ir::trace::trace(2, |x| x[0] * x[1] + 1.0);
    /// let code = adjit_jit::compile(&f, &Default::default()).unwrap();
    /// let entry = code.raw_entry().expect("one chunk, no workspace");
    /// let (x, mut y) = ([3.0, 4.0], [0.0]);
    /// assert_eq!((code.n_inputs(), code.n_outputs()), (2, 1)); // checked once
    /// // SAFETY: `x` holds n_inputs() numbers, `y` n_outputs(), they do not overlap, and
    /// // `code` outlives the call (the entry borrows it).
    /// unsafe { entry.call(x.as_ptr(), y.as_mut_ptr()) };
    /// assert_eq!(y, [13.0]);
    /// ```
    pub fn raw_entry(&self) -> Option<RawEntry<'_>> {
        self.direct.map(|entry| RawEntry {
            entry,
            _code: std::marker::PhantomData,
        })
    }

    /// The two-point kernels, if compiled.
    pub(crate) fn pair_kernels(&self) -> Option<&Kernels> {
        self.pairs.as_ref()
    }

    /// Points per kernel call in [`CompiledFunction::call_batch`]: 2 if two-point kernels
    /// were compiled ([`crate::JitOptions::batch_lanes`] = 2 and the host could lower them),
    /// else 1.
    pub fn batch_lanes(&self) -> usize {
        if self.pairs.is_some() {
            2
        } else {
            1
        }
    }

    /// Number of `f64` inputs of one call (one per parameter).
    pub fn n_inputs(&self) -> usize {
        self.n_inputs
    }

    /// Number of `f64` outputs of one call (one per returned value).
    pub fn n_outputs(&self) -> usize {
        self.n_outputs
    }

    /// Bytes of intermediate storage (spilled and chunk-crossing values) one call uses.
    pub fn workspace_bytes(&self) -> usize {
        self.n_slots * 8
    }

    /// Bytes of machine code (scalar and two-point kernels).
    pub fn code_bytes(&self) -> usize {
        self.code_bytes
    }

    /// Number of loops the one-point code runs: repeated instruction groups the compiler
    /// kept rolled ([`crate::regions`]); 0 for straight-line code. A nest (the rows of a 2-D
    /// grid: an outer loop around each row's loop, see [`crate::Region`]) counts as one.
    pub fn loops(&self) -> usize {
        self.loops
    }

    /// Number of chunk functions the program was split into.
    pub fn n_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Evaluate at `inputs`, writing `outputs`. `f32` parameters round their input to `f32`,
    /// `bool` parameters read nonzero as true; `bool` results are 0.0 or 1.0.
    ///
    /// Inlined: a call of a one-chunk program without workspace (most small programs) is two
    /// length comparisons and one indirect call; everything else goes out of line.
    #[inline]
    pub fn call(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<(), JitError> {
        if self.try_call(inputs, outputs) {
            Ok(())
        } else {
            Err(self.length_error(inputs.len(), outputs.len()))
        }
    }

    /// [`CompiledFunction::call`] reporting wrong lengths as `false` (nothing is run then)
    /// instead of an error value: for callers on a hot path that build their own error, so no
    /// error value (which must be dropped) enters their code.
    #[inline]
    pub fn try_call(&self, inputs: &[f64], outputs: &mut [f64]) -> bool {
        if inputs.len() != self.n_inputs || outputs.len() != self.n_outputs {
            return false;
        }
        match self.direct {
            // SAFETY: the lengths were checked above; `direct` is set only for a single chunk
            // that uses no workspace, so a dangling (never dereferenced) pointer is enough.
            Some(entry) => unsafe {
                entry(
                    inputs.as_ptr(),
                    outputs.as_mut_ptr(),
                    NonNull::<f64>::dangling().as_ptr(),
                )
            },
            None => self.call_with_workspace(inputs, outputs),
        }
        true
    }

    /// The general call: chunks in order on a workspace. Lengths are checked by the caller.
    #[inline(never)]
    fn call_with_workspace(&self, inputs: &[f64], outputs: &mut [f64]) {
        self.with_workspace(|work| {
            // SAFETY: the caller checked the lengths and `work` holds `n_slots` slots.
            unsafe { self.run(inputs.as_ptr(), outputs.as_mut_ptr(), work) }
        });
    }

    /// The error [`CompiledFunction::call`] returns for buffers of these lengths (for callers
    /// of [`CompiledFunction::try_call`]).
    #[cold]
    #[inline(never)]
    pub fn length_error(&self, inputs: usize, outputs: usize) -> JitError {
        if inputs != self.n_inputs {
            JitError::InputLength {
                expected: self.n_inputs,
                got: inputs,
            }
        } else {
            JitError::OutputLength {
                expected: self.n_outputs,
                got: outputs,
            }
        }
    }

    /// Evaluate at many points stored point-major (`inputs[p * n_inputs + i]`), writing
    /// `outputs[p * n_outputs + j]`. With two-point kernels ([`Self::batch_lanes`] = 2),
    /// points `2k` and `2k + 1` are evaluated together and an odd last point alone; the
    /// results are bitwise those of [`Self::call`] either way.
    pub fn call_batch(&self, inputs: &[f64], outputs: &mut [f64]) -> Result<(), JitError> {
        self.batch_into(inputs, as_uninit(outputs))
    }

    /// [`CompiledFunction::call_batch`] on outputs that need not be initialised: the kernels
    /// write every output of every point, and nothing is read before.
    fn batch_into(&self, inputs: &[f64], outputs: &mut [MaybeUninit<f64>]) -> Result<(), JitError> {
        let n_points = self.batch_points(inputs.len(), outputs.len())?;
        if let Some(pairs) = self.pairs.as_ref().filter(|_| n_points >= 2) {
            self.call_pairs(pairs, n_points, inputs, outputs);
            return Ok(());
        }
        self.with_workspace(|work| {
            for p in 0..n_points {
                let x = inputs[p * self.n_inputs..].as_ptr();
                let y = outputs[p * self.n_outputs..].as_mut_ptr().cast::<f64>();
                // SAFETY: `batch_points` checked that point `p` is in bounds of both buffers;
                // the kernel only writes its outputs.
                unsafe { self.run(x, y, work) }
            }
        });
        Ok(())
    }

    /// A batch of `n_points` (checked against the buffers) through the two-point kernels.
    ///
    /// The kernels read and write interleaved pair buffers (slot `i` holds value `i` of both
    /// points, see [`crate::lower`]): each pair of points is transposed into one aligned
    /// scratch buffer `[work | inputs | outputs]` and its outputs transposed back, so that
    /// inside the kernel every input and output is one vector access.
    fn call_pairs(
        &self,
        pairs: &Kernels,
        n_points: usize,
        inputs: &[f64],
        outputs: &mut [MaybeUninit<f64>],
    ) {
        let (n_in, n_out) = (self.n_inputs, self.n_outputs);
        let n_slots = self.n_slots + n_in + n_out;
        with_slots::<PairSlot, STACK_PAIR_SLOTS, ()>(
            n_slots,
            &PAIR_WORKSPACE,
            PairSlot([0.0; 2]),
            |buf| {
                let buf = buf.cast::<PairSlot>();
                let stream = n_points.saturating_mul(n_out) >= STREAM_BYTES / 8;
                let mut p = 0;
                while p + 2 <= n_points {
                    let (x0, x1) = inputs[p * n_in..(p + 2) * n_in].split_at(n_in);
                    // SAFETY: `buf` holds `n_slots` = work + inputs + outputs 16-byte slots,
                    // aligned to 16, in three disjoint regions that no caller slice aliases.
                    let (work, x, y) = unsafe {
                        let x = buf.add(self.n_slots);
                        (buf, x, x.add(n_in))
                    };
                    // SAFETY: `x` has room for `n_in` slots.
                    unsafe { interleave(x0, x1, x) };
                    // The next pair's points stream in while this pair computes: read in one
                    // burst by `interleave`, they would miss the cache one after another.
                    if p + 4 <= n_points {
                        prefetch(&inputs[(p + 2) * n_in..(p + 4) * n_in]);
                    }
                    // SAFETY: the two-point kernels read `n_in` slots of `x` and write `n_out`
                    // of `y` and `n_slots` of `work`, as planned; all three are aligned to 16.
                    unsafe { run_chunks(&pairs.chunks, x.cast(), y.cast(), work.cast()) };
                    let (y0, y1) = outputs[p * n_out..(p + 2) * n_out].split_at_mut(n_out);
                    // SAFETY: the kernels wrote all `n_out` slots of `y`.
                    unsafe {
                        if stream {
                            deinterleave_streaming(y, y0, y1)
                        } else {
                            deinterleave(y, y0, y1)
                        }
                    };
                    p += 2;
                }
                if stream {
                    store_fence();
                }
                if p < n_points {
                    let x = inputs[p * n_in..(p + 1) * n_in].as_ptr();
                    let y = outputs[p * n_out..(p + 1) * n_out]
                        .as_mut_ptr()
                        .cast::<f64>();
                    // SAFETY: one point of each buffer, and `buf` holds at least `n_slots`
                    // `f64`s, as the scalar kernels need.
                    unsafe { run_chunks(&self.chunks, x, y, buf.cast()) }
                }
            },
        );
    }

    /// [`CompiledFunction::call_batch`] split into `threads` parts run on rayon's global
    /// thread pool (started once per process; as many threads as cores unless the program
    /// configures it). `0` picks: a part per pool thread, or the caller's thread alone for
    /// a batch too short to pay for handing work out (below [`PARALLEL_CODE_BYTES`] of machine
    /// code run, points × scalar code bytes). Results are identical to the sequential batch
    /// whatever the threads.
    pub fn call_batch_parallel(
        &self,
        inputs: &[f64],
        outputs: &mut [f64],
        threads: usize,
    ) -> Result<(), JitError> {
        self.batch_parallel_into(inputs, as_uninit(outputs), threads)
    }

    /// [`CompiledFunction::call_batch_parallel`] into a new vector of `points × n_outputs`
    /// numbers, written by the code only: it is never zeroed first (for 10⁵ points of
    /// seed001's gradient, zeroing the 2.4 MB of results cost 0.7 ns a point, a third of the
    /// gradient's own time). An error for programs without inputs (the points are counted
    /// from the inputs).
    ///
    /// ```
    /// let f = adjit_ir::trace::trace(2, |x| x[0] * x[1] + 1.0);
    /// let code = adjit_jit::compile(&f, &Default::default()).unwrap();
    /// let points = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    /// let mut zeroed = [0.0; 3];
    /// code.call_batch(&points, &mut zeroed).unwrap();
    /// assert_eq!(zeroed, [3.0, 13.0, 31.0]);
    /// assert_eq!(code.call_batch_vec(&points, 2).unwrap(), zeroed);
    /// assert!(code.call_batch_vec(&points[..5], 1).is_err());
    /// ```
    pub fn call_batch_vec(&self, inputs: &[f64], threads: usize) -> Result<Vec<f64>, JitError> {
        let n = self.n_inputs;
        let points = match n {
            0 => None,
            n if inputs.len().is_multiple_of(n) => Some(inputs.len() / n),
            _ => None,
        };
        let len = points.and_then(|p| p.checked_mul(self.n_outputs));
        let Some(len) = len else {
            return Err(JitError::BatchLength {
                inputs: inputs.len(),
                outputs: 0,
                n_inputs: n,
                n_outputs: self.n_outputs,
            });
        };
        let mut out = Vec::with_capacity(len);
        self.batch_parallel_into(inputs, &mut out.spare_capacity_mut()[..len], threads)?;
        // SAFETY: `batch_parallel_into` returned Ok, so the kernels wrote every one of the
        // `len` outputs (each point's kernel writes all `n_outputs` of its slots).
        unsafe { out.set_len(len) };
        Ok(out)
    }

    fn batch_parallel_into(
        &self,
        inputs: &[f64],
        outputs: &mut [MaybeUninit<f64>],
        threads: usize,
    ) -> Result<(), JitError> {
        let n_points = self.batch_points(inputs.len(), outputs.len())?;
        let threads = self.batch_threads(n_points, threads);
        if threads <= 1 || self.n_inputs == 0 || self.n_outputs == 0 {
            return self.batch_into(inputs, outputs);
        }
        let mut per_thread = n_points.div_ceil(threads);
        if self.pairs.is_some() {
            // Whole pairs per thread, so only the last point of the batch runs alone.
            per_thread += per_thread % 2;
        }
        // Rayon's pool: its threads start once per process, where spawning threads per call
        // cost 80–90 µs on a 2-core VM. More parts than pool threads queue and run in turn.
        use rayon::prelude::*;
        let in_chunks = inputs.par_chunks(per_thread * self.n_inputs.max(1));
        let out_chunks = outputs.par_chunks_mut(per_thread * self.n_outputs.max(1));
        in_chunks
            .zip(out_chunks)
            .with_max_len(1)
            .try_for_each(|(x, y)| self.batch_into(x, y))
    }

    /// The threads a batch of `n_points` runs on when `threads` are asked for (see
    /// [`CompiledFunction::call_batch_parallel`]).
    pub(crate) fn batch_threads(&self, n_points: usize, threads: usize) -> usize {
        let pays = n_points.saturating_mul(self.point_bytes) >= PARALLEL_CODE_BYTES;
        threads_for(threads, n_points, pays)
    }

    /// The number of points in a batch, checking the buffers agree.
    fn batch_points(&self, inputs: usize, outputs: usize) -> Result<usize, JitError> {
        let mismatch = || JitError::BatchLength {
            inputs,
            outputs,
            n_inputs: self.n_inputs,
            n_outputs: self.n_outputs,
        };
        let (n_in, n_out) = (self.n_inputs, self.n_outputs);
        let points = match (n_in, n_out) {
            (0, 0) if inputs == 0 && outputs == 0 => 0,
            (0, 0) => return Err(mismatch()),
            (0, m) if inputs == 0 && outputs / m * m == outputs => outputs / m,
            (n, 0) if outputs == 0 && inputs / n * n == inputs => inputs / n,
            (n, m) if n > 0 && m > 0 && inputs / n * n == inputs && inputs / n * m == outputs => {
                inputs / n
            }
            _ => return Err(mismatch()),
        };
        Ok(points)
    }

    /// Run `f` with a pointer to `n_slots` writable `f64`s (uninitialised; the code writes
    /// every slot before reading it).
    fn with_workspace<R>(&self, f: impl FnOnce(*mut f64) -> R) -> R {
        with_slots::<f64, STACK_SLOTS, R>(self.n_slots, &WORKSPACE, 0.0, f)
    }

    /// Run every scalar chunk in order.
    ///
    /// # Safety
    /// `inputs` must hold `n_inputs` readable and `outputs` `n_outputs` writable `f64`s, not
    /// overlapping, and `work` `n_slots` writable `f64`s.
    unsafe fn run(&self, inputs: *const f64, outputs: *mut f64, work: *mut f64) {
        // SAFETY: guaranteed by the caller, for the scalar kernels.
        unsafe { run_chunks(&self.chunks, inputs, outputs, work) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_threads_wait_for_enough_work() {
        let f = adjit_ir::trace::trace(2, |x| x[0] * x[1] + 1.0);
        let code = crate::compile(&f, &Default::default()).expect("compiles");
        let cores = rayon::current_num_threads();
        assert!(code.point_bytes > 0);
        // The last batch below the threshold stays on the caller's thread, the next is shared.
        let short = (PARALLEL_CODE_BYTES - 1) / code.point_bytes;
        assert_eq!(code.batch_threads(short, 0), 1);
        assert_eq!(code.batch_threads(4, 0), 1);
        assert_eq!(code.batch_threads(short + 1, 0), cores.min(short + 1));
        assert_eq!(code.batch_threads(usize::MAX, 0), cores);
        // Asked for, threads are granted up to one per point.
        assert_eq!(code.batch_threads(4, 3), 3);
        assert_eq!(code.batch_threads(2, 8), 2);
        assert_eq!(code.batch_threads(0, 0), 1);
    }
}
