#!/usr/bin/env python3
"""Time adjit's benchmark programs (ir/bench/*.ir) in peer AD tools: JAX (jit(grad)) and
CasADi (generated C for the gradient, compiled with gcc -O2). Not run by CI.

    python3 benches/peers/peers.py [--tools jax,casadi] [--files seed001,mlp,...] [--check]

`--check` needs neither tool: it parses every file and evaluates it with Python floats, which
tests the translator itself. See README.md for setup and for how to read the numbers next to
`cargo bench --bench jit`.
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import timeit

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BENCH = os.path.join(ROOT, "ir", "bench")

HEADER = re.compile(r"func\s+@(\w+)\s*\((.*)\)\s*->\s*\(?([^){]*)\)?\s*\{")
INST = re.compile(r"%([\w.]+)\s*=\s*([\w.]+)\s*(.*)")


def parse(text):
    """Parse one function: (name, params [(name, type)], insts [(name, op, args)], rets)."""
    name, params, insts, rets = None, [], [], []
    for raw in text.splitlines():
        line = raw.split(";", 1)[0].strip()
        if not line:
            continue
        m = HEADER.match(line)
        if m:
            name = m.group(1)
            for p in filter(None, (s.strip() for s in m.group(2).split(","))):
                pname, ptype = (s.strip() for s in p.split(":"))
                params.append((pname.lstrip("%"), ptype))
            continue
        if line.startswith("ret"):
            rets = [r.strip().lstrip("%") for r in line[3:].split(",")]
            continue
        m = INST.match(line)
        if m:
            args = [a.strip() for a in m.group(3).split(",")] if m.group(3).strip() else []
            insts.append((m.group(1), m.group(2), args))
    return name, params, insts, rets


class Ops:
    """Operation table over a numeric backend (Python math, jax.numpy, or casadi)."""

    def __init__(self, lib):
        self.lib = lib

    def apply(self, op, a):
        L = self.lib
        if op == "fma":
            return a[0] * a[1] + a[2]
        if op == "powi":
            return a[0] ** int(a[1])
        binary = {
            "add": lambda x, y: x + y,
            "sub": lambda x, y: x - y,
            "mul": lambda x, y: x * y,
            "div": lambda x, y: x / y,
            "pow": lambda x, y: L.pow(x, y),
            "atan2": L.atan2,
            "min": L.fmin,
            "max": L.fmax,
        }
        if op in binary:
            return binary[op](a[0], a[1])
        if op.startswith("fcmp."):
            pred = op[5:]
            return {"eq": L.eq, "ne": L.ne, "lt": L.lt, "le": L.le, "gt": L.gt, "ge": L.ge}[pred](a[0], a[1])
        if op == "select":
            return L.select(a[0], a[1], a[2])
        if op in ("fpromote", "fdemote"):
            return a[0]
        return getattr(L, op)(a[0])


class PyLib:
    """Python floats, for --check."""

    neg = staticmethod(lambda x: -x)
    abs = staticmethod(abs)
    sqrt, exp, log, log1p, expm1 = math.sqrt, math.exp, math.log, math.log1p, math.expm1
    sin, cos, tan, asin, acos, atan = math.sin, math.cos, math.tan, math.asin, math.acos, math.atan
    sinh, cosh, tanh, erf, floor, ceil = math.sinh, math.cosh, math.tanh, math.erf, math.floor, math.ceil
    pow, atan2 = math.pow, math.atan2
    fmin = staticmethod(lambda a, b: b if (a != a or b < a) else a)
    fmax = staticmethod(lambda a, b: b if (a != a or b > a) else a)
    eq, ne = staticmethod(lambda a, b: a == b), staticmethod(lambda a, b: a != b)
    lt, le = staticmethod(lambda a, b: a < b), staticmethod(lambda a, b: a <= b)
    gt, ge = staticmethod(lambda a, b: a > b), staticmethod(lambda a, b: a >= b)
    select = staticmethod(lambda c, a, b: a if c else b)


def evaluate(func, xs, lib):
    """Run the program on inputs xs with backend lib; returns the list of outputs."""
    _, params, insts, rets = func
    env = {p: x for (p, _), x in zip(params, xs)}
    ops = Ops(lib)

    def value(tok):
        if tok.startswith("%"):
            return env[tok[1:]]
        if tok in ("true", "false"):
            return tok == "true"
        return float(tok)

    for name, op, args in insts:
        if op == "const":
            env[name] = value(args[0].split()[-1]) if args else 0.0
        elif op == "powi":
            env[name] = ops.apply(op, [value(args[0]), args[1]])
        else:
            env[name] = ops.apply(op, [value(a) for a in args])
    return [env[r] for r in rets]


def check(files):
    expected = {"rosenbrock100": 6.5 * 99, "rosenbrock1000": 6.5 * 999, "rosenbrock10000": 6.5 * 9999}
    for f in files:
        func = load(f)
        out = evaluate(func, [0.5] * len(func[1]), PyLib)
        note = ""
        if f in expected:
            assert out[0] == expected[f], (f, out)
            note = " (matches closed form)"
        print(f"{f}: {len(func[2])} instructions, f(0.5, ...) = {out}{note}")


def load(name):
    with open(os.path.join(BENCH, name + ".ir")) as fh:
        return parse(fh.read())


def time_call(fn, repeat=5):
    number, t = 1, 0.0
    while t < 0.2:
        t = timeit.timeit(fn, number=number)
        number *= 4
    number //= 4
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def bench_jax(files):
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import erf

    jax.config.update("jax_enable_x64", True)

    class JaxLib:
        neg = staticmethod(jnp.negative)
        abs, sqrt, exp, log, log1p, expm1 = jnp.abs, jnp.sqrt, jnp.exp, jnp.log, jnp.log1p, jnp.expm1
        sin, cos, tan, asin, acos, atan = jnp.sin, jnp.cos, jnp.tan, jnp.arcsin, jnp.arccos, jnp.arctan
        sinh, cosh, tanh, floor, ceil = jnp.sinh, jnp.cosh, jnp.tanh, jnp.floor, jnp.ceil
        erf = staticmethod(erf)
        pow, atan2 = jnp.power, jnp.arctan2
        fmin, fmax = jnp.fmin, jnp.fmax
        eq, ne, lt, le, gt, ge = jnp.equal, jnp.not_equal, jnp.less, jnp.less_equal, jnp.greater, jnp.greater_equal
        select = staticmethod(jnp.where)

    for f in files:
        func = load(f)
        n = len(func[1])

        def scalar(x):
            return sum(evaluate(func, [x[i] for i in range(n)], JaxLib))

        x = jnp.linspace(0.1, 0.9, n)
        primal = jax.jit(scalar)
        grad = jax.jit(jax.grad(scalar))
        t0 = timeit.default_timer()
        grad(x).block_until_ready()
        compile_s = timeit.default_timer() - t0
        primal(x).block_until_ready()
        tp = time_call(lambda: primal(x).block_until_ready())
        tg = time_call(lambda: grad(x).block_until_ready())
        print(f"jax    {f:16} primal {tp * 1e9:12.0f} ns  grad {tg * 1e9:12.0f} ns  jit(grad) compile {compile_s:.2f} s")


C_LOOP = False

DRIVER = r"""
#include <stdio.h>
#include <time.h>
typedef long long casadi_int;
int NAME(const double** arg, double** res, casadi_int* iw, double* w, int mem);
int NAME_work(casadi_int* a, casadi_int* r, casadi_int* i, casadi_int* w);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(void) {
    static double x[N], y[1], g[N], w[1 << 22]; static casadi_int iw[1 << 16];
    for (int i = 0; i < N; i++) x[i] = 0.5;
    const double* arg[8] = {x}; double* res[8] = {y, g};
    long iters = 1; double best = 1e30;
    for (;;) { double t = now(); for (long k = 0; k < iters; k++) { x[0] += 1e-300; NAME(arg, res, iw, w, 0); } if (now() - t > 2e-3) break; iters *= 2; }
    double ns[31];
    for (int r = 0; r < 31; r++) { double t = now(); for (long k = 0; k < iters; k++) { x[0] += 1e-300; NAME(arg, res, iw, w, 0); } ns[r] = (now() - t) * 1e9 / iters; }
    for (int a = 1; a < 31; a++) for (int b = a; b > 0 && ns[b] < ns[b - 1]; b--) { double s = ns[b]; ns[b] = ns[b - 1]; ns[b - 1] = s; }
    best = ns[15]; /* the median, as adjit bench reports */
    printf("%.3f\n", best + 0 * y[0] * g[0]);
    return 0;
}
"""


def c_loop_ns(src, name, n, tmp):
    """Time the generated C function in a C loop (median of 31 batches of ~2 ms, as `adjit bench`
    reports medians), gcc -O2."""
    driver = os.path.join(tmp, f"{name}_driver.c")
    with open(driver, "w") as out:
        out.write(DRIVER.replace("NAME", name).replace("[N]", f"[{n}]").replace("< N", f"< {n}"))
    exe = os.path.join(tmp, f"{name}_bench")
    subprocess.run(["gcc", "-O2", src, driver, "-o", exe, "-lm"], check=True)
    return float(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)


def casadi_lib(ca):
    """The operations of the IR as CasADi SX functions (for `evaluate`)."""

    class CasadiLib:
        neg = staticmethod(lambda x: -x)
        abs, sqrt, exp, log = ca.fabs, ca.sqrt, ca.exp, ca.log
        log1p = staticmethod(lambda x: ca.log(1 + x))
        expm1 = staticmethod(lambda x: ca.exp(x) - 1)
        sin, cos, tan, asin, acos, atan = ca.sin, ca.cos, ca.tan, ca.asin, ca.acos, ca.atan
        sinh, cosh, tanh, erf, floor, ceil = ca.sinh, ca.cosh, ca.tanh, ca.erf, ca.floor, ca.ceil
        pow, atan2, fmin, fmax = ca.power, ca.atan2, ca.fmin, ca.fmax
        eq, ne, lt, le, gt, ge = ca.eq, ca.ne, ca.lt, ca.le, ca.gt, ca.ge
        select = staticmethod(ca.if_else)

    return CasadiLib


def bench_casadi(files):
    import casadi as ca

    CasadiLib = casadi_lib(ca)

    tmp = tempfile.mkdtemp(prefix="adjit_casadi_")
    for f in files:
        func = load(f)
        n = len(func[1])
        x = ca.SX.sym("x", n)
        y = sum(evaluate(func, [x[i] for i in range(n)], CasadiLib))
        g = ca.Function(f"g_{f}", [x], [y, ca.gradient(y, x)])
        c_file = g.generate(f"g_{f}.c", {"with_header": False})
        src = os.path.join(tmp, c_file)
        os.replace(c_file, src)
        so = os.path.join(tmp, f"g_{f}.so")
        t0 = timeit.default_timer()
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", src, "-o", so, "-lm"], check=True)
        compile_s = timeit.default_timer() - t0
        if C_LOOP:
            print(f"casadi {f:16} value+grad {c_loop_ns(src, f'g_{f}', n, tmp):12.1f} ns (C loop, gcc -O2)")
            continue
        ext = ca.external(f"g_{f}", so)
        xv = [0.1 + 0.8 * i / max(n - 1, 1) for i in range(n)]
        tg = time_call(lambda: ext(xv))
        print(f"casadi {f:16} value+grad {tg * 1e9:12.0f} ns (includes Python call overhead)  gcc -O2 {compile_s:.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", default="jax,casadi")
    ap.add_argument("--c-loop", action="store_true",
                    help="time CasADi's generated C in a C loop (gcc -O2) instead of through Python")
    ap.add_argument("--files", default="seed001,rosenbrock100,rosenbrock1000,mlp,blackscholes,lorenz")
    ap.add_argument("--check", action="store_true", help="only parse and evaluate with Python floats")
    args = ap.parse_args()
    global C_LOOP
    C_LOOP = args.c_loop
    files = args.files.split(",")
    if args.check:
        check(files)
        return
    for tool in args.tools.split(","):
        try:
            {"jax": bench_jax, "casadi": bench_casadi}[tool](files)
        except ImportError as e:
            print(f"skipping {tool}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
