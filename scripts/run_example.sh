#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the main example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/examples/resnet "$@"
