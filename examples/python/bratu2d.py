"""The 2-D Bratu problem −Δu = λ·exp(u) on the unit square (u = 0 on the boundary), its
five-point residual written as NumPy slicing on the grid, solved by Newton's method with
adjit's sparse Jacobian (one colored program, a scipy.sparse matrix) and SciPy's spsolve. The
Jacobian is checked against the one written by hand.

    python examples/python/bratu2d.py [M]     # an M × M interior grid
"""

import sys

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import adjit


def main(m=20, lam=6.0):
    h2 = 1.0 / (m + 1) ** 2

    def residual(u):
        P = np.zeros((m + 2, m + 2), dtype=object)         # boundary values 0
        P[1:-1, 1:-1] = u.reshape(m, m)
        lap = (4 * P[1:-1, 1:-1] - P[:-2, 1:-1] - P[2:, 1:-1] - P[1:-1, :-2] - P[1:-1, 2:]) / h2
        return (lap - lam * np.exp(P[1:-1, 1:-1])).ravel()

    F = adjit.trace(residual, m * m, name="bratu2d")
    evaluate, jac = adjit.jit(F), adjit.jacobian(F, sparse=True)

    u = np.zeros(m * m)
    for k in range(30):
        r = evaluate(u)
        if np.linalg.norm(r) < 1e-9:
            break
        u = u - spla.spsolve(jac(u).tocsc(), r)

    # The Jacobian by hand: the five-point Laplacian minus λ·diag(exp(u)).
    T = 2 * sp.eye(m) - sp.eye(m, k=1) - sp.eye(m, k=-1)
    lap = (sp.kron(sp.eye(m), T) + sp.kron(T, sp.eye(m))) / h2
    by_hand = lap.toarray() - lam * np.diag(np.exp(u))
    err = np.max(np.abs(jac(u).toarray() - by_hand)) / np.max(np.abs(by_hand))
    print(f"{len(F)} instructions; |F| = {np.linalg.norm(evaluate(u)):.1e} after {k} Newton "
          f"steps, max u = {u.max():.6f}, Jacobian vs by hand: {err:.1e}")
    return u, err, np.linalg.norm(evaluate(u))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
