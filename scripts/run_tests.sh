#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), runs the whole suite, then builds with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs the core, dispatch, cpu, autocast,
# autograd, nn, optim, serialize (the checkpoint fuzz test among them), data and fuzz (the op
# fuzzer, docs/testing.md) tests under them. Ends with CTest's summary line; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

bash scripts/setup.sh
echo "== test suite (build/)"
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 600

echo "== sanitizer build (build-asan/): ASan + UBSan"
# -O1 with line tables: what ASan recommends, and much quicker to compile than -O2 -g.
XTEN_BUILD_DIR=build-asan bash scripts/setup.sh -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
  -DXTEN_SANITIZE=ON -DXTEN_BUILD_BENCHMARKS=OFF -DXTEN_BUILD_EXAMPLES=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -j "$jobs" -L 'core|dispatch|cpu|autocast|autograd|nn|optim|serialize|data|fuzz' --output-on-failure --timeout 900
