"""The Python package against finite differences, the derivative identities, the interpreter
and the Rust CLI on the same IR."""

import json
import os
import pickle
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import adjit

REPO = Path(__file__).resolve().parents[3]
RNG = np.random.default_rng(7)


def rosen_py(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def mixed_py(x):
    # Every traced operation kind: arithmetic, powers, transcendental functions, ufuncs,
    # comparisons with where.
    a = adjit.sin(x[0]) * adjit.exp(0.3 * x[1]) + x[2] ** 3 / (1.5 + x[0] ** 2)
    b = np.tanh(x[1] - x[2]) + adjit.log(2.0 + x[0] ** 2) * adjit.sqrt(1.0 + x[2] ** 2)
    c = adjit.where(x[0] < x[1], a * b, a + b)
    return c + adjit.erf(0.5 * x[2]) + 2.0 ** x[0] + x[1] ** 0.5 + adjit.atan2(x[0], 2.0)


def vector_py(x):
    # Three outputs of three inputs: square, for the inverse modes.
    return (
        x[0] + 0.1 * adjit.sin(x[1]),
        x[1] * 2.0 + 0.2 * x[2] ** 2,
        x[2] - 0.3 * adjit.cos(x[0]),
    )


ROSEN = adjit.trace(rosen_py, 2)
MIXED = adjit.trace(mixed_py, 3)
VECTOR = adjit.trace(vector_py, 3)
X3 = np.array([0.4, 1.3, -0.7])


def fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def fd_jac(f, x, h=1e-6):
    cols = []
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((np.atleast_1d(f(x + e)) - np.atleast_1d(f(x - e))) / (2 * h))
    return np.stack(cols, axis=1)


def test_function_evaluates_like_python():
    assert ROSEN(np.array([0.5, 2.0])) == rosen_py([0.5, 2.0])
    assert MIXED.n_inputs == 3 and MIXED.n_outputs == 1 and MIXED.n_data == 0
    assert str(ROSEN).startswith("func @traced(%x0: f64, %x1: f64) -> f64 {")


@pytest.mark.parametrize("f", [ROSEN, MIXED], ids=["rosen", "mixed"])
def test_value_and_grad_matches_finite_differences(f):
    vg = adjit.value_and_grad(f)
    for _ in range(5):
        x = RNG.uniform(-1, 1, f.n_inputs) + (1.0 if f is MIXED else 0.0)
        y, g = vg(x)
        assert y == f(x)
        np.testing.assert_allclose(g, fd_grad(f, x), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(adjit.grad(f)(x), g)


def test_jit_equals_interpreter_bitwise():
    for f in (ROSEN, MIXED, VECTOR):
        for what in (adjit.jit, adjit.jvp, adjit.vjp):
            t_jit, t_int = what(f), what(f, engine="interp")
            x = X3[: f.n_inputs] + 0.1
            args = [x] if what is adjit.jit else [x, np.ones(f.n_outputs if what is adjit.vjp else f.n_inputs)]
            a, b = t_jit(*args), t_int(*args)
            for p, q in zip(np.atleast_1d(a) if what is adjit.jit else a,
                            np.atleast_1d(b) if what is adjit.jit else b):
                np.testing.assert_array_equal(p, q)


def test_adjoint_identity_and_forward_mode():
    jvp, vjp = adjit.jvp(VECTOR), adjit.vjp(VECTOR)
    for _ in range(5):
        x, v, w = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
        y, jv = jvp(x, v)
        y2, jtw = vjp(x, w)
        np.testing.assert_array_equal(y, y2)
        assert abs(w @ jv - jtw @ v) <= 1e-13 * (1 + abs(w @ jv))
        np.testing.assert_allclose(jv, fd_jac(VECTOR, x) @ v, rtol=1e-6, atol=1e-7)


def test_hvp_hessian_and_sparse():
    hvp, hess = adjit.hvp(MIXED), adjit.hessian(MIXED)
    x, v = X3 + 1.0, RNG.normal(size=3)
    H = hess(x)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hvp(x, v), H @ v, rtol=1e-12, atol=1e-12)
    g = adjit.grad(MIXED)
    np.testing.assert_allclose(H, fd_jac(g, x), rtol=1e-5, atol=1e-6)
    Hs = adjit.hessian(MIXED, sparse=True)(x)
    np.testing.assert_allclose(Hs.toarray(), H, rtol=1e-13, atol=1e-13)


def test_jacobian_dense_and_sparse():
    chain = adjit.trace(lambda x: [x[i] * x[i + 1] - adjit.sin(x[i]) for i in range(5)], 6)
    x = RNG.normal(size=6)
    J = adjit.jacobian(chain)(x)
    assert J.shape == (5, 6)
    np.testing.assert_allclose(J, fd_jac(chain, x), rtol=1e-6, atol=1e-7)
    Js = adjit.jacobian(chain, sparse=True)(x)
    assert Js.nnz == 10 and Js.shape == (5, 6)
    np.testing.assert_array_equal(Js.toarray(), J)


def test_inverse_identities():
    x = np.array([0.3, -0.2, 0.5])
    J = adjit.jacobian(VECTOR)(x)
    v = RNG.normal(size=3)
    for mode in ("reverse", "dense"):
        np.testing.assert_allclose(J @ adjit.inverse(VECTOR, mode=mode)(x, v), v, atol=1e-13)
    np.testing.assert_allclose(J.T @ adjit.inverse(VECTOR, mode="forward")(x, v), v, atol=1e-13)
    singular = adjit.trace(lambda x: (x[0] * x[1], x[0] * x[1]), 2)
    with pytest.raises(adjit.Error):
        adjit.inverse(singular)(np.array([1.0, 2.0]), np.ones(2))


def test_checkpointing_equals_tape():
    tape = adjit.value_and_grad(MIXED)
    for s in ("checkpoint:2", "bytes:1e6", "uniform"):
        y, g = adjit.value_and_grad(MIXED, strategy=s)(X3 + 1)
        y0, g0 = tape(X3 + 1)
        assert y == y0
        np.testing.assert_allclose(g, g0, rtol=1e-15, atol=0)
    with pytest.raises(adjit.Error):
        adjit.value_and_grad(MIXED, strategy="checkpoint:0")


def test_batches_equal_single_points_bitwise():
    X = RNG.normal(size=(301, 3)) + 1.0
    V = RNG.normal(size=(301, 3))
    vg = adjit.value_and_grad(MIXED)
    Y, G = vg(X)
    assert Y.shape == (301,) and G.shape == (301, 3)
    for p in (0, 150, 300):
        y, g = vg(X[p])
        assert Y[p] == y
        np.testing.assert_array_equal(G[p], g)
    jvp = adjit.jvp(VECTOR)
    Yj, T = jvp(X, V)
    assert Yj.shape == (301, 3) and T.shape == (301, 3)
    np.testing.assert_array_equal(T[17], jvp(X[17], V[17])[1])
    Hv = adjit.hvp(MIXED)(X, V[0])
    np.testing.assert_array_equal(Hv[5], adjit.hvp(MIXED)(X[5], V[0]))
    Jb = adjit.jacobian(VECTOR)(X[:7])
    np.testing.assert_array_equal(Jb[3], adjit.jacobian(VECTOR)(X[3]))
    # The same with one thread, and with the checkpointed gradient (no native batch).
    np.testing.assert_array_equal(adjit.value_and_grad(MIXED, threads=1)(X)[1], G)
    np.testing.assert_allclose(adjit.value_and_grad(MIXED, strategy="checkpoint:2")(X)[1], G,
                               rtol=1e-15)


def test_same_results_as_the_rust_cli():
    cli = os.environ.get("ADJIT_CLI")
    if not cli:
        pytest.skip("ADJIT_CLI (the adjit binary) not set")
    path = REPO / "ir" / "examples" / "rosenbrock.ir"
    out = subprocess.run([cli, "vjp", str(path), "--at", "0.5,2", "--json"],
                         capture_output=True, text=True, check=True).stdout
    report = json.loads(out)
    f = adjit.load(str(path))
    y, g = adjit.vjp(f)(np.array([0.5, 2.0]), np.array([1.0]))
    flat = json.dumps(report)
    for value in list(np.atleast_1d(y)) + list(g):
        assert repr(float(value)) in flat or str(float(value)) in flat


def test_pickle_round_trip_is_the_same_program():
    for f in (ROSEN, MIXED, VECTOR):
        g = pickle.loads(pickle.dumps(f))
        assert str(g) == str(f)
        x = X3[: f.n_inputs] + 0.2
        np.testing.assert_array_equal(np.atleast_1d(g(x)), np.atleast_1d(f(x)))


def test_numpy_object_arrays_and_ufuncs_trace():
    A = np.array([[1.0, 2.0], [3.0, -1.0]])
    f = adjit.trace(lambda x: np.sum(np.sin(x) * (A @ x)) + np.maximum(x[0], 0.5), 2)
    x = np.array([0.2, 0.7])
    expected = np.sum(np.sin(x) * (A @ x)) + max(x[0], 0.5)
    assert abs(f(x) - expected) < 1e-15
    np.testing.assert_allclose(adjit.grad(f)(x), fd_grad(f, x), rtol=1e-7)


def test_data_inputs():
    t = np.linspace(0, 1, 8)
    fit = adjit.trace(
        lambda p, d: sum((p[0] * adjit.exp(p[1] * d[i]) - d[8 + i]) ** 2 for i in range(8)),
        2, data=16)
    data = np.concatenate([t, 2.0 * np.exp(0.5 * t)])
    y, g = adjit.value_and_grad(fit)(np.array([2.0, 0.5]), data=data)
    assert abs(y) < 1e-28 and np.all(np.abs(g) < 1e-12)
    y, g = adjit.value_and_grad(fit)(np.array([1.0, 0.1]), data=data)
    np.testing.assert_allclose(g, fd_grad(lambda p: fit(p, data=data), np.array([1.0, 0.1])),
                               rtol=1e-6)
    with pytest.raises(adjit.ShapeError, match="data"):
        adjit.value_and_grad(fit)(np.array([1.0, 0.1]))


def test_map_and_steps():
    kernel = adjit.trace(lambda p, d: (p[0] * d[0] + p[1] - d[1]) ** 2, 2, data=2)
    rows = RNG.normal(size=(1000, 2))
    m = adjit.map(kernel)
    theta = np.array([0.7, -0.2])
    y, g = m.value_and_grad(theta, rows)
    per_row = m.eval(theta, rows)
    assert per_row.shape == (1000,)
    assert abs(y - per_row.sum()) < 1e-12 * abs(y)
    _, grads = m.vjp(theta, rows)
    np.testing.assert_allclose(g, grads.sum(axis=0), rtol=1e-12)
    # Threads never change a sum.
    y1, g1 = adjit.map(kernel, threads=1).value_and_grad(theta, rows)
    assert y1 == y and np.array_equal(g1, g)

    step = adjit.trace(lambda s: (s[0] + 0.1 * s[1], s[1] - 0.1 * adjit.sin(s[0])), 2)
    it = adjit.steps(step, 50, strategy="checkpoint:4")
    x0 = np.array([1.0, 0.0])
    yN, gN = it.vjp(x0, np.array([1.0, 0.0]))
    np.testing.assert_allclose(gN, fd_grad(lambda x: it.eval(x)[0], x0), rtol=1e-6)
    assert it.trajectory(x0).shape == (50, 2)
    np.testing.assert_array_equal(it.trajectory(x0)[-1], yN)


def test_calls_from_several_threads():
    vg = adjit.value_and_grad(MIXED)
    xs = [RNG.uniform(0.1, 2.0, size=3) for _ in range(64)]
    expected = [vg(x) for x in xs]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(vg, xs * 4))
    for (y, g), (y0, g0) in zip(got, expected * 4):
        assert y == y0 and np.array_equal(g, g0)


def test_dump_stages():
    assert "func @traced_vjp" in ROSEN.dump("vjp")
    assert "digraph" in VECTOR.dump("dot")
    assert ROSEN.dump("asm", mode="gradient")
    assert "loop(s) cover" in ROSEN.dump("rolled", mode="gradient")
    with pytest.raises(adjit.Error, match="stage") as unknown:
        ROSEN.dump("nonsense")
    # The stub's `Stage` names exactly the stages the library lists in its error.
    accepted = str(unknown.value).split("expected ", 1)[1].split(", ")
    stub = Path(adjit.__file__).with_name("_adjit.pyi").read_text()
    literal = re.search(r"Stage = Literal\[([^\]]*)\]", stub).group(1)
    assert re.findall(r'"([^"]+)"', literal) == accepted


def test_batch_into_the_callers_array():
    X = RNG.uniform(0.1, 2.0, size=(300, 3))
    vg = adjit.value_and_grad(MIXED)
    Y, G = vg(X)
    out = np.empty((300, 4))
    Y2, G2 = vg(X, out=out)
    assert np.shares_memory(Y2, out) and np.shares_memory(G2, out)
    np.testing.assert_array_equal(Y2, Y)
    np.testing.assert_array_equal(G2, G)
    H = np.empty((5, 9))
    Hb = adjit.hessian(MIXED)(X[:5], out=H)
    assert Hb.shape == (5, 3, 3) and np.shares_memory(Hb, H)
    np.testing.assert_array_equal(Hb[2], adjit.hessian(MIXED)(X[2]))
    with pytest.raises(adjit.ShapeError, match=r"\(300, 4\)"):
        vg(X, out=np.empty((300, 3)))


def test_two_lane_batches_equal_one_lane_bitwise():
    X = RNG.uniform(0.1, 2.0, size=(301, 3))
    V = RNG.normal(size=(301, 3))
    for make, args in ((adjit.value_and_grad, (X,)), (adjit.jvp, (X, V)), (adjit.jit, (X,))):
        one = make(MIXED)(*args)
        two = make(MIXED, lanes=2)(*args)
        for a, b in zip(np.atleast_1d(one) if make is adjit.jit else one,
                        np.atleast_1d(two) if make is adjit.jit else two):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(adjit.Error, match="lanes"):
        adjit.grad(MIXED, lanes=3)


def test_inline_math_agrees_and_vectorises():
    # adjit's own routines: within a few ulps of the C library's, the gradient still matches
    # finite differences, and two lanes give the one-lane bits.
    X = RNG.uniform(0.1, 2.0, size=(101, 3))
    y_lib, g_lib = adjit.value_and_grad(MIXED)(X)
    y_in, g_in = adjit.value_and_grad(MIXED, math="inline")(X)
    np.testing.assert_allclose(y_in, y_lib, rtol=1e-14, atol=0)
    np.testing.assert_allclose(g_in, g_lib, rtol=1e-13, atol=1e-15)
    y2, g2 = adjit.value_and_grad(MIXED, math="inline", lanes=2)(X)
    np.testing.assert_array_equal(y2, y_in)
    np.testing.assert_array_equal(g2, g_in)
    f = adjit.jit(MIXED, math="inline")
    np.testing.assert_allclose(g_in[0], fd_grad(f, X[0]), rtol=1e-6, atol=1e-8)
    with pytest.raises(adjit.Error, match="math"):
        adjit.grad(MIXED, math="fast")


def test_dump_two_lane_kernels():
    text = ROSEN.dump("clif", mode="gradient", lanes=2)
    assert "f64x2" in text and "extractlane" not in text
    assert "f64x2" not in ROSEN.dump("clif", mode="gradient")
    with pytest.raises(adjit.Error, match="lanes"):
        ROSEN.dump("asm", lanes=4)


def test_threads_hold_for_every_transform_kind():
    # threads=1 and threads=2 give the same bits for every kind, the natively batched ones
    # (jit, value_and_grad, jvp, vjp, hvp) and the per-point ones (jacobian, hessian, inverse,
    # a checkpointed gradient); and each batch row is the single-point call's result, so the
    # batch really ran.
    f = adjit.trace(lambda x: [x[0] * adjit.exp(x[1]) + x[2] ** 2, adjit.sin(x[0] * x[2]) + x[1]], 3)
    scalar = adjit.trace(lambda x: x[0] * adjit.exp(x[1]) + adjit.sin(x[2]) * x[0], 3)
    square = adjit.trace(lambda x: [x[0] * 2.0 + adjit.sin(x[1]), x[1] * 3.0 + x[0] * x[1] * 0.1], 2)
    rng = np.random.default_rng(7)
    b = 300
    x3 = rng.uniform(-1, 1, (b, 3))
    x2 = rng.uniform(-1, 1, (b, 2))
    cases = [
        ("jit", lambda t: adjit.jit(f, threads=t), (x3,)),
        ("value_and_grad", lambda t: adjit.value_and_grad(scalar, threads=t), (x3,)),
        ("grad", lambda t: adjit.grad(scalar, threads=t), (x3,)),
        ("jvp", lambda t: adjit.jvp(f, threads=t), (x3, rng.uniform(-1, 1, (b, 3)))),
        ("vjp", lambda t: adjit.vjp(f, threads=t), (x3, rng.uniform(-1, 1, (b, 2)))),
        ("hvp", lambda t: adjit.hvp(scalar, threads=t), (x3, rng.uniform(-1, 1, (b, 3)))),
        ("jacobian", lambda t: adjit.jacobian(f, threads=t), (x3,)),
        ("hessian", lambda t: adjit.hessian(scalar, threads=t), (x3,)),
        ("inverse", lambda t: adjit.inverse(square, threads=t), (x2, rng.uniform(-1, 1, (b, 2)))),
        ("checkpointed", lambda t: adjit.value_and_grad(scalar, strategy="checkpoint:2", threads=t),
         (x3,)),
    ]

    def parts(r):
        return [np.asarray(p) for p in (r if isinstance(r, tuple) else (r,))]

    for name, make, args in cases:
        one, two = make(1), make(2)
        r1, r2 = parts(one(*args)), parts(two(*args))
        for a, c in zip(r1, r2):
            assert a.tobytes() == c.tobytes(), name
        for p in (0, b // 2, b - 1):
            single = parts(one(*(a[p] for a in args)))
            for a, s in zip(r1, single):
                assert np.array_equal(a[p], s), (name, p)


def test_import_star_shadows_no_builtin():
    import builtins

    namespace: dict = {}
    exec("from adjit import *", namespace)
    shadowed = sorted(n for n in namespace if n != "__builtins__" and hasattr(builtins, n))
    assert shadowed == [], shadowed
    # Still reachable as attributes.
    for name in ("abs", "pow", "map", "MemoryError"):
        assert hasattr(adjit, name), name
    assert adjit.abs(-2.0) == 2.0


def test_steps_stats_is_a_named_tuple():
    step = adjit.trace(lambda x: x[0] * 0.5 + adjit.sin(x[0]), 1)
    it = adjit.steps(step, 50, strategy="checkpoint:4")
    stats = it.stats()
    assert isinstance(stats, tuple) and isinstance(stats, adjit.StepStats)
    assert stats._fields == ("steps", "snapshots", "forward_steps", "peak_bytes")
    assert stats.steps == 50 and stats.snapshots == 4
    # Revolve re-advances: more forward steps than the tape's N - 1.
    tape = adjit.steps(step, 50).stats()
    assert tape.forward_steps == 49 and stats.forward_steps > tape.forward_steps
    assert stats.peak_bytes < tape.peak_bytes


def test_sparse_results_share_the_pattern_not_the_values():
    # The index arrays are built once and shared (read-only); each call's values are its own.
    chain = adjit.trace(lambda x: [x[0] * x[1], adjit.sin(x[1]) + x[2] ** 2, adjit.exp(x[2])], 3)
    jac, dense = adjit.jacobian(chain, sparse=True), adjit.jacobian(chain)
    a, b = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])
    Ja, Jb = jac(a), jac(b)
    assert np.shares_memory(Ja.indices, Jb.indices) and not Ja.indices.flags.writeable
    np.testing.assert_array_equal(Ja.toarray(), dense(a))
    np.testing.assert_array_equal(Jb.toarray(), dense(b))
    Ja.data[:] = 0.0  # the caller owns the values
    np.testing.assert_array_equal(jac(a).toarray(), dense(a))
    np.testing.assert_array_equal((Jb.tocsc() @ np.ones(3)), dense(b) @ np.ones(3))


def test_later_sparse_results_are_whole_scipy_matrices():
    # The first matrix goes through SciPy's constructor; later ones reuse its checked state
    # with their own values. They must behave exactly like constructed ones.
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    chain = adjit.trace(lambda x: [x[0] * x[1] + 3, adjit.sin(x[1]) + x[2] ** 2 + 2, adjit.exp(x[2]) + x[0]], 3)
    jac, dense = adjit.jacobian(chain, sparse=True), adjit.jacobian(chain)
    hess = adjit.hessian(adjit.trace(lambda x: x[0] ** 2 * x[1] + adjit.exp(x[2]), 3), sparse=True)
    for k in range(3):
        x = np.array([0.5 + k, -1.0, 2.0 - k])
        J = jac(x)
        fresh = sp.csr_matrix((J.data.copy(), J.indices.copy(), J.indptr.copy()), shape=J.shape)
        assert type(J) is type(fresh) and J.shape == fresh.shape and J.nnz == fresh.nnz
        assert J.has_sorted_indices and J.has_canonical_format and J.dtype == np.float64
        np.testing.assert_array_equal(J.toarray(), dense(x))
        assert (J != fresh).nnz == 0 and repr(J) == repr(fresh) and str(J) == str(fresh)
        np.testing.assert_array_equal(J.T.toarray(), dense(x).T)
        np.testing.assert_array_equal((J @ J).toarray(), fresh.dot(fresh).toarray())
        v = np.ones(3)
        np.testing.assert_allclose(J @ spla.spsolve(J.tocsc(), v), v, rtol=1e-12)
        H = hess(x)
        np.testing.assert_array_equal(H.toarray(), H.toarray().T)
        assert H.nnz == sp.csr_matrix(H.toarray()).nnz


def test_rolled_transforms_equal_the_usual_ones():
    # A traced loop of 24,000 operations (past the rolling threshold), kept rolled from
    # derivation to machine code with rolled=True: the same numbers, bit for bit.
    n = 3000

    def rosen_terms(x):
        s = x[0] * 0.0
        for i in range(n - 1):
            a = x[i + 1] - x[i] * x[i]
            b = 1.0 - x[i]
            s = s + a * a * 100.0 + b * b
        return s

    f = adjit.trace(rosen_terms, n)
    x = np.linspace(0.5, 1.5, n)
    v = np.cos(np.arange(n))
    assert adjit.jit(f, rolled=True)(x) == adjit.jit(f)(x)
    assert np.array_equal(adjit.grad(f, rolled=True)(x), adjit.grad(f)(x))
    y, g = adjit.value_and_grad(f, rolled=True)(x)
    y0, g0 = adjit.value_and_grad(f)(x)
    assert y == y0 and np.array_equal(g, g0)
    assert adjit.jvp(f, rolled=True)(x, v) == adjit.jvp(f)(x, v)
    _, xb = adjit.vjp(f, rolled=True)(x, 2.0)
    _, xb0 = adjit.vjp(f)(x, 2.0)
    assert np.array_equal(xb, xb0)
    assert np.array_equal(adjit.hvp(f, rolled=True)(x, v), adjit.hvp(f)(x, v))
