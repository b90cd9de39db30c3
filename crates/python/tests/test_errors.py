"""Bad inputs raise adjit.Error subclasses with messages that name the argument; nothing
panics or crashes."""

import numpy as np
import pytest

import adjit

F = adjit.trace(lambda x: x[0] * adjit.exp(x[1]) + x[2], 3)
VG = adjit.value_and_grad(F)
X = np.array([0.5, -0.25, 2.0])


def test_wrong_length_and_rank():
    with pytest.raises(adjit.ShapeError, match=r"x has shape \(2,\), expected \(3,\)"):
        VG(np.array([1.0, 2.0]))
    with pytest.raises(adjit.ShapeError, match=r"expected \(B, 3\)"):
        VG(np.ones((4, 2)))
    with pytest.raises(adjit.ShapeError, match=r"\(3,\) or \(B, 3\)"):
        VG(np.ones((2, 2, 3)))
    with pytest.raises(adjit.ShapeError, match="takes"):
        VG(X, X)
    with pytest.raises(adjit.ShapeError, match="v has shape"):
        adjit.jvp(F)(X, np.ones(4))
    assert issubclass(adjit.ShapeError, ValueError)


def test_not_numbers():
    with pytest.raises(adjit.DTypeError, match="string"):
        VG("1,2,3")
    with pytest.raises(adjit.DTypeError, match="dtype"):
        VG(np.array(["a", "b", "c"]))
    with pytest.raises(adjit.DTypeError):
        VG(np.array([1j, 2, 3]))
    with pytest.raises(adjit.DTypeError):
        VG([object(), 1, 2])


def test_conversions_by_default_refusals_when_strict():
    y, g = VG(X)
    # float32, strided, Fortran-ordered and list inputs are converted once: same answer
    # as the float64 input they round to.
    for other in (X.astype(np.float32), np.repeat(X, 2)[::2], list(X), tuple(X)):
        y2, g2 = VG(other)
        ref = VG(np.asarray(other, dtype=np.float64))
        assert y2 == ref[0] and np.array_equal(g2, ref[1])
    strict = adjit.value_and_grad(F, strict=True)
    assert strict(X)[0] == y
    with pytest.raises(adjit.DTypeError, match="float32"):
        strict(X.astype(np.float32))
    with pytest.raises(adjit.DTypeError, match="C-contiguous"):
        strict(np.repeat(X, 2)[::2])


def test_non_finite_policy():
    bad = X.copy()
    bad[1] = np.nan
    with pytest.raises(adjit.NonFiniteError, match=r"x\[1\] is NaN"):
        VG(bad)
    with pytest.raises(adjit.NonFiniteError):
        VG(np.array([[0.0, 1.0, 2.0], [np.inf, 0.0, 0.0]]))
    y, g = adjit.value_and_grad(F, nonfinite="propagate")(bad)
    assert np.isnan(y)
    with pytest.raises(adjit.Error, match="nonfinite"):
        adjit.value_and_grad(F, nonfinite="ignore")


def test_parse_errors_keep_file_line_column(tmp_path):
    path = tmp_path / "bad.ir"
    path.write_text("func @f(%x: f64) -> f64 {\n    %y = mul %x, %nope\n    ret %y\n}\n")
    with pytest.raises(adjit.ParseError, match=rf"{path}:2:\d+"):
        adjit.load(str(path))
    with pytest.raises(adjit.ParseError, match=r"<string>:1:\d+"):
        adjit.parse("func @f(")
    with pytest.raises(adjit.ParseError):
        adjit.load(str(tmp_path / "missing.ir"))


def test_derive_errors():
    two = adjit.trace(lambda x: (x[0], x[1]), 2)
    with pytest.raises(adjit.DeriveError):
        adjit.value_and_grad(two)
    with pytest.raises(adjit.DeriveError):
        adjit.inverse(F)
    with pytest.raises(adjit.TraceError, match="adjit.trace"):
        adjit.value_and_grad(lambda x: x[0])
    with pytest.raises(adjit.Error, match="strategy"):
        adjit.value_and_grad(F, strategy="nonsense")


def test_negative_counts_are_adjit_errors():
    g = adjit.trace(lambda x: x[0] * x[1], 2)
    with pytest.raises(adjit.Error, match="threads must be 0 or more, not -1"):
        adjit.value_and_grad(g, threads=-1)
    with pytest.raises(adjit.Error, match="lanes must be 0 or more, not -2"):
        adjit.jit(g, lanes=-2)
    with pytest.raises(adjit.Error, match="n must be 0 or more"):
        adjit.trace(lambda x: x, -1)
    with pytest.raises(adjit.Error, match="data must be 0 or more"):
        adjit.trace(lambda x, d: x[0], 1, data=-1)
    k = adjit.trace(lambda p, d: p[0] * d[0], 1, data=1)
    with pytest.raises(adjit.Error, match="block_rows must be 0 or more"):
        adjit.map(k, block_rows=-5)
    with pytest.raises(adjit.Error, match="n must be 0 or more"):
        adjit.steps(adjit.trace(lambda x: x[0] * 0.5, 1), -3)


def test_tracing_mistakes():
    with pytest.raises(adjit.TraceError, match="adjit.where"):
        adjit.trace(lambda x: x[0] if x[0] > 0 else -x[0], 1)
    keep = []
    adjit.trace(lambda x: keep.append(x[0]) or x[0], 1)
    with pytest.raises(adjit.TraceError, match="another trace"):
        adjit.trace(lambda x: x[0] + keep[0], 1)
    with pytest.raises(adjit.TraceError, match="returned"):
        adjit.trace(lambda x: "text", 1)
    with pytest.raises(adjit.TraceError):
        adjit.trace(lambda x: float(x[0]), 1)
    # A traced comparison is not a number (Python's own TypeError: no operator takes it).
    with pytest.raises(TypeError):
        adjit.trace(lambda x: (x[0] < 1) + 1.0, 1)


# --- which class a user gets, case by case ---------------------------------------------------

KERNEL = adjit.trace(lambda p, d: p[0] * d[0] + p[1], 2, data=1)
HALF = adjit.trace(lambda x: x[0] * 0.5, 1)


def test_option_values_are_option_errors_and_value_errors():
    assert issubclass(adjit.OptionError, ValueError)
    assert issubclass(adjit.OptionError, adjit.Error)
    cases = [
        (lambda: adjit.value_and_grad(F, nonfinite="ignore"), "nonfinite"),
        (lambda: adjit.value_and_grad(F, strategy="nonsense"), "strategy"),
        (lambda: adjit.value_and_grad(F, threads=-1), "threads"),
        (lambda: adjit.jit(F, lanes=3), "lanes"),
        (lambda: adjit.jit(F, math="fast"), "math"),
        (lambda: adjit._adjit.transform(F, "jacobian", strategy="checkpoint:2"), "strategy"),
        (lambda: adjit.value_and_grad(F, strategy="bytes:8"), "bytes"),
        (lambda: adjit.inverse(adjit.trace(lambda x: (x[1], x[0]), 2), mode="bogus"), "mode"),
        (lambda: F.dump("lump"), "stage"),
        (lambda: adjit.steps(HALF, 0), "steps"),
    ]
    for make, word in cases:
        with pytest.raises(adjit.OptionError, match=word):
            make()


def test_driver_errors_by_case():
    m = adjit.map(KERNEL)
    rows = np.array([[1.0], [2.0]])
    # Wrong lengths are shape errors, naming the argument.
    with pytest.raises(adjit.ShapeError, match="θ|theta"):
        m.value_and_grad(np.ones(3), rows)
    # A function without the shape a driver needs is a derive error, not a shape error.
    no_data = adjit.trace(lambda p: p[0] * p[1], 2)
    with pytest.raises(adjit.DeriveError, match="data") as e:
        adjit.map(no_data).eval_sum(np.ones(2), rows)
    assert not isinstance(e.value, adjit.ShapeError)
    with pytest.raises(adjit.DeriveError, match="state"):
        adjit.steps(adjit.trace(lambda x: (x[0], x[1], x[0] * x[1]), 2), 3)


def test_more_than_the_machine_holds_is_a_memory_error_not_a_shape_error():
    many = adjit.steps(HALF, 10**15)
    with pytest.raises(adjit.MemoryError, match="trajectory") as e:
        many.trajectory(np.array([1.0]))
    assert not isinstance(e.value, adjit.ShapeError)
    assert isinstance(e.value, MemoryError)
