#!/usr/bin/env bash
# ThreadSanitizer over the XPU runtime and the Level Zero driver (docs/testing.md): builds
# build-tsan/ with -fsanitize=thread (the targets below only) and runs the driver, runtime and
# multi-threaded stress tests. PoCL, LLVM, the loader and libgomp are not instrumented: a report
# of theirs would be suppressed, one by one with its reason, in test/sanitizers/tsan.supp (none
# so far), never one of xten's or the driver's.
# Assumes scripts/setup.sh has run (it is part of scripts/run_tests.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
  -DXTEN_SANITIZE_THREAD=ON -DXTEN_BUILD_BENCHMARKS=OFF -DXTEN_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target test_ze_driver test_xpu_runtime test_xpu_stress
# One CPU thread: libgomp's barriers are invisible to TSan (uninstrumented).
export OMP_NUM_THREADS=1
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/test/sanitizers/tsan.supp"
for t in test_ze_driver test_xpu_runtime test_xpu_stress; do
  echo "== $t under ThreadSanitizer"
  "build-tsan/test/$t"
done
