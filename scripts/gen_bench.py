#!/usr/bin/env python3
"""Write the benchmark programs ir/bench/*.ir in adjit's text format.

Run from the repository root: `python3 scripts/gen_bench.py`. Deterministic: the outputs are
committed, and regenerating must not change them. Every file stays under 1.5 MB, so the big
programs use short value names (a letter plus the term index in base 36) and fused
multiply-adds, and rosenbrock10000.ir and lorenz.ir are written without optional whitespace. The 100k and 1M random programs of the benchmarks are made at run time with
`adjit_ir::random` instead.

Programs:
- seed001.ir: the seed 001 example, v = 2·p·q + 3·r with p = 7x, r = 1/y, q = p·x·5.
- rosenbrock{100,1000,10000}.ir: the chained Rosenbrock sum
  f(x) = Σ_{i<n-1} (1 - x_i)² + 100 (x_{i+1} - x_i²)², written per term as
  n = -x_i; a = n + 1; c = fma(n, x_i, x_{i+1}); d = c²; s = fma(d, 100, s); s = fma(a, a, s).
- mlp.ir: a 16 → 32 → 1 perceptron with tanh hidden units; weights and biases are fixed
  pseudo-random literals (a linear congruential generator seeded with 1).
- blackscholes.ir: the Black–Scholes price of a European call (S, K, r, σ, T), with erf.
- bratu30.ir: the 2-D Bratu residual on an n×n interior grid, scaled by h² (h = 1/(n+1)):
  r_ij = 4u_ij - (neighbours inside the grid) - h²·λ·exp(u_ij), λ = 6, as
  e = exp u; l = 4u; l = l - u_nb (each neighbour); r = fma(e, -h²λ, l). Square (n² → n²), a
  5-point stencil: the sparse Jacobian's benchmark (5 colours).
- lorenz.ir: 1000 steps of classical RK4 on the Lorenz system (σ=10, ρ=28, β=8/3, dt=0.01),
  3 inputs → 3 outputs.
"""

import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ir", "bench")


def lit(x: float) -> str:
    """A literal that parses back to exactly x (Python's repr is shortest round-trip)."""
    s = repr(float(x))
    return s if ("." in s or "e" in s or "inf" in s or "nan" in s) else s + ".0"


def b36(i: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        i, r = divmod(i, 36)
        s = digits[r] + s
        if i == 0:
            return s


def write(name: str, comment: str, header: str, body: list, rets: list, compact=False) -> None:
    """Write one function. `compact` drops indentation and the optional spaces around `=` and
    after commas (the parser accepts both), to keep the largest file under the size limit."""
    lines = ["; " + line for line in comment.strip().splitlines()]
    if compact:
        header = header.replace(": ", ":").replace(", ", ",")
    lines.append(header + " {")
    if compact:
        lines.extend(line.replace(" = ", "=").replace(", ", ",") for line in body)
    else:
        lines.extend("    " + line for line in body)
    lines.append("    ret " + ", ".join(rets))
    lines.append("}")
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    size = os.path.getsize(path)
    assert size < 1_500_000, f"{name} is {size} bytes"
    print(f"{name}: {len(body)} instructions, {size} bytes")


def seed001() -> None:
    body = [
        "%p = mul 7.0, %x",
        "%r = div 1.0, %y",
        "%i1 = mul %p, %x",
        "%q = mul %i1, 5.0",
        "%i2 = mul 2.0, %p",
        "%i3 = mul %i2, %q",
        "%i4 = mul 3.0, %r",
        "%v = add %i3, %i4",
    ]
    write(
        "seed001.ir",
        "Seed 001: p = 7x; r = 1/y; q = p·x·5; v = 2·p·q + 3·r.",
        "func @seed001(%x: f64, %y: f64) -> f64",
        body,
        ["%v"],
    )


def rosenbrock(n: int) -> None:
    x = [f"%x{b36(i)}" for i in range(n)]
    params = ", ".join(f"{v}: f64" for v in x)
    body = []
    s = None
    for i in range(n - 1):
        t = b36(i)
        body.append(f"%n{t} = neg {x[i]}")
        body.append(f"%a{t} = add %n{t}, 1.0")
        body.append(f"%c{t} = fma %n{t}, {x[i]}, {x[i + 1]}")
        body.append(f"%d{t} = mul %c{t}, %c{t}")
        if s is None:
            body.append(f"%w{t} = mul %d{t}, 100.0")
        else:
            body.append(f"%w{t} = fma %d{t}, 100.0, {s}")
        body.append(f"%s{t} = fma %a{t}, %a{t}, %w{t}")
        s = f"%s{t}"
    write(
        f"rosenbrock{n}.ir",
        f"Chained Rosenbrock, n = {n} (parameters x0.. named in base 36): sum over i < n-1 of (1 - x_i)^2 + 100 (x_(i+1) - x_i^2)^2.",
        f"func @rosenbrock{n}({params}) -> f64",
        body,
        [s],
        compact=n >= 10000,
    )


def bratu(n: int, lam: float = 6.0) -> None:
    h2 = 1.0 / ((n + 1) * (n + 1))
    u = [[f"%u{b36(i * n + j)}" for j in range(n)] for i in range(n)]
    params = ", ".join(f"{u[i][j]}: f64" for i in range(n) for j in range(n))
    body, rets = [], []
    for i in range(n):
        for j in range(n):
            t = b36(i * n + j)
            body.append(f"%e{t} = exp {u[i][j]}")
            acc = f"%l{t}"
            body.append(f"{acc} = mul {u[i][j]}, 4.0")
            neighbours = ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1))
            inside = [(a, b) for a, b in neighbours if 0 <= a < n and 0 <= b < n]
            for k, (a, b) in enumerate(inside):
                nxt = f"%{'abcd'[k]}{t}"
                body.append(f"{nxt} = sub {acc}, {u[a][b]}")
                acc = nxt
            body.append(f"%r{t} = fma %e{t}, {lit(-h2 * lam)}, {acc}")
            rets.append(f"%r{t}")
    write(
        f"bratu{n}.ir",
        f"The 2-D Bratu residual on a {n}x{n} interior grid (lambda = {lam}), scaled by h^2: a 5-point stencil.",
        f"func @bratu{n}({params}) -> ({', '.join(['f64'] * (n * n))})",
        body,
        rets,
        compact=n >= 100,
    )


class Lcg:
    """Numerical Recipes LCG; uniform in [-1, 1) rounded to 4 decimals (readable literals)."""

    def __init__(self, seed: int) -> None:
        self.state = seed

    def next(self) -> float:
        self.state = (1664525 * self.state + 1013904223) % 2**32
        return round(self.state / 2**31 - 1.0, 4)


def mlp(n_in: int = 16, n_hidden: int = 32) -> None:
    rng = Lcg(1)
    scale = 1.0 / n_in**0.5
    params = ", ".join(f"%x{i}: f64" for i in range(n_in))
    body = []
    for j in range(n_hidden):
        acc = f"%z{j}_0"
        body.append(f"{acc} = mul %x0, {lit(round(rng.next() * scale, 4))}")
        for i in range(1, n_in):
            nxt = f"%z{j}_{i}"
            body.append(f"{nxt} = fma %x{i}, {lit(round(rng.next() * scale, 4))}, {acc}")
            acc = nxt
        body.append(f"%b{j} = add {acc}, {lit(rng.next() * 0.1)}")
        body.append(f"%h{j} = tanh %b{j}")
    acc = "%o0"
    body.append(f"{acc} = mul %h0, {lit(rng.next())}")
    for j in range(1, n_hidden):
        body.append(f"%o{j} = fma %h{j}, {lit(rng.next())}, {acc}")
        acc = f"%o{j}"
    body.append(f"%y = add {acc}, {lit(rng.next() * 0.1)}")
    write(
        "mlp.ir",
        f"A {n_in} -> {n_hidden} -> 1 perceptron: y = w2 . tanh(W1 x + b1) + b2, weights from an LCG.",
        f"func @mlp({params}) -> f64",
        body,
        ["%y"],
    )


def blackscholes() -> None:
    body = """%sk = div %S, %K
%lsk = log %sk
%sig2 = mul %sigma, %sigma
%half = mul 0.5, %sig2
%drift = add %r, %half
%dt = mul %drift, %T
%num = add %lsk, %dt
%sqt = sqrt %T
%den = mul %sigma, %sqt
%d1 = div %num, %den
%d2 = sub %d1, %den
%u1 = mul %d1, 0.7071067811865476
%e1 = erf %u1
%p1 = add 1.0, %e1
%n1 = mul 0.5, %p1
%u2 = mul %d2, 0.7071067811865476
%e2 = erf %u2
%p2 = add 1.0, %e2
%n2 = mul 0.5, %p2
%rt = mul %r, %T
%nrt = neg %rt
%disc = exp %nrt
%kd = mul %K, %disc
%a = mul %S, %n1
%b = mul %kd, %n2
%c = sub %a, %b""".splitlines()
    write(
        "blackscholes.ir",
        "Black-Scholes price of a European call: S N(d1) - K e^(-rT) N(d2), N(x) = (1 + erf(x/sqrt 2))/2.",
        "func @blackscholes(%S: f64, %K: f64, %r: f64, %sigma: f64, %T: f64) -> f64",
        body,
        ["%c"],
    )


def lorenz(steps: int = 1000, dt: float = 0.01) -> None:
    sigma, rho, beta = 10.0, 28.0, 8.0 / 3.0
    body = []
    counter = [0]

    def fresh(prefix: str) -> str:
        counter[0] += 1
        return f"%{prefix}{b36(counter[0])}"

    def emit(text: str, prefix: str = "t") -> str:
        name = fresh(prefix)
        body.append(f"{name} = {text}")
        return name

    def deriv(x: str, y: str, z: str):
        # dx = σ(y - x); dy = x(ρ - z) - y; dz = x y - β z
        yx = emit(f"sub {y}, {x}")
        dx = emit(f"mul {yx}, {lit(sigma)}")
        rz = emit(f"sub {lit(rho)}, {z}")
        xrz = emit(f"mul {x}, {rz}")
        dy = emit(f"sub {xrz}, {y}")
        bz = emit(f"mul {z}, {lit(beta)}")
        xy = emit(f"mul {x}, {y}")
        dz = emit(f"sub {xy}, {bz}")
        return dx, dy, dz

    def axpy(base: str, k: str, h: float) -> str:
        return emit(f"fma {k}, {lit(h)}, {base}")

    x, y, z = "%x", "%y", "%z"
    for _ in range(steps):
        k1 = deriv(x, y, z)
        s2 = [axpy(v, k, dt / 2) for v, k in zip((x, y, z), k1)]
        k2 = deriv(*s2)
        s3 = [axpy(v, k, dt / 2) for v, k in zip((x, y, z), k2)]
        k3 = deriv(*s3)
        s4 = [axpy(v, k, dt) for v, k in zip((x, y, z), k3)]
        k4 = deriv(*s4)
        new = []
        for v, a, b, c, d in zip((x, y, z), k1, k2, k3, k4):
            bc = emit(f"add {b}, {c}")
            ad = emit(f"add {a}, {d}")
            s = emit(f"fma {bc}, 2.0, {ad}")
            new.append(emit(f"fma {s}, {lit(dt / 6)}, {v}", "s"))
        x, y, z = new
    write(
        "lorenz.ir",
        f"{steps} classical RK4 steps (dt = {dt}) of the Lorenz system, sigma = 10, rho = 28, beta = 8/3.",
        "func @lorenz(%x: f64, %y: f64, %z: f64) -> (f64, f64, f64)",
        body,
        [x, y, z],
        compact=True,
    )


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    seed001()
    for n in (100, 1000, 10000):
        rosenbrock(n)
    mlp()
    blackscholes()
    bratu(30)
    lorenz()


if __name__ == "__main__":
    main()
