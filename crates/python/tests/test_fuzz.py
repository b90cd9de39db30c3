"""Random bad arguments: every call either succeeds or raises an adjit.Error (never another
exception, a panic or a crash)."""

import numpy as np
import pytest

import adjit

F = adjit.trace(lambda x: (x[0] * adjit.sin(x[1]), x[1] / x[0]), 2)
G = adjit.trace(lambda x: x[0] ** 2 * adjit.exp(x[1]), 2)
K = adjit.trace(lambda p, d: (p[0] * d[0] - d[1]) ** 2, 1, data=2)
TRANSFORMS = [
    adjit.jit(F), adjit.jvp(F), adjit.vjp(F), adjit.jacobian(F), adjit.inverse(F),
    adjit.value_and_grad(G), adjit.grad(G), adjit.hvp(G), adjit.hessian(G),
    adjit.hessian(G, sparse=True), adjit.jacobian(F, sparse=True),
    adjit.value_and_grad(G, strategy="checkpoint:1"),
]
MAP = adjit.map(K)


def candidates(rng):
    shapes = [(), (0,), (1,), (2,), (3,), (2, 2), (5, 2), (2, 3), (0, 2), (1, 1, 2)]
    values = [None, "x", b"x", {"a": 1}, [1.0, "a"], [[1.0, 2.0], [3.0]], 1, 2.5, True,
              object(), [1.0, 2.0], (0.5, 0.25), np.nan, [np.inf, 1.0]]
    for _ in range(4):
        shape = shapes[rng.integers(len(shapes))]
        kind = rng.integers(6)
        a = rng.normal(size=shape) if shape else rng.normal()
        if kind == 1:
            a = np.asarray(a, dtype=np.float32)
        elif kind == 2:
            a = np.asarray(a * 10, dtype=np.int64)
        elif kind == 3 and np.ndim(a) >= 1:
            a = np.repeat(np.atleast_1d(a), 2, axis=-1)[..., ::2]
        elif kind == 4:
            a = np.asarray(a, dtype=np.complex128)
        values.append(a)
    return values


@pytest.mark.parametrize("seed", range(8))
def test_random_arguments_raise_adjit_errors_only(seed):
    rng = np.random.default_rng(seed)
    values = candidates(rng)
    for _ in range(150):
        t = TRANSFORMS[rng.integers(len(TRANSFORMS))]
        args = [values[rng.integers(len(values))] for _ in range(rng.integers(0, 4))]
        kwargs = {}
        if rng.random() < 0.2:
            kwargs["data"] = values[rng.integers(len(values))]
        if rng.random() < 0.1:
            kwargs["out"] = values[rng.integers(len(values))]
        try:
            t(*args, **kwargs)
        except adjit.Error:
            pass
        try:
            MAP.value_and_grad(*[values[rng.integers(len(values))] for _ in range(2)])
        except adjit.Error:
            pass
