"""adjit: straight-line numeric programs to fast native derivative code.

Trace an ordinary Python function once, compile its derivatives once (milliseconds, no C
compiler), call them millions of times on NumPy arrays::

    import numpy as np, adjit

    def rosen(x):
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2

    f = adjit.trace(rosen, 2)            # an adjit.Function; str(f) is its IR
    vg = adjit.value_and_grad(f)         # compiled once
    y, g = vg(np.array([0.5, 2.0]))      # one point: a float and an ndarray
    Y, G = vg(np.random.rand(100_000, 2))  # a batch: shapes (B,) and (B, 2), native threads

The traced ``x`` is an ``adjit.TracedArray``: vectorised NumPy code (broadcasting, ``@``,
``np.maximum``, ``np.where``, reductions, ``&``/``|``/``~`` on comparisons) traces, and the
result's shape is kept (``f.output_shape``); see docs/numpy.md. ``len(f)`` is the instruction
count; above 10^5 tracing warns (``adjit.PerformanceWarning``).

Every transform returns a callable. A 1-D ``x`` is one point; a 2-D ``x`` of shape ``(B, n)``
is a batch over the leading axis, run natively over threads with the GIL released.
Aligned C-contiguous float64 arrays are read in place; other numeric inputs (any order, stride,
alignment, byte order, float32, lists) are copied once (``strict=True`` refuses them
instead). ``out=`` must be a writeable, aligned, C-contiguous float64 array of the result's
shape. Ctrl-C stops a long batch between blocks (``out=`` is then left untouched). NaN or infinite inputs raise ``NonFiniteError`` unless
``nonfinite="propagate"``. ``lanes=2`` also compiles two-point (SIMD) kernels for batches
(bitwise the same results). ``math="inline"`` emits adjit's own ``exp``, ``expm1``, ``log``,
``tanh`` and ``erf`` (≤ 1 ulp) in the code instead of calling the C library, vectorised in
two-lane kernels; results may then differ from the default by the routines' rounding.
Every error is an ``adjit.Error``; a result too large for the machine is an
``adjit.MemoryError``, raised before anything is allocated. ``adjit.dask`` (loaded on first
use) runs mapped kernels over Dask arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Optional, Tuple, TypedDict, Union, overload

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    # Only for the checker (mypy ships it): no runtime dependency.
    from typing_extensions import Unpack

from . import _adjit
from ._adjit import (  # noqa: F401  (re-exported)
    Bool,
    Function,
    Map,
    Steps,
    Transform,
    Var,
    __version__,
    load,
    parse,
    steps,
    trace,
)
from ._numpy import TracedArray, asarray, elementwise as _elementwise  # noqa: F401
from ._numpy import where  # noqa: F401
from ._adjit import map as _map
from ._stats import StepStats  # noqa: F401
from ._errors import (  # noqa: F401
    DeriveError,
    DTypeError,
    Error,
    MemoryError,
    NonFiniteError,
    OptionError,
    ParseError,
    PerformanceWarning,
    ShapeError,
    SingularError,
    TraceError,
)

# Every public name except those that would shadow a built-in on `from adjit import *`
# (MemoryError, map, abs, pow): those stay reachable as attributes, `adjit.abs(x)`.
__all__ = [
    "Error", "ParseError", "TraceError", "ShapeError", "DTypeError", "NonFiniteError",
    "DeriveError", "OptionError", "SingularError", "Function", "Transform", "Map", "Steps",
    "Var", "Bool", "trace", "parse", "load", "jit", "value_and_grad", "grad", "jvp", "vjp",
    "hvp", "jacobian", "hessian", "inverse", "steps", "where", "sin", "cos", "tan", "exp",
    "log", "sqrt", "tanh", "sinh", "cosh", "asin", "acos", "atan", "atan2", "log1p", "expm1",
    "erf", "floor", "ceil", "minimum", "maximum", "dask", "TracedArray", "asarray",
    "PerformanceWarning", "StepStats", "TransformOptions",
]


# adjit's scalar functions, elementwise (under NumPy broadcasting) on arrays, lists and tuples.
sin = _elementwise(_adjit.sin, "sin")
cos = _elementwise(_adjit.cos, "cos")
tan = _elementwise(_adjit.tan, "tan")
exp = _elementwise(_adjit.exp, "exp")
log = _elementwise(_adjit.log, "log")
sqrt = _elementwise(_adjit.sqrt, "sqrt")
tanh = _elementwise(_adjit.tanh, "tanh")
sinh = _elementwise(_adjit.sinh, "sinh")
cosh = _elementwise(_adjit.cosh, "cosh")
asin = _elementwise(_adjit.asin, "asin")
acos = _elementwise(_adjit.acos, "acos")
atan = _elementwise(_adjit.atan, "atan")
log1p = _elementwise(_adjit.log1p, "log1p")
expm1 = _elementwise(_adjit.expm1, "expm1")
erf = _elementwise(_adjit.erf, "erf")
abs = _elementwise(_adjit.abs, "abs")  # noqa: A001
floor = _elementwise(_adjit.floor, "floor")
ceil = _elementwise(_adjit.ceil, "ceil")
pow = _elementwise(_adjit.pow, "pow")  # noqa: A001
atan2 = _elementwise(_adjit.atan2, "atan2")
minimum = _elementwise(_adjit.minimum, "minimum")
maximum = _elementwise(_adjit.maximum, "maximum")


def __getattr__(name: str) -> Any:
    # `adjit.dask` on first use, so that `import adjit` does not import Dask.
    if name == "dask":
        import importlib

        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The accepted values of the string options (anything else raises OptionError). `strategy`
# stays `str`: it takes a number too ("checkpoint:S", "bytes:N").
Engine = Literal["jit", "interp"]
NonFinite = Literal["raise", "propagate"]
Math = Literal["auto", "libm", "inline"]
InverseMode = Literal["reverse", "forward", "dense"]

# What each transform returns: a float where one point of one output gives one number, an
# array where a batch (or several outputs) gives several.
FloatArray = npt.NDArray[np.float64]
FloatOrArray = Union[float, FloatArray]


def _function(f: Any, what: str) -> Function:
    if isinstance(f, Function):
        return f
    if callable(f):
        raise TraceError(
            f"adjit.{what} takes an adjit.Function: trace the Python function first, "
            f"e.g. adjit.{what}(adjit.trace(fn, n))"
        )
    raise TraceError(f"adjit.{what} takes an adjit.Function, not {type(f).__name__}")


class TransformOptions(TypedDict, total=False):
    """The options every transform takes, each with its default:

    ``engine="jit"`` (native code; ``"interp"`` runs the reference interpreter),
    ``strict=False`` (``True`` refuses inputs that would be copied), ``nonfinite="raise"``
    (``"propagate"`` lets NaN and infinities through), ``threads=0`` (batches: all cores when
    they pay; ``N``: at most N threads), ``lanes=1`` (``2`` also compiles two-point kernels for
    batches), ``math="auto"`` (``"inline"``: adjit's own elementary functions in the code) and
    ``rolled=None`` (a traced loop is differentiated and compiled as its loops, never
    expanded, from 2·10⁵ operations on, and a vectorised NumPy-style trace from 2·10⁶, since
    below that the usual pipeline fuses its stages into one loop; ``True`` from 2·10⁴,
    ``False`` never; for ``jit``, ``value_and_grad``, ``grad``, ``jvp``, ``vjp`` and ``hvp``:
    several times faster to compile and a third of the memory, calls as fast).
    One set, checked by mypy, so no transform can drift from the others."""

    engine: Engine
    strict: bool
    nonfinite: NonFinite
    threads: int
    lanes: int
    math: Math
    rolled: Optional[bool]


def _transform(f: Any, what: str, **options: Any) -> Transform[Any]:
    return _adjit.transform(_function(f, what), what, **options)


def jit(f: Function, **options: Unpack[TransformOptions]) -> Transform[FloatOrArray]:
    """The function itself, compiled: ``jit(f)(x)`` is ``f(x)`` (a float for one output, an
    array for several); ``x`` of shape ``(B, n)`` gives ``(B,)`` or ``(B, m)``. Options:
    ``TransformOptions``."""
    return _transform(f, "jit", **options)


def value_and_grad(f: Function, *, strategy: str = "tape",
                   **options: Unpack[TransformOptions]) -> Transform[Tuple[FloatOrArray, FloatArray]]:
    """``vg(x) -> (y, g)``: the value and gradient of a function with one float output.

    ``strategy`` is the reverse sweep's memory plan: ``"tape"`` (store every intermediate),
    ``"checkpoint:S"`` (Revolve with S stored states), ``"bytes:N"`` (a memory budget) or
    ``"uniform"``. A batch ``x`` of shape ``(B, n)`` gives ``Y`` of shape ``(B,)`` and ``G`` of
    ``(B, n)`` (views of one result array). ``out=`` takes the gradient's buffer for one
    point, and a ``(B, 1 + n)`` array (value, then gradient, per row) for a batch. Other
    options: ``TransformOptions``.
    """
    return _transform(f, "value_and_grad", strategy=strategy, **options)


def grad(f: Function, *, strategy: str = "tape",
         **options: Unpack[TransformOptions]) -> Transform[FloatArray]:
    """``g(x) -> ∇f(x)`` of a function with one float output (see ``value_and_grad``)."""
    return _transform(f, "grad", strategy=strategy, **options)


def jvp(f: Function, **options: Unpack[TransformOptions]) -> Transform[Tuple[FloatOrArray, FloatOrArray]]:
    """Forward mode: ``t(x, v) -> (f(x), J·v)`` (floats for one output, else arrays)."""
    return _transform(f, "jvp", **options)


def vjp(f: Function, *, strategy: str = "tape",
        **options: Unpack[TransformOptions]) -> Transform[Tuple[FloatOrArray, FloatArray]]:
    """Reverse mode: ``t(x, w) -> (f(x), Jᵀ·w)`` under a memory ``strategy``."""
    return _transform(f, "vjp", strategy=strategy, **options)


def hvp(f: Function, **options: Unpack[TransformOptions]) -> Transform[FloatArray]:
    """Hessian-vector product of a function with one float output: ``t(x, v) -> H·v``."""
    return _transform(f, "hvp", **options)


@overload
def jacobian(f: Function, *, sparse: Literal[False] = False,
             **options: Unpack[TransformOptions]) -> Transform[FloatArray]: ...


@overload
def jacobian(f: Function, *, sparse: Literal[True],
             **options: Unpack[TransformOptions]) -> Transform[Any]: ...


def jacobian(f: Function, *, sparse: bool = False,
             **options: Unpack[TransformOptions]) -> Transform[Any]:
    """``J(x)``: an ``(m, n)`` array, or with ``sparse=True`` a ``scipy.sparse.csr_matrix``
    of the structural nonzeros computed by one colored program."""
    return _transform(f, "jacobian", sparse=sparse, **options)


@overload
def hessian(f: Function, *, sparse: Literal[False] = False,
            **options: Unpack[TransformOptions]) -> Transform[FloatArray]: ...


@overload
def hessian(f: Function, *, sparse: Literal[True],
            **options: Unpack[TransformOptions]) -> Transform[Any]: ...


def hessian(f: Function, *, sparse: bool = False,
            **options: Unpack[TransformOptions]) -> Transform[Any]:
    """``H(x)`` of a function with one float output: ``(n, n)``, or with ``sparse=True`` a
    ``scipy.sparse.csr_matrix`` (both triangles) from one star-colored program."""
    return _transform(f, "hessian", sparse=sparse, **options)


def inverse(f: Function, *, mode: InverseMode = "reverse",
            **options: Unpack[TransformOptions]) -> Transform[FloatArray]:
    """Inverse products of a square function (Pearlmutter & Siskind): ``t(x, v)`` gives
    ``J⁻¹·v`` with ``mode="reverse"`` (a Newton step without forming J), ``J⁻ᵀ·v`` with
    ``mode="forward"``, or ``J⁻¹·v`` by a dense LU with ``mode="dense"``."""
    return _transform(f, "inverse", mode=mode, **options)


def map(kernel: Function, *, threads: int = 0, block_rows: int = 1024,  # noqa: A001
        lanes: int = 1) -> Map:
    """A kernel ``k(θ, row)`` (θ its differentiated inputs, the row its data inputs) mapped
    over rows of shape ``(R, n_data)``: ``m.value_and_grad(theta, rows)`` (summed),
    ``m.eval(theta, rows)`` (per row), ``m.eval_sum``, ``m.vjp`` (per row), ``m.hvp``.
    Sums run in blocks of ``block_rows`` rows in order: results do not depend on
    ``threads``."""
    return _map(_function(kernel, "map"), threads=threads, block_rows=block_rows, lanes=lanes)

