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

impl RandomOptions {
    /// The sizing every loop-rolling suite gives irregular seed `seed` (the default sizes,
    /// non-smooth operations for even seeds, `f32` for every third), so that a failing seed is
    /// the same program in all of them.
    pub fn of_seed(seed: u64) -> RandomOptions {
        RandomOptions {
            non_smooth: seed.is_multiple_of(2),
            ty: if seed % 3 == 2 { Type::F32 } else { Type::F64 },
            ..RandomOptions::default()
        }
    }
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

/// What a random repeated program may contain (see [`random_repeated`]).
#[derive(Clone, Debug)]
pub struct RepeatOptions {
    /// Instructions per iteration of the template.
    pub template: usize,
    /// Iterations.
    pub trips: usize,
    /// Values carried from one iteration to the next (recurrent state, running sums).
    pub carried: usize,
    /// Every `interrupt`-th iteration one instruction differs (0: never).
    pub interrupt: usize,
    /// Float type of every value.
    pub ty: Type,
    /// Also `min`, `max`, `fcmp` + `select` in the template.
    pub non_smooth: bool,
    /// Literals that change from iteration to iteration (data traced into the program): some
    /// template positions take a literal operand, or a `const`, whose value depends on the
    /// iteration (a few of them keep one value throughout).
    pub data: bool,
}

impl Default for RepeatOptions {
    fn default() -> RepeatOptions {
        RepeatOptions {
            template: 8,
            trips: 40,
            carried: 1,
            interrupt: 0,
            ty: Type::F64,
            non_smooth: false,
            data: false,
        }
    }
}

/// Programs per loop-rolling campaign: `ADJIT_ROLL_CASES` if set (a long run: 5000), else 120
/// (what CI runs).
pub fn campaign_cases() -> u64 {
    std::env::var("ADJIT_ROLL_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120)
}

impl RepeatOptions {
    /// The sizes every loop-rolling campaign gives seed `seed`: templates of 3–11
    /// instructions, 6–65 trips, 1–3 carried values, an interruption every 5th or 7th
    /// iteration for half the seeds, every 5th seed in f32, odd seeds non-smooth; with `data`,
    /// literals that change per iteration. One sizing for every suite, so that a failing seed
    /// is the same program in all of them.
    pub fn of_seed(seed: u64, data: bool) -> RepeatOptions {
        RepeatOptions {
            template: 3 + (seed % 9) as usize,
            trips: 6 + (seed as usize * 7) % 60,
            carried: 1 + (seed % 3) as usize,
            interrupt: [0, 0, 5, 7][(seed % 4) as usize],
            ty: if seed % 5 == 4 { Type::F32 } else { Type::F64 },
            non_smooth: seed % 2 == 1,
            data,
        }
    }
}

/// Where a template operand comes from.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// An earlier value of the same iteration.
    Same(usize),
    /// Carried state `c` (the previous iteration's value, or its initial value).
    Carry(usize),
    /// Parameter `base + stride·j` of iteration `j`.
    Stream(usize, i64),
    /// A value computed once before the iterations.
    Invariant(usize),
}

/// A random program made of `trips` copies of one random template (the shape of traced
/// loops: a recurrent cell, a strided sum, a stencil), for tests of loop rolling. Operands
/// are values of the same iteration, carried state (updated through `tanh`/`sin`, so it
/// stays bounded), parameters at affine indices `base + stride·j` (strides −2 … 3, zero
/// included) and values computed once in an irregular prologue. Every `interrupt`-th
/// iteration one instruction uses another opcode. Outputs: one template value of every
/// iteration (at affine output indices), the final carried state, and a sum over the
/// iterations. Values stay bounded for inputs in `[-2, 2]`.
pub fn random_repeated(seed: u64, opts: &RepeatOptions) -> Function {
    let mut rng = Rng::new(seed);
    let ty = opts.ty;
    let k = opts.template.max(3);
    let trips = opts.trips.max(1);
    let n_carried = opts.carried.max(1);
    // Parameter streams: base + stride·j stays inside 0..n_params for every j.
    let mut streams: Vec<(usize, i64)> = Vec::new();
    let mut n_params = 2usize;
    for _ in 0..1 + rng.below(3) {
        let stride = [-2i64, -1, 0, 1, 1, 2, 3][rng.below(7)];
        let span = stride.unsigned_abs() as usize * (trips - 1);
        let lo = rng.below(4);
        let base = if stride < 0 { lo + span } else { lo };
        n_params = n_params.max(lo + span + 1);
        streams.push((base, stride));
    }
    let mut b = Builder::new(format!("repeated{seed}"));
    let x: Vec<Value> = (0..n_params)
        .map(|i| b.param(ty, &format!("x{i}")))
        .collect();
    // An irregular prologue: loop invariants and the carried values' initial values.
    let mut invariants = Vec::new();
    for i in 0..2 + rng.below(3) {
        let a = x[rng.below(n_params)];
        let c = x[rng.below(n_params)];
        let v = match i % 3 {
            0 => b.mul(a, c),
            1 => b.unary(UnaryOp::Sin, a),
            _ => b.add(a, 0.25),
        };
        invariants.push(v);
    }
    let mut state: Vec<Value> = (0..n_carried)
        .map(|c| b.unary(UnaryOp::Tanh, invariants[c % invariants.len()]))
        .collect();
    // The template: (operation, operand sources); the last `n_carried` positions compute
    // the new carried state.
    #[derive(Clone, Copy)]
    enum Op {
        Bin(BinaryOp),
        Fma,
        Un(UnaryOp),
        Select(CmpPred),
    }
    let mut template: Vec<(Op, [Src; 3])> = Vec::new();
    let pick = |rng: &mut Rng, t: usize| -> Src {
        match rng.below(8) {
            0..=2 if t > 0 => Src::Same(t - 1 - rng.below(t.min(4))),
            3 | 4 => {
                let (base, stride) = streams[rng.below(streams.len())];
                Src::Stream(base, stride)
            }
            5 => Src::Carry(rng.below(n_carried)),
            6 => Src::Invariant(rng.below(invariants.len())),
            _ => Src::Carry(rng.below(n_carried)),
        }
    };
    for t in 0..k + n_carried {
        let op = if t >= k {
            Op::Un(if rng.chance(0.5) {
                UnaryOp::Tanh
            } else {
                UnaryOp::Sin
            })
        } else {
            match rng.below(if opts.non_smooth { 9 } else { 6 }) {
                0 => Op::Bin(BinaryOp::Add),
                1 => Op::Bin(BinaryOp::Sub),
                2 => Op::Bin(BinaryOp::Mul),
                3 => Op::Fma,
                4 => Op::Un(UnaryOp::Tanh),
                5 => Op::Un(UnaryOp::Sin),
                6 => Op::Bin(BinaryOp::Min),
                7 => Op::Bin(BinaryOp::Max),
                _ => Op::Select(CmpPred::Lt),
            }
        };
        let srcs = [pick(&mut rng, t), pick(&mut rng, t), pick(&mut rng, t)];
        template.push((op, srcs));
    }
    let interrupt_at = rng.below(k);
    let out_pos = rng.below(k);
    // Template positions whose second operand is a literal of the iteration (drawn last, so
    // programs without data are those of before).
    let data_at: Vec<bool> = (0..k).map(|_| opts.data && rng.chance(0.5)).collect();
    let data_value = |t: usize, j: usize| -> f64 {
        if t.is_multiple_of(3) {
            return 0.375; // the same in every iteration
        }
        let h = Rng::new(seed ^ ((t as u64) << 32) ^ j as u64).next_u64();
        // Exact in f32; now and then one value repeats.
        if h.is_multiple_of(8) {
            0.75
        } else {
            ((h >> 8) % 1024) as f64 / 256.0 - 2.0
        }
    };
    let mut per_iteration = Vec::with_capacity(trips);
    let mut sum: Option<Value> = None;
    for j in 0..trips {
        let mut vals: Vec<Value> = Vec::with_capacity(template.len());
        for (t, &(op, srcs)) in template.iter().enumerate() {
            let get = |s: Src, vals: &[Value]| -> Value {
                match s {
                    Src::Same(p) => vals[p],
                    Src::Carry(c) => state[c],
                    Src::Stream(base, stride) => x[(base as i64 + stride * j as i64) as usize],
                    Src::Invariant(i) => invariants[i],
                }
            };
            let [a, c, d] = srcs.map(|s| get(s, &vals));
            let interrupted = opts.interrupt > 0 && j % opts.interrupt == opts.interrupt - 1;
            if t < k && data_at[t] && !interrupted {
                let lit = data_value(t, j);
                let v = match op {
                    Op::Bin(BinaryOp::Mul) => {
                        let m = b.mul(a, lit);
                        b.unary(UnaryOp::Tanh, m)
                    }
                    Op::Bin(op) => b.binary(op, lit, c),
                    Op::Fma => {
                        let m = b.fma(a, lit, d);
                        b.unary(UnaryOp::Sin, m)
                    }
                    Op::Un(op) => {
                        let k = b.constant(ty, lit);
                        let s = b.add(a, k);
                        b.unary(op, s)
                    }
                    Op::Select(pred) => {
                        let cond = b.fcmp(pred, a, lit);
                        b.select(cond, lit, d)
                    }
                };
                vals.push(v);
                continue;
            }
            let v = match op {
                Op::Bin(_) if interrupted && t == interrupt_at => b.sub(c, a),
                Op::Bin(BinaryOp::Mul) => {
                    // Squashed, so products of products stay bounded.
                    let m = b.mul(a, c);
                    b.unary(UnaryOp::Tanh, m)
                }
                Op::Bin(op) => b.binary(op, a, c),
                Op::Fma if interrupted && t == interrupt_at => b.fma(a, 0.5, d),
                Op::Fma => {
                    let m = b.fma(a, c, d);
                    b.unary(UnaryOp::Sin, m)
                }
                Op::Un(op) if t >= k => {
                    // New carried state from this iteration's values.
                    let s = b.add(a, c);
                    b.unary(op, s)
                }
                Op::Un(op) => b.unary(op, a),
                Op::Select(pred) => {
                    let cond = b.fcmp(pred, a, c);
                    b.select(cond, c, d)
                }
            };
            vals.push(v);
        }
        state.copy_from_slice(&vals[k..k + n_carried]);
        per_iteration.push(vals[out_pos]);
        sum = Some(match sum {
            None => vals[k - 1],
            Some(s) => b.add(s, vals[k - 1]),
        });
    }
    let mut rets = per_iteration;
    rets.extend(state.iter().copied());
    rets.extend(sum);
    b.finish(&rets)
}
