#!/bin/bash
# Issue 17 on the 2-GPU H200 (device tool, nvidia-h200-x2, ~7 minutes): the same cell run alone
# and run beside another (one per GPU), with CPU sets on and off, for each num_workers in
# $WORKERS. Each run is measured by nodus itself: --warmup, then --measure of steady state, its
# steady-state throughput from `nodus show --format json` (stats.throughput). Then one 2-GPU job
# (check_gpu.py: it sees both GPUs) with its per-GPU telemetry. Writes to $OUT:
#   table.md    the alone/beside table (machine, date, every figure), also printed
#   runs.txt    every run's `nodus show` (its CPUs, its steady state), in order
#   two-gpu.txt the 2-GPU job's check line and `nodus show`
#   env.txt, nodus.db
#
# The cell: bench/h200/imagenet_style.py --workers N (ResNet-50, CPU-side JPEG-style decoding).
# DRY_RUN=1 checks the script's logic where there is no GPU: declared GPUs (NODUS_LOCAL_GPUS,
# 2 of them), bench/multigpu/cpu_cell.py as the cell (busy workers, one per core it believes it
# has), no 2-GPU check. The nodus binary: $NODUS, else .device/nodus (carried), else build/nodus.
set -u
cd "$(dirname "$0")/../.." || exit 1
N=${NODUS:-$PWD/.device/nodus}
[ -x "$N" ] || N=$PWD/build/nodus
OUT=${OUT:-/tmp/cpusets-out}
mkdir -p "$OUT"
export NODUS_HOME=${NODUS_HOME:-/tmp/nodus-cpusets}
rm -rf "$NODUS_HOME"
PY=${PYTHON:-python3}
DRY=${DRY_RUN:-0}
WORKERS=${WORKERS:-0 4}
WARMUP=${WARMUP:-10s}
MEASURE=${MEASURE:-20s}
TIMEOUT=${TIMEOUT:-3m}
if [ "$DRY" = 1 ]; then
  export NODUS_LOCAL_GPUS=H100:2
  GPU=H100
  WORKERS=${DRY_WORKERS:-0}
  WARMUP=${WARMUP_DRY:-2s}
  MEASURE=${MEASURE_DRY:-4s}
  cell() { echo "$PY bench/multigpu/cpu_cell.py ${DRY_SECONDS:-12}"; }
else
  GPU=${GPU:-H200}
  cell() { echo "$PY bench/h200/imagenet_style.py --workers $1"; }
fi
{
  date -u; hostname; nproc; nvidia-smi -L 2>&1; nvidia-smi topo -m 2>&1
  for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] && echo "$d local_cpulist $(cat "$d/local_cpulist" 2>/dev/null)"
  done
  "$N" --version 2>&1; "$N" gpus 2>&1
  [ "$DRY" = 1 ] && echo "DRY RUN: declared GPUs $NODUS_LOCAL_GPUS, cell bench/multigpu/cpu_cell.py"
} > "$OUT/env.txt" 2>&1
: > "$OUT/runs.txt"
: > "$OUT/rows.txt"

last_id() {
  "$N" ps -a --format json | "$PY" -c 'import json,sys; print(max([r["id"] for r in json.load(sys.stdin)] or [0]))'
}

measure() {  # measure NAME CPUSETS WORKERS alone|beside
  local name=$1 cs=$2 w=$3 how=$4 cmd before ids
  read -ra cmd <<< "$(cell "$w")"
  before=$(last_id)
  if [ "$how" = alone ]; then
    NODUS_CPUSETS=$cs "$N" run --name "$name" --gpu "$GPU" --warmup "$WARMUP" --measure "$MEASURE" \
      --timeout "$TIMEOUT" -- "${cmd[@]}" > /dev/null 2>&1
  else
    NODUS_CPUSETS=$cs "$N" sweep --name "$name" --gpu "$GPU" --param rep=1,2 --warmup "$WARMUP" \
      --measure "$MEASURE" --timeout "$TIMEOUT" -- "${cmd[@]}" > /dev/null 2>&1
  fi
  ids=$("$N" ps -a --format json | "$PY" -c '
import json, sys
print(" ".join(str(r["id"]) for r in sorted(json.load(sys.stdin), key=lambda r: r["id"]) if r["id"] > int(sys.argv[1])))' "$before")
  for id in $ids; do
    { echo "=== $name (CPU sets $cs, num_workers $w, $how): job $id"; "$N" show "$id" 2>&1; } >> "$OUT/runs.txt"
    tp=$("$N" show "$id" --format json | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
s = j.get("stats", {})
print(s.get("throughput", "nan"), "|", j.get("state", "?"), "|", j.get("note", "").replace("\n", " "))')
    echo "$w|$cs|$how|$id|$tp" >> "$OUT/rows.txt"
  done
}

for w in $WORKERS; do
  for cs in off auto; do
    measure "alone-$cs-$w" "$cs" "$w" alone
    measure "beside-$cs-$w" "$cs" "$w" beside
  done
done

if [ "$DRY" != 1 ]; then
  { NODUS_CPUSETS=auto "$N" run --name two-gpu --gpu "$GPU:2" --timeout 3m -- \
      "$PY" bench/multigpu/check_gpu.py 4 256 60 2>&1 | grep '"check"'
    "$N" show two-gpu 2>&1; "$N" show two-gpu --format json 2>&1; } > "$OUT/two-gpu.txt"
fi

"$PY" - "$OUT/rows.txt" "$OUT/env.txt" "$DRY" > "$OUT/table.md" <<'PYEOF'
import math, re, statistics, sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.count("|") >= 6]
env = open(sys.argv[2]).read().splitlines()
dry = sys.argv[3] == "1"
def num(x):
    try:
        return float(x)
    except ValueError:
        return math.nan
print("# Cells side by side: alone against beside another, CPU sets off and on" + (" (DRY RUN)" if dry else ""))
print()
print("Machine: " + " / ".join(l for l in env[:3]) + ("" if dry else ". GPUs: " + "; ".join(l for l in env if l.startswith("GPU "))))
print()
print("Steady-state throughput (samples/s) as nodus measured it (--warmup, then --measure). Beside: the two")
print("cells of a sweep, one per GPU, at the same time. Goal: beside within 5% of alone with CPU sets on.")
print()
print("| num_workers | CPU sets | alone | beside (each cell) | beside mean / alone | CPUs of each job |")
print("| ---: | --- | ---: | --- | ---: | --- |")
by = {}
for w, cs, how, job, tp, state, note in (r[:7] for r in rows):
    by.setdefault((w.strip(), cs.strip()), {}).setdefault(how.strip(), []).append((num(tp), state.strip(), note))
for (w, cs), d in by.items():
    alone = [t for t, _, _ in d.get("alone", [])]
    beside = [t for t, _, _ in d.get("beside", [])]
    a = alone[0] if alone else math.nan
    m = statistics.mean(beside) if beside else math.nan
    cpus = []
    for _, _, note in d.get("alone", []) + d.get("beside", []):
        g = re.search(r"CPUs ([0-9,\-]+)", note)
        cpus.append(g.group(1) if g else "all")
    states = {s for _, s, _ in d.get("alone", []) + d.get("beside", [])}
    print(f"| {w} | {'on' if cs == 'auto' else 'off'} | {a:.0f} | {', '.join(f'{t:.0f}' for t in beside)} | "
          f"{m / a:.3f} | {'; '.join(cpus)} |" + ("" if states <= {"completed"} else f" states: {', '.join(sorted(states))}"))
PYEOF
cp "$NODUS_HOME/nodus.db" "$OUT/nodus.db" 2>/dev/null
cat "$OUT/table.md"
