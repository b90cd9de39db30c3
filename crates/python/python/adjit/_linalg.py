"""``np.linalg.solve``, ``inv`` and ``det`` on traced values.

A traced program has no branches, so Gaussian elimination chooses its pivots with
``adjit.where``: at step k, row k is swapped, under a traced comparison, with every later row
whose entry in column k is larger in magnitude, which leaves the largest one (the first of
equals, as LAPACK's ``getrf`` takes) in the pivot position. That is partial pivoting, with the
other rows in another order than LAPACK's, so results agree with NumPy's to rounding, not bit
for bit. The work is O(n³) traced operations (and as many selections): meant for the small
systems of model code (a Newton step, a 3×3 transform), not for large matrices. An exactly
singular matrix gives infinities or NaN at call time, where NumPy raises ``LinAlgError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# _numpy imports this module while it loads; its names are read at call time.
from . import _numpy
from ._errors import TraceError



def _square(a: Any, what: str) -> list[list[Any]]:
    m = np.asarray(a, dtype=object)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise TraceError(
            f"{what} takes one square matrix (stacks of matrices do not trace), "
            f"not an array of shape {m.shape}"
        )
    return [list(row) for row in m]


def _eliminate(a: list[list[Any]], b: list[list[Any]]) -> Any:
    """Reduce ``a`` to upper triangular form in place, applying the same row operations to
    ``b``; returns the sign of the row permutation (traced or a number)."""
    n = len(a)
    select = _numpy._select_one
    sign: Any = 1.0
    for k in range(n):
        for i in range(k + 1, n):
            c = abs(a[i][k]) > abs(a[k][k])
            for rows in (a, b):
                top, other = rows[k], rows[i]
                for j in range(len(top)):
                    top[j], other[j] = select(c, other[j], top[j]), select(c, top[j], other[j])
            sign = select(c, -sign, sign)
        pivot = a[k][k]
        for i in range(k + 1, n):
            f = a[i][k] / pivot
            for j in range(k + 1, n):
                a[i][j] = a[i][j] - f * a[k][j]
            for j in range(len(b[i])):
                b[i][j] = b[i][j] - f * b[k][j]
    return sign


def _back_substitute(u: list[list[Any]], b: list[list[Any]]) -> list[list[Any]]:
    n = len(u)
    x: list[list[Any]] = [[0.0] * len(b[0]) for _ in range(n)]
    for i in reversed(range(n)):
        for j in range(len(b[0])):
            s = b[i][j]
            for k in range(i + 1, n):
                s = s - u[i][k] * x[k][j]
            x[i][j] = s / u[i][i]
    return x


def _result(rows: list[list[Any]]) -> Any:
    out = np.empty((len(rows), len(rows[0])), dtype=object)
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            out[i, j] = v
    return _numpy._wrap(out)


def solve(a: Any, b: Any) -> Any:
    """``np.linalg.solve(a, b)`` for one n×n matrix and a right-hand side of shape (n,) or
    (n, m)."""
    u = _square(a, "numpy.linalg.solve")
    rhs = np.asarray(b, dtype=object)
    n = len(u)
    if rhs.ndim not in (1, 2) or rhs.shape[0] != n:
        raise TraceError(
            f"numpy.linalg.solve: the right-hand side has shape {rhs.shape}, expected ({n},) "
            f"or ({n}, m)"
        )
    columns = [list(row) for row in (rhs.reshape(n, 1) if rhs.ndim == 1 else rhs)]
    if not columns[0]:
        raise TraceError("numpy.linalg.solve: the right-hand side has no columns")
    _eliminate(u, columns)
    x = _result(_back_substitute(u, columns))
    return x.reshape(n) if rhs.ndim == 1 else x


def inv(a: Any) -> Any:
    """``np.linalg.inv(a)`` for one n×n matrix: ``solve(a, I)``."""
    n = len(_square(a, "numpy.linalg.inv"))
    return solve(a, np.eye(n))


def det(a: Any) -> Any:
    """``np.linalg.det(a)`` for one n×n matrix: the sign of the pivoting times the product of
    the pivots."""
    u = _square(a, "numpy.linalg.det")
    sign = _eliminate(u, [[] for _ in u])
    d = sign
    for i in range(len(u)):
        d = d * u[i][i]
    return d
