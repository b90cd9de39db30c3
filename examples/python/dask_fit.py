"""Fit y ≈ a·exp(-b·t) + c over many rows with the gradient computed on a Dask cluster:
each block of rows runs adjit's compiled kernel on a worker, the partial sums come back in
block order (the same bits whatever the number of workers).

    python examples/python/dask_fit.py [ROWS] [SCHEDULER_ADDRESS]

Without an address it starts a LocalCluster; with one (e.g. tcp://10.0.0.5:8786) the same
code runs on that cluster. Needs `pip install adjit[dask]` (dask[distributed]) and SciPy.
"""

import sys

import numpy as np
from scipy.optimize import minimize

import adjit
import adjit.dask


def main(rows=10_000_000, address=None):
    import dask.array as da
    from distributed import Client, LocalCluster

    # One row = (t, y); θ = (a, b, c).
    kernel = adjit.trace(lambda p, d: (p[0] * adjit.exp(-p[1] * d[0]) + p[2] - d[1]) ** 2,
                         3, data=2, name="residual2")
    cluster = None if address else LocalCluster(n_workers=2, threads_per_worker=1,
                                                dashboard_address=None)
    with Client(address or cluster) as client:
        chunk = max(rows // 16, 1)
        t = da.random.default_rng(0).uniform(0, 4, size=rows, chunks=chunk)
        noise = da.random.default_rng(1).normal(0, 0.01, size=rows, chunks=chunk)
        y = 1.7 * da.exp(-0.8 * t) + 0.3 + noise
        data = da.stack([t, y], axis=1).persist()     # rows live on the workers

        def value_and_grad(theta):
            v, g = adjit.dask.value_and_grad(kernel, theta, data)
            return v / rows, g / rows

        fit = minimize(value_and_grad, np.array([1.0, 1.0, 0.0]), jac=True, method="BFGS")
        print(f"{rows} rows on {len(client.scheduler_info()['workers'])} workers: "
              f"a, b, c = {np.round(fit.x, 3)} (true 1.7, 0.8, 0.3), "
              f"{fit.nfev} gradient evaluations")
    if cluster is not None:
        cluster.close()
    return fit


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000,
         sys.argv[2] if len(sys.argv) > 2 else None)
