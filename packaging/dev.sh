#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine:
#   packaging/dev.sh start   install dependencies, build, start the workbench
#   packaging/dev.sh test    install dependencies, build, run every test
#   packaging/dev.sh build   install dependencies and build only
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${MLK_BUILD_DIR:-$here/build}
cmd=${1:-start}

bash "$here/packaging/install-deps.sh"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --parallel "$(nproc)"

case "$cmd" in
  build) ;;
  test)
    cd "$build"
    ctest --output-on-failure --parallel "$(nproc)" --timeout 900
    ;;
  start)
    exec "$build/app/mismatch-lab" "${@:2}"
    ;;
  *)
    echo "usage: packaging/dev.sh start|test|build" >&2
    exit 2
    ;;
esac
