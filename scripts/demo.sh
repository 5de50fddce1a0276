#!/usr/bin/env bash
# Installs, builds and runs the demo: a sweep of examples/train.py over DataLoader workers and
# batch size on the local backend, then the comparison table. On a machine without an NVIDIA
# GPU the box is priced as one L4 (NODUS_LOCAL_GPUS) so the table shows what the cells would cost.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh demo
bash scripts/build.sh nodus
export NODUS_HOME=${NODUS_HOME:-$PWD/.nodus-demo}
if ! (command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1); then
  export NODUS_LOCAL_GPUS=${NODUS_LOCAL_GPUS:-L4:1}
fi
gpu=$(./build/nodus gpus --format csv | awk -F, 'NR == 2 { print $2 }')
# --warmup 10: the first 10 of the 30 batches are warm-up, the rest the steady state the table
# compares (the default 5 s of warm-up would outlast these short cells: no best cell then).
./build/nodus sweep --name demo --gpu "$gpu" --timeout 10m --warmup 10 \
  --param num_workers=0,1,2 --param batch_size=32,64 \
  -- /usr/bin/python3 examples/train.py --num-workers '{num_workers}' --batch-size '{batch_size}' \
     --steps 30 --image-size 64
