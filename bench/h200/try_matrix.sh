#!/bin/bash
# Issue 33 on the H200 (device tool, nvidia-h200, ~5 minutes): `nodus try` of the flawed
# fixtures whose first fix nodus can apply without touching the script. Each fixture runs once
# under nodus run (--profile, so an FP32 finding can come from its trace), then `nodus try` reruns
# it with the fix (num_workers for a loader finding, --tf32 for FP32 math) and prints both side
# by side. Everything goes to $OUT/results.tgz (texts, JSON, env, nodus.db).
# Files: $DIR/nodus (the stripped binary), $DIR/flaws.py; DIR defaults to ../../.device/try.
set -u
DIR=${DIR:-$(cd "$(dirname "$0")/../../.device/try" 2>/dev/null && pwd)}
N=${NODUS:-$DIR/nodus}
S=${FLAWS:-$DIR/flaws.py}
OUT=${OUT:-/tmp/try-out}
R=/tmp/try-results
rm -rf "$R"; mkdir -p "$R" "$OUT"
export NODUS_HOME=/tmp/nodus-try
rm -rf "$NODUS_HOME"
PY=${PYTHON:-python3}
{
  date -u; hostname; nvidia-smi -L; nproc
  $PY -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])'
  "$N" --version 2>&1
} > "$R/env.txt" 2>&1

i=0
for flaw in ${ONLY:-loader-main cpu-transforms fp32}; do
  i=$((i + 1))
  start=$(date +%s)
  "$N" run --gpu H200 --profile --warmup 10 --measure 10s --timeout 150s -- \
    "$PY" "$S" --flaw "$flaw" --seconds 120 > "$R/run-$flaw.txt" 2>&1
  echo "$flaw run rc=$? wall=$(( $(date +%s) - start ))s job=$i" >> "$R/runs.txt"
  "$N" show "$i" > "$R/show-$flaw.txt" 2>&1
  start=$(date +%s)
  "$N" try "$i" --measure 10s > "$R/try-$flaw.txt" 2> "$R/try-$flaw.err"
  rc=$?
  echo "$flaw try rc=$rc wall=$(( $(date +%s) - start ))s" >> "$R/runs.txt"
  if [ "$rc" = 0 ]; then
    i=$((i + 1))
    "$N" show "$i" > "$R/show-$flaw-fix.txt" 2>&1
    "$N" show "$((i - 1))" --format json > "$R/show-$flaw.json" 2>&1
  fi
  (cd /tmp && tar czf "$OUT/results.tgz" try-results)
done
cp "$NODUS_HOME/nodus.db" "$R/" 2>/dev/null
(cd /tmp && tar czf "$OUT/results.tgz" try-results)
cat "$R/runs.txt"
for f in "$R"/try-*.txt "$R"/try-*.err; do echo "== $f"; cat "$f"; done
for f in "$R"/show-*.txt; do echo "== $f"; grep -E "^(diagnosis|loader|tf32|data wait|throughput|fix tried)" "$f"; done
