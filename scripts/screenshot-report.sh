#!/bin/sh
# Screenshot of a nodus HTML report in headless Chromium, e.g. for docs/report-screenshot.png:
#   nodus report 3 -o report.html && scripts/screenshot-report.sh report.html docs/report-screenshot.png
# Usage: scripts/screenshot-report.sh FILE.html OUT.png [WIDTH,HEIGHT]   (default 1280,2400)
# Needs Debian's chromium (or $NODUS_CHROMIUM). Runs with a fresh throw-away profile, no network
# services, and is killed after 60 s.
set -eu

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 FILE.html OUT.png [WIDTH,HEIGHT]" >&2
  exit 2
fi
html=$1
out=$2
size=${3:-1280,2400}
case $size in
  *[!0-9,]* | ,* | *, | *,*,* | [!0-9]*) echo "$0: size '$size' must be WIDTH,HEIGHT, e.g. 1280,2400" >&2; exit 2 ;;
esac
[ -f "$html" ] || { echo "$0: no such file: $html" >&2; exit 2; }

browser=${NODUS_CHROMIUM:-}
if [ -z "$browser" ]; then
  browser=$(command -v chromium || command -v chromium-browser || true)
fi
[ -n "$browser" ] || { echo "$0: chromium not found: apt-get install chromium" >&2; exit 2; }

html_abs=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
profile=$(mktemp -d "${TMPDIR:-/tmp}/nodus-screenshot-XXXXXX")
trap 'rm -rf "$profile"' EXIT

# timeout runs chromium in its own process group and kills the group when time is up.
timeout -k 5 60 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --disable-quic --hide-scrollbars \
  --user-data-dir="$profile" --window-size="$size" --screenshot="$out_abs" \
  "file://$html_abs" >"$profile/log" 2>&1 || {
  echo "$0: chromium failed; its log:" >&2
  cat "$profile/log" >&2
  exit 1
}
[ -s "$out_abs" ] || { echo "$0: chromium wrote no screenshot" >&2; exit 1; }
echo "$out_abs"
