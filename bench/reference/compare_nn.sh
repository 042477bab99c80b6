#!/usr/bin/env bash
# bench_nn against libtorch_nn in one command: ROUNDS rounds, each running both programs at each
# thread count in turn, then the per-round ratios (libtorch's step time over xten's: above 1,
# xten is faster) and their median per thread count (bench/README.md, "bench_nn").
# Needs xten's bench_nn built (build/, or $XTEN_BUILD_DIR) and Python's torch for libtorch.
# Usage: bench/reference/compare_nn.sh [ROUNDS] [THREADS...]   (default: 8 rounds, 1 and nproc)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${XTEN_BUILD_DIR:-$here/../../build}"
rounds="${1:-8}"
shift || true
threads=("$@")
((${#threads[@]})) || threads=(1 "$(nproc)")
xten="$build/bench/bench_nn"
[ -x "$xten" ] || { echo "compare_nn: $xten not built" >&2; exit 2; }
torch_dir="$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')"
ref="$build/bench/libtorch_nn"
if [ ! -x "$ref" ] || [ "$here/libtorch_nn.cpp" -nt "$ref" ]; then
  g++ -O2 -std=c++17 "$here/libtorch_nn.cpp" -I"$torch_dir/include" \
    -I"$torch_dir/include/torch/csrc/api/include" -L"$torch_dir/lib" -ltorch -ltorch_cpu -lc10 \
    -Wl,-rpath,"$torch_dir/lib" -o "$ref"
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for ((r = 1; r <= rounds; ++r)); do
  for t in "${threads[@]}"; do
    "$xten" "$t" | tee -a "$log"
    "$ref" "$t" | tee -a "$log"
  done
done
# Lines: "<lib> nn MLP step, T threads: mean M us, median of blocks B us".
python3 - "$log" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) nn MLP step, (\d+) threads: mean [\d.]+ us, median of blocks ([\d.]+) us", line)
    if m:
        runs.setdefault((m[1], int(m[2])), []).append(float(m[3]))
for t in sorted({t for _, t in runs}):
    x, l = runs.get(("xten", t), []), runs.get(("libtorch", t), [])
    ratios = [b / a for a, b in zip(x, l)]
    print(f"{t} threads: ratios " + " / ".join(f"{q:.2f}" for q in ratios) +
          f"; median {statistics.median(ratios):.2f}x (xten median {statistics.median(x):.0f} us,"
          f" libtorch {statistics.median(l):.0f} us)")
PY
