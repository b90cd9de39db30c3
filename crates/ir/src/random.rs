//! Deterministic random well-typed programs, for property tests across the workspace
//! (interpreter vs JIT, adjoint identities, simplifier soundness, inverse modes).
//!
//! Programs are straight-line f64 (or f32) code with shared subexpressions, several outputs
//! and operands drawn from a window of recent values (with occasional long-range uses), so
//! live ranges look like real code. By default only operations that are smooth and finite
//! on the whole real line, given the bounded magnitudes the generator maintains, are used,
//! so finite differences are meaningful at any input in `[-2, 2]`.

use crate::builder::Builder;
use crate::function::{Function, Value};
use crate::opcode::{BinaryOp, CmpPred, UnaryOp};
use crate::types::Type;

/// A small, fast, deterministic generator (SplitMix64). Not for cryptography.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * unit
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform(0.0, 1.0) < p
    }

    /// A vector of `n` numbers uniform in `[lo, hi)`.
    pub fn vector(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// What a random program may contain.
#[derive(Clone, Debug)]
pub struct RandomOptions {
    pub n_params: usize,
    pub n_insts: usize,
    pub n_outputs: usize,
    /// Float type of every value.
    pub ty: Type,
    /// Operands are drawn mostly from the last `window` values.
    pub window: usize,
    /// Also use non-smooth operations (`abs`, `min`, `max`, `fcmp` + `select`, `floor`):
    /// finite differences are then only valid away from kinks.
    pub non_smooth: bool,
}

impl Default for RandomOptions {
    fn default() -> RandomOptions {
        RandomOptions {
            n_params: 3,
            n_insts: 40,
            n_outputs: 2,
            ty: Type::F64,
            window: 16,
            non_smooth: false,
        }
    }
}

/// A random program. Every value stays bounded (the test checks below 1e3 over 1000
/// instructions) for inputs in `[-2, 2]`:
/// products are squashed through `tanh`/`sin`, and `exp`, `log`, `sqrt`, `div` only see
/// arguments kept in their safe domain (`exp(sin u)`, `log(1 + u²)`, `sqrt(1 + u²)`,
/// `u / (1 + v²)`). Outputs are the last values, and always depend on some input.
pub fn random_function(seed: u64, opts: &RandomOptions) -> Function {
    let mut rng = Rng::new(seed);
    let mut b = Builder::new(format!("random{seed}"));
    let mut vals: Vec<Value> = (0..opts.n_params.max(1))
        .map(|i| b.param(opts.ty, &format!("x{i}")))
        .collect();
    let pick = |rng: &mut Rng, vals: &[Value]| -> Value {
        let n = vals.len();
        if rng.chance(0.1) {
            vals[rng.below(n)]
        } else {
            vals[n - 1 - rng.below(opts.window.min(n))]
        }
    };
    while b.func().n_insts() < opts.n_insts {
        let a = pick(&mut rng, &vals);
        let c = pick(&mut rng, &vals);
        let kinds = if opts.non_smooth { 16 } else { 12 };
        let v = match rng.below(kinds) {
            0 => b.add(a, c),
            1 => b.sub(a, c),
            2 => {
                let m = b.mul(a, c);
                b.unary(UnaryOp::Tanh, m)
            }
            3 => {
                let k = rng.uniform(-1.5, 1.5);
                b.mul(a, k)
            }
            4 => b.unary(UnaryOp::Sin, a),
            5 => b.unary(UnaryOp::Cos, a),
            6 => {
                let s = b.unary(UnaryOp::Sin, a);
                b.unary(UnaryOp::Exp, s)
            }
            7 => {
                let sq = b.mul(a, a);
                let one = b.add(sq, 1.0);
                b.unary(UnaryOp::Log, one)
            }
            8 => {
                let sq = b.mul(c, c);
                let one = b.add(sq, 1.0);
                b.div(a, one)
            }
            9 => {
                let sq = b.mul(a, a);
                let one = b.add(sq, 1.0);
                b.unary(UnaryOp::Sqrt, one)
            }
            10 => {
                let t = b.unary(UnaryOp::Tanh, c);
                b.fma(a, t, 0.5)
            }
            11 => {
                let t = b.unary(UnaryOp::Tanh, a);
                b.powi(t, 3)
            }
            12 => b.unary(UnaryOp::Abs, a),
            13 => b.binary(BinaryOp::Min, a, c),
            14 => b.binary(BinaryOp::Max, a, c),
            _ => {
                let cond = b.fcmp(CmpPred::Lt, a, c);
                let s = b.unary(UnaryOp::Sin, a);
                b.select(cond, s, c)
            }
        };
        vals.push(v);
    }
    let n_out = opts.n_outputs.max(1).min(vals.len());
    let outs: Vec<Value> = vals[vals.len() - n_out..].to_vec();
    b.finish(&outs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_programs_verify_and_stay_finite() {
        for seed in 0..50 {
            let opts = RandomOptions {
                n_insts: 1000,
                non_smooth: seed % 2 == 0,
                ..RandomOptions::default()
            };
            let f = random_function(seed, &opts);
            crate::verify(&f).unwrap();
            let mut rng = Rng::new(seed);
            let x = rng.vector(f.n_params, -2.0, 2.0);
            let y = crate::interpret(&f, &x).unwrap();
            assert!(y.iter().all(|v| v.abs() < 1e3), "seed {seed}: {y:?}");
        }
    }
}
