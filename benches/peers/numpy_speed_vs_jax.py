"""Vectorised NumPy programs as a JAX user writes them: the gradient's compile and call time of
adjit (`adjit.trace` + `adjit.value_and_grad`) beside JAX (`jax.jit(jax.value_and_grad)`), in
one process, float64 in both.

Outside CI, in a venv with JAX (never in the repository's CI):

    python -m venv /tmp/peers && /tmp/peers/bin/pip install "jax[cpu]" numpy
    /tmp/peers/bin/pip install ./crates/python
    /tmp/peers/bin/python benches/peers/numpy_speed_vs_jax.py [n] [rounds]

Per program and round: compile (first call) and best-of-5 mean of 20 calls for each tool, and
adjit / JAX per call. The two tools alternate within a round, so a round's ratio is measured
on one machine state.
"""

import sys
import time
import warnings

import numpy as np

import adjit

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    sys.exit("this script compares against JAX: pip install 'jax[cpu]' in a venv outside the repo")

jax.config.update("jax_enable_x64", True)
warnings.simplefilter("ignore")

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
rng = np.random.default_rng(0)
f_src = np.sin(np.linspace(0, 3, n))
y_obs = np.cumsum(rng.normal(size=n)) * 0.1
B = n // 8
Xb = rng.normal(size=(B, 3))
yb = rng.normal(size=B)


def programs(xp):
    """The six programs over the array module `xp` (NumPy for adjit, jax.numpy for JAX)."""

    def energy(u):
        h = 1.0 / n
        return xp.sum(xp.diff(u) ** 2) / h + h * xp.sum(u**4) - h * xp.sum(f_src * u)

    def tv(u):
        return xp.sum(xp.sqrt(xp.diff(u) ** 2 + 1e-6)) + 0.5 * xp.sum((u - f_src) ** 2)

    def softmax_ce(z):
        m = xp.max(z)
        return xp.log(xp.sum(xp.exp(z - m))) + m - z[3]

    def ar1(p):
        r = y_obs[1:] - p[0] * y_obs[:-1]
        return xp.sum(r**2) * xp.exp(-2 * p[1]) / 2 + (n - 1) * p[1]

    def mlp(w):
        W1 = w[:24].reshape(3, 8)
        h = xp.tanh(Xb @ W1 + w[24:32])
        return xp.mean((h @ w[32:40] - yb) ** 2)

    def huber(x):
        r = x - f_src
        a = xp.abs(r)
        return xp.sum(xp.where(a < 0.5, 0.5 * r * r, 0.5 * (a - 0.25)))

    return [
        ("energy (np.diff)", energy, n),
        ("total variation", tv, n),
        ("softmax cross-entropy", softmax_ce, n),
        ("AR(1) likelihood", ar1, 2),
        ("batch MLP 3-8-1", mlp, 40),
        ("Huber (np.where)", huber, n),
    ]


def best_call(call, x):
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(20):
            call(x)
        best = min(best, (time.perf_counter() - t) / 20)
    return best


def main():
    print(f"n = {n}; times in ms; compile = first call (adjit: trace included)")
    print("| program | round | adjit compile | JAX compile | adjit call | JAX call | adjit / JAX |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (name, f_np, m), (_, f_jnp, _) in zip(programs(np), programs(jnp)):
        x = rng.normal(size=m) * 0.1
        for r in range(rounds):
            t = time.perf_counter()
            vg = adjit.value_and_grad(adjit.trace(f_np, m))
            vg(x)
            adjit_compile = time.perf_counter() - t
            adjit_call = best_call(vg, x)
            xj = jnp.asarray(x)
            t = time.perf_counter()
            jg = jax.jit(jax.value_and_grad(f_jnp))
            jax.block_until_ready(jg(xj))
            jax_compile = time.perf_counter() - t
            jax_call = best_call(lambda v: jax.block_until_ready(jg(v)), xj)
            print(
                f"| {name} | {r + 1} | {1e3 * adjit_compile:.0f} | {1e3 * jax_compile:.0f} "
                f"| {1e3 * adjit_call:.3f} | {1e3 * jax_call:.3f} | {adjit_call / jax_call:.2f} |"
            )


if __name__ == "__main__":
    main()
