#!/usr/bin/env python3
"""adjit's sparse Hessian and Jacobian beside CasADi's generated C, in one run.

For each program, CasADi builds the sparse derivative symbolically (SX) and generates C for its
nonzeros only, which gcc -O2 compiles once; adjit compiles its seed-baked program. Then the two
tools are timed alternately ROUNDS times (CasADi in a C loop, adjit with `adjit bench`, both
medians of ~2 ms batches), so each round's ratios come from one moment of a noisy machine.

  python3 -m venv "$VENV" && "$VENV"/bin/pip install casadi        # VENV: outside the repo
  "$VENV"/bin/python benches/peers/sparse_side_by_side.py [ROUNDS]

Programs (ir/bench, written by scripts/gen_bench.py):
- rosenbrock1000: the Hessian's lower triangle (tril of casadi.hessian) beside the gradient;
- bratu30: the residual's Jacobian beside the residual.
A benchmark, never a CI step.
"""

import json
import os
import subprocess
import sys
import tempfile
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import peers  # noqa: E402  (the IR translator shared with peers.py)

ADJIT = os.path.join(ROOT, "target", "release", "adjit")

DRIVER = r"""
#include <stdio.h>
#include <time.h>
typedef long long casadi_int;
int NAME(const double** arg, double** res, casadi_int* iw, double* w, int mem);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static double x[NIN], out0[NOUT0], out1[NOUT1], w[1 << 22];
static casadi_int iw[1 << 16];
int main(void) {
    for (int i = 0; i < NIN; i++) x[i] = XVAL;
    const double* arg[8] = {x}; double* res[8] = {out0, out1};
    long iters = 1;
    for (;;) { double t = now(); for (long k = 0; k < iters; k++) { x[0] += 1e-300; NAME(arg, res, iw, w, 0); } if (now() - t > 2e-3) break; iters *= 2; }
    double ns[31];
    for (int r = 0; r < 31; r++) { double t = now(); for (long k = 0; k < iters; k++) { x[0] += 1e-300; NAME(arg, res, iw, w, 0); } ns[r] = (now() - t) * 1e9 / iters; }
    for (int a = 1; a < 31; a++) for (int b = a; b > 0 && ns[b] < ns[b - 1]; b--) { double s = ns[b]; ns[b] = ns[b - 1]; ns[b - 1] = s; }
    printf("%.3f\n", ns[15] + 0 * out0[0] * out1[0]);
    return 0;
}
"""


class CFunction:
    """A CasADi function generated to C, compiled once (timed), runnable in a C loop."""

    def __init__(self, fn, name, n_in, n_out0, n_out1, xval, tmp):
        t0 = timeit.default_timer()
        c_file = fn.generate(f"{name}.c", {"with_header": False})
        src = os.path.join(tmp, c_file)
        os.replace(c_file, src)
        driver = os.path.join(tmp, f"{name}_driver.c")
        with open(driver, "w") as out:
            out.write(
                DRIVER.replace("NAME", name)
                .replace("NIN", str(n_in))
                .replace("NOUT0", str(max(n_out0, 1)))
                .replace("NOUT1", str(max(n_out1, 1)))
                .replace("XVAL", repr(xval))
            )
        self.exe = os.path.join(tmp, f"{name}_bench")
        subprocess.run(["gcc", "-O2", src, driver, "-o", self.exe, "-lm"], check=True)
        self.compile_s = timeit.default_timer() - t0

    def ns(self):
        return float(subprocess.run([self.exe], check=True, capture_output=True, text=True).stdout)


def adjit_rows(file, point, modes):
    out = subprocess.run(
        [ADJIT, "bench", file, "--at", "@" + point, "--modes", modes, "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {r["mode"]: r for r in json.loads(out)["rows"]}


def adjit_sparse_values(command, file, point):
    out = subprocess.run(
        [ADJIT, command, file, "--at", "@" + point, "--sparse", "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def max_rel_diff(sparse, dense):
    """Largest relative difference between adjit's CSR values and CasADi's dense matrix."""
    worst = 0.0
    indptr, indices, values = sparse["indptr"], sparse["indices"], sparse["values"]
    for i in range(len(indptr) - 1):
        for k in range(indptr[i], indptr[i + 1]):
            a, b = float(values[k]), float(dense[i, indices[k]])
            worst = max(worst, abs(a - b) / max(abs(a), abs(b), 1e-300))
    return worst


def main():
    import casadi as ca

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "adjit-cli"], cwd=ROOT, check=True)
    lib = peers.casadi_lib(ca)
    tmp = tempfile.mkdtemp(prefix="adjit_sparse_peers_")
    cases = []
    for name, kind, xval in (("rosenbrock1000", "hessian", 0.5), ("bratu30", "jacobian", 0.1)):
        func = peers.load(name)
        n = len(func[1])
        x = ca.SX.sym("x", n)
        outs = peers.evaluate(func, [x[i] for i in range(n)], lib)
        if kind == "hessian":
            y = outs[0]
            mat = ca.tril(ca.hessian(y, x)[0])
            base = ca.Function(f"g_{name}", [x], [y, ca.gradient(y, x)])
            base_out = (1, n)
            modes, base_mode = "vjp,sparse-hessian", "vjp"
        else:
            r = ca.vertcat(*outs)
            mat = ca.jacobian(r, x)
            base = ca.Function(f"r_{name}", [x], [r])
            base_out = (n, 0)
            modes, base_mode = "primal,sparse-jacobian", "primal"
        sparse_fn = ca.Function(f"s_{name}", [x], [mat])
        point = os.path.join(tmp, f"{name}.x")
        with open(point, "w") as out:
            out.write(",".join([repr(xval)] * n))
        c_sparse = CFunction(sparse_fn, f"s_{name}", n, mat.nnz(), 0, xval, tmp)
        c_base = CFunction(base, base.name(), n, *base_out, xval, tmp)
        values = adjit_sparse_values(kind, os.path.join(ROOT, "ir", "bench", name + ".ir"), point)
        dense = sparse_fn(ca.DM([xval] * n)).full()
        if kind == "hessian":
            dense = dense + dense.T - ca.diag(ca.diag(ca.DM(dense))).full()
        print(
            f"{name}: {kind} {mat.nnz()} nonzeros (CasADi {'lower' if kind == 'hessian' else 'all'}), "
            f"max relative difference adjit vs CasADi {max_rel_diff(values, dense):.1e}; "
            f"gcc -O2 {c_sparse.compile_s:.2f} s (sparse) + {c_base.compile_s:.2f} s (base)"
        )
        cases.append((name, kind, os.path.join(ROOT, "ir", "bench", name + ".ir"), point, modes,
                      base_mode, c_sparse, c_base))
    header = (f"{'program':16} {'round':>5} {'adjit sparse':>13} {'adjit base':>11} {'C sparse':>10} "
              f"{'C base':>10} {'adjit/C':>8} {'adjit s/b':>9} {'C s/b':>7} {'adjit ms':>9} {'gcc ms':>8} {'gcc/adjit':>9}")
    print(header)
    for name, kind, file, point, modes, base_mode, c_sparse, c_base in cases:
        for rnd in range(1, rounds + 1):
            cs, cb = c_sparse.ns(), c_base.ns()
            rows = adjit_rows(file, point, modes)
            a_s = rows[f"sparse-{kind}"]
            a_b = rows[base_mode]
            print(f"{name:16} {rnd:>5} {a_s['ns_per_call']:13.0f} {a_b['ns_per_call']:11.0f} {cs:10.0f} {cb:10.0f} "
                  f"{a_s['ns_per_call'] / cs:8.2f} {a_s['ns_per_call'] / a_b['ns_per_call']:9.2f} {cs / cb:7.2f} "
                  f"{a_s['compile_ms']:9.1f} {c_sparse.compile_s * 1e3:8.0f} "
                  f"{c_sparse.compile_s * 1e3 / a_s['compile_ms']:9.0f}")


if __name__ == "__main__":
    main()
