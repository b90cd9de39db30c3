"""Minimise the extended Rosenbrock function with SciPy's L-BFGS-B, the value and gradient
from one compiled adjit program (`jac=True`).

    python examples/python/minimize.py [N]
"""

import sys

import numpy as np
from scipy.optimize import minimize

import adjit


def rosenbrock(x):
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))


def main(n=100):
    f = adjit.trace(rosenbrock, n)              # traced once: an adjit.Function
    vg = adjit.value_and_grad(f)                # compiled once, in milliseconds
    result = minimize(vg, np.full(n, -1.0), jac=True, method="L-BFGS-B",
                      options={"maxiter": 10_000})
    print(f"n = {n}: f = {result.fun:.3e} after {result.nit} iterations, "
          f"max |x - 1| = {np.max(np.abs(result.x - 1)):.2e}")
    return result


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
