#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the main example: a short training run of the
# small CNN on Fashion-MNIST on CPU, then its checkpoint reloaded and evaluated on XPU with
# autocast float16 (docs/training.md). Extra arguments go to examples/train.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/examples/train --epochs 1 --limit-batches 500 --checkpoint build/fashion_mnist.safetensors \
  --eval-xpu --min-accuracy 85 "$@"
