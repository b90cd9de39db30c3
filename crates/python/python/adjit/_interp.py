"""``np.interp`` with traced values: the query points, the breakpoints' values, or the
breakpoints themselves.

NumPy finds each point's segment by a binary search, which depends on the values. Here every
segment's line is computed and the right one chosen by a chain of traced comparisons, from the
last segment down: ``x < xp[i+1]`` selects segment i's line, so the first segment that ends
past ``x`` wins, as the search finds it; ``x < xp[0]`` gives ``left`` (``fp[0]``), ``x ≥
xp[-1]`` gives ``right`` (``fp[-1]``), NaN gives NaN. Each line is NumPy's
``slope·(x − xp[j]) + fp[j]`` with ``slope = (fp[j+1] − fp[j]) / (xp[j+1] − xp[j])``, so a
point inside a segment gets NumPy's number. O(len(xp)) operations per point; ``xp`` must be
increasing, as NumPy requires (not checked, since it may be traced).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# _numpy imports this module while it loads; its names are read at call time.
from . import _numpy
from ._errors import TraceError



def _one(x: Any, xp: list[Any], fp: list[Any], left: Any, right: Any) -> Any:
    r = right
    for i in reversed(range(len(xp) - 1)):
        slope = (fp[i + 1] - fp[i]) / (xp[i + 1] - xp[i])
        r = _numpy._select_one(x < xp[i + 1], slope * (x - xp[i]) + fp[i], r)
    r = _numpy._select_one(x < xp[0], left, r)
    return _numpy._select_one(x != x, x, r)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """``np.interp(x, xp, fp, left, right)`` (without ``period``) on traced values."""
    if period is not None:
        raise TraceError("numpy.interp(period=...) is not traced: map x into one period first")
    xs, ps, fs = (np.asarray(v, dtype=object) for v in (x, xp, fp))
    if ps.ndim != 1 or fs.ndim != 1 or len(ps) != len(fs) or len(ps) == 0:
        raise TraceError(
            f"numpy.interp takes 1-D xp and fp of one nonzero length, not shapes {ps.shape} "
            f"and {fs.shape}"
        )
    xp_list, fp_list = list(ps), list(fs)
    lo = fp_list[0] if left is None else left
    hi = fp_list[-1] if right is None else right
    out = np.empty(xs.shape, dtype=object)
    for index in np.ndindex(xs.shape):
        out[index] = _one(xs[index], xp_list, fp_list, lo, hi)
    return out[()] if xs.ndim == 0 else _numpy._wrap(out)
