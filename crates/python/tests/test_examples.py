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
