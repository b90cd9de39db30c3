"""Solve a nonlinear system F(x) = 0 by Newton's method two ways: with the sparse Jacobian
(a scipy.sparse matrix from one colored program) and SciPy's sparse solver, and with adjit's
inverse transform, which returns the Newton step J⁻¹·F itself. (The Bratu stencil couples every
unknown, so the reverse-inverse mode, which needs narrow cuts, would refuse it: `mode="dense"`
builds J and factors it; programs made of steps, see docs/inverse.md, use `mode="reverse"`.)

The system is a discretised 1-D Bratu problem: -u'' = λ·exp(u) on (0, 1), u(0) = u(1) = 0.

    python examples/python/newton.py [N]
"""

import sys

import numpy as np
import scipy.sparse.linalg as spla

import adjit


def main(n=200, lam=1.0):
    h2 = 1.0 / (n + 1) ** 2

    def residual(u):
        out = []
        for i in range(n):
            left = u[i - 1] if i > 0 else 0.0
            right = u[i + 1] if i < n - 1 else 0.0
            out.append((2.0 * u[i] - left - right) / h2 - lam * adjit.exp(u[i]))
        return out

    F = adjit.trace(residual, n, name="bratu")
    jac = adjit.jacobian(F, sparse=True)        # scipy.sparse.csr_matrix, 3 nonzeros a row
    newton_step = adjit.inverse(F, mode="dense")
    evaluate = adjit.jit(F)

    u = np.zeros(n)
    for k in range(20):
        r = evaluate(u)
        if np.linalg.norm(r) < 1e-10:
            break
        u = u - spla.spsolve(jac(u).tocsc(), r)
    print(f"sparse Jacobian: |F| = {np.linalg.norm(evaluate(u)):.2e} after {k} steps, "
          f"max u = {u.max():.6f}")

    v = np.zeros(n)
    for k in range(20):
        r = evaluate(v)
        if np.linalg.norm(r) < 1e-10:
            break
        v = v - newton_step(v, r)
    print(f"inverse (dense): |F| = {np.linalg.norm(evaluate(v)):.2e} after {k} steps, "
          f"max |u - v| = {np.max(np.abs(u - v)):.1e}")
    return u, v


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
