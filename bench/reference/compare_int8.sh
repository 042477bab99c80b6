#!/bin/sh
# bench_int8 beside PyTorch's x86 quantized backend (torch_int8.py), same host, same thread
# counts, one command (bench/README.md, "bench_int8"). Builds bench_int8 against xten's build
# (build/, or $XTEN_BUILD_DIR) unless it is there.
#   sh bench/reference/compare_int8.sh [REPS] [THREADS...]   (default: 5; 16 1)
set -e
here="$(cd "$(dirname "$0")" && pwd)"
build="${XTEN_BUILD_DIR:-$here/../../build}"
reps="${1:-5}"
[ $# -gt 0 ] && shift
threads="${*:-16 1}"
exe="$build/bench/bench_int8"
if [ ! -x "$exe" ]; then
  mkdir -p "$build/bench"
  g++ -O2 -std=c++17 "$here/../bench_int8.cpp" -I"$build/include" -L"$build/lib" -lxten -lfmt \
    -Wl,-rpath,"$build/lib" -o "$exe"
fi
for t in $threads; do
  "$exe" --reps "$reps" "$t"
  python3 "$here/torch_int8.py" --reps "$reps" "$t"
done
