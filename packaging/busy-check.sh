#!/usr/bin/env bash
# The suite on a busy machine: every test of an existing build, run ROUNDS
# times in a row (default 2) while stress-ng keeps every core busy beside it,
# as a build or another test run would on a shared CI machine. Tests wait on
# events with generous deadlines (tests/event_deadline.h), never on time, so
# a loaded machine makes the suite slower, not red.
#   packaging/busy-check.sh [ROUNDS]      (after packaging/dev.sh build)
# stress-ng (Debian 12: stress-ng) is installed when missing; it is a check
# of this script's, not a dependency of the build.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${MLK_BUILD_DIR:-$here/build}
rounds=${1:-2}
jobs=$(nproc)
[ -f "$build/CTestTestfile.cmake" ] || { echo "busy-check: no build in $build (packaging/dev.sh build)" >&2; exit 1; }
if ! command -v stress-ng >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends stress-ng
fi
# One CPU hog per core, at normal priority, for as long as the rounds take.
stress-ng --cpu "$jobs" --cpu-method matrixprod --quiet &
load=$!
trap 'kill "$load" 2>/dev/null; wait "$load" 2>/dev/null || true' EXIT
for round in $(seq 1 "$rounds"); do
  echo "busy-check: round $round of $rounds, $jobs stress-ng CPU workers beside ctest --parallel $jobs"
  start=$SECONDS
  (cd "$build" && ctest --output-on-failure --parallel "$jobs" --timeout 900)
  echo "busy-check: round $round passed in $((SECONDS - start)) s"
done
