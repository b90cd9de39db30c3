"""The stubs give transforms real return types: mypy accepts typed use of adjit and rejects a
wrong one (skipped where mypy is not installed)."""

import textwrap

import pytest

GOOD = """
    import numpy as np
    import numpy.typing as npt
    import adjit

    f = adjit.trace(lambda x: np.sum(x ** 2), 3)
    shape: tuple[int, ...] = f.output_shape
    size: int = len(f)
    x = np.ones(3)
    y, g = adjit.value_and_grad(f)(x)
    grad: npt.NDArray[np.float64] = g
    value: float | npt.NDArray[np.float64] = y
    gg: npt.NDArray[np.float64] = adjit.grad(f)(x)
    J: npt.NDArray[np.float64] = adjit.jacobian(f)(x)
    H: npt.NDArray[np.float64] = adjit.hessian(f)(x)
    sparse_h = adjit.hessian(f, sparse=True)(x)
    Hv: npt.NDArray[np.float64] = adjit.hvp(f)(x, x)
    y2, jv = adjit.jvp(f)(x, x)
    fx: float | npt.NDArray[np.float64] = f(x)
    b = adjit.where(True, 1.0, 2.0)
"""

BAD = """
    import numpy as np
    import adjit

    f = adjit.trace(lambda x: np.sum(x ** 2), 3)
    wrong: str = adjit.grad(f)(np.ones(3))
"""


def _mypy(tmp_path, source=None):
    api = pytest.importorskip("mypy.api")
    target = ["-p", "adjit"]
    if source is not None:
        path = tmp_path / "use_adjit.py"
        path.write_text(textwrap.dedent(source))
        target = [str(path)]
    out, err, status = api.run(["--no-incremental", "--cache-dir", str(tmp_path / "cache"),
                                "--python-version", "3.10", *target])
    return out + err, status


def test_the_package_checks(tmp_path):
    out, status = _mypy(tmp_path)
    assert status == 0, out


def test_typed_use_checks(tmp_path):
    out, status = _mypy(tmp_path, GOOD)
    assert status == 0, out


def test_wrong_use_is_reported(tmp_path):
    out, status = _mypy(tmp_path, BAD)
    assert status == 1 and "ndarray" in out and "str" in out, out


BAD_OPTIONS = """
    import adjit

    f = adjit.trace(lambda x: x[0] * x[1], 2)
    adjit.jit(f, engine="gpu")
    adjit.value_and_grad(f, nonfinite="ignore")
    adjit.inverse(f, mode="sideways")
    adjit.hvp(f, math="fast")
    f.dump("lump")
"""


def test_option_values_are_literal_types(tmp_path):
    out, status = _mypy(tmp_path, BAD_OPTIONS)
    assert status == 1 and "Found 5 errors" in out, out
    for word in ("gpu", "ignore", "sideways", "fast", "lump"):
        assert f"'{word}'" in out, (word, out)


BAD_SHARED_OPTIONS = """
    import adjit

    f = adjit.trace(lambda x: x[0] * x[1], 2)
    adjit.grad(f, threads="2")
    adjit.jacobian(f, sparse=True, lanes=None)
    adjit.inverse(f, strict="yes")
    adjit.jvp(f, strategy="tape")
"""


def test_every_transform_takes_the_one_option_set(tmp_path):
    # Wrong types of the shared options, and an option a transform does not take (jvp has
    # no strategy), are errors for every transform alike.
    out, status = _mypy(tmp_path, BAD_SHARED_OPTIONS)
    assert status == 1 and "Found 4 errors" in out, out


def test_the_option_set_is_the_native_one():
    # The TypedDict lists exactly the native transform's options besides the per-transform
    # ones (strategy, sparse, mode), so a new native option cannot be forgotten here.
    import inspect

    import adjit

    shared = set(adjit.TransformOptions.__annotations__)
    native = set(inspect.signature(adjit._adjit.transform).parameters)
    assert native - {"f", "what", "strategy", "sparse", "mode"} == shared
