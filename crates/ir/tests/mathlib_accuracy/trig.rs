//! References and test points of `sin`, `cos` and `tan`: an exact reduction of its own
//! (`x·2/π mod 4` by a big-integer product in `u128` arithmetic with 256 bits of `2/π`,
//! which leaves an error below `2⁻¹⁹⁰` in the fraction), then Taylor series in
//! double-double.

use super::dd::{fast_two_sum, Dd};
use super::{Routine, INF, NAN};
use adjit_ir::UnaryOp;

/// The first 1280 bits of `2/π` (mpmath at 1500 bits; bit 1, weight 1/2, first).
const TWO_OVER_PI: [u64; 20] = [
    0xa2f9836e4e441529,
    0xfc2757d1f534ddc0,
    0xdb6295993c439041,
    0xfe5163abdebbc561,
    0xb7246e3a424dd2e0,
    0x06492eea09d1921c,
    0xfe1deb1cb129a73e,
    0xe88235f52ebb4484,
    0xe99c7026b45f7e41,
    0x3991d639835339f4,
    0x9c845f8bbdf9283b,
    0x1ff897ffde05980f,
    0xef2f118b5a0a6d1f,
    0x6d367ecf27cb09b7,
    0x4f463f669e5fea2d,
    0x7527bac7ebe5f17b,
    0x3d0739f78a5292ea,
    0x6bfb5fb11f8d5d08,
    0x56033046fc7b6bab,
    0xf0cfbc209af4361d,
];

/// `π/2` as a double-double.
const PIO2: Dd = Dd(std::f64::consts::FRAC_PI_2, 6.123233995736766e-17);

/// Bit `j ≥ 1` of `2/π` (weight `2⁻ʲ`); 0 for `j ≤ 0`.
fn bit(j: i64) -> u64 {
    if j < 1 {
        return 0;
    }
    let p = (j - 1) as usize;
    (TWO_OVER_PI[p / 64] >> (63 - p % 64)) & 1
}

/// `x = k·π/2 + r`: `(r, k mod 4)`.
pub fn reduce_ref(x: f64) -> (Dd, u32) {
    if x.abs() < 0.78 {
        return (Dd::from(x), 0);
    }
    let bits = x.to_bits();
    let m = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    let e = ((bits >> 52) & 0x7ff) as i64 - 1075;
    // x·2/π ≡ m·B·2^(2 − 256) (mod 4), B the 256 bits j ∈ [e − 1, e + 255) (the bits
    // before contribute multiples of 4, those after less than 2⁻¹⁹⁸).
    let j0 = e - 1;
    let mut b = [0u64; 4];
    for (w, word) in b.iter_mut().enumerate() {
        for i in 0..64 {
            *word = (*word << 1) | bit(j0 + (64 * w + i) as i64);
        }
    }
    // R = m·B, five limbs, most significant first.
    let mut r = [0u64; 5];
    let mut carry = 0u128;
    for w in (0..4).rev() {
        let p = m as u128 * b[w] as u128 + carry;
        r[w + 1] = p as u64;
        carry = p >> 64;
    }
    r[0] = carry as u64;
    // y = R·2⁻²⁵⁴: the quadrant is bits 254–255 of R, the fraction the 254 below.
    let mut q = ((r[1] >> 62) & 3) as u32;
    let mut f = [r[1] & ((1u64 << 62) - 1), r[2], r[3], r[4]];
    let mut negative = false;
    if f[0] >> 61 == 1 {
        // f ≥ 1/2: f − 1, as a magnitude.
        q = (q + 1) & 3;
        negative = true;
        let mut c = 1u128;
        for w in (0..4).rev() {
            let v = (!f[w]) as u128 + c;
            f[w] = v as u64;
            c = v >> 64;
        }
        f[0] &= (1u64 << 62) - 1;
    }
    // f·2⁻²⁵⁴ as a double-double: its top 128 bits.
    let lz = (f.iter().take_while(|&&w| w == 0).count() * 64) as u32
        + f.iter().find(|&&w| w != 0).map_or(0, |w| w.leading_zeros());
    assert!(lz < 200, "reduction of {x:e} cancels beyond the window");
    let wide = |i: usize| -> u128 {
        let hi = if i < 4 { f[i] } else { 0 };
        let lo = if i + 1 < 4 { f[i + 1] } else { 0 };
        ((hi as u128) << 64) | lo as u128
    };
    let (wi, sh) = ((lz / 64) as usize, lz % 64);
    let top = if sh == 0 {
        wide(wi)
    } else {
        (wide(wi) << sh) | (wide(wi + 2) >> (128 - sh))
    };
    let hi = ((top >> 75) as u64) as f64 * 2f64.powi(75);
    let lo = (top & ((1u128 << 75) - 1)) as f64;
    let v = fast_two_sum(hi, lo).ldexp(128 - lz as i32 - 254);
    let v = if negative { v.neg() } else { v };
    let r = v.mul(PIO2);
    if x < 0.0 {
        (r.neg(), (4 - q) & 3)
    } else {
        (r, q)
    }
}

/// `sin r` and `cos r` for `|r| ≤ 0.8`, by their Taylor series in double-double.
fn sin_cos_dd(r: Dd) -> (Dd, Dd) {
    let z = r.mul(r).neg();
    let (mut s_term, mut s) = (r, r);
    let (mut c_term, mut c) = (Dd::from(1.0), Dd::from(1.0));
    for n in 1..30 {
        let n = n as f64;
        c_term = c_term.mul(z).div(Dd::from((2.0 * n - 1.0) * (2.0 * n)));
        s_term = s_term.mul(z).div(Dd::from((2.0 * n) * (2.0 * n + 1.0)));
        c = c.add(c_term);
        s = s.add(s_term);
    }
    (s, c)
}

/// `(sin x, cos x, tan x)`.
fn trig_ref(x: f64) -> (Dd, Dd, Dd) {
    if !x.is_finite() {
        let n = Dd::from(NAN);
        return (n, n, n);
    }
    if x == 0.0 {
        return (Dd::from(x), Dd::from(1.0), Dd::from(x));
    }
    let (r, q) = reduce_ref(x);
    let (s, c) = sin_cos_dd(r);
    match q {
        0 => (s, c, s.div(c)),
        1 => (c, s.neg(), c.neg().div(s)),
        2 => (s.neg(), c.neg(), s.div(c)),
        _ => (c.neg(), s, c.neg().div(s)),
    }
}

/// The points where the reduction cancels most: the `f64` nearest `k·π/2` for `k < 10⁵`
/// (and `−k`), the neighbours of the classic worst case `6381956970095103·2⁷⁹⁷`, and in each
/// binade up to `2⁵²` a point moved to the nearest `f64` to a multiple of `π/2`.
fn edges() -> &'static [f64] {
    let mut v = Vec::new();
    for k in 1..100_000u32 {
        let x = PIO2.mul_f(k as f64);
        let x = x.0 + x.1;
        v.push(x);
        v.push(-x);
    }
    let worst = 6381956970095103.0 * 2f64.powi(797);
    for d in -3i64..=3 {
        v.push(f64::from_bits((worst.to_bits() as i64 + d) as u64));
    }
    for e in 0..53 {
        let x = 1.2345 * 2f64.powi(e);
        let (r, _) = reduce_ref(x);
        let ulp = 2f64.powi(e - 52);
        let y = x - (r.0 / ulp).round() * ulp;
        v.extend([
            y,
            -y,
            f64::from_bits(y.to_bits() + 1),
            f64::from_bits(y.to_bits() - 1),
        ]);
    }
    v.extend([
        std::f64::consts::FRAC_PI_4,
        0.7853981633974484,
        0.78,
        0.79,
        1073741823.9999999,
        1073741824.0,
        1073741825.0,
        -1073741824.0,
        f64::MAX,
        -f64::MAX,
        1e308,
        1e300,
        1e22,
        7.450580596923828e-9,
        7.450580596923827e-9,
    ]);
    Box::leak(v.into_boxed_slice())
}

const RANGES: &[(f64, f64)] = &[
    (-10.0, 10.0),
    (-1e6, 1e6),
    (-0.8, 0.8),
    (-1.2e9, 1.2e9),
    (-1e20, 1e20),
];

pub fn routines() -> Vec<Routine> {
    let edges = edges();
    vec![
        Routine {
            op: UnaryOp::Sin,
            reference: |x| (trig_ref(x).0, 0),
            ranges: RANGES,
            edges,
            special: &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (INF, NAN),
                (-INF, NAN),
                (NAN, NAN),
                (5e-324, 5e-324),
                (-1e-300, -1e-300),
                (1e-10, 1e-10),
            ],
        },
        Routine {
            op: UnaryOp::Cos,
            reference: |x| (trig_ref(x).1, 0),
            ranges: RANGES,
            edges,
            special: &[
                (0.0, 1.0),
                (-0.0, 1.0),
                (INF, NAN),
                (-INF, NAN),
                (NAN, NAN),
                (5e-324, 1.0),
                (-1e-300, 1.0),
                (1e-9, 1.0),
            ],
        },
        Routine {
            op: UnaryOp::Tan,
            reference: |x| (trig_ref(x).2, 0),
            ranges: RANGES,
            edges,
            special: &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (INF, NAN),
                (-INF, NAN),
                (NAN, NAN),
                (5e-324, 5e-324),
                (-1e-300, -1e-300),
                (1e-10, 1e-10),
            ],
        },
    ]
}
