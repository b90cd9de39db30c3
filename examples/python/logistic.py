"""Logistic regression written as vectorised NumPy (matrix product, np.logaddexp, np.sum),
traced once and fitted by SciPy's L-BFGS-B with adjit's value and gradient; the answer is
checked against an independent Newton (IRLS) iteration in plain NumPy.

    python examples/python/logistic.py [N]
"""

import sys

import numpy as np
from scipy.optimize import minimize

import adjit


def data(n, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w_true = np.linspace(-1.0, 1.5, d)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ w_true - 0.3)))).astype(float)
    return X, y


def main(n=400, lam=1e-2):
    X, y = data(n)
    d = X.shape[1]
    s = 2 * y - 1                                  # labels as ±1

    def loss(theta):                               # mean log-loss + ridge, vectorised
        z = X @ theta[:d] + theta[d]
        return np.sum(np.logaddexp(0.0, -s * z)) / n + lam * np.sum(theta[:d] ** 2)

    f = adjit.trace(loss, d + 1, name="logistic")
    vg = adjit.value_and_grad(f)
    fit = minimize(vg, np.zeros(d + 1), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15})

    # Independent answer: Newton's method on the same objective with the analytic gradient
    # and Hessian (IRLS), in NumPy.
    A = np.hstack([X, np.ones((n, 1))])
    reg = np.diag([2 * lam] * d + [0.0])
    theta = np.zeros(d + 1)
    for _ in range(50):
        p = 1 / (1 + np.exp(-A @ theta))
        g = A.T @ (p - y) / n + reg @ theta
        H = (A.T * (p * (1 - p))) @ A / n + reg
        step = np.linalg.solve(H, g)
        theta -= step
        if np.max(np.abs(step)) < 1e-14:
            break
    print(f"{len(f)} instructions; L-BFGS-B: loss {fit.fun:.10f} in {fit.nit} iterations, "
          f"max |θ - θ_newton| = {np.max(np.abs(fit.x - theta)):.1e}")
    return fit.x, theta


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
