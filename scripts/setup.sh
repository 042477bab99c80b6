#!/usr/bin/env bash
# All set-up for a fresh Debian 12 machine: install the packages xten builds with, then
# configure and build into build/ (or $XTEN_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ ccache  # toolchain; ccache makes rebuilds cheap
  libeigen3-dev                 # CPU kernels
  libdnnl-dev                   # CPU matrix products and convolutions (oneDNN)
  nlohmann-json3-dev            # checkpoints: the safetensors header is JSON
  zlib1g-dev                    # data/: inflates gzip-compressed datasets (IDX files)
  libgloo-dev                   # distributed/: collectives between processes over TCP (Gloo)
  dataset-fashion-mnist         # the training example's data, under /usr/share/datasets
  fortunes                      # the transformer example's text, under /usr/share/games/fortunes
  libfmt-dev                    # error messages and printing
  libgtest-dev                  # tests (GoogleTest)
  libbenchmark-dev              # bench/ (Google Benchmark)
  libze-dev libze1              # XPU runtime: the Level Zero loader and validation layer
  pocl-opencl-icd ocl-icd-opencl-dev  # the bundled Level Zero driver runs on OpenCL (PoCL)
  clang-15 llvm-15 llvm-spirv-15 spirv-tools  # kernels: OpenCL C -> SPIR-V at build time (and back
                                      # to SPIR for PoCL at run time)
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "== installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR="${XTEN_BUILD_DIR:-build}"
echo "== configuring $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
echo "== building $BUILD_DIR"
cmake --build "$BUILD_DIR" -j "$(nproc)"
