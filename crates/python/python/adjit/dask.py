"""Mapped kernels over Dask arrays: each block of rows runs on a worker, partial results come
back and are reduced in a fixed order.

    import dask.array as da, adjit, adjit.dask
    rows = da.from_array(data, chunks=(100_000, -1))     # rows along the leading axis
    y, g = adjit.dask.value_and_grad(kernel, theta, rows)

- The kernel travels as its IR text (``adjit.Function`` pickles as text) and is compiled once
  per worker process and per IR text (cached), never per block.
- Partial sums are added in block order on the client, one block after another, so the
  result depends only on the chunking: the same bits for 1, 2 or 4 workers.
- ``eval`` and ``vjp`` are per row and stay lazy (``dask.array`` results).

Needs ``dask[distributed]`` (``pip install adjit[dask]``); without a ``distributed.Client``
Dask's default scheduler runs the blocks on local threads. ``import adjit`` does not import
Dask: ``adjit.dask`` is loaded on first use. Blocks that arrive unaligned or read-only (as
unpickled buffers on process workers do) are read as their numbers (one copy where needed),
and a NaN is reported by its row in the whole array.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np

from . import Function, Map, _function
from . import map as _adjit_map

__all__ = ["value_and_grad", "eval", "eval_sum", "vjp"]

_cache: dict[tuple[str, int, int], Map] = {}
_lock = threading.Lock()


def _compiled(text: str, block_rows: int, lanes: int) -> Map:
    """The kernel compiled in this process, once per IR text and options."""
    key = (hashlib.sha256(text.encode()).hexdigest(), block_rows, lanes)
    with _lock:
        m = _cache.get(key)
        if m is None:
            from . import parse

            m = _adjit_map(parse(text), block_rows=block_rows, lanes=lanes)
            _cache[key] = m
        return m


def _rows(rows: Any, kernel: Function) -> Any:
    import dask.array as da

    if not isinstance(rows, da.Array):
        rows = da.asarray(rows)
    if rows.ndim != 2 or rows.shape[1] != kernel.n_data:
        from ._errors import ShapeError

        raise ShapeError(
            f"rows has shape {rows.shape}, expected (R, {kernel.n_data}): one row of the "
            f"kernel's data inputs per row"
        )
    # Whole rows per block: one chunk along the second axis.
    return rows.rechunk({1: -1}).astype(np.float64)


def _first_row(block_info: Any) -> int:
    """The index of a block's first row in the whole array (for messages: a NaN is named by
    its row in the caller's array, not in the block)."""
    try:
        return int(block_info[0]["array-location"][0][0])
    except (TypeError, KeyError, IndexError):
        return 0


def _partials(kernel: Function, theta: Any, rows: Any, block_rows: int, lanes: int,
              what: str) -> np.ndarray:
    """Per block of rows, one row of partial results; computed, in block order."""
    import dask.array as da

    kernel = _function(kernel, f"dask.{what}")
    text = str(kernel)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    rows = _rows(rows, kernel)
    width = 1 + kernel.n_inputs if what == "value_and_grad" else kernel.n_outputs

    def block(x: np.ndarray, block_info: Any = None) -> np.ndarray:
        m = _compiled(text, block_rows, lanes)
        first = _first_row(block_info)
        if what == "value_and_grad":
            y, g = m.value_and_grad(theta, x, row_offset=first)
            return np.concatenate(([y], g))[None, :]
        s = m.eval_sum(theta, x, row_offset=first)
        return np.atleast_1d(np.asarray(s, dtype=np.float64))[None, :]

    parts = rows.map_blocks(
        block,
        chunks=((1,) * rows.numblocks[0], (width,)),
        dtype=np.float64,
    )
    assert isinstance(parts, da.Array)
    return np.asarray(parts.compute())


def _ordered_sum(partials: np.ndarray) -> np.ndarray:
    """Σ over blocks, first to last: a fixed order, whatever ran where."""
    total = np.array(partials[0], dtype=np.float64, copy=True)
    for p in partials[1:]:
        total += p
    return total


def value_and_grad(kernel: Function, theta: Any, rows: Any, *, block_rows: int = 1024,
                   lanes: int = 1) -> tuple[float, np.ndarray]:
    """``(Σᵢ k(θ, rowᵢ), ∇θ Σᵢ k(θ, rowᵢ))`` over a Dask array of rows, each block on a
    worker, blocks summed in order."""
    total = _ordered_sum(_partials(kernel, theta, rows, block_rows, lanes, "value_and_grad"))
    return float(total[0]), total[1:]


def eval_sum(kernel: Function, theta: Any, rows: Any, *, block_rows: int = 1024,
             lanes: int = 1) -> Any:
    """``Σᵢ k(θ, rowᵢ)``: a float for one output, else an array."""
    total = _ordered_sum(_partials(kernel, theta, rows, block_rows, lanes, "eval_sum"))
    return float(total[0]) if total.size == 1 else total


def eval(kernel: Function, theta: Any, rows: Any, *, lanes: int = 1) -> Any:  # noqa: A001
    """Per row ``k(θ, rowᵢ)``, lazily: a ``dask.array`` of shape ``(R,)`` (one output) or
    ``(R, m)``."""
    kernel = _function(kernel, "dask.eval")
    text = str(kernel)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    rows = _rows(rows, kernel)
    m = kernel.n_outputs

    def block(x: np.ndarray, block_info: Any = None) -> np.ndarray:
        return np.asarray(_compiled(text, 1024, lanes).eval(theta, x,
                                                            row_offset=_first_row(block_info)))

    if m == 1:
        return rows.map_blocks(block, drop_axis=1, dtype=np.float64)
    return rows.map_blocks(block, chunks=(rows.chunks[0], (m,)), dtype=np.float64)


def vjp(kernel: Function, theta: Any, rows: Any, w: Any = None, *, lanes: int = 1) -> Any:
    """Per row ``(∂k/∂θ(θ, rowᵢ))ᵀ·w`` (``w`` defaults to ones: the per-row gradients),
    lazily: a ``dask.array`` of shape ``(R, n_theta)``."""
    kernel = _function(kernel, "dask.vjp")
    text = str(kernel)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    rows = _rows(rows, kernel)
    n = kernel.n_inputs

    def block(x: np.ndarray, block_info: Any = None) -> np.ndarray:
        _, g = _compiled(text, 1024, lanes).vjp(theta, x, w, row_offset=_first_row(block_info))
        return np.asarray(g)

    return rows.map_blocks(block, chunks=(rows.chunks[0], (n,)), dtype=np.float64)
