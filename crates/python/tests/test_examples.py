"""The Python examples run and reach their answers (small sizes)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python"


def example(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_minimize_reaches_the_minimum():
    pytest.importorskip("scipy")
    result = example("minimize").main(20)
    assert result.fun < 1e-8 and np.max(np.abs(result.x - 1)) < 1e-3


def test_newton_two_ways_agree():
    pytest.importorskip("scipy")
    u, v = example("newton").main(50)
    assert np.max(np.abs(u - v)) < 1e-12 and 0.1 < u.max() < 0.2


def test_dask_fit_recovers_the_parameters():
    pytest.importorskip("distributed")
    fit = example("dask_fit").main(20_000)
    np.testing.assert_allclose(fit.x, [1.7, 0.8, 0.3], atol=0.02)


def test_logistic_regression_matches_newton():
    pytest.importorskip("scipy")
    theta, reference = example("logistic").main(200)
    np.testing.assert_allclose(theta, reference, atol=1e-7)


def test_bratu_2d_converges_with_the_exact_sparse_jacobian():
    pytest.importorskip("scipy")
    u, jacobian_error, residual = example("bratu2d").main(10)
    assert residual < 1e-9 and jacobian_error < 1e-14 and 0.5 < u.max() < 1.0


def test_tanh_network_hessian_matches_finite_differences():
    H, fd = example("tanh_hessian").main(3)
    np.testing.assert_allclose(H, fd, atol=1e-6 * np.max(np.abs(H)))
    np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-14)


def test_batch_of_1e5_points_matches_numpy():
    Y, G, err = example("batch").main(100_000)
    assert Y.shape == (100_000,) and G.shape == (100_000, 3) and err < 1e-12
