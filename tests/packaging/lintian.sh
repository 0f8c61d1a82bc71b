#!/usr/bin/env bash
# The .deb as `cmake --build build --target package` makes it, from the built
# tree, checked by lintian: any error or warning fails the test. The package
# is made in a scratch folder, so it neither needs nor touches the build
# folder's _CPack_Packages or its .deb. No tag is suppressed here: one that
# policy lets a package override belongs in an override shipped in the
# package (/usr/share/lintian/overrides/mismatch-lab, with its reason), where
# lintian reads it.
#   lintian.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2

# install-deps.sh installs lintian: missing, the test fails rather than skips.
command -v lintian >/dev/null || {
  echo "lintian not found (Debian: lintian; packaging/install-deps.sh installs it)" >&2
  exit 1
}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/mlk-lintian.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$scratch" >"$scratch/cpack.log" 2>&1 || {
  cat "$scratch/cpack.log" >&2
  exit 1
}
debs=("$scratch"/mismatch-lab_*.deb)
if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
  echo "cpack made no single mismatch-lab_*.deb: ${debs[*]}" >&2
  exit 1
fi
deb=${debs[0]}
echo "$(basename "$deb"): $(du -h "$deb" | cut -f1)"

# The changelog's latest entry must name the version being packaged: lintian
# does not compare them, and a version bump without an entry is easy to miss.
changelog_version=$(dpkg-parsechangelog -l "$src/packaging/changelog" -S Version)
deb_version=$(dpkg-deb -f "$deb" Version)
if [ "$changelog_version" != "$deb_version" ]; then
  echo "packaging/changelog's latest entry is $changelog_version, the package is $deb_version: add an entry" >&2
  exit 1
fi

# --display-info: the informational tags are listed too, without failing.
lintian --fail-on error,warning --display-info --tag-display-limit 0 "$deb"
echo "lintian: no errors or warnings"
