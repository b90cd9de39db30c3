"""NumPy code traces: each construct's value against NumPy evaluating the same Python
function on floats, and its Jacobian against central finite differences of that evaluation."""

import math

import numpy as np
import pytest

import adjit

X = np.array([[0.3, -1.2, 0.8], [1.1, 0.4, -0.6], [-0.7, 0.9, 0.2], [0.5, 0.5, 1.5]])
A = np.array([[1.0, 2.0, -1.0], [0.5, -0.3, 2.0], [1.5, 0.2, 0.7]])

# name -> (function of a 1-D array, the point). Every function runs unchanged on a float array
# (the reference) and on the traced array.
CASES = {
    # object arrays combine with traced scalars, Python numbers and float arrays
    "matmul_plus_scalar": (lambda t: X @ t[:3] + t[3], [0.3, -0.2, 0.5, 0.1]),
    "slice_times_scalar": (lambda x: x[:2] * x[2], [0.7, -0.4, 1.3]),
    "scalar_times_slice": (lambda x: x[2] * x[:2] - 1.5, [0.7, -0.4, 1.3]),
    "float_array_ops": (lambda x: np.array([1.0, 2.0, 3.0]) / x + x * np.array([0.5, 1, 2]),
                        [0.7, -0.4, 1.3]),
    "broadcast_2d": (lambda x: (x[:, None] * x[None, :] + X[:3]).ravel(), [0.7, -0.4, 1.3]),
    "rpow_rsub": (lambda x: 2.0 ** x - (1 - x) ** 2, [0.7, -0.4, 1.3]),
    # elementwise selections
    "maximum_array": (lambda x: np.maximum(x, 0.0), [0.7, -0.4, 1.3]),
    "minimum_array": (lambda x: np.minimum(x, 0.5 * x[::-1]), [0.7, -0.4, 1.3]),
    "clip": (lambda x: np.clip(x, -0.5, 1.0), [0.7, -0.6, 1.3]),
    "abs_array": (lambda x: np.abs(x) + abs(x[1]), [0.7, -0.4, 1.3]),
    "sign": (lambda x: np.sign(x) * x**2, [0.7, -0.4, 1.3]),
    "where_array": (lambda x: np.where(x > 0, x, 0.1 * x), [0.7, -0.4, 1.3]),
    "where_scalar_branch": (lambda x: np.where(x > 0.5, x**2, 0), [0.7, -0.4, 1.3]),
    "max_reduce": (lambda x: np.max(x) + x.max() + np.min(x**2) + x.min(), [0.7, -0.4, 1.3]),
    "max_axis": (lambda x: np.max(x.reshape(2, 2), axis=0), [0.7, -0.4, 1.3, 0.2]),
    # logical operations on traced comparisons
    "and_or_not": (lambda x: [np.where((x[0] > 0) & (x[1] > 0), x[2], -x[2]),
                              np.where((x[0] > 0) | (x[1] > 0), x[2], -x[2]),
                              np.where(~(x[1] > 0), x[2], -x[2]),
                              np.where((x[0] > 0) ^ (x[1] > 0), x[2], -x[2])],
                   [0.7, -0.4, 1.3]),
    "logical_ufuncs": (lambda x: np.where(np.logical_and(x > 0, np.logical_not(x > 1)), x, 2 * x)
                       + np.where(np.logical_or(x < 0, x > 1), 1.0, x), [0.7, -0.4, 1.3]),
    # reductions and products
    "sum_prod_mean": (lambda x: [np.sum(x), np.prod(x), np.mean(x), x.sum(), x.mean()],
                      [0.7, -0.4, 1.3]),
    "sum_axis": (lambda x: np.sum(x.reshape(2, 2), axis=1) + x.reshape(2, 2).mean(axis=0),
                 [0.7, -0.4, 1.3, 0.2]),
    "dot_matmul": (lambda x: [np.dot(x, x), x @ A @ x, *(A @ x), *np.matmul(x, A)],
                   [0.7, -0.4, 1.3]),
    "einsum": (lambda x: [np.einsum("i,ij,j->", x, A, x), *np.einsum("ij,j->i", A, x)],
               [0.7, -0.4, 1.3]),
    "outer": (lambda x: np.outer(x, x).ravel(), [0.7, -0.4, 1.3]),
    # operations by their definitions
    "mod_floordiv": (lambda x: [x[0] % 0.3, x[1] % 0.3, 2.5 % x[2], x[0] // 0.3, 2.5 // x[2],
                                np.remainder(x, 0.25), np.floor_divide(x, 0.25)], [0.7, -0.4, 1.3]),
    "round": (lambda x: [round(x[0]), round(x[1] * 3), np.round(x * 4), np.rint(x * 2)],
              [0.7, -0.4, 1.3]),
    "hypot": (lambda x: np.hypot(x, 0.5) + np.hypot(x[0], x[1]), [0.7, -0.4, 1.3]),
    "logaddexp": (lambda x: np.logaddexp(x, x[::-1]) + np.logaddexp(x[0], 2.0), [0.7, -0.4, 1.3]),
    "log1p_expm1": (lambda x: np.log1p(x**2) + np.expm1(x), [0.7, -0.4, 1.3]),
    "exp2_log2_log10": (lambda x: np.exp2(x) + np.log2(x**2) + np.log10(x**2), [0.7, -0.4, 1.3]),
    "square_reciprocal": (lambda x: np.square(x) + np.reciprocal(x), [0.7, -0.4, 1.3]),
    "heaviside": (lambda x: np.heaviside(x, 0.5) * x + np.heaviside(x[0], x[1]), [0.7, -0.4, 1.3]),
    # NumPy functions built from the above
    "var_std": (lambda x: [np.var(x), np.std(x)], [0.7, -0.4, 1.3]),
    "tensordot": (lambda x: np.tensordot(x, x, 1), [0.7, -0.4, 1.3]),
    "cumsum_cumprod_diff": (lambda x: [*np.cumsum(x), *np.cumprod(x), *np.diff(x)],
                            [0.7, -0.4, 1.3]),
    "softmax_logsumexp": (lambda x: [*(np.exp(x - x.max()) / np.sum(np.exp(x - x.max()))),
                                     x.max() + np.log(np.sum(np.exp(x - x.max())))],
                          [0.7, -0.4, 1.3]),
    "norm_kron_concat": (lambda x: [np.linalg.norm(x), *np.kron(x[:2], x[1:]),
                                    *np.concatenate([x, x ** 2])], [0.7, -0.4, 1.3]),
    # np.sinc is where(x, x, eps) on π·x: a traced number as a condition means nonzero; its
    # second output is sinc at exactly 0
    "sinc": (lambda x: [*np.sinc(x), np.sinc(x[0] - 0.7)], [0.7, -0.4, 1.3]),
    "where_numeric_conditions": (lambda x: np.where(x - 0.5, x, -x)
                                 + np.where(np.array([1.0, 0.0, np.nan]), x, 3 * x),
                                 [0.7, -0.4, 1.3]),
    "astype_float": (lambda x: x.astype(float) * 2 + x.astype(np.float64), [0.7, -0.4, 1.3]),
    # np.linalg by elimination with traced pivoting; at this point the pivots come from
    # different rows in different columns, and A's (0, 0) entry is 0
    "linalg_solve": (lambda x: [*np.linalg.solve(x[:9].reshape(3, 3), x[9:]),
                                *np.linalg.solve(x[:9].reshape(3, 3), np.outer(x[9:], x[9:2:-3]))
                                .ravel()],
                     [0.0, 2.0, -1.0, 0.5, -0.3, 2.0, 1.5, 0.2, 0.7, 0.3, -0.8, 1.1]),
    "linalg_inv_det": (lambda x: [*np.linalg.inv(x.reshape(3, 3)).ravel(),
                                  np.linalg.det(x.reshape(3, 3)),
                                  np.linalg.det(x[:4].reshape(2, 2) @ A[:2, :2]),
                                  np.linalg.det(x[1:5].reshape(2, 2)[::-1])],  # one swap
                       [0.0, 2.0, -1.0, 0.5, -0.3, 2.0, 1.5, 0.2, 0.7]),
    # np.interp with traced points, traced values and traced breakpoints; points below,
    # inside, at a breakpoint and above the table
    "interp": (lambda x: [*np.interp(x, [-0.5, 0.0, 1.0, 1.2], [1.0, -2.0, 0.5, 3.0]),
                          np.interp(x[0] * 0.0, [-0.5, 0.0, 1.0], [1.0, -2.0, 0.5]),
                          np.interp(0.3, [0.0, 1.0], x[:2]),
                          np.interp(x[0], [-1.0, x[1], 2.0], [0.0, x[2], 1.0]),
                          np.interp(x[1] - 1.0, [-0.4, 0.7], [5.0, 6.0], left=-1.0, right=9.0),
                          np.interp(x[2], [-0.4, 0.7], [5.0, 6.0], left=-1.0, right=x[0]),
                          *np.interp([-3.0, 3.0], x[:2] - 1.0, [1.0, 2.0])],
               [0.7, -0.4, 1.3]),
    "linalg_constant_matrix": (lambda x: np.linalg.solve(A, x) + np.linalg.inv(A) @ x,
                               [0.7, -0.4, 1.3]),
}


def _flat(y):
    return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in
                           (y if isinstance(y, list) else [y])])


def _fd_jacobian(fn, x, h=1e-6):
    cols = []
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h
        cols.append((_flat(fn(x + e)) - _flat(fn(x - e))) / (2 * h))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_construct_value_and_derivative(name):
    fn, point = CASES[name]
    x = np.array(point, dtype=float)
    f = adjit.trace(fn, len(x))
    expected = _flat(fn(x))
    got = _flat(f(x))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    jac = np.asarray(adjit.jacobian(f)(x)).reshape(len(expected), len(x))
    np.testing.assert_allclose(jac, _fd_jacobian(fn, x), rtol=1e-6, atol=1e-6)


def test_integer_powers_of_arrays_record_powi():
    text = str(adjit.trace(lambda x: [x ** 2, np.power(x, 3), x[0] ** np.int64(-2),
                                      np.square(x), x ** 2.5], 1))
    assert text.count("powi") == 4 and text.count("pow ") == 1, text


def test_round_is_half_to_even_like_python():
    f = adjit.trace(lambda x: [round(x[0]), np.rint(x[0]), round(x[0], 1)], 1)
    for v in [0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996, 0.49999999999999994, 1e17 + 2,
              -3.7, 2.675]:
        got = f(np.array([v]))
        assert got[0] == round(v) and got[1] == np.rint(v), v
        assert got[2] == pytest.approx(round(v, 1), rel=1e-15, abs=1e-15), v


def test_mod_floordiv_match_python_signs():
    f = adjit.trace(lambda x: [x[0] % x[1], x[0] // x[1]], 2)
    for a, b in [(5.5, 2.0), (-5.5, 2.0), (5.5, -2.0), (-5.5, -2.0), (7.0, 3.5)]:
        m, q = f(np.array([a, b]))
        assert m == pytest.approx(a % b, abs=1e-14) and q == a // b, (a, b)


def test_logaddexp_gradient_at_a_tie_is_one_half():
    f = adjit.trace(lambda x: np.logaddexp(x[0], x[1]), 2)
    y, g = adjit.value_and_grad(f)(np.array([0.3, 0.3]))
    assert y == pytest.approx(0.3 + math.log(2), rel=1e-15)
    np.testing.assert_allclose(g, [0.5, 0.5], rtol=1e-15)


def test_adjit_functions_are_elementwise_on_arrays():
    f = adjit.trace(lambda x: [adjit.exp(x), adjit.where(x > 0, x, 0.0), adjit.maximum(x, 0.2),
                               adjit.atan2(x, [1.0, 2.0, 3.0])], 3)
    x = np.array([0.7, -0.4, 1.3])
    expected = np.concatenate([np.exp(x), np.where(x > 0, x, 0.0), np.maximum(x, 0.2),
                               np.arctan2(x, [1.0, 2.0, 3.0])])
    np.testing.assert_allclose(np.ravel(f(x)), expected, rtol=1e-15)
    # and on plain NumPy object arrays of traced values, and plain numbers outside a trace
    g = adjit.trace(lambda x: adjit.sin(np.array([x[0], x[1]], dtype=object)), 2)
    np.testing.assert_allclose(g(np.array([0.3, 0.4])), np.sin([0.3, 0.4]), rtol=1e-15)
    np.testing.assert_allclose(adjit.exp(np.array([0.0, 1.0])), [1.0, math.e])
    assert adjit.where(np.array([True, False]), 1.0, 2.0).tolist() == [1.0, 2.0]


def test_arrays_filled_in_place_trace():
    def fn(x):
        z = np.zeros_like(x)
        z[0] = x[1] * 2
        z[1:] = np.maximum(x[:2], 0.5)
        return z

    f = adjit.trace(fn, 3)
    np.testing.assert_array_equal(f(np.array([0.7, -0.4, 1.3])), [-0.8, 0.7, 0.5])


def test_asarray_makes_plain_object_arrays_trace():
    def fn(x):
        v = adjit.asarray([x[0] * 2, x[1] - 1])
        return np.maximum(v, 0.0).sum()

    f = adjit.trace(fn, 2)
    assert f(np.array([0.3, 0.5])) == pytest.approx(0.6)


@pytest.mark.parametrize("fn, words", [
    (lambda x: np.sort(x), "numpy.sort"),
    (lambda x: np.argmax(x), "numpy.argmax"),
    (lambda x: np.isnan(x), "numpy.isnan"),
    (lambda x: np.where(x > 0), "np.where(condition, a, b)"),
    (lambda x: np.sum(x, where=x > 0), "where="),
    (lambda x: x[0] if x[0] > 0 else x[1], "adjit.where"),
    (lambda x: x if np.any(x > 0) else x, "numpy.any"),
    (lambda x: x > 0 and x < 1, "truth value"),
    (lambda x: (x > 0) + 1.0, "adjit.where"),
    (lambda x: np.add.reduceat(x, [0, 1]), "numpy.add.reduceat"),
    (lambda x: x[x > 0].sum(), "np.where(mask, x, 0.0)"),
    (lambda x: x[:2] + x, "numpy.add does not trace: operands could not be broadcast"),
    (lambda x: np.linalg.eigh(np.outer(x, x)), "numpy.eigh"),
    (lambda x: np.linalg.solve(np.ones((2, 2, 2)), x[:2]), "one square matrix"),
    (lambda x: np.linalg.solve(np.outer(x, x), x[:2]), "right-hand side has shape (2,)"),
    (lambda x: np.zeros(3).__setitem__(0, x[0]), "np.zeros_like(x)"),
    (lambda x: x.astype(np.int64), "astype"),
    (lambda x: x.astype(np.float32), "float32 rounding is not recorded"),
])
def test_unsupported_raise_one_short_trace_error(fn, words):
    with pytest.raises(adjit.TraceError) as e:
        adjit.trace(fn, 3)
    message = str(e.value)
    assert words in message
    assert "adjit traced value" not in message and len(message) < 400, message


def _traced_both_ways(fn, n):
    """``fn`` traced with ufuncs recorded array by array (the fast path) and element by
    element; the two programs' text."""
    from adjit import _numpy

    fast = str(adjit.trace(fn, n))
    _numpy.FAST = False
    try:
        slow = str(adjit.trace(fn, n))
    finally:
        _numpy.FAST = True
    return fast, slow


@pytest.mark.parametrize("name", sorted(CASES))
def test_array_ufuncs_record_the_program_element_by_element_records(name):
    fn, x = CASES[name]
    fast, slow = _traced_both_ways(fn, len(x))
    assert fast == slow


def test_the_fast_path_takes_grids_padding_and_integer_powers():
    n = 4

    def bratu(u):
        U = u.reshape(n, n)
        P = np.zeros((n + 2, n + 2), dtype=object)
        P[:] = 0.0
        P[1:-1, 1:-1] = U
        lap = 4 * U - P[:-2, 1:-1] - P[2:, 1:-1] - P[1:-1, :-2] - P[1:-1, 2:]
        return (lap * 9.0 - 6.0 * np.exp(U) + U**2 + U**2.5 + np.arange(n)).ravel()

    fast, slow = _traced_both_ways(bratu, n * n)
    assert fast == slow
    assert "powi" in fast


def test_the_fast_path_records_each_element_once():
    # A 10,000-element expression records 10,000 instructions per operation either way; the
    # fast path must not record anything twice (e.g. when it declines after reading).
    f = adjit.trace(lambda x: np.sum((1.0 - x) * x + np.where(x > 0.5, x, 0.0)), 10_000)
    text = str(f)
    assert text.count(" = mul ") == 10_000
    assert text.count(" = fcmp.gt ") == 10_000


def test_the_fast_path_reads_every_layout_right():
    # Fortran-order, reversed, transposed and big-endian operands: the fast path records in C
    # order where NumPy's element loop follows memory order, so the two programs list the same
    # instructions in another order; every output must be the same number, bit for bit, and
    # both must equal NumPy on floats.
    X = np.array([[0.3, -1.2, 0.8], [1.1, 0.4, -0.6], [-0.7, 0.9, 0.2]])

    def fn(x):
        F = np.asfortranarray(X)
        B = X.astype(">f8")[:, ::-1]
        outer = np.asfortranarray(x[:, None] * x[None, :])
        return (x[:, None] * F + B - x[::-1][None, :] * outer + outer.T * 2.0).ravel()

    from adjit import _numpy

    fast = adjit.trace(fn, 3)
    _numpy.FAST = False
    try:
        slow = adjit.trace(fn, 3)
    finally:
        _numpy.FAST = True
    assert str(fast).count("\n") == str(slow).count("\n")
    x = np.array([0.7, -0.4, 1.3])
    a, b = adjit.jit(fast)(x), adjit.jit(slow)(x)
    assert a.tobytes() == b.tobytes()
    np.testing.assert_array_equal(a, fn(x))
    ja, jb = adjit.jacobian(fast)(x), adjit.jacobian(slow)(x)
    assert np.asarray(ja).tobytes() == np.asarray(jb).tobytes()


def test_interp_gives_numpys_numbers_at_and_between_breakpoints():
    xp = np.array([0.0, 0.1, 0.3, 0.7, 1.9])
    fp = np.array([0.1, 0.7, 0.2, 0.9, -0.3])
    xs = np.concatenate([xp, (xp[1:] + xp[:-1]) / 3, [-1.0, 5.0, 0.123, 1.0 / 3]])
    f = adjit.trace(lambda x: np.interp(x, xp, fp), len(xs))
    got = np.asarray(f(xs))
    assert got.tobytes() == np.interp(xs, xp, fp).tobytes()
