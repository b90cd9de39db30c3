"""NumPy arrays of traced values.

``adjit.trace`` hands the traced function a ``TracedArray``: a NumPy object array of traced
values whose ufuncs (``+``, ``np.maximum``, comparisons, ``&``, reductions such as ``np.sum``
and ``x.max()``, ``@``) and a few functions (``np.where``, ``np.round``) are applied one element
at a time by the scalar operations of ``adjit.Var`` and ``adjit.Bool``, under NumPy's
broadcasting. Float arrays, Python numbers and traced scalars mix in freely. Results that hold
traced values are ``TracedArray`` again, so they keep tracing. Anything adjit cannot record
raises one short ``adjit.TraceError`` that names the operation (never printing the array).
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from . import _adjit, _interp, _linalg
from ._errors import Error, TraceError

_Traced = (_adjit.Var, _adjit.Bool)

# Whether ufunc calls and 1-D reductions on traced arrays are recorded by one call into adjit
# (`_fast_call`, `_fast_reduce`) rather than element by element. The tests turn it off to show
# both paths record the same program.
FAST = True


class TracedArray(np.ndarray):
    """A NumPy object array of adjit traced values (what ``adjit.trace`` passes in)."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return array_ufunc(ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return array_function(func, types, args, kwargs)

    def __getitem__(self, index: Any) -> Any:
        if _is_traced_mask(index):
            raise TraceError(
                "indexing with a traced boolean mask selects a number of elements that depends "
                "on the values: use np.where(mask, x, 0.0) (then sum), which keeps the shape"
            )
        return super().__getitem__(index)

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        """A copy for a 64-bit float (or object) dtype, which traced values already are;
        other dtypes would need the values, or round them (float32), and do not trace."""
        try:
            kind = np.dtype(dtype)
        except TypeError:
            kind = None
        if kind is not None and kind in (np.dtype(np.float64), np.dtype(object)):
            return self.copy()
        raise TraceError(
            f"astype({dtype!r}) of traced values: adjit traces float64 numbers, so only "
            "astype(float) / astype(np.float64) traces (an integer or bool dtype would need "
            "the values; float32 rounding is not recorded)"
        )

    def __bool__(self) -> bool:
        raise TraceError(
            "an array of traced values has no truth value while tracing: use "
            "np.where(condition, a, b) (or adjit.where) to choose values"
        )

    def __float__(self) -> float:
        raise TraceError("an array of traced values has no number at trace time")


def array_function(func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    """A NumPy function (``np.where``, ``np.sum``, ``np.dot``, ...) with traced values or
    arrays of them among its arguments."""
    name = getattr(func, "__name__", str(func))
    special = _FUNCTIONS.get(name)
    if special is not None:
        return special(*args, **kwargs)
    if name in _VALUE_DEPENDENT:
        raise TraceError(
            f"numpy.{name} depends on the values, which a trace does not have: "
            f"{_VALUE_DEPENDENT[name]}"
        )
    implementation = getattr(func, "_implementation", None)
    if implementation is None:
        raise TraceError(f"numpy.{name} is not traced")
    try:
        result = implementation(*args, **kwargs)
    except Error:
        raise
    except (TypeError, ValueError, AttributeError) as e:
        raise TraceError(_short(f"numpy.{name} does not trace", e)) from None
    return _wrap(result)


def _is_traced_mask(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, _Traced) or (isinstance(p, np.ndarray) and p.dtype == object)
               for p in parts)


def _short(what: str, e: BaseException) -> str:
    """``what`` and the first line of NumPy's message, cut short (it may hold an array)."""
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    if len(first) > 120:
        first = first[:117] + "..."
    return f"{what}: {first}"


def asarray(obj: Any) -> TracedArray:
    """``obj`` (a list, tuple or array of traced values and numbers) as a ``TracedArray``, so
    that NumPy functions on it trace; ``np.array([...])`` of traced values gives a plain
    object array, whose ``np.maximum`` and comparisons NumPy evaluates itself."""
    arr = np.asarray(obj, dtype=object)
    return arr.view(TracedArray)


def _wrap(result: Any) -> Any:
    """Object arrays (which may hold traced values) as ``TracedArray``; tuples and lists
    element by element; everything else unchanged."""
    if isinstance(result, np.ndarray):
        if result.dtype == object and type(result) is not TracedArray:
            return result.view(TracedArray)
        return result
    if isinstance(result, tuple):
        return tuple(_wrap(r) for r in result)
    if isinstance(result, list):
        return [_wrap(r) for r in result]
    return result


def _plain(x: Any, what: str) -> Any:
    """An input of an elementwise operation: traced values and numbers as they are, arrays
    as plain ``ndarray`` (object arrays stay object), lists and tuples as object arrays."""
    if isinstance(x, _Traced):
        # A 0-d object array: NumPy would otherwise hand the element loop back to the
        # traced value's own __array_ufunc__.
        arr = np.empty((), dtype=object)
        arr[()] = x
        return arr
    if isinstance(x, (bool, int, float, np.generic)):
        return x
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "biufO":
            raise TraceError(f"{what} takes numbers and traced values, not an array of {x.dtype}")
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return np.asarray(x, dtype=object)
    raise TraceError(f"{what} takes numbers and traced values, not {type(x).__name__}")


def _element(ufunc: Any) -> Callable[..., Any]:
    """``ufunc`` on one element of each input (``adjit.Var`` and ``adjit.Bool`` record it)."""

    def apply(*elements: Any) -> Any:
        # np.bool_ has no traced meaning of its own: plain bools keep & | ~ on comparisons.
        return ufunc(*[bool(e) if isinstance(e, np.bool_) else e for e in elements])

    return apply


_OK_KWARGS = {"dtype", "casting", "subok", "order", "signature"}


def array_ufunc(ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """A NumPy ufunc call with traced values among its inputs, one element at a time."""
    name = ufunc.__name__
    what = f"numpy.{name}" if method == "__call__" else f"numpy.{name}.{method}"
    out = kwargs.pop("out", None)
    where = kwargs.pop("where", True)
    if where is not True:
        raise TraceError(f"{what}(where=...) is not traced: use np.where(c, a, b) on the result")
    for k in kwargs:
        if k not in _OK_KWARGS and not (method in ("reduce", "accumulate")
                                       and k in ("axis", "keepdims", "initial")):
            raise TraceError(f"{what}({k}=...) is not traced")
    plain = [_plain(x, what) for x in inputs]
    if ufunc.signature is not None:
        # Generalised ufuncs (matmul, vecdot, matvec): NumPy's object loops compute them with
        # the elements' + and *, which record.
        if method != "__call__":
            raise TraceError(f"{what} is not traced")
        obj = [p if isinstance(p, np.ndarray) else np.asarray(p, dtype=object) for p in plain]
        try:
            result = ufunc(*obj)
        except Error:
            raise
        except (TypeError, ValueError) as e:
            raise TraceError(_short(what + " does not trace", e)) from None
    else:
        elementwise = np.frompyfunc(_element(ufunc), ufunc.nin, ufunc.nout, identity=None)
        if method not in ("__call__", "reduce", "accumulate", "outer"):
            raise TraceError(f"{what} is not traced: write it with indexing and the plain ufunc")
        try:
            fast = None
            if not FAST:
                pass
            elif method == "__call__" and ufunc.nout == 1:
                fast = _fast_call(name, plain)
            elif method == "reduce" and ufunc.nin == 2:
                fast = _fast_reduce(name, plain[0], **kwargs)
            if fast is not None:
                result = fast
            elif method == "__call__":
                result = elementwise(*plain)
            elif method == "reduce":
                result = _reduce(elementwise, plain[0], what, **kwargs)
            elif method == "accumulate":
                result = elementwise.accumulate(plain[0], axis=kwargs.get("axis", 0))
            else:
                result = elementwise.outer(*plain)
        except Error:
            raise
        except (TypeError, ValueError) as e:
            raise TraceError(_short(what + " does not trace", e)) from None
    result = _wrap(result)
    if out is not None:
        target = out[0] if isinstance(out, tuple) else out
        try:
            np.asarray(target).view(np.ndarray)[...] = result
        except Error:
            raise
        except (TypeError, ValueError) as e:
            raise TraceError(_short(f"{what}(out=...) does not trace", e)) from None
        return target
    return result


def _fast_call(name: str, plain: list[Any]) -> Any:
    """The ufunc ``name`` on ``plain`` (the inputs as ``_plain`` gives them) recorded by one
    call into adjit for every element, or ``None`` when that path does not take it (then the
    element-by-element loop runs, as before). Same instructions as that loop, in C order
    (the loop's own order for C-ordered operands; it follows memory order for others). The
    loop costs a few microseconds of Python per element, this path a tenth of that."""
    arrays = [p for p in plain if isinstance(p, np.ndarray) and p.ndim > 0]
    if not arrays or any(a.dtype.kind not in "iufO" for a in arrays):
        return None
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        return None
    n = int(np.prod(shape))
    if n == 0:
        return None
    inputs: list[Any] = []
    for p in plain:
        if isinstance(p, np.ndarray) and p.ndim > 0:
            full = np.broadcast_to(p, shape)
            if full.dtype.kind in "iu":
                # Integer elements reach the loop as Python ints: the same numbers as floats,
                # except as np.power's exponents, which this path does not take from arrays.
                full = full.astype(np.float64)
            inputs.append(full.ravel(order="C").tolist())
        elif isinstance(p, np.ndarray):
            inputs.append(p[()])
        else:
            inputs.append(p)
    out = _adjit._elementwise(name, inputs)
    if out is None:
        return None
    return np.fromiter(out, dtype=object, count=n).reshape(shape)


def _fast_reduce(name: str, x: Any, axis: Any = 0, keepdims: bool = False,
                 initial: Any = np._NoValue, **_ignored: Any) -> Any:
    """``np.<name>.reduce`` of a 1-D traced array by one call into adjit (NumPy's left fold),
    or ``None`` when that path does not take it."""
    if not isinstance(x, np.ndarray) or x.ndim != 1 or x.size == 0 or keepdims:
        return None
    if axis not in (0, -1, None, (0,)) or initial is not np._NoValue:
        return None
    if x.dtype.kind != "O":
        return None
    return _adjit._reduce_1d(name, x.tolist())


def _reduce(elementwise: Any, x: Any, what: str, axis: Any = 0, keepdims: bool = False,
            initial: Any = np._NoValue, **_ignored: Any) -> Any:
    arr = np.asarray(x, dtype=object) if not isinstance(x, np.ndarray) else x
    if arr.size == 0 and initial is np._NoValue:
        raise TraceError(f"{what} of an empty array needs initial=")
    if initial is np._NoValue:
        return elementwise.reduce(arr, axis=axis, keepdims=keepdims)
    return elementwise.reduce(arr, axis=axis, keepdims=keepdims, initial=initial)


def _where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None or y is None:
        raise TraceError(
            "numpy.where(condition) with one argument gives indices, which depend on the "
            "values: use np.where(condition, a, b)"
        )
    return where(condition, x, y)


def _select_one(c: Any, a: Any, b: Any) -> Any:
    if isinstance(c, (bool, np.bool_)):
        return a if c else b
    if isinstance(c, (int, float, np.number)):
        # NumPy's truth of a number: nonzero (NaN included).
        return a if c != 0 else b
    if isinstance(c, _adjit.Var):
        # A traced number as a condition, as np.sinc's where(x, x, eps): nonzero, which NaN is.
        c = c != 0.0
    return _adjit.where(c, a, b)


def where(c: Any, a: Any, b: Any) -> Any:
    """``a`` where ``c`` holds, else ``b``, elementwise under broadcasting when any argument is
    an array (``adjit.where``)."""
    if not any(isinstance(v, (np.ndarray, list, tuple)) for v in (c, a, b)):
        return _select_one(c, a, b)
    args = [_plain(v, "adjit.where") for v in (c, a, b)]
    return _wrap(np.frompyfunc(_select_one, 3, 1)(*args))


def _round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    if out is not None:
        raise TraceError("numpy.round(out=...) is not traced: use the returned array")
    x = _plain(a, "numpy.round")
    return _wrap(np.frompyfunc(lambda e: builtins.round(e, decimals) if isinstance(e, _adjit.Var)
                               else np.round(e, decimals), 1, 1)(x))


def elementwise(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` (one of adjit's scalar functions) applied elementwise, under broadcasting, when
    any argument is an array, list or tuple."""

    def lifted(*args: Any) -> Any:
        if any(isinstance(a, (np.ndarray, list, tuple)) for a in args):
            plain = [_plain(a, f"adjit.{name}") for a in args]
            return _wrap(np.frompyfunc(fn, len(args), 1)(*plain))
        return fn(*args)

    lifted.__name__ = name
    lifted.__qualname__ = name
    lifted.__doc__ = fn.__doc__
    return lifted


def _sinc(x: Any) -> Any:
    """``np.sinc`` as NumPy defines it, ``sin(y)/y`` with ``y = where(πx, πx, eps)``, also for
    one traced value (NumPy's own code reads ``.dtype`` of ``π·x``, which a traced value
    has not)."""
    y = np.pi * _plain(x, "numpy.sinc")
    y = where(y, y, np.finfo(np.float64).eps)
    return _wrap(np.sin(y) / y)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "where": _where,
    "sinc": _sinc,
    # np.linalg, by elimination with pivots chosen by traced comparisons (see _linalg)
    "solve": _linalg.solve,
    "inv": _linalg.inv,
    "det": _linalg.det,
    "interp": _interp.interp,
    "round": _round,
    "around": _round,
    "round_": _round,
}

_VALUE_DEPENDENT = {
    "argmax": "use np.max (or adjit.where to pick values)",
    "argmin": "use np.min (or adjit.where to pick values)",
    "argsort": "sorting depends on values; write comparisons with np.where",
    "sort": "sorting depends on values; write comparisons with np.where",
    "nonzero": "use np.where(condition, a, b)",
    "argwhere": "use np.where(condition, a, b)",
    "flatnonzero": "use np.where(condition, a, b)",
    "unique": "use np.where(condition, a, b)",
    "any": "combine comparisons with | and choose with np.where",
    "all": "combine comparisons with & and choose with np.where",
}


def output_shape(result: Any) -> tuple[int, ...] | None:
    """The NumPy shape of a traced function's result, or ``None`` when it has none (ragged
    nesting such as ``(y, array)``)."""
    if isinstance(result, _Traced) or isinstance(result, (bool, int, float, np.generic)):
        return ()
    try:
        return tuple(np.shape(np.asarray(result, dtype=object)))
    except (ValueError, TypeError):
        return None
