#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), runs the whole suite, then builds with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs every test but the examples' and the
# packaging test under them: core, dispatch, cpu, autocast, autograd, nn, optim, serialize (the
# checkpoint fuzz test among them), data, fuzz (the op fuzzer), profiler, distributed (stores,
# collectives and DDP across processes) and xpu (driver, runtime,
# kernels, exit and fault tests, the op fuzzer against the XPU). PoCL and LLVM are not
# instrumented: test/sanitizers/lsan.supp suppresses their own leaks, one by one. ThreadSanitizer
# is scripts/run_tsan.sh, by hand (docs/testing.md). Ends with CTest's summary line; exits
# non-zero on any failure.
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
# The XPU tests reuse build/'s kernel caches (same SPIR-V), except those that make their own.
# The second-order gradient checks (OpDb/OpGradGrad, 330 s of the run's 2,940 on 2 cores) run
# in build/ only: they call the backward formulas' ops again, which OpDb/OpGrad and the op
# fuzzer already run under the sanitizers (docs/testing.md, "Sanitizers").
# use_sigaltstack=0: LLVM (inside PoCL) changes the alternate signal stack of the threads that
# build kernels, and ASan then fails to unmap its own when such a thread ends (without it,
# XpuThreads.EightThreadsEachOnItsOwnStream aborted in 6 runs of 6).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:use_sigaltstack=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS="suppressions=$PWD/test/sanitizers/lsan.supp" \
  POCL_CACHE_DIR="$PWD/build/cache/pocl" ZE_OPENCL_CACHE_DIR="$PWD/build/cache/ze_opencl" \
  ctest --test-dir build-asan -j "$jobs" \
  -L 'core|dispatch|cpu|autocast|autograd|nn|optim|serialize|data|fuzz|profiler|xpu|distributed' \
  -E '^OpDb/OpGradGrad\.' --output-on-failure --timeout 900
