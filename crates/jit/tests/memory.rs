//! Memory behaviour, in its own test binary because it measures the whole process: calls do
//! not heap-allocate (a counting global allocator), and compile/drop cycles give their machine
//! code back (resident set size from /proc/self/statm). Tests are serialised by a lock.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use adjit_jit::{compile, JitOptions};
use common::seed001;

struct CountingAllocator;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static SERIAL: Mutex<()> = Mutex::new(());

// SAFETY: forwards every request unchanged to the system allocator; only counts.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// `v[i] = fma(v[i-1], 0.5, v[i-lag])` over three parameters; returns the last two values.
fn lagged_chain(n: usize, lag: usize) -> adjit_ir::Function {
    let mut b = adjit_ir::Builder::new("lagged");
    let mut vals: Vec<_> = (0..3)
        .map(|i| b.param(adjit_ir::Type::F64, &format!("x{i}")))
        .collect();
    for i in 0..n {
        let far = vals[i.saturating_sub(lag).min(vals.len() - 1)];
        let v = b.fma(vals[vals.len() - 1], 0.5, far);
        vals.push(v);
    }
    let k = vals.len();
    b.finish(&[vals[k - 1], vals[k - 2]])
}

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    f();
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

#[test]
fn calls_do_not_allocate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let small = compile(&seed001(), &JitOptions::default()).unwrap();
    assert_eq!(small.workspace_bytes(), 0);
    // Every value is used again 400 instructions later: with a small window, ~400 slots are
    // live at once, too many for the stack buffer.
    let func = lagged_chain(3000, 400);
    let opts = JitOptions {
        registers: 4,
        ..JitOptions::default()
    };
    let big = compile(&func, &opts).unwrap();
    assert!(big.workspace_bytes() > 256 * 8, "{}", big.workspace_bytes());
    let medium = compile(&lagged_chain(300, 40), &opts).unwrap();
    let medium_bytes = medium.workspace_bytes();
    assert!(
        medium_bytes > 0 && medium_bytes <= 256 * 8,
        "{medium_bytes}"
    );

    let mut out1 = [0.0];
    let mut out2 = [0.0; 2];
    let mut batch = [0.0; 2 * 4];
    let x3 = [0.1, 0.2, 0.3];
    let xs = [0.1; 12];
    // Warm up: the thread-local workspace grows once.
    big.call(&x3, &mut out2).unwrap();
    let n = allocations_during(|| {
        for _ in 0..1000 {
            small.call(&[1.0, 2.0], &mut out1).unwrap();
            medium.call(&x3, &mut out2).unwrap();
            big.call(&x3, &mut out2).unwrap();
            big.call_batch(&xs, &mut batch).unwrap();
        }
    });
    assert_eq!(n, 0, "calls allocated {n} times");
    // The counter works.
    assert!(allocations_during(|| drop(vec![0u8; 10])) > 0);
}

fn resident_pages() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn compile_drop_cycles_do_not_grow_memory() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let func = seed001();
    let opts = JitOptions::default();
    let run = |n: usize| {
        for _ in 0..n {
            let code = compile(&func, &opts).unwrap();
            let mut out = [0.0];
            code.call(&[1.0, 2.0], &mut out).unwrap();
        }
    };
    // CI runs 2,000 cycles; ADJIT_COMPILE_CYCLES=100000 is the long check (docs/reliability.md).
    let cycles: usize = std::env::var("ADJIT_COMPILE_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    run(200);
    let before = resident_pages();
    run(cycles);
    let after = resident_pages();
    if cycles != 2000 {
        println!("{cycles} compile/drop cycles: RSS {before} -> {after} pages");
    }
    // Leaking the code costs at least one 4 KiB page per cycle; allow noise.
    assert!(
        after < before + 500,
        "RSS grew from {before} to {after} pages over {cycles} compile/drop cycles"
    );
}
