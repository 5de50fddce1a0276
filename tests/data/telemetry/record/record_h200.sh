#!/bin/sh
# Records the real telemetry fixtures of tests/data/telemetry/h200_*.csv on a CUDA machine.
#   record_h200.sh RECORDER OUTDIR
# RECORDER is the nodus_record_series tool (cmake --build <dir> --target nodus_record_series).
# Run from the repository root; needs python3 with torch and a GPU.
set -eu
rec=$1
out=$2
mkdir -p "$out"
here=$(dirname "$0")
# Raw nvidia-smi lines for the CSV parser, while the first workload runs.
nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm,pcie.link.gen.current \
  --format=csv,noheader,nounits -lms 250 > "$out/h200_smi_raw.csv" &
smi=$!
"$rec" --out "$out/h200_workers0.csv" -- python3 examples/train.py --model resnet18 \
  --num-workers 0 --batch-size 256 --image-size 128 --warmup 10 --steps 60
kill $smi
"$rec" --out "$out/h200_workers14.csv" -- python3 examples/train.py --model resnet18 \
  --num-workers 14 --batch-size 256 --image-size 128 --warmup 10 --steps 400
"$rec" --out "$out/h200_busy.csv" -- python3 "$here/gpu_loop.py" busy 20
"$rec" --out "$out/h200_sync.csv" -- python3 "$here/gpu_loop.py" sync 20
