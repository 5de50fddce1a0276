#!/bin/bash
# Issue 57 on the lent GPU machine: the nanoGPT-style fixture (tests/data/pytorch/nanogpt_style.py,
# no DataLoader: batches sliced from an np.memmap in get_batch, gradient accumulation 4,
# loss.item() every iteration) at GPT-2 size in bf16, unmodified, under nodus:
#   1. a sweep over its batch size (4, 8, 12): nodus's tokens/s, steps/s, out-of-step share and
#      MFU (FLOPs counted by torch) per cell beside the fixture's own "steady:" line and its
#      nanoGPT-style MFU estimate (6N + 12LHQT) (sweep.*, show-<id>.txt, own-<id>.txt);
#   2. the hook's overhead: the fixture's own tokens/s with the hook and with --no-instrument,
#      alternating, 2 pairs at batch 8 (overhead.txt);
#   3. --profile at batch 8 with a slow get_batch (--slow-batch-ms 30): the lines named
#      (profile.txt, profile.json).
# Run from the checkout's root: bash bench/h200/step_loops.sh (nodus from $NODUS, else
# .device/nodus, else build/nodus). Writes to $OUT (default /tmp/step-loops-out). A shorter
# lease: ITERS (sweep steps, 40), PAIRS (overhead pairs, 2), PROFILE=0 (no step 3).
set -u
cd "$(dirname "$0")/../.." || exit 1
N=${NODUS:-$PWD/.device/nodus}
[ -x "$N" ] || N=$PWD/build/nodus
OUT=${OUT:-/tmp/step-loops-out}
mkdir -p "$OUT"
export NODUS_HOME=${NODUS_HOME:-/tmp/nodus-step-loops}
rm -rf "$NODUS_HOME"
PY=${PYTHON:-python3}
ITERS=${ITERS:-40}
PAIRS=${PAIRS:-2}
PROFILE=${PROFILE:-1}
# The overhead runs' --warmup: 10 (the script's own skip) puts the one step whose FLOPs the hook
# counts outside the script's steady window, so the pairs measure the per-step cost; the default
# (5s) puts it inside, so they measure that one step's cost too.
OVERHEAD_WARMUP=${OVERHEAD_WARMUP:-10}
# FRAMEWORKS=1: step 4, a Hugging Face and a Lightning loop (bench/h200/hf_steps.py,
# lightning_steps.py) under nodus beside their own figures.
FRAMEWORKS=${FRAMEWORKS:-0}
SWEEP=${SWEEP:-1}  # 0: steps 1 and 2 left out (the frameworks alone)
S=$PWD/tests/data/pytorch/nanogpt_style.py
DATA=$(mktemp -d /tmp/step-loops-data.XXXXXX)  # the fixture's token file, removed at exit
trap 'rm -rf "$DATA"' EXIT
# The GPU's type as nodus's catalog names it.
TYPE=H100
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && TYPE=H200
# GPT-2 size (124M parameters: 12 layers, 768 wide, 12 heads, 1024 tokens, 50304 ids), bf16.
MODEL=(--n-layer 12 --n-embd 768 --n-head 12 --block-size 1024 --vocab 50304 --dtype bfloat16
       --grad-accum 4 --tokens 20000000 --data-dir "$DATA" --log-interval 10 --skip 10)
{
  date -u; hostname; nvidia-smi -L; nproc
  $PY -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])'
  "$N" --version 2>&1
} > "$OUT/env.txt" 2>&1

if [ "$SWEEP" = 1 ]; then
  # 1. The sweep: 40 optimizer steps a cell, the first 10 the warm-up of both nodus and the script.
  "$N" sweep --name steps --gpu "$TYPE" --param bs=4,8,12 --warmup 10 --timeout 5m -- \
    "$PY" "$S" "${MODEL[@]}" --iters "$ITERS" --batch-size "{bs}" > "$OUT/sweep.txt" 2>&1
  echo $? > "$OUT/sweep.rc"
  "$N" show steps --format json > "$OUT/sweep.json" 2>&1
  "$N" show steps --format md > "$OUT/sweep.md" 2>&1
  for id in 1 2 3; do
    "$N" show "$id" > "$OUT/show-$id.txt" 2>&1
    "$N" logs "$id" 2>&1 | grep -E '^(steady|estimated mfu):' > "$OUT/own-$id.txt"
  done

  # 2. Overhead: the fixture's own figures, hook on and off, alternating.
  : > "$OUT/overhead.txt"
  for pair in $(seq "$PAIRS"); do
    for mode in on off; do
      flag=()
      [ "$mode" = off ] && flag=(--no-instrument)
      "$N" run --gpu "$TYPE" "${flag[@]}" --warmup "$OVERHEAD_WARMUP" --timeout 5m -- "$PY" "$S" \
        "${MODEL[@]}" --iters 30 \
        --batch-size 8 > "$OUT/run.tmp" 2>&1
      echo "pair $pair hook $mode: $(grep -E '^steady:' "$OUT/run.tmp")" >> "$OUT/overhead.txt"
    done
  done
  rm -f "$OUT/run.tmp"
fi

# 4. Frameworks: Hugging Face (model(input_ids=..., labels=...), no DataLoader) and Lightning
# (optimizer.step(closure): forward and backward inside the step), each beside its own figures.
if [ "$FRAMEWORKS" = 1 ]; then
  for fw in hf lightning; do
    "$N" run --gpu "$TYPE" --warmup 10 --timeout 5m -- "$PY" "bench/h200/${fw}_steps.py" \
      > "$OUT/$fw-run.txt" 2>&1
    last=$("$N" ps -a --format json | $PY -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
    "$N" show "$last" > "$OUT/$fw-show.txt" 2>&1
  done
fi

# 3. --profile with a slow get_batch: the lines the steps waited for.
[ "$PROFILE" = 0 ] && exit 0
"$N" run --gpu "$TYPE" --profile --warmup 10 --timeout 5m -- "$PY" "$S" "${MODEL[@]}" \
  --iters 25 --batch-size 8 --slow-batch-ms 30 > "$OUT/profile-run.txt" 2>&1
last=$("$N" ps -a --format json | $PY -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
"$N" show "$last" > "$OUT/profile.txt" 2>&1
"$N" show "$last" --format json > "$OUT/profile.json" 2>&1
