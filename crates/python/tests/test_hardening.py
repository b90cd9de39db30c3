"""What the binding refuses or survives: sizes the machine cannot hold, files that are not
files, Ctrl-C during a long batch, trace names the IR cannot spell, messages that say what is
really wrong, and ``adjit.dask`` without importing Dask up front."""

import os
import pickle
import socket
import subprocess
import sys
import threading
import time
import _thread

import numpy as np
import pytest

import adjit


def sum_of_squares(n):
    return adjit.trace(lambda x: sum(x[i] * x[i] * (i + 1) for i in range(n)), n)


# --- memory -------------------------------------------------------------------------------

def test_a_batch_hessian_beyond_memory_is_refused_before_allocation():
    n = 10
    b = 12_500_000_000  # B × n × n float64 = 10¹³ bytes
    x = np.broadcast_to(np.full(n, 0.5), (b, n))  # stride 0: 80 bytes of real data
    hess = adjit.hessian(sum_of_squares(n))
    with pytest.raises(adjit.MemoryError, match=r"batch result of hessian.*10 TB") as e:
        hess(x)
    assert isinstance(e.value, MemoryError) and isinstance(e.value, adjit.Error)
    with pytest.raises(adjit.MemoryError, match="jacobian"):
        adjit.jacobian(sum_of_squares(n))(x)


def test_a_copy_beyond_memory_is_refused_before_allocation():
    x = np.broadcast_to(np.full(10, 0.5), (12_500_000_000, 10))  # a copy: 10¹² bytes
    out = np.empty((1, 11))
    # With out= there is no result to allocate; the input's copy is what cannot be made.
    with pytest.raises(adjit.MemoryError, match=r"x: its float64 copy needs 1 TB"):
        adjit.value_and_grad(sum_of_squares(10))(x, out=out)


# --- adjit.load -----------------------------------------------------------------------------

def test_load_reads_regular_files_only(tmp_path):
    good = tmp_path / "f.ir"
    good.write_text(str(sum_of_squares(2)))
    assert adjit.load(str(good)).n_inputs == 2
    with pytest.raises(adjit.ParseError, match="is a directory, not a regular file"):
        adjit.load(str(tmp_path))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(adjit.ParseError, match="is a FIFO, not a regular file"):
        adjit.load(str(fifo))  # opening it would wait for a writer forever
    with pytest.raises(adjit.ParseError, match="is a character device, not a regular file"):
        adjit.load("/dev/zero")  # reading it would never end
    sock_path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        with pytest.raises(adjit.ParseError, match="is a socket, not a regular file"):
            adjit.load(str(sock_path))
    huge = tmp_path / "huge.ir"
    with open(huge, "wb") as f:
        f.truncate(3 << 30)  # sparse: no disk used
    with pytest.raises(adjit.ParseError, match=r"3\.2\d* GB.*larger than"):
        adjit.load(str(huge))
    with pytest.raises(adjit.ParseError, match="No such file"):
        adjit.load(str(tmp_path / "missing.ir"))


def test_load_releases_the_gil(tmp_path):
    # A thread stamps the time in a loop while the main thread loads a large file. Holding
    # the GIL, the load stops the thread for the whole read and parse: one gap between two
    # stamps as long as the load. Released, the thread stamps all along.
    f = sum_of_squares(8)
    text = "\n".join(str(f).replace("@traced", f"@f{i}") for i in range(5_000))
    path = tmp_path / "many.ir"
    path.write_text(text)
    stamps = []
    done = threading.Event()

    def count():
        while not done.is_set():
            stamps.append(time.perf_counter())

    t = threading.Thread(target=count)
    t.start()
    try:
        while not stamps:
            pass
        start = time.perf_counter()
        g = adjit.load(str(path), name="f4999")
        end = time.perf_counter()
    finally:
        done.set()
        t.join()
    assert g.n_inputs == 8
    inside = [start] + [s for s in stamps if start < s < end] + [end]
    longest = max(b - a for a, b in zip(inside, inside[1:]))
    assert longest < 0.5 * (end - start), (longest, end - start)


# --- Ctrl-C ---------------------------------------------------------------------------------

def slow_function():
    def f(x):
        s = x[0]
        for _ in range(600):
            s = adjit.sin(s * x[1] + x[2])
        return s
    return adjit.trace(f, 3)


def test_ctrl_c_stops_a_long_batch_and_leaves_out_untouched():
    vg = adjit.value_and_grad(slow_function())
    b = 400_000  # minutes of work: an interrupt that waits for the end hangs the test run
    x = np.random.default_rng(0).uniform(0.1, 1.0, size=(b, 3))
    out = np.full((b, 4), 7.0)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            vg(x, out=out)
    finally:
        timer.cancel()
    assert np.all(out == 7.0), "an interrupted batch wrote into out="
    # The same transform still works afterwards.
    np.testing.assert_array_equal(vg(x[:3], out=out[:3])[1], vg(x[:3])[1])


# --- messages -------------------------------------------------------------------------------

def test_a_nan_in_rows_is_named_by_row_and_column():
    kernel = adjit.trace(lambda p, d: (p[0] * d[0] - d[1]) ** 2, 1, data=2)
    rows = np.ones((6, 2))
    rows[4, 1] = np.nan
    with pytest.raises(adjit.NonFiniteError, match=r"rows\[4, 1\] is NaN"):
        adjit.map(kernel).value_and_grad(np.array([1.0]), rows)
    X = np.ones((5, 3))
    X[3, 2] = np.inf
    with pytest.raises(adjit.NonFiniteError, match=r"x\[3, 2\] is inf"):
        adjit.grad(sum_of_squares(3))(X)


def test_a_nan_under_dask_is_named_by_its_global_row():
    da = pytest.importorskip("dask.array")
    import adjit.dask  # noqa: F401

    kernel = adjit.trace(lambda p, d: (p[0] * d[0] - d[1]) ** 2, 1, data=2)
    rows = np.ones((100, 2))
    rows[73, 0] = np.nan
    with pytest.raises(adjit.NonFiniteError, match=r"rows\[73, 0\] is NaN"):
        adjit.dask.value_and_grad(kernel, np.array([1.0]),
                                  da.from_array(rows, chunks=(30, -1)))


def test_an_unaligned_point_is_not_reported_as_the_wrong_shape():
    # It read as empty and said "x has shape (2,), expected (2,)".
    buf = np.zeros(17, np.uint8)
    x = buf[1:].view(np.float64)
    x[:] = [1.0, 2.0]
    assert adjit.grad(sum_of_squares(2))(x).tolist() == [2.0, 8.0]
    with pytest.raises(adjit.ShapeError, match=r"x has shape \(1, 3\), expected \(B, 2\)"):
        adjit.grad(sum_of_squares(2))(np.ones((1, 3)))
    with pytest.raises(adjit.ShapeError, match=r"x has shape \(3,\), expected \(2,\)"):
        adjit.grad(sum_of_squares(2))(np.ones(3))


@pytest.mark.parametrize("name", ["a b", "", "a-b", "f(x)", "é", "a@b", "a;b", "x\n"])
def test_trace_refuses_names_the_ir_cannot_spell(name):
    with pytest.raises(adjit.TraceError, match="name"):
        adjit.trace(lambda x: x[0] * 2.0, 1, name=name)


@pytest.mark.parametrize("name", ["a", "f_1", "a.b", "1a", "_", "Model.v2_final"])
def test_every_accepted_trace_name_pickles(name):
    f = adjit.trace(lambda x: x[0] * 2.0 + x[1], 2, name=name)
    g = pickle.loads(pickle.dumps(f))
    assert g.name == name and str(g) == str(f)
    assert g(np.array([1.0, 3.0])) == 5.0


# --- adjit.dask -----------------------------------------------------------------------------

def test_adjit_dask_is_a_lazy_attribute():
    code = ("import sys, adjit; assert 'dask' not in sys.modules, 'import adjit imported dask'; "
            "f = adjit.dask.value_and_grad; assert 'dask' not in sys.modules or True; "
            "print(f.__module__)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "adjit.dask"
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        adjit.nonsense  # noqa: B018
