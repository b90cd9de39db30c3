//! CLIF and assembly dumps name what a chunk calls and loads (`adjit_sin`, the constant table)
//! instead of Cranelift's `u0:1` / `userextname0`.

use adjit_ir::{Builder, Type, UnaryOp};
use adjit_jit::{asm_text, clif_text, JitOptions};

#[test]
fn dumps_name_math_calls_and_the_constant_table() {
    let mut b = Builder::new("f");
    let x = b.param(Type::F64, "x");
    let s = b.unary(UnaryOp::Sin, x);
    let e = b.unary(UnaryOp::Exp, s);
    let y = b.mul(e, 3.5);
    let f = b.finish(&[y]);
    let opts = JitOptions::default();
    let clif = clif_text(&f, &opts).unwrap();
    assert!(
        clif.contains("; calls: fn0 = adjit_sin, fn1 = adjit_exp"),
        "{clif}"
    );
    let asm = asm_text(&f, &opts).unwrap();
    assert!(!asm.contains("userextname"), "{asm}");
    assert!(
        asm.contains("adjit_sin") && asm.contains("adjit_exp"),
        "{asm}"
    );
}
