#!/bin/bash
# On a machine with several GPUs (device tool, nvidia-h200-x2 or larger): one-GPU cells packed
# onto every GPU beside a sweep of two-GPU cells, nvidia-smi dmon beside them. Writes to $OUT.
set -u
N=$PWD/.device/nodus
export NODUS_HOME=/tmp/nh
"$N" gpus > "$OUT/gpus.txt" 2>&1
nvidia-smi dmon -s u -o T -d 1 > "$OUT/dmon.txt" 2>&1 &
DMON=$!
"$N" sweep --name one --gpu H200 --timeout 5m --param num_workers=0,2,4,8 --param batch_size=128,256 \
  -- python3 bench/multigpu/check_gpu.py '{num_workers}' '{batch_size}' > "$OUT/sweep-one.txt" 2>&1 &
ONE=$!
sleep 3
"$N" sweep --name two --gpu H200:2 --timeout 5m --param rep=1,2 \
  -- python3 bench/multigpu/check_gpu.py 4 256 > "$OUT/sweep-two.txt" 2>&1
wait "$ONE"
kill "$DMON"
for j in $("$N" ps -a --format json | python3 -c 'import json,sys; print(" ".join(str(r["id"]) for r in json.load(sys.stdin)))'); do
  grep -h '"check"' "$NODUS_HOME/logs/$j.log"
done > "$OUT/checks.jsonl"
cp "$NODUS_HOME/nodus.db" "$OUT/nodus.db"
