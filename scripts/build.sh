#!/usr/bin/env bash
# Configures and builds nodus into build/ (optimised, with debug info, warnings as errors: the
# configuration scripts/test.sh uses, so switching between them rebuilds nothing). With arguments, builds
# only those targets (the demo needs only `nodus`); without, everything, tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODUS_WERROR=ON >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build "${targets[@]}"
