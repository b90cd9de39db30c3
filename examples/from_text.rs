//! Load a program from an `.ir` file, print every stage of the pipeline, and evaluate it.
//!
//! Run: `cargo run --release --example from_text [FILE.ir] [X1,X2,...]`
//! (defaults: `ir/examples/seed001.ir` at `2,3`).

use std::path::Path;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/ir/examples/seed001.ir").into());
    let funcs = adjit::load(Path::new(&path))?;
    let func = funcs.first().ok_or("the file defines no function")?;
    let x: Vec<f64> = match args.next() {
        Some(list) => list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .map_err(|_| format!("`{s}` is not a number"))
            })
            .collect::<Result<_, _>>()?,
        None => (0..func.n_params).map(|i| 2.0 + i as f64).collect(),
    };

    for stage in [adjit::Stage::Ir, adjit::Stage::Jvp, adjit::Stage::Vjp] {
        println!("==== {stage}");
        print!(
            "{}",
            adjit::dump(func, stage, &adjit::DumpOptions::default())?
        );
    }
    println!("==== clif (vjp)");
    let options = adjit::DumpOptions {
        mode: adjit::Mode::Vjp,
        ..Default::default()
    };
    print!("{}", adjit::dump(func, adjit::Stage::Clif, &options)?);

    println!("==== evaluation at {x:?}");
    let y_interp = adjit::eval(func, adjit::Engine::Interp, &x)?;
    let y_jit = adjit::eval(func, adjit::Engine::Jit, &x)?;
    println!("outputs (interpreter): {y_interp:?}");
    println!("outputs (JIT):         {y_jit:?}");
    let w = vec![1.0; func.ret_types.iter().filter(|t| t.is_float()).count()];
    let (_, gradient) = adjit::vjp(func, adjit::Engine::Jit, adjit::Strategy::Tape, &x, &w)?;
    println!("gradient of the sum of outputs: {gradient:?}");
    Ok(())
}
