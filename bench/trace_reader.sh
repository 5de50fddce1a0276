#!/bin/bash
# The trace reader's memory on a 100 MB trace (issue 15): bench/make_trace.py writes a
# synthetic Kineto trace of ~100 MiB (5 steps with an aten::item each, padded with small ops),
# nodus's streaming reader (build target nodus_read_trace) reads it, and, as the baseline in
# the same run, Python's json.load reads it whole. Prints each one's time and peak RSS.
# Usage: bench/trace_reader.sh [BUILD_DIR] [TRACE.json (default: the synthetic one)]
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
T=${2:-}
cmake --build "$B" --target nodus_read_trace -j2 >/dev/null
if [ -z "$T" ]; then
  T=$(mktemp --tmpdir nodus-trace-XXXXXX.json)
  trap 'rm -f "$T"' EXIT
  python3 bench/make_trace.py sync "$T" --pad-mb 100
fi
echo "trace: $(du -m "$T" | cut -f1) MiB"
/usr/bin/time -f "nodus reader: %e s, peak RSS %M KiB" "$B/telemetry/nodus_read_trace" "$T" >/dev/null
/usr/bin/time -f "python3 json.load (whole file): %e s, peak RSS %M KiB" \
  python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$T"
