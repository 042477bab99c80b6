#!/bin/sh
# bench_compile beside PyTorch eager and torch.compile, same host, same thread counts, one
# command (bench/README.md, "bench_compile"). Run from the repository root after building:
#   sh bench/reference/compare_compile.sh [THREADS...]   (default: 1 16)
set -e
threads="${*:-1 16}"
for t in $threads; do
  build/bench/bench_compile "$t"
  cache=$(mktemp -d)
  TORCHINDUCTOR_CACHE_DIR="$cache" python3 bench/reference/torch_compile.py "$t"
  rm -rf "$cache"
done
