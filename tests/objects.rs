//! The public compile-once objects share one shape.
//!
//! * Each is `Debug` (naming its function), `Send` and `Sync`, so any of them can be logged,
//!   shared between threads and kept in a struct.
//! * Each object of fixed layout implements [`adjit::Prepared`], and its trait calls give its
//!   own call's numbers bit for bit: one point flat or in parts, a batch on one thread or
//!   two, a batch into a new vector; wrong lengths are errors, never panics.
//! * The list below is the list of objects: a scan of the facade's sources finds every type
//!   with a `new` that returns `Result<Self>` and fails on one that is not listed, so adding an
//!   object means deciding here which it is.

use adjit::checkpoint::CheckpointedGradient;
use adjit::inverse::CompiledInverse;
use adjit::steps::{IteratedStep, SummedLoss};
use adjit::{
    Compiled, Error, Function, Gradient, Hessian, InverseMode, Jacobian, Mode, Prepared,
    SparseHessian, SparseJacobian, Strategy, Type,
};

/// Objects of fixed layout: `impl Prepared`.
const PREPARED: &[&str] = &[
    "Compiled",
    "Gradient",
    "Jacobian",
    "Hessian",
    "SparseJacobian",
    "SparseHessian",
    "CheckpointedGradient",
    "CompiledInverse",
    "IteratedStep",
    "SummedLoss",
];

/// Row drivers: the number of rows is chosen per call, so their lengths are not a layout.
const ROW_DRIVERS: &[&str] = &["MappedKernel", "ComposedKernel"];

/// Plans: IR and analyses, nothing compiled to call.
const PLANS: &[&str] = &["SparsePlan"];

fn shape<T: std::fmt::Debug + Send + Sync>(object: &T) -> String {
    format!("{object:?}")
}

fn two() -> [Type; 2] {
    [Type::F64; 2]
}

/// `(x0·x1 + sin x0)`: a scalar function of two inputs.
fn scalar() -> Function {
    adjit::trace(2, |x| x[0] * x[1] + x[0].sin())
}

/// A square map with an invertible Jacobian near the points used here.
fn square() -> Function {
    adjit::ir::trace::trace_multi("traced", &two(), |x| {
        vec![x[0] * x[1] + 2.0 * x[0], x[0] + x[1].exp()]
    })
}

fn step() -> Function {
    adjit::ir::trace::trace_multi("steps", &two(), |x| vec![x[0] * 0.5 + x[1], x[1]])
}

#[test]
fn every_object_is_debug_send_and_sync_and_names_its_function() {
    let (f, sq, step) = (scalar(), square(), step());
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

/// Three points of `object`'s flat inputs: every part filled with distinct numbers near
/// (0.3, 0.6), where the square map is invertible.
fn points<P: Prepared>(object: &P) -> Vec<Vec<f64>> {
    (0..3)
        .map(|p| {
            (0..object.n_inputs())
                .map(|i| 0.3 + 0.1 * p as f64 + 0.05 * i as f64 + 0.3 * (i % 2) as f64)
                .collect()
        })
        .collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Every trait call of `object` against `own`, the object's own call on one point's flat
/// inputs (returning its flat outputs in layout order).
fn agrees<P: Prepared>(object: &P, own: impl Fn(&[f64]) -> Vec<f64>) {
    let (n_in, n_out) = (object.n_inputs(), object.n_outputs());
    assert_eq!(n_in, object.layout().n_inputs());
    let points = points(object);
    let expected: Vec<f64> = points.iter().flat_map(|x| own(x)).collect();
    assert_eq!(expected.len(), 3 * n_out, "{object:?}");
    assert!(expected.iter().any(|v| *v != 0.0), "{object:?}: all zero");

    // One point, flat and in parts.
    for (x, want) in points.iter().zip(expected.chunks(n_out)) {
        let mut out = vec![0.0; n_out];
        object.call_flat(x, &mut out).expect("flat call");
        assert_eq!(bits(&out), bits(want), "{object:?}: call_flat");

        let mut ins: Vec<&[f64]> = Vec::new();
        let mut rest = &x[..];
        for &(_, len) in object.layout().input_parts() {
            let (part, tail) = rest.split_at(len);
            ins.push(part);
            rest = tail;
        }
        let mut parts: Vec<Vec<f64>> = object
            .layout()
            .output_parts()
            .iter()
            .map(|&(_, len)| vec![f64::NAN; len])
            .collect();
        let mut outs: Vec<&mut [f64]> = parts.iter_mut().map(|p| p.as_mut_slice()).collect();
        object.call_parts(&ins, &mut outs).expect("call in parts");
        assert_eq!(bits(&parts.concat()), bits(want), "{object:?}: call_parts");
    }

    // A batch, on one thread and on two, and into a new vector.
    let flat: Vec<f64> = points.concat();
    for threads in [1, 2] {
        let mut out = vec![f64::NAN; 3 * n_out];
        object.call_batch(&flat, &mut out, threads).expect("batch");
        assert_eq!(bits(&out), bits(&expected), "{object:?}: {threads} threads");
    }
    let out = object
        .call_batch_vec(&flat, 0)
        .expect("batch into a vector");
    assert_eq!(bits(&out), bits(&expected), "{object:?}: call_batch_vec");

    // Only some outputs: the last part, then the first number (out of order on purpose).
    let layout = object.layout();
    let last = layout.output(layout.output_parts().last().expect("a part").0);
    let picks = [last.clone(), 0..1];
    let len = last.len() + 1;
    let want: Vec<f64> = expected
        .chunks(n_out)
        .flat_map(|row| {
            row[last.clone()]
                .iter()
                .chain(&row[..1])
                .copied()
                .collect::<Vec<_>>()
        })
        .collect();
    for threads in [1, 2] {
        let mut out = vec![f64::NAN; 3 * len];
        object
            .call_batch_picked(&flat, &picks, &mut out, threads)
            .expect("picked batch");
        assert_eq!(
            bits(&out),
            bits(&want),
            "{object:?}: picked, {threads} threads"
        );
    }
    let mut out = vec![0.0; 3 * len];
    let too_far = std::iter::once(0..n_out + 1).collect::<Vec<_>>();
    let beyond = object.call_batch_picked(&flat, &too_far, &mut out, 1);
    assert!(
        matches!(beyond, Err(Error::ArgumentLength { .. })),
        "{beyond:?}"
    );

    // Wrong lengths are errors that name the object's function.
    let mut out = vec![0.0; n_out];
    let short = object.call_flat(&points[0][1..], &mut out);
    assert!(matches!(short, Err(Error::Arity { .. })), "{short:?}");
    let mut out = vec![0.0; 3 * n_out];
    let ragged = object.call_batch(&flat[1..], &mut out, 1);
    assert!(
        matches!(ragged, Err(Error::ArgumentLength { .. })),
        "{ragged:?}"
    );
    let mut out = vec![0.0; 2 * n_out + 1];
    let outputs = object.call_batch(&flat, &mut out, 2);
    assert!(
        matches!(outputs, Err(Error::ArgumentLength { .. })),
        "{outputs:?}"
    );
    let parts = object.call_parts(&[], &mut []);
    assert!(
        matches!(parts, Err(Error::Parts { .. } | Error::Length { .. })),
        "{parts:?}"
    );
    assert!(parts
        .expect_err("an error")
        .to_string()
        .contains(object.name()));
}

#[test]
fn every_prepared_object_gives_its_own_numbers_through_the_trait() {
    let (f, sq, step) = (scalar(), square(), step());

    let c = Compiled::new(&f, Mode::Jvp).expect("compiles");
    agrees(&c, |x| {
        let mut out = vec![0.0; 2];
        c.call(x, &mut out).expect("call");
        out
    });

    let g = Gradient::new(&f).expect("compiles");
    agrees(&g, |x| {
        let mut grad = vec![0.0; 2];
        let y = g.call(x, &mut grad).expect("call");
        [vec![y], grad].concat()
    });

    let j = Jacobian::new(&sq).expect("compiles");
    agrees(&j, |x| {
        let (mut y, mut jac) = (vec![0.0; 2], vec![0.0; 4]);
        j.call(x, &mut y, &mut jac).expect("call");
        [y, jac].concat()
    });

    let h = Hessian::new(&f).expect("compiles");
    agrees(&h, |x| {
        let (mut grad, mut hess) = (vec![0.0; 2], vec![0.0; 4]);
        let y = h.call(x, &mut grad, &mut hess).expect("call");
        [vec![y], grad, hess].concat()
    });

    let sj = SparseJacobian::new(&sq).expect("compiles");
    agrees(&sj, |x| {
        let mut nz = vec![0.0; sj.nnz()];
        sj.eval(x, &mut nz).expect("call");
        nz
    });

    let sh = SparseHessian::new(&f).expect("compiles");
    agrees(&sh, |x| {
        let mut nz = vec![0.0; sh.nnz()];
        sh.eval(x, &mut nz).expect("call");
        nz
    });

    let cg =
        CheckpointedGradient::new(&f, Strategy::Checkpoint { snapshots: 1 }).expect("compiles");
    agrees(&cg, |x| {
        let (mut y, mut grad) = (vec![0.0; 1], vec![0.0; 2]);
        cg.call(&x[..2], &x[2..], &mut y, &mut grad).expect("call");
        [y, grad].concat()
    });

    for mode in [
        InverseMode::Reverse,
        InverseMode::Forward,
        InverseMode::Dense,
    ] {
        let inv = CompiledInverse::new(&sq, mode).expect("compiles");
        agrees(&inv, |x| {
            let (mut y, mut product) = (vec![0.0; 2], vec![0.0; 2]);
            inv.call(&x[..2], &x[2..], &mut y, &mut product)
                .expect("call");
            [y, product].concat()
        });
    }

    let it = IteratedStep::new(&step, 5, Strategy::Checkpoint { snapshots: 2 }).expect("compiles");
    agrees(&it, |x| {
        let (mut y, mut grad) = (vec![0.0; 2], vec![0.0; 2]);
        it.vjp(&x[..2], &x[2..], &mut y, &mut grad).expect("call");
        [y, grad].concat()
    });

    let loss = adjit::trace(2, |x| x[0] * x[0] + x[1]);
    let summed = SummedLoss::new(&step, &loss, 5, Strategy::Tape).expect("compiles");
    agrees(&summed, |x| {
        let mut grad = vec![0.0; 2];
        let y = summed.gradient(x, &mut grad).expect("call");
        [vec![y], grad].concat()
    });
}

/// A Hessian of a function with a `bool` output beside its value: the trait's `y` is every
/// output, as the layout says, not only the value the object's own call returns.
#[test]
fn a_hessian_through_the_trait_writes_every_output() {
    let text = "func @flagged(%x: f64, %y: f64) -> (f64, bool) {\n    %xy = mul %x, %y\n    \
                %v = mul %xy, %x\n    %b = fcmp.lt %x, %y\n    ret %v, %b\n}\n";
    let f = adjit::load_str(text, "flagged.ir")
        .expect("parses")
        .remove(0);
    let h = Hessian::new(&f).expect("compiles");
    let mut out = vec![f64::NAN; h.n_outputs()];
    h.call_flat(&[2.0, 3.0], &mut out).expect("call");
    // y = (x²y, x < y), x̄ = (2xy, x²), H = [[2y, 2x], [2x, 0]].
    assert_eq!(out, [12.0, 1.0, 12.0, 4.0, 6.0, 4.0, 4.0, 0.0]);
}

/// Every type of the facade with a `new` returning `Result<Self>` is in exactly one of the
/// lists above, and the listed `Prepared` ones implement the trait.
#[test]
fn the_list_of_objects_is_the_list_in_the_sources() {
    let mut found = Vec::new();
    let mut implemented = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("a source directory") {
                stack.push(entry.expect("an entry").path());
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let code = adjit_testkit::source::code_before_tests(
            &std::fs::read_to_string(&path).expect("a source file"),
        );
        for (at, _) in code.match_indices("pub fn new(") {
            let signature = &code[at..];
            let signature = &signature[..signature.find('{').unwrap_or(signature.len())];
            if let Some(ty) = signature
                .split("-> Result<")
                .nth(1)
                .and_then(|rest| rest.split('>').next())
            {
                found.push(ty.trim().to_string());
            }
        }
        for line in code.lines() {
            if let Some(rest) = line.trim().strip_prefix("impl ") {
                if let Some((tr, ty)) = rest.split_once(" for ") {
                    if tr.ends_with("Prepared") {
                        implemented.push(ty.trim_end_matches(" {").trim().to_string());
                    }
                }
            }
        }
    }
    found.sort();
    let mut listed: Vec<String> = [PREPARED, ROW_DRIVERS, PLANS]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "objects in src/ against the lists of this test"
    );
    implemented.sort();
    let mut prepared: Vec<String> = PREPARED.iter().map(|s| s.to_string()).collect();
    prepared.sort();
    assert_eq!(implemented, prepared, "`impl Prepared for …` in src/");
}
