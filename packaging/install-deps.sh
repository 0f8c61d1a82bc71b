#!/usr/bin/env bash
# Installs every Debian 12 package Mismatch Lab needs to build, test and run.
# Safe to run again: apt-get skips what is already installed.
set -euo pipefail

# Grouped by who needs them; packaging/check-fresh.sh proves the list on a
# clean debootstrap --variant=minbase root (README, "Set up").
packages=(
  # build: compiler, CMake, Ninja; dpkg-dev (dpkg-shlibdeps) and file are what
  # CPack's DEB generator runs to compute the package's Depends
  build-essential cmake ninja-build pkg-config dpkg-dev file
  # packaging: lintian checks the .deb against Debian policy (ctest
  # packaging.lintian)
  lintian
  # libraries: Qt 6 (Qt Charts' CMake config requires Qt OpenGL and the GL
  # development files, which qt6-charts-dev does not pull in), SQLite, JSON
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev
  libsqlite3-dev nlohmann-json3-dev
  # OpenBLAS: `bench --blas` times its sgemm beside our kernels at the
  # model's GEMM shapes (the vendor-library yardstick of the speed targets)
  libopenblas-dev
  # tests: GoogleTest; pdftoppm reads the reports back; the validators check
  # the desktop entry and the AppStream metainfo
  libgtest-dev libgmock-dev poppler-utils desktop-file-utils appstream
  # run time, loaded rather than linked: the xcb and offscreen platform
  # plugins (libqt6gui6), the SVG icon engine (libqt6svg6), a font, SQLite
  libqt6gui6 libqt6svg6 fonts-dejavu-core libsqlite3-0
  # a virtual display for screenshots of the real window (xvfb-run)
  xvfb xauth
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
