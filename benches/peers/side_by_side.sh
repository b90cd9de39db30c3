#!/usr/bin/env bash
# adjit's gradient beside CasADi's generated C (gcc -O2, timed in a C loop), in one run,
# alternating the two tools ROUNDS times per program at the same point (0.5 everywhere), and
# printing each round's ratio, so the spread of a noisy machine shows.
#
#   python3 -m venv "$VENV" && "$VENV"/bin/pip install casadi      # VENV: a folder outside the repo
#   PYTHON="$VENV"/bin/python benches/peers/side_by_side.sh [ROUNDS] [PROGRAMS...]
#
# adjit's gradient row is `adjit bench --modes vjp` (a taped VJP; for a multi-output program a
# fixed cotangent, where the CasADi side differentiates the sum of the outputs: the same work).
# A benchmark, never a CI step.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-python3}
rounds=${1:-3}
shift || true
programs=${*:-seed001 rosenbrock100 rosenbrock1000 mlp blackscholes coupling8}
cargo build --release -q -p adjit-cli
adjit=target/release/adjit
point() { # FILE -> one 0.5 per parameter
    head -n 3 "$1" | grep -m1 '^func' | grep -o ': *f64' | sed 's/.*/0.5/' | paste -sd, -
}
printf '%-16s %5s %14s %14s %14s %10s\n' program round "adjit primal" "adjit grad" "casadi grad" "adjit/C"
for name in $programs; do
    file=ir/bench/$name.ir
    point "$file" > /tmp/adjit_peer_point
    for round in $(seq "$rounds"); do
        c_ns=$("$python" benches/peers/peers.py --tools casadi --c-loop --files "$name" \
            | awk '{print $4}')
        json=$("$adjit" bench "$file" --at @/tmp/adjit_peer_point --modes primal,vjp --json)
        primal=$(echo "$json" | "$python" -c 'import json,sys; r=json.load(sys.stdin)["rows"]; print(r[0]["ns_per_call"])')
        grad=$(echo "$json" | "$python" -c 'import json,sys; r=json.load(sys.stdin)["rows"]; print(r[1]["ns_per_call"])')
        ratio=$("$python" -c "print(f'{$grad/$c_ns:.2f}')")
        printf '%-16s %5s %14.1f %14.1f %14.1f %10s\n' "$name" "$round" "$primal" "$grad" "$c_ns" "$ratio"
    done
done
