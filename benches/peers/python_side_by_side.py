#!/usr/bin/env python3
"""adjit from Python beside CasADi's and JAX's Python calls, and beside adjit's own Rust batch
call, in one run per round. A benchmark, never a CI step.

    python3 -m venv "$VENV" && "$VENV"/bin/pip install ./crates/python casadi jax   # VENV: outside the repo
    ADJIT_CLI=target/release/adjit "$VENV"/bin/python benches/peers/python_side_by_side.py [ROUNDS] [PROGRAM] [MATH]

Per round, on ir/bench/PROGRAM.ir (default seed001, 8 operations):
- one call of value and gradient with a NumPy input: adjit `value_and_grad(f)(x)`, CasADi
  `Function(x -> [f, ∇f])(x)` (SX, its virtual machine), JAX `jit(value_and_grad(f))(x)` on CPU;
- a batch of 10⁵ points, 2 threads: adjit `vg(X)` (and `vg(X, out=buffer)`, which allocates
  nothing) with `X` of shape (B, n) against the Rust
  CLI's `adjit bench --modes vjp --batch B --threads 2` (the same compiled code reached from
  Rust) and JAX `jit(vmap(value_and_grad(f)))`;
- the same batch with `lanes=2` (two-point SIMD kernels), beside JAX; MATH (`libm`, the
  default, or `inline`) is the `math=` of that transform (`inline`: adjit's own vectorised
  exp, log, sin, tanh, erf, pow, … instead of one C library call per lane);
- compile time from Python (`adjit.value_and_grad(f)`, the first in a fresh process) against
  the Rust CLI's `compile_ms` (its first);
- `import adjit` time beyond `import numpy`.
"""

import json
import os
import subprocess
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import adjit  # noqa: E402
from peers import evaluate, load, time_call  # noqa: E402

B = 100_000


def import_ms():
    def run(code):
        best = 1e9
        for _ in range(5):
            t = timeit.default_timer()
            subprocess.run([sys.executable, "-c", code], check=True)
            best = min(best, timeit.default_timer() - t)
        return best

    return (run("import numpy, adjit") - run("import numpy")) * 1e3


def first_compile_ms(path):
    """The first compile in a fresh Python process, as the CLI's `compile_ms` is its first."""
    code = ("import sys, time, adjit; f = adjit.load(sys.argv[1]); t = time.perf_counter(); "
            "adjit.value_and_grad(f); print((time.perf_counter() - t) * 1e3)")
    out = subprocess.run([sys.executable, "-c", code, path], check=True, capture_output=True,
                         text=True).stdout
    return float(out)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    name = sys.argv[2] if len(sys.argv) > 2 else "seed001"
    math = sys.argv[3] if len(sys.argv) > 3 else "libm"
    path = os.path.join(ROOT, "ir", "bench", name + ".ir")
    cli = os.environ.get("ADJIT_CLI", os.path.join(ROOT, "target", "release", "adjit"))
    func = load(name)
    n = len(func[1])
    x = np.linspace(0.5, 2.0, n)
    X = x * (1 + 0.1 * np.random.default_rng(0).uniform(-1, 1, size=(B, n)))

    f = adjit.load(path)
    vg = adjit.value_and_grad(f)
    vg2 = adjit.value_and_grad(f, lanes=2, math=math)

    import casadi as ca

    from peers import casadi_lib

    xs = ca.SX.sym("x", n)
    ys = sum(evaluate(func, [xs[i] for i in range(n)], casadi_lib(ca)))
    cas = ca.Function("g", [xs], [ys, ca.gradient(ys, xs)])

    import jax
    import jax.numpy as jnp
    from jax.scipy.special import erf as jax_erf

    jax.config.update("jax_enable_x64", True)

    def scalar(v):
        return sum(evaluate(func, [v[i] for i in range(n)], JaxOps))

    class JaxOps:
        neg = staticmethod(jnp.negative)
        abs, sqrt, exp, log, log1p, expm1 = jnp.abs, jnp.sqrt, jnp.exp, jnp.log, jnp.log1p, jnp.expm1
        sin, cos, tan, asin, acos, atan = jnp.sin, jnp.cos, jnp.tan, jnp.arcsin, jnp.arccos, jnp.arctan
        sinh, cosh, tanh, floor, ceil = jnp.sinh, jnp.cosh, jnp.tanh, jnp.floor, jnp.ceil
        pow, atan2, fmin, fmax = jnp.power, jnp.arctan2, jnp.fmin, jnp.fmax
        erf = staticmethod(jax_erf)
        eq, ne, lt, le, gt, ge = jnp.equal, jnp.not_equal, jnp.less, jnp.less_equal, jnp.greater, jnp.greater_equal
        select = staticmethod(jnp.where)

    buf = np.empty((B, n + 1))
    jvg = jax.jit(jax.value_and_grad(scalar))
    jbatch = jax.jit(jax.vmap(jax.value_and_grad(scalar)))
    jax.block_until_ready(jvg(x))
    jax.block_until_ready(jbatch(X))

    # Results agree before anything is timed.
    y, g = vg(x)
    yc, gc = cas(x)
    assert abs(y - float(yc)) <= 1e-12 * abs(y) and np.allclose(g, np.array(gc).ravel(), rtol=1e-12)

    print(f"{name}: n = {n}; lanes=2 with math={math}; import adjit beyond numpy {import_ms():.0f} ms")
    print("round  adjit/call  casadi/adjit  jax/adjit   batch py/rust (out=)  jax-batch/adjit (lanes=2)  compile py/rust")
    for r in range(rounds):
        t_adjit = time_call(lambda: vg(x))
        t_cas = time_call(lambda: cas(x))
        t_jax = time_call(lambda: jax.block_until_ready(jvg(x)))
        t_batch = time_call(lambda: vg(X), repeat=5)
        t_batch_out = time_call(lambda: vg(X, out=buf), repeat=5)
        t_batch_2 = time_call(lambda: vg2(X, out=buf), repeat=5)
        t_jbatch = time_call(lambda: jax.block_until_ready(jbatch(X)), repeat=5)
        compile_py_ms = first_compile_ms(path)
        at = ",".join(str(v) for v in x)
        out = subprocess.run(
            [cli, "bench", path, "--modes", "vjp", "--batch", str(B), "--threads", "2",
             "--at", at, "--json"], check=True, capture_output=True, text=True).stdout
        row = json.loads(out)["rows"][0]
        rust_ns = row["ns_per_point"]
        py_ns = t_batch / B * 1e9
        out_ns = t_batch_out / B * 1e9
        print(f"{r:5}  {t_adjit * 1e9:8.0f} ns  {t_cas / t_adjit:11.1f}  {t_jax / t_adjit:9.1f}"
              f"   {py_ns / rust_ns:6.2f} ({out_ns / rust_ns:.2f})  {t_jbatch / t_batch_out:9.2f} ({t_jbatch / t_batch_2:.2f})"
              f"  {compile_py_ms / row['compile_ms']:15.2f}")
        print(f"       (casadi {t_cas * 1e6:.2f} µs, jax {t_jax * 1e6:.2f} µs; batch: adjit-py"
              f" {py_ns:.2f} ns/point ({out_ns:.2f} with out=), rust {rust_ns:.2f}, jax {t_jbatch / B * 1e9:.2f};"
              f" compile py {compile_py_ms:.2f} ms, rust {row['compile_ms']:.2f} ms)")


if __name__ == "__main__":
    main()
