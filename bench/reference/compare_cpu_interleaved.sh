#!/usr/bin/env bash
# interleaved_cpu: bench_cpu's products, convolutions and sum against libtorch's in one process
# (interleaved_cpu.cpp says why). Builds it against xten's build (build/, or $XTEN_BUILD_DIR)
# and Python's torch, then runs it ROUNDS times at each thread count.
# Usage: bench/reference/compare_cpu_interleaved.sh [ROUNDS] [THREADS...]   (default: 3; 1, nproc)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${XTEN_BUILD_DIR:-$here/../../build}"
rounds="${1:-3}"
shift || true
threads=("$@")
((${#threads[@]})) || threads=(1 "$(nproc)")
[ -e "$build/lib/libxten.so" ] || { echo "compare_cpu_interleaved: $build/lib/libxten.so not built" >&2; exit 2; }
torch_dir="$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')"
exe="$build/bench/interleaved_cpu"
g++ -O2 -std=c++17 -c "$here/interleaved_cpu_libtorch.cpp" -I"$torch_dir/include" \
  -I"$torch_dir/include/torch/csrc/api/include" -o "$exe.libtorch.o"
g++ -O2 -std=c++17 "$here/interleaved_cpu.cpp" "$exe.libtorch.o" -I"$build/include" \
  -L"$build/lib" -lxten -lfmt -L"$torch_dir/lib" -ltorch -ltorch_cpu -lc10 \
  -Wl,-rpath,"$build/lib" -Wl,-rpath,"$torch_dir/lib" -o "$exe"
for ((r = 1; r <= rounds; ++r)); do "$exe" "${threads[@]}"; done
