#!/usr/bin/env bash
# Run GradBench evals with gradbench-adjit and with GradBench's reference `manual` tool on the
# same sizes, and print one Markdown table per eval (valid/invalid per size, mean evaluate
# times of primal and derivative, ratio adjit/manual). See README.md for the one-time setup.
#
# usage: benches/gradbench/run.sh [EVAL...]      (default: hello llsq lse kmeans)
# environment:
#   GB      the GradBench checkout, built as in README.md   (required)
#   GBPY    a Python with numpy, pydantic 2, scipy, dataclasses-json (default $GB/../gbv/bin/python)
#   NLJ     the extracted nlohmann-json3-dev package         (default $GB/../nlj)
#   OUT     where logs go                                    (default $GB/../logs)
#   THREADS gradbench-adjit --threads (default 1, like manual's default single-threaded build)
#   SIZES_<eval>  override the size arguments of one eval, e.g. SIZES_lse="-n 2500 5000"
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
GB=${GB:?set GB to the GradBench checkout (see benches/gradbench/README.md)}
GBPY=${GBPY:-$GB/../gbv/bin/python}
NLJ=${NLJ:-$GB/../nlj}
OUT=${OUT:-$GB/../logs}
THREADS=${THREADS:-1}
evals=("$@")
[ ${#evals[@]} -eq 0 ] && evals=(hello llsq lse kmeans)

# The smallest default size of each eval (run.py defaults; see GRADBENCH.md).
declare -A sizes=(
  [hello]=""
  [llsq]="-n 16 -m 128"
  [lse]="-n 2500"
  [kmeans]="-k 10 -n 1000 -d 8"
  [gmm]="-d 2 -k 5 -n 1000"
  [ba]="--min 1 --max 1"
  [det]="-l 5"
  [ode]="-n 1000 -s 1"
)

for tool in "$GB/target/release/gradbench" "$GBPY"; do
  [ -x "$tool" ] || { echo "missing $tool: do the setup in $here/README.md" >&2; exit 1; }
done
(cd "$repo" && cargo build --release -q -p gradbench-adjit)
adjit="$repo/target/release/gradbench-adjit --threads $THREADS"
mkdir -p "$OUT"
export PYTHONPATH=$GB/python/gradbench CPATH=$NLJ/usr/include

cd "$GB"
for eval in "${evals[@]}"; do
  var="SIZES_$eval"
  args=${!var:-${sizes[$eval]-}}
  # manual first: the eval checks adjit's answers against tools/manual/bin/<eval>, which
  # manual's own define builds.
  for tool in manual adjit; do
    if [ "$tool" = manual ]; then cmd="python3 python/gradbench/gradbench/cpp.py manual"; else cmd="$adjit"; fi
    ./target/release/gradbench run -o "$OUT/$eval-$tool.jsonl" --timeout 3600 \
      --eval "$GBPY python/gradbench/gradbench/evals/$eval/run.py $args" \
      --tool "$cmd" > "$OUT/$eval-$tool.txt" 2>&1 || true
  done
  python3 "$here/table.py" "$eval" "$OUT/$eval-adjit.jsonl" "$OUT/$eval-manual.jsonl"
  echo
done
