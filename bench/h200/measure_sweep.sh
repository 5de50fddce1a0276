#!/bin/bash
# Issue 14 on the H200 (device tool, nvidia-h200, ~7 minutes): an unmodified ImageNet-style
# ResNet-50 script (bench/h200/imagenet_style.py: no NODUS_METRICS, no --metric-regex) swept over
# DataLoader workers 0/4/8/14 with --measure, then the hook's overhead side by side with the
# uninstrumented run. Writes everything to $OUT:
#   sweep.txt / sweep.json / sweep.md   the table (THROUGHPUT, $/M SAMPLES, DATA WAIT, steady
#                                       UTIL %, VERDICT in every cell; exit status in sweep.rc)
#   show-<id>.txt                       each cell's `nodus show` (phases, loaders, diagnosis)
#   overhead.txt                        the script's own samples/s with and without the hook
#   env.txt, nodus.db
# The nodus binary: $NODUS, else .device/nodus (carried from the Debian build), else build/nodus.
set -u
cd "$(dirname "$0")/../.." || exit 1
N=${NODUS:-$PWD/.device/nodus}
[ -x "$N" ] || N=$PWD/build/nodus
OUT=${OUT:-/tmp/measure-out}
mkdir -p "$OUT"
export NODUS_HOME=${NODUS_HOME:-/tmp/nodus-measure}
rm -rf "$NODUS_HOME"
PY=${PYTHON:-python3}
S=bench/h200/imagenet_style.py
{
  date -u; hostname; nvidia-smi -L; nproc
  $PY -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])'
  $PY -c 'import torchvision; print("torchvision", torchvision.__version__)' 2>&1 | tail -1
  "$N" --version 2>&1
} > "$OUT/env.txt" 2>&1

# 1. The sweep: each cell measured for 30 s of steady state after a 10 s warm-up, then stopped
#    (that is its plan: it completed). --timeout is only the backstop.
"$N" sweep --name measure --gpu H200 --param num_workers=0,4,8,14 --warmup 10s --measure 30s \
  --timeout 4m -- "$PY" "$S" --workers "{num_workers}" > "$OUT/sweep.txt" 2>&1
echo $? > "$OUT/sweep.rc"
"$N" show measure --format json > "$OUT/sweep.json" 2>&1
"$N" show measure --format md > "$OUT/sweep.md" 2>&1
for id in 1 2 3 4; do "$N" show "$id" > "$OUT/show-$id.txt" 2>&1; done

# 2. Overhead: the same script at 14 workers, 140 steps, its own samples/s over steps 20..140,
#    with the hook (default) and with --no-instrument, alternating, 3 pairs.
: > "$OUT/overhead.txt"
for r in 1 2 3; do
  for mode in off on; do
    flag=(); [ $mode = off ] && flag=(--no-instrument)
    v=$("$N" run --gpu H200 --timeout 3m "${flag[@]}" -- "$PY" "$S" --workers 14 --steps 140 \
        --print-freq 1000 2>/dev/null | awk '/own_samples_per_sec/ {print $2}')
    echo "$mode $r $v" >> "$OUT/overhead.txt"
  done
done
"$PY" - "$OUT/overhead.txt" <<'PYEOF' > "$OUT/overhead-median.txt"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
off = [float(r[2]) for r in rows if r[0] == "off"]
on = [float(r[2]) for r in rows if r[0] == "on"]
if off and on:
    a, b = statistics.median(off), statistics.median(on)
    print("median without hook %.1f, with hook %.1f samples/s: %+.2f%%" % (a, b, 100 * (b - a) / a))
PYEOF
"$N" ps -a > "$OUT/ps.txt" 2>&1
cp "$NODUS_HOME/nodus.db" "$OUT/nodus.db" 2>/dev/null
cat "$OUT/sweep.txt" "$OUT/overhead.txt" "$OUT/overhead-median.txt"
