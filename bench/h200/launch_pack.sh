#!/bin/bash
# Sections 1 (launch overhead) and 4 (packing) of bench/RESULTS.md, and the launch's steps
# (bench/LAUNCH-STEPS.md), on the lent GPU machine: 16 cores, not a 2-core VM, so what is the
# VM's and what is nodus's shows side by side. Run there from the checkout's root:
#   bash bench/h200/launch_pack.sh      (nodus from .device/nodus, GNU parallel from .device/bin)
# Writes RESULTS.md, LAUNCH-STEPS.md and the raw JSON under $OUT (default ./launch-pack-out).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NODUS=${NODUS:-$REPO/.device/nodus}
OUT=${OUT:-$REPO/launch-pack-out}
export PATH=$REPO/.device/bin:$PATH  # GNU parallel, a Perl script carried from Debian
command -v parallel >/dev/null || { echo "launch_pack: GNU parallel not found" >&2; exit 2; }
WORK=$(mktemp -d /tmp/nodus-launch-pack.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT" "$WORK/results"
H=(python3 "$REPO/bench/harness.py")
START=$(date +%s)
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
"${H[@]}" launch --results "$WORK/results" --nodus "$NODUS" --work "$WORK" --jobs 200 --reps 5
"${H[@]}" pack --results "$WORK/results" --nodus "$NODUS" --work "$WORK" --reps 3
python3 "$REPO/bench/launch_steps.py" --nodus "$NODUS" --runs 60 --out "$OUT/LAUNCH-STEPS.md"
"${H[@]}" meta --results "$WORK/results" --repo "$REPO" --load-start "$LOAD" \
  --elapsed $(($(date +%s) - START)) --build-label "RelWithDebInfo (-O2 -g), stripped, built on Debian 12"
"${H[@]}" report --results "$WORK/results" --out "$OUT/RESULTS.md" --no-analysis \
  --about "The machine is the lent GPU machine (16 cores, nothing else running on it); only sections 1 and 4 were run."
cp "$WORK"/results/*.json "$OUT/"
