"""The exception classes of adjit. Every error adjit raises is an ``adjit.Error``; the
subclasses also derive from the built-in exception a Python user would expect."""

import builtins


class Error(Exception):
    """Base class of every exception adjit raises."""


class ParseError(Error, ValueError):
    """IR text that does not parse or verify (``FILE:LINE:COL: error: ...``), or a file that
    cannot be read."""


class TraceError(Error, TypeError):
    """A mistake while tracing: a traced comparison used as a Python bool, values of two
    traces mixed, an unsupported NumPy ufunc."""


class ShapeError(Error, ValueError):
    """An argument of the wrong length, rank or shape; the message names the argument and the
    expected shape."""


class DTypeError(Error, TypeError):
    """An argument that is not real numbers (strings, objects, complex), or, with
    ``strict=True``, not a C-contiguous float64 array."""


class NonFiniteError(Error, ValueError):
    """NaN or infinity among the inputs, with ``nonfinite="raise"`` (the default)."""


class DeriveError(Error, ValueError):
    """The transform does not apply to this function (a gradient of two outputs, an inverse
    of a non-square program, a mapped kernel without ``data`` inputs)."""


class OptionError(Error, ValueError):
    """An option with a value adjit does not accept: an unknown ``mode``, ``strategy``,
    ``stage``, ``math`` or ``nonfinite`` spelling, a negative count, a byte budget below the
    smallest that works; the message names the option and what it accepts."""


class SingularError(Error, ArithmeticError):
    """An inverse mode met a numerically singular Jacobian."""


class MemoryError(Error, builtins.MemoryError):  # noqa: A001  (also a Python MemoryError)
    """An array sized from the arguments (a batch's results, a dense Jacobian or Hessian, a
    float64 copy of an input) that this machine cannot hold, refused before it is allocated;
    the message names the array, its size and what to do instead."""


class PerformanceWarning(UserWarning):
    """A program so large that compiling it takes long or much memory (issued once per
    Function, with the instruction count, an estimate and what to do instead)."""
