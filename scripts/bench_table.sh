#!/usr/bin/env bash
# Reproduces the README's table: primal, JVP and VJP (tape) rows of `adjit bench` for the
# ir/bench programs, each at a fixed point (0.5 everywhere; Black-Scholes at S=100, K=95,
# r=0.05, sigma=0.2, T=1; Lorenz at 1,1,1). Ratios are meaningful within one run only.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p adjit-cli
adjit=target/release/adjit
point() { # FILE -> a comma-separated point with one 0.5 per parameter
    head -n 3 "$1" | grep -m1 '^func' | grep -o ': *f64' | sed 's/.*/0.5/' | paste -sd, -
}
for name in seed001 rosenbrock100 rosenbrock1000 rosenbrock10000 mlp blackscholes lorenz; do
    file=ir/bench/$name.ir
    case $name in
        blackscholes) at=100,95,0.05,0.2,1 ;;
        lorenz) at=1,1,1 ;;
        *) at=$(point "$file") ;;
    esac
    printf '%s\n' "$at" > /tmp/adjit_bench_point
    echo "== $name"
    "$adjit" bench "$file" --at @/tmp/adjit_bench_point --modes primal,jvp,vjp "$@"
done
