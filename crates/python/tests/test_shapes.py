"""Result shapes as JAX returns them: a traced function's result shape is kept (and pickled),
a Jacobian is (*output shape, n), a batch adds one leading axis."""

import pickle

import numpy as np
import pytest

import adjit

RNG = np.random.default_rng(7)
X = np.array([0.7, -0.4, 1.3])
XB = RNG.normal(size=(5, 3))


def outer(x):
    return np.outer(x, x) + np.sin(x)[:, None]


def scalar(x):
    return np.sum(np.tanh(x) ** 2) + x[0] * x[1]


def _fd_jacobian(fn, x, h=1e-6):
    cols = []
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h
        cols.append((np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def test_matrix_result_keeps_its_shape():
    f = adjit.trace(outer, 3)
    assert f.output_shape == (3, 3) and f.n_outputs == 9
    np.testing.assert_allclose(f(X), outer(X), rtol=1e-15)
    np.testing.assert_allclose(adjit.jit(f)(X), outer(X), rtol=1e-15)
    Y = adjit.jit(f)(XB)
    assert Y.shape == (5, 3, 3)
    np.testing.assert_allclose(Y[2], outer(XB[2]), rtol=1e-15)


def test_jacobian_of_a_matrix_result_is_output_shape_by_n():
    f = adjit.trace(outer, 3)
    J = adjit.jacobian(f)(X)
    assert J.shape == (3, 3, 3)
    np.testing.assert_allclose(J, _fd_jacobian(outer, X), rtol=1e-7, atol=1e-8)
    JB = adjit.jacobian(f)(XB)
    assert JB.shape == (5, 3, 3, 3)
    np.testing.assert_allclose(JB[4], _fd_jacobian(outer, XB[4]), rtol=1e-7, atol=1e-8)


def test_jvp_vjp_values_are_shaped():
    f = adjit.trace(outer, 3)
    v = np.array([0.3, -1.0, 0.5])
    y, jv = adjit.jvp(f)(X, v)
    assert y.shape == (3, 3) and jv.shape == (3, 3)
    np.testing.assert_allclose(jv, _fd_jacobian(outer, X) @ v, rtol=1e-7, atol=1e-8)
    yb, jvb = adjit.jvp(f)(XB, v)
    assert yb.shape == (5, 3, 3) and jvb.shape == (5, 3, 3)
    w = RNG.normal(size=9)
    y, g = adjit.vjp(f)(X, w)
    assert y.shape == (3, 3) and g.shape == (3,)
    np.testing.assert_allclose(g, w @ _fd_jacobian(outer, X).reshape(9, 3), rtol=1e-7)
    # w may also take the output's shape, one point or a batch
    np.testing.assert_array_equal(adjit.vjp(f)(X, w.reshape(3, 3))[1], g)
    WB = RNG.normal(size=(5, 3, 3))
    yb, gb = adjit.vjp(f)(XB, WB)
    assert yb.shape == (5, 3, 3) and gb.shape == (5, 3)
    np.testing.assert_array_equal(gb[1], adjit.vjp(f)(XB[1], WB[1])[1])


def test_vjp_of_one_output_takes_a_batch_of_weights():
    f = adjit.trace(scalar, 3)
    y, g = adjit.vjp(f)(XB, np.arange(5.0))
    np.testing.assert_allclose(g, np.arange(5.0)[:, None] * adjit.grad(f)(XB), rtol=1e-15)
    # one point: w of shape (1,) or ()
    for w in (np.array([2.0]), 2.0):
        np.testing.assert_allclose(adjit.vjp(f)(X, w)[1], 2 * adjit.grad(f)(X), rtol=1e-15)


def test_one_output_jacobian_is_a_vector_and_hessian_a_matrix():
    f = adjit.trace(scalar, 3)
    assert f.output_shape == ()
    J = adjit.jacobian(f)(X)
    assert J.shape == (3,)
    np.testing.assert_allclose(J, adjit.grad(f)(X), rtol=1e-15)
    np.testing.assert_allclose(J, _fd_jacobian(scalar, X), rtol=1e-7)
    assert adjit.jacobian(f)(XB).shape == (5, 3)
    assert adjit.hessian(f)(X).shape == (3, 3)
    assert adjit.hessian(f)(XB).shape == (5, 3, 3)
    y, jv = adjit.jvp(f)(X, X)
    assert isinstance(y, float) and isinstance(jv, float)
    out = np.empty(3)
    assert adjit.jacobian(f)(X, out=out) is out


def test_a_one_element_list_stays_a_vector():
    f = adjit.trace(lambda x: [x[0] * x[1]], 2)
    assert f.output_shape == (1,)
    assert f(np.array([2.0, 3.0])).shape == (1,)
    assert adjit.jacobian(f)(np.array([2.0, 3.0])).shape == (1, 2)


def test_ragged_results_are_flat():
    f = adjit.trace(lambda x: (x[0], x[1:] * 2), 3)
    assert f.output_shape == (3,)


def test_parsed_functions_keep_flat_shapes():
    f = adjit.parse("func @two(%a: f64, %b: f64) -> (f64, f64) {\n"
                    "  %p = mul %a, %b\n  %s = add %a, %b\n  ret %p, %s\n}")
    assert f.output_shape == (2,)
    assert adjit.jacobian(f)(np.array([2.0, 3.0])).shape == (2, 2)


@pytest.mark.parametrize("fn, shape", [(outer, (3, 3)), (scalar, ())])
def test_pickle_keeps_the_output_shape(fn, shape):
    f = pickle.loads(pickle.dumps(adjit.trace(fn, 3)))
    assert f.output_shape == shape
    np.testing.assert_allclose(f(X), fn(X), rtol=1e-15)


def test_len_is_the_instruction_count():
    f = adjit.trace(lambda x: x[0] * x[1] + 1.0, 2)
    assert len(f) == f.n_instructions == 2
    assert "2 instructions" in repr(f)


def test_large_programs_warn_once_with_count_and_alternative():
    def long_chain(x):
        s = x[0]
        for _ in range(50_001):
            s = s * x[1] + 1.0
        return s

    with pytest.warns(adjit.PerformanceWarning) as record:
        f = adjit.trace(long_chain, 2)
    assert len(record) == 1 and record[0].filename == __file__
    message = str(record[0].message)
    assert str(len(f)) in message and "adjit.map" in message and " s and " in message
    with pytest.warns(adjit.PerformanceWarning):
        adjit.parse(str(f))


def test_small_programs_do_not_warn(recwarn):
    adjit.trace(lambda x: np.sum(x**2), 1000)
    assert not [w for w in recwarn if issubclass(w.category, adjit.PerformanceWarning)]
