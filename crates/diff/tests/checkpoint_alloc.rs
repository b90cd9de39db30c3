//! A checkpointed gradient call allocates nothing once its buffers exist: a counting global
//! allocator watches repeated calls of the executor (driving the interpreter runner, which
//! also reuses its buffers).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use adjit_diff::checkpoint::{plan, Executor, InterpRunner, StageProgram, StageRunner, Strategy};
use adjit_ir::random::{random_function, RandomOptions, Rng};

struct Counting;

thread_local! {
    /// Allocations made by this thread: tests run in parallel, and each watches only its own.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count_allocation() {
    // `try_with`: an allocation during thread teardown is not counted rather than a panic.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards every request to the system allocator unchanged; only counts them.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_allocation();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Stage arithmetic that allocates nothing, so only the executor is watched.
struct Arithmetic;

impl StageRunner for Arithmetic {
    type Error = ();

    fn run(
        &mut self,
        program: StageProgram,
        inputs: &[f64],
        outputs: &mut [f64],
    ) -> Result<(), ()> {
        let (StageProgram::Forward(stage) | StageProgram::Reverse(stage)) = program;
        let total: f64 = inputs.iter().sum();
        for (i, o) in outputs.iter_mut().enumerate() {
            *o = total * 0.5 + (i + stage) as f64;
        }
        Ok(())
    }
}

#[test]
fn steady_state_executor_runs_do_not_allocate() {
    let func = random_function(
        9,
        &RandomOptions {
            n_insts: 400,
            ..RandomOptions::default()
        },
    );
    for strategy in [
        Strategy::Checkpoint { snapshots: 2 },
        Strategy::Uniform,
        Strategy::Tape,
    ] {
        let p = plan(&func, strategy).unwrap();
        let exec = Executor::new(&func, &p);
        let mut bufs = exec.buffers();
        let x = vec![0.25; func.n_params];
        let w = vec![1.0; func.n_outputs()];
        let mut y = vec![0.0; func.n_outputs()];
        let mut grad = vec![0.0; func.n_params];
        exec.run(&mut bufs, &mut Arithmetic, &x, &w, &mut y, &mut grad)
            .unwrap();
        let before = allocations();
        for _ in 0..5 {
            exec.run(&mut bufs, &mut Arithmetic, &x, &w, &mut y, &mut grad)
                .unwrap();
        }
        let after = allocations();
        assert_eq!(after - before, 0, "{strategy}: allocations in steady state");
    }
}

#[test]
fn steady_state_interpreter_calls_do_not_allocate() {
    let func = random_function(
        9,
        &RandomOptions {
            n_insts: 400,
            ..RandomOptions::default()
        },
    );
    for strategy in [
        Strategy::Checkpoint { snapshots: 2 },
        Strategy::Uniform,
        Strategy::Tape,
    ] {
        let p = plan(&func, strategy).unwrap();
        let exec = Executor::new(&func, &p);
        let mut bufs = exec.buffers();
        let mut runner = InterpRunner::new(&p.partition);
        let mut rng = Rng::new(1);
        let x = rng.vector(func.n_params, -2.0, 2.0);
        let w = rng.vector(func.n_outputs(), -1.0, 1.0);
        let mut y = vec![0.0; func.n_outputs()];
        let mut grad = vec![0.0; func.n_params];
        exec.run(&mut bufs, &mut runner, &x, &w, &mut y, &mut grad)
            .unwrap(); // warm-up
        let before = allocations();
        for _ in 0..5 {
            exec.run(&mut bufs, &mut runner, &x, &w, &mut y, &mut grad)
                .unwrap();
        }
        let after = allocations();
        assert_eq!(after - before, 0, "{strategy}: allocations in steady state");
        assert!(grad.iter().any(|&g| g != 0.0));
    }
}
