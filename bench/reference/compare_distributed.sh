#!/usr/bin/env bash
# bench_distributed beside PyTorch's Gloo backend and DDP (torch_distributed.py) in one command
# (bench/README.md, "bench_distributed"): all_reduce of 1 MB and 100 MB on 2 and 4 ranks, then
# ResNet-18 steps (batch 8 per rank) on 4 ranks x 4 threads with DDP (copying gradients, and
# gradient_as_bucket_view; each beside the same steps under no_sync), and one rank x 16 threads
# at batch 32.
# Each case runs xten then torch, ROUNDS times. Needs xtenrun and bench_distributed built (build/, or $XTEN_BIN and $XTEN_BENCH_DIST)
# and Python's torch and torchvision.
# Usage: bench/reference/compare_distributed.sh [ROUNDS] [all|allreduce|ddp]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${XTEN_BUILD_DIR:-$here/../../build}"
rounds="${1:-1}"
what="${2:-all}"
xtenrun="${XTEN_XTENRUN:-$build/bin/xtenrun}"
bench="${XTEN_BENCH_DIST:-$build/bench/bench_distributed}"
ref="$here/torch_distributed.py"
cores="$(nproc)"
port=29600
run_both() {  # nproc args...
  local n="$1"
  shift
  port=$((port + 1))
  "$xtenrun" --nproc-per-node "$n" --master-port "$port" "$bench" "$@"
  port=$((port + 1))
  OMP_NUM_THREADS=$((cores / n)) python3 -m torch.distributed.run --nproc-per-node "$n" \
    --master-port "$port" "$ref" "$@" 2>&1 | grep '^torch'
}
for ((r = 1; r <= rounds; ++r)); do
  if [[ "$what" == all || "$what" == allreduce ]]; then
    for n in 2 4; do run_both "$n" allreduce; done
  fi
  if [[ "$what" == all || "$what" == ddp ]]; then
    run_both 4 ddp 8
    run_both 4 ddp-view 8
    run_both 1 alone 32
  fi
done
