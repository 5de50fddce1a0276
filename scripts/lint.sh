#!/usr/bin/env bash
# The checks CI runs before it builds (scripts/test.sh): every C++ file formatted as .clang-format
# says, and every shell script of scripts/ and bench/ clean under shellcheck. Fails naming each
# file that is not; `clang-format -i FILE` fixes the first kind.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
# The tracked files when this is a git checkout (a build folder may hold generated sources),
# otherwise every source outside the build folders.
list() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- "$@"
  else
    local args=()
    for p in "$@"; do args+=(-o -path "./$p"); done
    find . \( -path './build*' -prune -false \) "${args[@]}" | sed 's|^\./||'
  fi
}

mapfile -t sources < <(list '*.cc' '*.h' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
# One clang-format for every file; its complaints name the files ("path:line:col: error: ...").
mapfile -t unformatted < <(clang-format --dry-run --Werror "${sources[@]}" 2>&1 |
  sed -nE 's/^([^:]+):[0-9]+:[0-9]+: error: .*/\1/p' | sort -u)
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "lint.sh: not clang-format clean (run clang-format -i on them):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  status=1
fi

mapfile -t scripts < <(list 'scripts/*' 'bench/*' | while read -r f; do
  [ -f "$f" ] || continue
  case "$f" in *.sh) echo "$f" ;; *) head -n1 "$f" | grep -qE '^#!.*\b(ba)?sh\b' && echo "$f" ;; esac
done)
if ! shellcheck "${scripts[@]}"; then
  echo "lint.sh: shellcheck findings above (in ${#scripts[@]} scripts of scripts/ and bench/)" >&2
  status=1
fi
exit "$status"
