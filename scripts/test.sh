#!/usr/bin/env bash
# Every gate a change must pass (CI runs this verbatim through .ci/run), or with --quick the
# loop to use while working. docs/development.md has what each takes on a 2-core machine.
#
# scripts/test.sh (the full gate):
#   1. installs what the tests need (scripts/install-deps.sh test, ccache included);
#   2. scripts/lint.sh: every C++ file clang-format clean, every script shellcheck clean;
#   3. build/ with -Werror, then every test through ctest: a parallel pass, then the tests that
#      assert wall-clock bounds (label <suite>-timing, matched by -L timing) one at a time. The
#      Slurm tests get a real one-node cluster (scripts/slurm-dev-cluster.sh), started here and
#      stopped after;
#   4. build-asan/ under AddressSanitizer + UndefinedBehaviorSanitizer, only the targets its
#      suites need, then the unit suites and the CLI suite (not Slurm, hostile or timing tests).
#      A sanitizer report anywhere, in a test or in a nodus process it started (supervisors
#      included), fails the run. NODUS_ASAN=0 leaves this step out (for a local run only: CI
#      never sets it).
# scripts/test.sh --quick: no install, no lint, no cluster, no sanitizers: builds build/ and runs
#   the unit suites and the CLI suite, timing tests left out.
# Every compile goes through ccache (CMakeLists.txt), so a clone in another folder, CI's
# included, reuses what this machine compiled. Each step's wall time goes to stderr
# ("test.sh: <step> took N s").
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
  "") ;;
  --quick) quick=1 ;;
  *) echo "test.sh: unknown argument '$1': expected nothing or --quick" >&2; exit 2 ;;
esac
step_start=$SECONDS
took() {
  echo "test.sh: $1 took $((SECONDS - step_start)) s" >&2
  step_start=$SECONDS
}
# Which tests failed, with their assertion lines, collected after each ctest pass (each pass
# overwrites ctest's logs) and printed again at the very end: CI shows only the tail of a run.
failures=""
run_ctest() {  # $1: build dir, $2: what the pass is called; the rest goes to ctest
  local dir=$1 pass=$2 rc=0
  shift 2
  rm -f "$dir/Testing/Temporary/LastTestsFailed.log"
  ctest --test-dir "$dir" --output-on-failure "$@" || rc=1
  local failed=$dir/Testing/Temporary/LastTestsFailed.log
  if [ -s "$failed" ]; then
    local name lines output
    while IFS=: read -r _ name; do
      output=$(awk -v name="$name" '
        index($0, "Test: ") && substr($0, index($0, "Test: ") + 6) == name { on = 1; next }
        on && /^Output:/ { out = 1; next }
        on && /^<end of output>/ { exit }
        out { print }' "$dir/Testing/Temporary/LastTest.log")
      lines=$(grep -A3 -E 'Failure|FAILED|rror' <<<"$output" | head -30 || true)
      [ -n "$lines" ] || lines=$(tail -8 <<<"$output")
      failures+="--- $pass: $name"$'\n'"$lines"$'\n'
    done <"$failed"
  fi
  return "$rc"
}
report_failures() {
  if [ -n "$failures" ]; then
    echo "test.sh: these tests failed:" >&2
    printf '%s' "$failures" >&2
  fi
}
# The suites that need neither a cluster nor a hostile job: the quick loop's and the sanitizers'.
suites=(core billing store telemetry sweep report local engine cli)
label_regex="^($(IFS='|'; echo "${suites[*]}"))\$"

if [ "$quick" = 1 ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODUS_WERROR=ON >/dev/null
  cmake --build build
  took "build"
  status=0
  run_ctest build tests -j2 --timeout 600 -L "$label_regex" -LE timing || status=1
  took "tests"
  report_failures
  exit "$status"
fi

bash scripts/install-deps.sh test
took "install-deps"
bash scripts/lint.sh
took "lint"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODUS_WERROR=ON >/dev/null
cmake --build build
took "build"
cluster_started=0
if bash scripts/slurm-dev-cluster.sh start; then
  cluster_started=1
else
  echo "test.sh: the Slurm dev cluster did not start; the Slurm tests will say so" >&2
fi
stop_cluster() {
  if [ "$cluster_started" = 1 ]; then
    bash scripts/slurm-dev-cluster.sh stop >/dev/null 2>&1 || true
  fi
}
trap stop_cluster EXIT
status=0
run_ctest build "parallel pass" -j2 --timeout 600 -LE timing || status=1
run_ctest build "timing pass" -j1 --timeout 600 -L timing || status=1
took "tests"
stop_cluster
cluster_started=0
if [ "${NODUS_ASAN:-1}" = 0 ]; then
  echo "test.sh: NODUS_ASAN=0: the sanitizer build and its tests were left out" >&2
  report_failures
  exit "$status"
fi

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNODUS_SANITIZE=ON >/dev/null
targets=(--target nodus)
for s in "${suites[@]}"; do targets+=(--target "nodus_${s}_tests"); done
cmake --build build-asan "${targets[@]}"
took "sanitizer build"
reports=$PWD/build-asan/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
run_ctest build-asan "sanitizer pass" -j2 --timeout 900 -L "$label_regex" -LE timing || status=1
took "sanitizer tests"
if compgen -G "$reports/*" >/dev/null; then
  echo "test.sh: sanitizer reports (build-asan/sanitizer-reports):" >&2
  cat "$reports"/* >&2
  status=1
fi
report_failures
exit "$status"
