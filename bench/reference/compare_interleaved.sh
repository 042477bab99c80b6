#!/usr/bin/env bash
# xten against libtorch in one process, alternating blocks: interleaved_nn.cpp (the nn + optim MLP
# step; it says why), interleaved_cpu.cpp (bench_cpu's list: products, convolutions, memory-bound
# ops, ResNet-18), interleaved_sweep.cpp (the op sweep, ../sweep_cases.h) or interleaved_layout.cpp
# (ResNet-50 inference and ResNet-18 training, NCHW and channels-last, ../layout_cases.h) or
# interleaved_steps.cpp (graph mode II's training steps, eager and compiled, ../step_cases.h).
# Builds the program against xten's build (build/, or $XTEN_BUILD_DIR) and
# Python's torch, then runs it ROUNDS times at each thread count (bench/README.md, "bench_nn" and
# "bench_cpu", "bench_sweep").
# Usage: bench/reference/compare_interleaved.sh nn|cpu|sweep|layout|steps [ROUNDS] [THREADS...]
#   (3; 1 and nproc)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${XTEN_BUILD_DIR:-$here/../../build}"
what="${1:-}"
[[ "$what" == nn || "$what" == cpu || "$what" == sweep || "$what" == layout ||
  "$what" == steps ]] ||
  { echo "usage: $0 nn|cpu|sweep|layout|steps [ROUNDS] [THREADS...]" >&2; exit 2; }
shift
rounds="${1:-3}"
shift || true
threads=("$@")
((${#threads[@]})) || threads=(1 "$(nproc)")
[ -e "$build/lib/libxten.so" ] || { echo "compare_interleaved: $build/lib/libxten.so not built" >&2; exit 2; }
torch_dir="$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')"
exe="$build/bench/interleaved_$what"
# The libtorch side is a shared object that the program loads apart (reference/interleaved.h).
g++ -O2 -std=c++17 -fPIC -shared "$here/interleaved_${what}_libtorch.cpp" -I"$torch_dir/include" \
  -I"$torch_dir/include/torch/csrc/api/include" -L"$torch_dir/lib" -ltorch -ltorch_cpu -lc10 \
  -Wl,-rpath,"$torch_dir/lib" -o "$exe.libtorch.so"
g++ -O2 -std=c++17 "$here/interleaved_$what.cpp" -I"$build/include" -L"$build/lib" -lxten -lfmt \
  -ldl -Wl,-rpath,"$build/lib" -o "$exe"
for ((r = 1; r <= rounds; ++r)); do "$exe" "${threads[@]}"; done
