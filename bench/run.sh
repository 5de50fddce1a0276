#!/usr/bin/env bash
# bench/run.sh: builds nodus in Release, runs every benchmark against its peers in the same run
# and writes bench/RESULTS.md. One command, as root on Debian 12 (it installs the peers):
#
#   bash bench/run.sh
#
# About 9 minutes on a 2-core machine, after the first build. Environment:
#   NODUS_BENCH_BUILD   build folder (default build-bench in the checkout)
#   NODUS_BENCH_QUICK=1 a short run to try the script (few repeats, small store); numbers not for RESULTS
#   NODUS_BENCH_SLURM=0 skip Slurm even when scripts/slurm-dev-cluster.sh can start it
#   NODUS_BENCH_OUT     where to write the results (default bench/RESULTS.md)
#   NODUS_BENCH_NO_BUILD=1 use the binaries already in the build folder (no cmake)
#   NODUS_BENCH_BASE    a nodus binary from before a change: its launch loop runs beside the new one
#   NODUS_BENCH_BASE_LABEL  what to call it in the report (e.g. its commit)
# Scratch files go to a temporary folder under /tmp, removed at the end.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${NODUS_BENCH_BUILD:-$REPO/build-bench}
OUT=${NODUS_BENCH_OUT:-$REPO/bench/RESULTS.md}
QUICK=${NODUS_BENCH_QUICK:-0}
SLURM=${NODUS_BENCH_SLURM:-1}
WORK=$(mktemp -d /tmp/nodus-bench.XXXXXX)
RESULTS=$WORK/results
mkdir -p "$RESULTS"
START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
SLURM_STARTED=0
HARNESS=(python3 "$REPO/bench/harness.py")

say() { echo "bench: $*" >&2; }
cleanup() {
  if [[ $SLURM_STARTED == 1 ]]; then bash "$REPO/scripts/slurm-dev-cluster.sh" stop >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# --- peers and tools ------------------------------------------------------------------------
missing=()
for tool in parallel hyperfine python3 g++ cmake ninja:ninja-build valgrind strace /usr/bin/time:time; do
  cmd=${tool%%:*} pkg=${tool#*:}
  command -v "$cmd" >/dev/null || missing+=("$pkg")
done
if ((${#missing[@]})); then
  [[ $(id -u) == 0 ]] || { say "missing ${missing[*]}: run as root to install them"; exit 1; }
  say "installing ${missing[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

# --- build ----------------------------------------------------------------------------------
if [[ ${NODUS_BENCH_NO_BUILD:-0} == 1 ]]; then
  say "using the binaries already in $BUILD (NODUS_BENCH_NO_BUILD=1)"
else
  say "building nodus (Release) in $BUILD"
  if [[ ! -f $BUILD/build.ninja ]]; then
    cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$BUILD" --target nodus nodus_store nodus_core nodus_telemetry nodus_backend_local >/dev/null
fi
NODUS=$BUILD/nodus
GEN=$BUILD/bench-gen_store
if [[ ! -x $GEN || $REPO/bench/gen_store.cc -nt $GEN || $BUILD/store/libnodus_store.a -nt $GEN ]]; then
  say "building the store generator"
  g++ -std=c++20 -O2 -I"$REPO" "$REPO/bench/gen_store.cc" \
    "$BUILD/store/libnodus_store.a" "$BUILD/core/libnodus_core.a" -lsqlite3 -ldl -o "$GEN"
fi

SAMPLER=$BUILD/bench-sampler_cost
if [[ ! -x $SAMPLER || $REPO/bench/sampler_cost.cc -nt $SAMPLER || $BUILD/telemetry/libnodus_telemetry.a -nt $SAMPLER ]]; then
  say "building the sampler benchmark"
  g++ -std=c++20 -O2 -I"$REPO" "$REPO/bench/sampler_cost.cc" "$BUILD/telemetry/libnodus_telemetry.a" \
    "$BUILD/backend/local/libnodus_backend_local.a" "$BUILD/core/libnodus_core.a" -o "$SAMPLER"
fi

# A catalog with a $900/GPU-hour type (the most a catalog may hold is $1000): four of them cost
# $1 a second, so a $1 cap is reached 1 s after start.
PRICES=$WORK/prices.json
cat >"$PRICES" <<'EOF'
{"gpus": [{"type": "TEST", "aliases": [], "usd_per_gpu_hour": 900, "source": "bench/run.sh",
           "checked": "2026-11-29", "device_names": ["TEST"]},
          {"type": "H100-SXM", "aliases": ["H100"], "usd_per_gpu_hour": 2.99, "source": "bench/run.sh",
           "checked": "2026-11-29", "device_names": ["NVIDIA H100 80GB HBM3"]}]}
EOF

if [[ $QUICK == 1 ]]; then
  LAUNCH=(--jobs 50 --reps 2) STOP=(--samples 3) SUPER=(--cpu-s 8 --mem-s 12) PACK=(--reps 1)
  STORE=(--jobs 5000 --sweeps 50 --points 50000 --runs 3 --launch-jobs 5 --rounds 1) SLURM_N=(--samples 1)
  SUPER+=(--crowd 200 --crowd-s 5)
  SAMPLER_ARGS=(200 20)
else
  LAUNCH=(--jobs 200 --reps 5) STOP=(--samples 10) SUPER=(--cpu-s 60 --mem-s 180 --crowd 1000 --crowd-s 10)
  PACK=(--reps 3)
  SAMPLER_ARGS=(1000 200)
  STORE=(--jobs 100000 --sweeps 1000 --points 1000000 --runs 10 --launch-jobs 30 --rounds 5) SLURM_N=(--samples 3)
fi

# --- 1, 2: launch overhead and stop precision (nothing else of ours runs meanwhile) --------
say "1. launch overhead"
BASE_ARGS=()
if [[ -n ${NODUS_BENCH_BASE:-} ]]; then
  BASE_ARGS=(--nodus-base "$NODUS_BENCH_BASE" --base-label "${NODUS_BENCH_BASE_LABEL:-base commit}")
fi
"${HARNESS[@]}" launch --results "$RESULTS" --nodus "$NODUS" --work "$WORK" --with-hooks "${LAUNCH[@]}" "${BASE_ARGS[@]}"
say "2. stop precision"
"${HARNESS[@]}" stop --results "$RESULTS" --nodus "$NODUS" --work "$WORK" --prices "$PRICES" "${STOP[@]}"
say "2b. kill latency: cgroup.kill against the /proc-scan fallback (results/kill.json)"
"${HARNESS[@]}" kill --results "$RESULTS" --nodus "$NODUS" --work "$WORK"

# --- Slurm, in the background of 3 + 6 (which only wait) ------------------------------------
SLURM_PID=
CLUSTER=$REPO/scripts/slurm-dev-cluster.sh
if [[ $SLURM != 1 ]]; then
  "${HARNESS[@]}" slurm-skip --results "$RESULTS" --reason "NODUS_BENCH_SLURM=0"
elif [[ ! -f $CLUSTER ]]; then
  "${HARNESS[@]}" slurm-skip --results "$RESULTS" --reason "scripts/slurm-dev-cluster.sh is not there"
else
  if ! bash "$CLUSTER" status >/dev/null 2>&1; then
    say "starting the Slurm dev cluster"
    if timeout 300 bash "$CLUSTER" start >/dev/null 2>"$WORK/slurm-start.log"; then
      SLURM_STARTED=1
    fi
  fi
  if bash "$CLUSTER" status >/dev/null 2>&1; then
    mapfile -t SLURM_ENV < <(bash "$CLUSTER" env | sed -n 's/^export //p')
    say "Slurm: launch latency and stop precision (in the background)"
    "${HARNESS[@]}" slurm --results "$RESULTS" --nodus "$NODUS" --work "$WORK" "${SLURM_N[@]}" \
      "${SLURM_ENV[@]}" >"$WORK/slurm.log" 2>&1 &
    SLURM_PID=$!
  else
    reason="scripts/slurm-dev-cluster.sh start did not bring the cluster up: $(tail -c 300 "$WORK/slurm-start.log" 2>/dev/null | tr '\n' ' ')"
    "${HARNESS[@]}" slurm-skip --results "$RESULTS" --reason "$reason"
  fi
fi

say "3 + 6. supervisor CPU and memory (${SUPER[*]})"
"${HARNESS[@]}" supervisor --results "$RESULTS" --nodus "$NODUS" --work "$WORK" \
  --fake-smi "$REPO/bench/fake_nvidia_smi.py" "${SUPER[@]}"
say "3b. host sampler: full scan against the tree walk (+${SAMPLER_ARGS[0]} processes)"
"${HARNESS[@]}" sampler --results "$RESULTS" --bin "$SAMPLER" --crowd "${SAMPLER_ARGS[0]}" --ticks "${SAMPLER_ARGS[1]}" --reps 5
if [[ -n $SLURM_PID ]]; then
  if ! wait "$SLURM_PID"; then
    "${HARNESS[@]}" slurm-skip --results "$RESULTS" \
      --reason "the Slurm measurement failed: $(tail -c 300 "$WORK/slurm.log" | tr '\n' ' ')"
  fi
fi

# --- 4, 5 ------------------------------------------------------------------------------------
say "4. packing"
"${HARNESS[@]}" pack --results "$RESULTS" --nodus "$NODUS" --work "$WORK" "${PACK[@]}"
say "5. store scale"
"${HARNESS[@]}" store --results "$RESULTS" --nodus "$NODUS" --gen "$GEN" --work "$WORK" "${STORE[@]}"

# --- profiles of what missed its goal, then the report ------------------------------------------
say "profiling what missed its goal"
"${HARNESS[@]}" profile --results "$RESULTS" --nodus "$NODUS" --work "$WORK"
"${HARNESS[@]}" meta --results "$RESULTS" --repo "$REPO" --load-start "$LOAD_START" \
  --elapsed "$(($(date +%s) - START))" \
  --build-label "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null) build, $(basename "$BUILD")"
# The raw numbers stay in the build folder: `python3 bench/harness.py report --results DIR --out FILE`
# rewrites the report from them.
rm -rf "$BUILD/bench-results" && cp -r "$RESULTS" "$BUILD/bench-results"
"${HARNESS[@]}" report --results "$RESULTS" --out "$OUT"
say "wrote $OUT in $(($(date +%s) - START)) s"
