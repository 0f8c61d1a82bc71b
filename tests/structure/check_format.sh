#!/usr/bin/env bash
# Every C++ source follows .clang-format (clang-format 14, Debian 12's).
# Exit 77 (CTest: skipped) where clang-format is not installed; it is a
# developer tool, not a build dependency.
set -euo pipefail
root=${1:?usage: check_format.sh SOURCE_DIR}
command -v clang-format >/dev/null || { echo "clang-format not installed: skipped"; exit 77; }
cd "$root"
bad=0
while IFS= read -r -d '' f; do
  if ! clang-format --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (clang-format -i $f)"
    bad=1
  fi
done < <(find kernels core widgets app tests bench \( -name '*.cpp' -o -name '*.h' -o -name '*.inc' \) -print0)
exit $bad
