"""The NumPy constructs adjit traces, against JAX: the same Python functions as
crates/python/tests/test_numpy.py, run by adjit on NumPy and by JAX on jax.numpy, values and
Jacobians compared at the test's points (float64 in both).

Outside CI, in a venv with JAX (never in the repository's CI):

    python -m venv /tmp/peers && /tmp/peers/bin/pip install "jax[cpu]" numpy pytest
    /tmp/peers/bin/pip install ./crates/python
    /tmp/peers/bin/python benches/peers/numpy_vs_jax.py

Prints one row per construct: the largest difference of the values and of the Jacobians
(relative to the entries' magnitude, floored at 1), or why JAX could not run the function.
"""

import os
import sys
import types

import numpy as np

import adjit

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    sys.exit("this script compares against JAX: pip install 'jax[cpu]' in a venv outside the repo")

jax.config.update("jax_enable_x64", True)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "crates", "python", "tests"))
from test_numpy import CASES  # noqa: E402


def flat(y):
    if isinstance(y, (list, tuple)):
        return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in y])
    return np.ravel(np.asarray(y, dtype=float))


def with_jnp(fn):
    """`fn` with the module-level name `np` bound to jax.numpy."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__,
                              fn.__defaults__, fn.__closure__)


def jax_flat(fn):
    def g(x):
        y = fn(x)
        if isinstance(y, (list, tuple)):
            return jnp.concatenate([jnp.ravel(jnp.asarray(v, dtype=jnp.float64)) for v in y])
        return jnp.ravel(jnp.asarray(y, dtype=jnp.float64))
    return g


def rel(a, b):
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))) if a.size else 0.0


def main():
    worst_value, worst_jac, compared = 0.0, 0.0, 0
    print(f"{'construct':<22} {'value diff':>11} {'Jacobian diff':>14}")
    for name in sorted(CASES):
        fn, point = CASES[name]
        x = np.array(point, dtype=float)
        f = adjit.trace(fn, len(x))
        y = flat(f(x))
        jac = np.asarray(adjit.jacobian(f)(x)).reshape(len(y), len(x))
        try:
            g = jax_flat(with_jnp(fn))
            y_jax = np.asarray(g(jnp.asarray(x)))
            jac_jax = np.asarray(jax.jacfwd(g)(jnp.asarray(x)))
        except Exception as e:  # JAX refuses some Python constructs; say which
            print(f"{name:<22} JAX could not run it: {type(e).__name__}: {str(e)[:60]}")
            continue
        dv, dj = rel(y, y_jax), rel(jac, jac_jax)
        worst_value, worst_jac = max(worst_value, dv), max(worst_jac, dj)
        compared += 1
        print(f"{name:<22} {dv:>11.1e} {dj:>14.1e}")
    print(f"{compared} of {len(CASES)} constructs compared; largest differences: values "
          f"{worst_value:.1e}, Jacobians {worst_jac:.1e}")


if __name__ == "__main__":
    main()
