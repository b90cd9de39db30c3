"""adjit.dask: blocks on workers, partial sums in block order — the same bits for any number
of workers, and the local result to 1e-12."""

import numpy as np
import pytest

import adjit

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import adjit.dask  # noqa: E402

KERNEL = adjit.trace(
    lambda p, d: (p[0] * adjit.exp(p[1] * d[0]) + p[2] - d[1]) ** 2, 3, data=2
)
RNG = np.random.default_rng(3)
T = RNG.uniform(0, 1, 20_000)
DATA = np.stack([T, 1.5 * np.exp(-0.7 * T) + 0.2 + 0.01 * RNG.normal(size=T.size)], axis=1)
THETA = np.array([1.0, -0.5, 0.1])


def run(workers, processes=False):
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                  processes=processes, dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            rows = da.from_array(DATA, chunks=(1_500, -1))
            return adjit.dask.value_and_grad(KERNEL, THETA, rows)


def test_independent_of_worker_count_and_equal_to_local():
    results = [run(k) for k in (1, 2, 4)]
    for y, g in results[1:]:
        assert y == results[0][0]
        assert np.array_equal(g, results[0][1])
    y_local, g_local = adjit.map(KERNEL).value_and_grad(THETA, DATA)
    y, g = results[0]
    assert abs(y - y_local) <= 1e-12 * abs(y_local)
    np.testing.assert_allclose(g, g_local, rtol=1e-12)


def test_worker_processes_receive_the_kernel_as_text():
    # Spawned worker processes: the kernel pickles as IR text and compiles there.
    y, g = run(2, processes=True)
    y1, g1 = run(1)
    assert y == y1 and np.array_equal(g, g1)


def test_per_row_variants_are_lazy_dask_arrays():
    rows = da.from_array(DATA, chunks=(4_000, -1))
    per_row = adjit.dask.eval(KERNEL, THETA, rows)
    assert isinstance(per_row, da.Array)
    local = adjit.map(KERNEL).eval(THETA, DATA)
    np.testing.assert_array_equal(per_row.compute(scheduler="threads"), local)
    grads = adjit.dask.vjp(KERNEL, THETA, rows).compute(scheduler="threads")
    np.testing.assert_array_equal(grads, adjit.map(KERNEL).vjp(THETA, DATA)[1])
    s = adjit.dask.eval_sum(KERNEL, THETA, rows)
    assert abs(s - local.sum()) <= 1e-12 * abs(s)
    with pytest.raises(adjit.ShapeError):
        adjit.dask.eval(KERNEL, THETA, da.ones((10, 3)))


def test_process_workers_equal_map_bit_for_bit():
    # Blocks unpickled on worker processes often sit at unaligned addresses; they were read as
    # empty, and the sum came back as a fraction of the true one. With every chunk block_rows
    # rows long, the ordered sum of the partials is the map's own sum, bit for bit.
    block = 333
    rows = np.ascontiguousarray(DATA[:7_001])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            chunked = da.from_array(rows, chunks=(block, -1))
            y, g = adjit.dask.value_and_grad(KERNEL, THETA, chunked, block_rows=block)
            per_row = adjit.dask.eval(KERNEL, THETA, chunked).compute()
            grads = adjit.dask.vjp(KERNEL, THETA, chunked).compute()
    m = adjit.map(KERNEL, block_rows=block)
    y_map, g_map = m.value_and_grad(THETA, rows)
    assert y == y_map and np.array_equal(g, g_map), (y, y_map)
    assert np.array_equal(per_row, m.eval(THETA, rows))
    assert np.array_equal(grads, m.vjp(THETA, rows)[1])
