"""The Hessian of a small tanh network's loss with respect to all its weights, from adjit
(one compiled program), against central finite differences of the same loss in NumPy.

    python examples/python/tanh_hessian.py [HIDDEN]
"""

import sys

import numpy as np

import adjit


def main(hidden=4, n_in=2, n_points=16, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_points, n_in))
    y = np.sin(X[:, 0]) * X[:, 1]
    sizes = [n_in * hidden, hidden, hidden, 1]           # W1, b1, w2, b2
    n = sum(sizes)

    def loss(p):
        W1 = p[:n_in * hidden].reshape(n_in, hidden)
        b1 = p[n_in * hidden:n_in * hidden + hidden]
        w2 = p[n_in * hidden + hidden:n - 1]
        pred = np.tanh(X @ W1 + b1) @ w2 + p[n - 1]
        return np.mean((pred - y) ** 2)

    f = adjit.trace(loss, n, name="tanh_net")
    p = rng.normal(size=n) * 0.5
    H = adjit.hessian(f)(p)

    h = 1e-4                                             # second central differences
    fd = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            fd[i, j] = (loss(p + e_i + e_j) - loss(p + e_i - e_j) - loss(p - e_i + e_j)
                        + loss(p - e_i - e_j)) / (4 * h * h)
    err = np.max(np.abs(H - fd)) / np.max(np.abs(H))
    print(f"{n} weights, {len(f)} instructions: max |H - FD| / max |H| = {err:.1e}, "
          f"max |H - Hᵀ| = {np.max(np.abs(H - H.T)):.0e}")
    return H, fd


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
