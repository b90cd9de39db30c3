"""Every array layout NumPy can hand over is read as its numbers or refused, never read as empty
or scrambled: each transform on an array of some layout gives, bit for bit, what it gives on a
C-contiguous aligned float64 copy of that array.

Layouts: byte offsets 0-7 from an 8-byte boundary, C and Fortran order, negative strides,
strided (non-contiguous) views, read-only arrays, big-endian ``>f8``, ``float32`` and lists.
``out=`` must be a writeable, aligned, C-contiguous native float64 array of the result's
shape; any other is refused with an ``adjit.Error`` and left unwritten.

The campaign draws random cases; ``ADJIT_CAMPAIGN_CASES=100000`` runs 10⁵ of them (CI runs a
slice of a few seconds), ``ADJIT_CAMPAIGN_SEED`` picks another seed.
"""

import os

import numpy as np
import pytest

import adjit

CASES = int(os.environ.get("ADJIT_CAMPAIGN_CASES", "1500"))
SEED = int(os.environ.get("ADJIT_CAMPAIGN_SEED", "29"))


def scalar(x):
    return adjit.sin(x[0]) * adjit.exp(0.3 * x[1]) + x[2] ** 3 / (1.5 + x[0] ** 2) + x[1] * x[2]


def square(x):
    return (
        x[0] + 0.1 * adjit.sin(x[1]),
        x[1] * 2.0 + 0.2 * x[2] ** 2,
        x[2] - 0.3 * adjit.cos(x[0]) + x[0] * x[1] * 0.05,
    )


SCALAR = adjit.trace(scalar, 3)
SQUARE = adjit.trace(square, 3)
FIT = adjit.trace(lambda p, d: (p[0] * adjit.exp(-p[1] * d[0]) + p[2] - d[1]) ** 2, 3, data=2)
KERNEL = adjit.trace(lambda p, d: (p[0] * d[0] + p[1] * adjit.sin(d[1]) - 1.0) ** 2, 2, data=2)

# (name, transform, number of array arguments after x, length of the second argument)
TRANSFORMS = [
    ("jit", adjit.jit(SQUARE), None),
    ("jit-scalar", adjit.jit(SCALAR), None),
    ("value_and_grad", adjit.value_and_grad(SCALAR), None),
    ("value_and_grad-2lanes", adjit.value_and_grad(SCALAR, lanes=2), None),
    ("value_and_grad-checkpoint", adjit.value_and_grad(SCALAR, strategy="checkpoint:2"), None),
    ("grad", adjit.grad(SCALAR), None),
    ("jvp", adjit.jvp(SQUARE), 3),
    ("vjp", adjit.vjp(SQUARE), 3),
    ("hvp", adjit.hvp(SCALAR), 3),
    ("jacobian", adjit.jacobian(SQUARE), None),
    ("hessian", adjit.hessian(SCALAR), None),
    ("inverse", adjit.inverse(SQUARE), 3),
    ("inverse-dense", adjit.inverse(SQUARE, mode="dense"), 3),
    ("value_and_grad-data", adjit.value_and_grad(FIT), None),
]
OUT_TAKERS = {"value_and_grad", "value_and_grad-2lanes", "value_and_grad-checkpoint", "grad",
              "hvp", "jacobian", "hessian", "inverse", "inverse-dense", "value_and_grad-data"}
MAP = adjit.map(KERNEL, block_rows=16)
STEP = adjit.trace(lambda s: (s[0] + 0.1 * s[1], s[1] - 0.1 * adjit.sin(s[0])), 2)
STEPS = adjit.steps(STEP, 7, strategy="checkpoint:2")

DTYPES = ["<f8", ">f8", "<f4", "list"]
ORDERS = ["C", "F", "neg", "strided"]


def make(values, dtype, order, offset, readonly):
    """``values`` (a C-contiguous float64 array) in a new array of the given layout: `dtype`,
    `order` (C, Fortran, a negative stride on the first axis, every other element of a wider
    array), `offset` bytes past an 8-byte boundary, read-only or not."""
    if dtype == "list":
        return values.tolist()
    dt = np.dtype(dtype)
    shape = values.shape
    if values.ndim == 0:
        order = "C"
    dims = list(shape)
    if order == "strided" and dims:
        dims[-1] *= 2
    # Item strides of a C- or F-ordered array of `dims`.
    strides = [0] * len(dims)
    step = dt.itemsize
    axes = range(len(dims) - 1, -1, -1) if order != "F" else range(len(dims))
    for a in axes:
        strides[a] = step
        step *= max(dims[a], 1)
    if order == "strided" and dims:
        strides[-1] *= 2
    if order == "neg" and dims:
        strides[0] = -strides[0]
    lo = sum((s * (n - 1)) for s, n in zip(strides, shape) if s < 0 and n > 0)
    hi = sum((s * (n - 1)) for s, n in zip(strides, shape) if s > 0 and n > 0)
    # A buffer aligned to 64 bytes, then `offset` bytes in.
    raw = np.zeros(hi - lo + dt.itemsize + offset + 64, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset - lo
    arr = np.ndarray(shape, dtype=dt, buffer=raw, offset=start, strides=strides)
    arr[...] = values
    if readonly:
        arr.flags.writeable = False
    return arr


def reference(arr):
    """The C-contiguous aligned float64 copy the result must equal."""
    return np.array(arr, dtype=np.float64, order="C")


def flat_results(r):
    """A result (float, array, tuple of them) as a list of float64 arrays."""
    if isinstance(r, tuple):
        return [a for x in r for a in flat_results(x)]
    return [np.atleast_1d(np.asarray(r, dtype=np.float64))]


def same_bits(a, b):
    fa, fb = flat_results(a), flat_results(b)
    return len(fa) == len(fb) and all(
        x.shape == y.shape and np.array_equal(x.view(np.uint64), y.view(np.uint64))
        for x, y in zip(fa, fb))


def outcome(call):
    """The result, or the error's class and text (compared as a result)."""
    try:
        return ("ok", call())
    except adjit.Error as e:
        return ("error", (type(e).__name__, str(e)))


def same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a[1] == b[1]
    return same_bits(a[1], b[1])


def random_layout(rng):
    return (DTYPES[rng.integers(len(DTYPES))], ORDERS[rng.integers(len(ORDERS))],
            int(rng.integers(8)), bool(rng.integers(2)))


def point_shape(name, t, batch):
    """The shape of the `out=` array a call takes."""
    n = 3
    per = {"value_and_grad": 1 + n, "value_and_grad-2lanes": 1 + n,
           "value_and_grad-checkpoint": 1 + n, "value_and_grad-data": 1 + n,
           "grad": n, "hvp": n, "inverse": n, "inverse-dense": n, "jacobian": 9,
           "hessian": 9, "jit": 3, "jit-scalar": 1, "jvp": 6, "vjp": 6}[name]
    if batch is not None:
        return (batch, per)
    one = {"jacobian": (3, 3), "hessian": (3, 3)}.get(name, (n,))
    return one


def run_case(rng):
    """One random case; returns a description when the layout changed the result."""
    kind = rng.integers(12)
    if kind == 0:
        return map_case(rng)
    if kind == 1:
        return function_and_steps_case(rng)
    name, t, vlen = TRANSFORMS[rng.integers(len(TRANSFORMS))]
    batch = None if rng.integers(3) == 0 else int(rng.choice([1, 2, 5, 17, 70]))
    shape = (3,) if batch is None else (batch, 3)
    x = rng.uniform(0.2, 1.5, size=shape)
    args = [x]
    if vlen is not None:
        args.append(rng.normal(size=(vlen,) if batch is None or rng.integers(2) else (batch, vlen)))
    kwargs = {}
    if name.endswith("-data"):
        kwargs["data"] = rng.uniform(0.0, 1.0, size=2)
    layouts = [random_layout(rng) for _ in args]
    data_layout = random_layout(rng)
    laid = [make(a, *lay) for a, lay in zip(args, layouts)]
    refs = [reference(a) for a in laid]
    kw_laid = {k: make(v, *data_layout) for k, v in kwargs.items()}
    kw_ref = {k: reference(v) for k, v in kw_laid.items()}
    expected = outcome(lambda: t(*refs, **kw_ref))
    got = outcome(lambda: t(*laid, **kw_laid))
    where = f"{name} batch={batch} layouts={layouts} data={data_layout if kwargs else None}"
    if not same(expected, got):
        return f"{where}: {got!r:.300} != {expected!r:.300}"
    if (name in OUT_TAKERS or batch is not None) and expected[0] == "ok":
        out_shape = point_shape(name, t, batch)
        good = rng.integers(2) == 0
        out_layout = ("<f8", "C", 0, False) if good else random_layout(rng)
        if out_layout[0] == "list":
            out_layout = ("<f8",) + out_layout[1:]
        out = make(np.full(out_shape, 7.0), *out_layout)
        # A layout is the right one by its flags (a (1, k) array is C- and F-contiguous).
        ok_out = (out.dtype == np.dtype("<f8") and out.flags.c_contiguous
                  and out.flags.aligned and out.flags.writeable)
        before = np.array(out, copy=True)
        got = outcome(lambda: t(*laid, out=out, **kw_laid))
        if ok_out:
            if got[0] != "ok" or not same_bits(expected[1], got[1]):
                return f"{where} out={out_layout}: {got!r:.300} != {expected!r:.300}"
        else:
            if got[0] != "error" or got[1][0] not in ("DTypeError", "ShapeError"):
                return f"{where} out={out_layout}: accepted, gave {got!r:.300}"
            if not np.array_equal(before, out):
                return f"{where} out={out_layout}: refused but written"
    return None


def map_case(rng):
    rows_n = int(rng.choice([1, 3, 16, 33, 100]))
    theta = rng.uniform(-1.0, 1.0, size=2)
    rows = rng.uniform(0.0, 2.0, size=(rows_n, 2))
    v = rng.normal(size=2)
    lay = [random_layout(rng) for _ in range(3)]
    laid = [make(theta, *lay[0]), make(rows, *lay[1]), make(v, *lay[2])]
    refs = [reference(a) for a in laid]
    method = ["eval", "eval_sum", "value_and_grad", "vjp", "hvp"][rng.integers(5)]

    def call(t, r, vv):
        f = getattr(MAP, method)
        return f(t, r, vv) if method == "hvp" else f(t, r)

    expected = outcome(lambda: call(*refs))
    got = outcome(lambda: call(*laid))
    if not same(expected, got):
        return f"map.{method} layouts={lay}: {got!r:.300} != {expected!r:.300}"
    return None


def function_and_steps_case(rng):
    """``Function.__call__`` (with data=) and ``adjit.steps``' methods."""
    lay = [random_layout(rng) for _ in range(2)]
    method = ["call", "call-data", "eval", "jvp", "vjp", "trajectory"][rng.integers(6)]
    if method.startswith("call"):
        args = [rng.uniform(0.2, 1.5, size=3)]
        f = FIT if method == "call-data" else SQUARE
        if method == "call-data":
            args.append(rng.uniform(0.0, 1.0, size=2))

        def call(*a):
            return f(a[0], data=a[1]) if len(a) == 2 else f(a[0])
    else:
        args = [rng.uniform(-1.0, 1.0, size=2)]
        if method in ("jvp", "vjp"):
            args.append(rng.normal(size=2))

        def call(*a):
            return getattr(STEPS, method)(*a)
    laid = [make(a, *l) for a, l in zip(args, lay)]
    refs = [reference(a) for a in laid]
    expected = outcome(lambda: call(*refs))
    got = outcome(lambda: call(*laid))
    if not same(expected, got):
        return f"{method} layouts={lay[:len(args)]}: {got!r:.300} != {expected!r:.300}"
    return None


def test_layout_campaign():
    rng = np.random.default_rng(SEED)
    mismatches = []
    for _ in range(CASES):
        m = run_case(rng)
        if m is not None:
            mismatches.append(m)
    print(f"layout campaign: {CASES} cases, {len(mismatches)} mismatches")
    assert not mismatches, f"{len(mismatches)} of {CASES} cases:\n" + "\n".join(mismatches[:10])


def unaligned(values):
    buf = np.zeros(values.size * 8 + 1, np.uint8)
    a = buf[1:].view(np.float64).reshape(values.shape)
    a[...] = values
    return a


def test_an_unaligned_array_is_read_as_its_numbers():
    # It was read as empty: map.value_and_grad returned (-0.0, [-0, -0]).
    theta = np.array([0.5, -0.3])
    rows = np.random.default_rng(1).uniform(0.0, 2.0, size=(50, 2))
    y, g = MAP.value_and_grad(theta, rows)
    yu, gu = MAP.value_and_grad(unaligned(theta), unaligned(rows))
    assert unaligned(rows).ctypes.data % 8 != 0
    assert yu == y and np.array_equal(gu, g) and y > 0
    x = np.array([0.4, 0.9, 1.1])
    assert adjit.value_and_grad(SCALAR)(unaligned(x))[0] == adjit.value_and_grad(SCALAR)(x)[0]


def test_strict_names_what_would_need_a_copy():
    vg = adjit.value_and_grad(SCALAR, strict=True)
    x = np.array([0.4, 0.9, 1.1])
    assert vg(x)[0] == adjit.value_and_grad(SCALAR)(x)[0]
    with pytest.raises(adjit.DTypeError, match="x: .*not aligned"):
        vg(unaligned(x))
    with pytest.raises(adjit.DTypeError, match="x: .*not C-contiguous"):
        vg(np.tile(x, (4, 1)).T.copy().T)
    with pytest.raises(adjit.DTypeError, match=r"x: .*dtype >f8"):
        vg(x.astype(">f8"))


def test_out_must_be_the_results_own_layout():
    jac = adjit.jacobian(SQUARE)
    x = np.array([0.4, 0.9, 1.1])
    J = jac(x)
    out = np.empty((3, 3))
    assert jac(x, out=out) is out and np.array_equal(out, J)
    # Fortran order was filled as if C-ordered (J transposed); now refused, unwritten.
    f_out = np.full((3, 3), 7.0, order="F")
    with pytest.raises(adjit.DTypeError, match="out= is not C-contiguous.*numpy.empty"):
        jac(x, out=f_out)
    assert np.all(f_out == 7.0)
    X = np.random.default_rng(2).uniform(0.2, 1.5, size=(10, 3))
    vg = adjit.value_and_grad(SCALAR)
    with pytest.raises(adjit.DTypeError, match="out= is not C-contiguous"):
        vg(X, out=np.empty((10, 4), order="F"))
    with pytest.raises(adjit.DTypeError, match="out= is not aligned"):
        vg(X, out=unaligned(np.zeros((10, 4))))
    ro = np.empty((10, 4))
    ro.flags.writeable = False
    with pytest.raises(adjit.DTypeError, match="out= is read-only"):
        vg(X, out=ro)
    with pytest.raises(adjit.DTypeError, match="out= must have dtype float64.*>f8"):
        vg(X, out=np.empty((10, 4), dtype=">f8"))
    with pytest.raises(adjit.DTypeError, match="out= must be a NumPy array, not list"):
        vg(X, out=[0.0] * 40)
    with pytest.raises(adjit.ShapeError, match=r"out has shape \(9,\), expected \(3, 3\)"):
        jac(x, out=np.empty(9))
