//! The Lorenz RK4 program shared by the `lorenz_steps` and `strategies` examples, built with
//! the public `adjit::Builder` only (`#[path]`-included by each example; the same instructions
//! as the test kit's, so results match it bit for bit).

use adjit::{Builder, Function, Type, Value};

/// Lorenz system (σ = 10, ρ = 28, β = 8/3) integrated with `steps` classical RK4 steps of size
/// `dt`: `(x, y, z) → (x, y, z)` after `steps·dt`. `ty` is `F64` or `F32`.
pub fn lorenz_rk4(steps: usize, dt: f64, ty: Type) -> Function {
    let mut b = Builder::new(format!("lorenz_rk4_{steps}"));
    let mut s = [b.param(ty, "x"), b.param(ty, "y"), b.param(ty, "z")];
    let rhs = |b: &mut Builder, u: [Value; 3]| -> [Value; 3] {
        let [x, y, z] = u;
        let d = b.sub(y, x);
        let dx = b.mul(10.0, d);
        let r = b.sub(28.0, z);
        let xr = b.mul(x, r);
        let dy = b.sub(xr, y);
        let xy = b.mul(x, y);
        let bz = b.mul(8.0 / 3.0, z);
        let dz = b.sub(xy, bz);
        [dx, dy, dz]
    };
    for _ in 0..steps {
        let k1 = rhs(&mut b, s);
        let u2 = [0, 1, 2].map(|i| b.fma(k1[i], 0.5 * dt, s[i]));
        let k2 = rhs(&mut b, u2);
        let u3 = [0, 1, 2].map(|i| b.fma(k2[i], 0.5 * dt, s[i]));
        let k3 = rhs(&mut b, u3);
        let u4 = [0, 1, 2].map(|i| b.fma(k3[i], dt, s[i]));
        let k4 = rhs(&mut b, u4);
        s = [0, 1, 2].map(|i| {
            let a = b.fma(k2[i], 2.0, k1[i]);
            let a = b.fma(k3[i], 2.0, a);
            let a = b.add(a, k4[i]);
            b.fma(a, dt / 6.0, s[i])
        });
    }
    b.finish(&s)
}
