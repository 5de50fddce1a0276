#!/bin/bash
# Issue 15 on the H200 (device tool, nvidia-h200, ~7 minutes), and issue 14's hook overhead:
#  1. The flawed-script matrix: tests/data/pytorch/flaws.py once per flaw (and healthy) under
#     `nodus run --profile`: each run's `show` (text and JSON) and its Chrome trace.
#  2. Hook overhead, interleaved A/B: the healthy script's own samples/s (steps 20..end, so
#     start-up is out) with the hook and with --no-instrument, in ABBA order, PAIRS pairs; the
#     per-pair ratio on/off cancels drift between pairs. bench/overhead_stats.py summarises.
# Everything goes to $OUT: results.tgz (texts, JSON, nodus.db) and traces.tgz (the traces).
# Files: $DIR/nodus (the stripped binary), $DIR/flaws.py; DIR defaults to this folder's
# ../../.device/prof, or set DIR (the device run carries them in an ignored folder).
set -u
DIR=${DIR:-$(cd "$(dirname "$0")/../../.device/prof" 2>/dev/null && pwd)}
N=${NODUS:-$DIR/nodus}
S=${FLAWS:-$DIR/flaws.py}
PAIRS=${PAIRS:-3}
OUT=${OUT:-/tmp/profile-out}
R=/tmp/profile-results
rm -rf "$R"; mkdir -p "$R" "$OUT"
export NODUS_HOME=/tmp/nodus-profile
rm -rf "$NODUS_HOME"
PY=${PYTHON:-python3}
{
  date -u; hostname; nvidia-smi -L; nproc
  $PY -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])'
  "$N" --version 2>&1
  echo "cgroup: $(cat /proc/self/cgroup)"; mount | grep cgroup
  echo "subtree_control of / : $(cat /sys/fs/cgroup/cgroup.subtree_control 2>&1)"
  df -h /var/tmp /tmp | cat
} > "$R/env.txt" 2>&1

i=0
# ONLY="healthy item" runs a subset (job ids then follow that order).
for flaw in ${ONLY:-healthy loader-main cpu-transforms slow-storage item tiny-batch fp32}; do
  i=$((i + 1))
  start=$(date +%s)
  "$N" run --gpu H200 --profile --warmup 10 --measure 10s --timeout 120s -- \
    "$PY" "$S" --flaw "$flaw" --seconds 90 > "$R/run-$flaw.txt" 2>&1
  echo "$flaw rc=$? wall=$(( $(date +%s) - start ))s" >> "$R/runs.txt"
  "$N" show "$i" > "$R/show-$flaw.txt" 2>&1
  "$N" show "$i" --format json > "$R/show-$flaw.json" 2>&1
  find "$NODUS_HOME" -path "*/$i.hook/trace-0.json" -exec cp {} "$R/trace-$flaw.json" \;
  "$N" report "$i" -o "$R/report-$flaw.html" 2>>"$R/env.txt"
done

pack() {
  (cd /tmp && tar czf "$OUT/results.tgz" --exclude='trace-*' profile-results &&
    tar czf "$OUT/traces.tgz" profile-results/trace-*.json)
}
pack  # what the matrix found comes back even if the overhead part runs out of time

# Overhead: ABBA pairs, the script's own figure.
: > "$R/overhead.txt"
for p in $(seq 1 "$PAIRS"); do
  if [ $((p % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
  for mode in $order; do
    flag=(); [ "$mode" = off ] && flag=(--no-instrument)
    v=$("$N" run --gpu H200 --timeout 2m "${flag[@]}" -- "$PY" "$S" --flaw healthy \
        --seconds 10 2>/dev/null | awk '/own_samples_per_sec/ {print $2}')
    echo "$p $mode $v" >> "$R/overhead.txt"
  done
done
cp "$NODUS_HOME/nodus.db" "$R/" 2>/dev/null
pack
ls -la "$OUT" "$R"
cat "$R/runs.txt" "$R/overhead.txt"
for f in "$R"/show-*.txt; do echo "== $f"; grep -E "^(diagnosis|note|profile|sync|loader|io|data wait)" "$f"; done
