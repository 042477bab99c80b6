#!/usr/bin/env bash
# bench_gpt against libtorch_gpt in one command: ROUNDS rounds, each running both programs at each
# thread count in turn, then per measurement the median over rounds of each and the ratio
# (libtorch's time over xten's: above 1, xten is faster) (bench/README.md, "bench_gpt").
# Needs xten's bench_gpt built (build/, or $XTEN_BUILD_DIR; or $XTEN_BENCH_GPT) and Python's torch.
# Usage: bench/reference/compare_gpt.sh [ROUNDS] [THREADS...]   (default: 2 rounds, 1 and nproc)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${XTEN_BUILD_DIR:-$here/../../build}"
rounds="${1:-2}"
shift || true
threads=("$@")
((${#threads[@]})) || threads=(1 "$(nproc)")
xten="${XTEN_BENCH_GPT:-$build/bench/bench_gpt}"
[ -x "$xten" ] || { echo "compare_gpt: $xten not built" >&2; exit 2; }
torch_dir="$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')"
ref="${LIBTORCH_GPT:-$(mktemp -d)/libtorch_gpt}"
if [ ! -x "$ref" ]; then
  g++ -O2 -std=c++17 "$here/libtorch_gpt.cpp" -I"$torch_dir/include" \
    -I"$torch_dir/include/torch/csrc/api/include" -L"$torch_dir/lib" -ltorch -ltorch_cpu -lc10 \
    -Wl,-rpath,"$torch_dir/lib" -o "$ref"
fi
log="$(mktemp)"
for ((r = 1; r <= rounds; ++r)); do
  for t in "${threads[@]}"; do
    "$xten" "$t" attention train | tee -a "$log"
    "$ref" "$t" attention train | tee -a "$log"
  done
done
for t in "${threads[@]}"; do "$xten" "$t" generate | tee -a "$log"; done
python3 - "$log" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"(xten|libtorch) (.*), (\d+) threads: median ([\d.]+) ms", line)
    if m:
        runs.setdefault((m[2], int(m[3])), {}).setdefault(m[1], []).append(float(m[4]))
print("\nmeasurement | threads | xten ms | libtorch ms | libtorch/xten (per round)")
for (what, t), r in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    x, l = r.get("xten", []), r.get("libtorch", [])
    if x and l:
        per_round = " ".join(f"{b / a:.2f}" for a, b in zip(x, l))
        print(f"{what} | {t} | {statistics.median(x):.2f} | {statistics.median(l):.2f} | "
              f"{statistics.median(l) / statistics.median(x):.2f} ({per_round})")
PY
rm -f "$log"
