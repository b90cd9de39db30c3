//! The public compile-once objects share one shape: each is `Debug` (naming its function),
//! `Send` and `Sync`, so any of them can be logged, shared between threads and kept in a
//! struct. Adding an object means adding it here.

use adjit::checkpoint::CheckpointedGradient;
use adjit::inverse::CompiledInverse;
use adjit::steps::{IteratedStep, SummedLoss};
use adjit::{
    Compiled, Gradient, Hessian, InverseMode, Jacobian, Mode, SparseHessian, SparseJacobian,
    Strategy,
};

fn shape<T: std::fmt::Debug + Send + Sync>(object: &T) -> String {
    format!("{object:?}")
}

#[test]
fn every_object_is_debug_send_and_sync_and_names_its_function() {
    let f = adjit::trace(2, |x| x[0] * x[1] + x[0].sin());
    let two = [adjit::Type::F64; 2];
    let sq = adjit::ir::trace::trace_multi("traced", &two, |x| vec![x[0] * x[1], x[0] + x[1]]);
    let step = adjit::ir::trace::trace_multi("steps", &two, |x| vec![x[0] * 0.5 + x[1], x[1]]);
    let loss = adjit::trace(2, |x| x[0] * x[0]);
    let named = |d: String| {
        assert!(d.contains("traced") || d.contains("steps"), "{d}");
        d
    };
    named(shape(&Compiled::new(&f, Mode::Vjp).expect("compiles")));
    named(shape(&Gradient::new(&f).expect("compiles")));
    named(shape(&Jacobian::new(&sq).expect("compiles")));
    named(shape(&Hessian::new(&f).expect("compiles")));
    named(shape(&SparseJacobian::new(&sq).expect("compiles")));
    named(shape(&SparseHessian::new(&f).expect("compiles")));
    shape(&CheckpointedGradient::new(&f, Strategy::Tape).expect("compiles"));
    named(shape(
        &CompiledInverse::new(&sq, InverseMode::Reverse).expect("compiles"),
    ));
    shape(&IteratedStep::new(&step, 4, Strategy::Tape).expect("compiles"));
    named(shape(
        &SummedLoss::new(&step, &loss, 4, Strategy::Tape).expect("compiles"),
    ));
}
