#!/usr/bin/env bash
# Configures and builds nodus into build/ (optimised, with debug info). With arguments, builds
# only those targets (the demo needs only `nodus`); without, everything, tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build "${targets[@]}"
