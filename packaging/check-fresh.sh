#!/usr/bin/env bash
# Proves the README on a clean Debian 12 machine: a debootstrap minbase root
# gets the checkout (tracked files only, so no build folder), then in a chroot
#   1. `packaging/dev.sh test`                       (the README's test command)
#   2. `packaging/dev.sh start` under Xvfb           (until the main window is up)
#   3. `cmake --build build --target package`        (the .deb)
# and a second clean root gets only the .deb:
#   4. `apt-get install ./mismatch-lab_*.deb`, `mismatch-lab-cli probe`, a
#      one-step run and its `report` (which runs mismatch-lab-report),
#      `bench --blas` without and with the recommended libopenblas0, the
#      desktop entry's Exec until its window is up, each program's man page
#      through `man` (man-db installed last, so it cannot stand in for a
#      missing Depends), `apt-get remove --purge`, and nothing of the package
#      may be left.
# Prints how long each step took; exits non-zero on the first failure.
#
# Needs root (chroot, mount, debootstrap) and Debian's mirror. Takes about as
# long as two cold builds of the tree; run it with nice, in the background:
#   nice packaging/check-fresh.sh 2>&1 | tee check-fresh.log
# MLK_FRESH_MIRROR / MLK_FRESH_SECURITY: the archive (default deb.debian.org)
# MLK_FRESH_TMP: where the roots go (default /var/tmp, needs ~8 GB)
# MLK_FRESH_KEEP=1: leave the roots for a look (unmounted) instead of deleting
# MLK_FRESH_SHOTS=DIR: copy each window's screen (XWD, from Xvfb -fbdir) there
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
mirror=${MLK_FRESH_MIRROR:-http://deb.debian.org/debian}
security=${MLK_FRESH_SECURITY:-http://deb.debian.org/debian-security}
display=:77

if [ "$(id -u)" -ne 0 ]; then
  exec sudo --preserve-env=MLK_FRESH_MIRROR,MLK_FRESH_SECURITY,MLK_FRESH_TMP,MLK_FRESH_KEEP,MLK_FRESH_SHOTS "$0" "$@"
fi
command -v git >/dev/null || { echo "check-fresh: needs git to list the checkout" >&2; exit 1; }
if ! command -v debootstrap >/dev/null; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap
fi

work=$(mktemp -d "${MLK_FRESH_TMP:-/var/tmp}/mlk-fresh.XXXXXX")
base=$work/base
dev=$work/dev    # the developer's machine: README's two commands, then the .deb
pkg=$work/pkg    # a user's machine: the .deb and nothing else
times=()

log() { printf 'check-fresh: %s\n' "$*"; }
fail() {
  log "FAILED: $*"
  exit 1
}

# Steps are timed with bash's SECONDS; each adds one line to the summary.
# A step runs in a subshell with errexit switched back on: bash ignores -e in
# a function called from `cmd || ...`, which would let a failing step pass.
timed() {
  local what=$1 rc
  shift
  local t0=$SECONDS
  log "--- $what"
  set +e
  (
    set -e
    "$@"
  )
  rc=$?
  set -e
  [ $rc -eq 0 ] || fail "$what (exit $rc)"
  times+=("$(printf '%-44s %5d s' "$what" $((SECONDS - t0)))")
  log "--- $what: $((SECONDS - t0)) s"
}

# Every process whose root is inside $work (Xvfb, the app) is ours.
kill_chroot_procs() {
  local p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    case "$r" in "$work"/*) kill -9 "${p#/proc/}" 2>/dev/null || true ;; esac
  done
}

mounted_under_work() { awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts; }

cleanup() {
  local rc=$?
  set +e
  kill_chroot_procs
  sleep 1
  # Deepest first, so /dev/pts goes before /dev.
  mounted_under_work | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
  if [ -n "$(mounted_under_work)" ]; then
    log "still mounted under $work, not deleting it:"
    mounted_under_work
    rc=1
  elif [ "${MLK_FRESH_KEEP:-0}" = 1 ]; then
    log "kept $work"
  else
    rm -rf --one-file-system "$work"
  fi
  if [ ${#times[@]} -gt 0 ]; then
    log "times:"
    printf '  %s\n' "${times[@]}"
  fi
  if [ "$rc" -eq 0 ]; then log "PASSED"; else log "exit $rc"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A clean environment: nothing of this shell (compiler launchers, proxies,
# CMake variables) may help the build inside.
in_root() {
  local root=$1
  shift
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

mount_root() {
  local root=$1
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --make-rslave "$root/dev"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
}

make_base() {
  debootstrap --variant=minbase bookworm "$base" "$mirror"
  cat >"$base/etc/apt/sources.list" <<EOS
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOS
  # No daemon a package brings (dbus) may start inside a chroot.
  printf '#!/bin/sh\nexit 101\n' >"$base/usr/sbin/policy-rc.d"
  chmod +x "$base/usr/sbin/policy-rc.d"
}

copy_checkout() {
  mkdir -p "$dev/src/mismatch-lab"
  # Tracked and new-but-not-ignored files, as a clone of this work tree would
  # have them; a tracked file deleted in the work tree is skipped.
  (cd "$here" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -C "$dev/src/mismatch-lab" -xf -
}

start_xvfb() {
  mkdir -p "$dev/tmp/fb"
  in_root "$dev" Xvfb "$display" -screen 0 1600x1000x24 -nolisten tcp -fbdir /tmp/fb &
  for _ in $(seq 1 100); do
    [ -S "$dev/tmp/.X11-unix/X${display#:}" ] && return 0
    sleep 0.2
  done
  fail "Xvfb did not start"
}

# Waits until a visible window titled "Mismatch Lab" exists (xdotool, in the
# dev root), keeps a screenshot if asked, then ends the app ($1: its pid).
window_up_then_close() {
  local pid=$1 shot=$2
  # By the window's class, the executable's name: the title carries the
  # database path ("<path> — Mismatch Lab"), and xdotool's --name matching
  # skips titles with non-ASCII characters such as that dash.
  if ! in_root "$dev" DISPLAY="$display" timeout 600 xdotool search --sync --onlyvisible --classname mismatch-lab >/dev/null; then
    kill "$pid" 2>/dev/null
    return 1
  fi
  kill -0 "$pid" 2>/dev/null || return 1
  if [ -n "${MLK_FRESH_SHOTS:-}" ]; then
    sleep 3 # let the first paint land
    mkdir -p "$MLK_FRESH_SHOTS"
    cp "$dev/tmp/fb/Xvfb_screen0" "$MLK_FRESH_SHOTS/$shot.xwd"
  fi
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
}

dev_start() {
  in_root "$dev" DISPLAY="$display" bash -c 'cd /src/mismatch-lab && exec packaging/dev.sh start' &
  window_up_then_close $! dev-start
}

installed_start() {
  local exec_line
  exec_line=$(sed -n 's/^Exec=//p' "$pkg/usr/share/applications/org.mismatchlab.MismatchLab.desktop")
  exec_line=${exec_line// %[fFuUick]/}
  log "desktop entry Exec: $exec_line"
  in_root "$pkg" DISPLAY="$display" sh -c "cd /root && exec $exec_line" &
  window_up_then_close $! installed-start
}

check_installed_files() {
  in_root "$pkg" dpkg -L mismatch-lab >"$work/files.txt"
  local f missing=0
  for f in usr/bin/mismatch-lab usr/bin/mismatch-lab-cli usr/bin/mismatch-lab-report \
    usr/share/applications/org.mismatchlab.MismatchLab.desktop \
    usr/share/metainfo/org.mismatchlab.MismatchLab.metainfo.xml \
    usr/share/icons/hicolor/scalable/apps/org.mismatchlab.MismatchLab.svg \
    usr/share/man/man1/mismatch-lab.1.gz usr/share/man/man1/mismatch-lab-cli.1.gz \
    usr/share/man/man1/mismatch-lab-report.1.gz \
    usr/share/doc/mismatch-lab/copyright usr/share/doc/mismatch-lab/changelog.gz; do
    if ! grep -qx "/$f" "$work/files.txt" || [ ! -e "$pkg/$f" ]; then
      log "not installed: /$f"
      missing=1
    fi
  done
  # shellcheck disable=SC2016 # dpkg-query's own ${field} syntax
  in_root "$pkg" dpkg-query -W -f='Depends: ${Depends}\nRecommends: ${Recommends}\n' mismatch-lab
  return $missing
}

# Images trimmed for containers tell dpkg to skip manuals and documentation
# at unpack (path-exclude in /etc/dpkg/dpkg.cfg.d/); a user's root keeps them,
# so the package's own are checked as installed.
keep_docs() {
  local f
  for f in "$pkg"/etc/dpkg/dpkg.cfg.d/*; do
    [ -f "$f" ] || continue
    if grep -Eq '^path-exclude[= ]+/usr/share/(man|doc)' "$f"; then
      log "dropping path-exclude for /usr/share/man, /usr/share/doc from ${f#"$pkg"}"
      sed -Ei '\#^path-exclude[= ]+/usr/share/(man|doc)#d' "$f"
    fi
  done
}

# Each program's page, as `man` shows it: the name line and the section the
# packaging adds to what --help says (packaging/man).
man_pages() {
  in_root "$pkg" bash -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends man-db' >/dev/null
  # shellcheck disable=SC2016 # expanded by the root's shell
  in_root "$pkg" bash -c 'set -e
    for p in mismatch-lab mismatch-lab-cli mismatch-lab-report; do
      MANWIDTH=80 man -P cat "$p" >"/root/$p.man"
      grep -q "^NAME" "/root/$p.man" && grep -q "^EXIT STATUS" "/root/$p.man" \
        || { echo "man $p: no NAME or EXIT STATUS"; cat "/root/$p.man"; exit 1; }
    done
    head -n 12 /root/mismatch-lab-cli.man'
}

# After the purge: no file the package listed, no dpkg record, and no empty
# directory of its own (one that stays must belong to another package).
check_purged() {
  local path bad=0
  if in_root "$pkg" dpkg-query -W mismatch-lab >/dev/null 2>&1; then
    log "dpkg still knows mismatch-lab"
    bad=1
  fi
  ls "$pkg"/var/lib/dpkg/info/mismatch-lab.* >/dev/null 2>&1 && {
    log "left in /var/lib/dpkg/info: $(ls "$pkg"/var/lib/dpkg/info/mismatch-lab.*)"
    bad=1
  }
  while IFS= read -r path; do
    [ "$path" = "/." ] && continue
    if [ -d "$pkg$path" ] && [ ! -L "$pkg$path" ]; then
      if [ -z "$(ls -A "$pkg$path")" ] && ! in_root "$pkg" dpkg -S "$path" >/dev/null 2>&1; then
        log "left behind (empty directory): $path"
        bad=1
      fi
    elif [ -e "$pkg$path" ] || [ -L "$pkg$path" ]; then
      log "left behind: $path"
      bad=1
    fi
  done <"$work/files.txt"
  [ $bad -eq 0 ] && log "purged: none of the $(wc -l <"$work/files.txt") listed paths is left"
  return $bad
}

log "roots under $work; mirror $mirror"
timed "debootstrap minbase bookworm" make_base
cp -a "$base" "$dev"
cp -a "$base" "$pkg"
mount_root "$dev"
mount_root "$pkg"
copy_checkout

timed "dev root: packaging/dev.sh test" in_root "$dev" bash -c 'cd /src/mismatch-lab && packaging/dev.sh test'
# The checker's own tools, after the test so they cannot mask a missing
# dependency there: xdotool finds the window (Xvfb came with install-deps).
in_root "$dev" bash -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends xdotool' >/dev/null
start_xvfb
timed "dev root: packaging/dev.sh start (window up)" dev_start
timed "dev root: cmake --build build --target package" \
  in_root "$dev" bash -c 'cd /src/mismatch-lab && cmake --build build --target package'
debs=("$dev"/src/mismatch-lab/build/mismatch-lab_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "expected one build/mismatch-lab_*.deb, found: ${debs[*]}"
deb=$(basename "${debs[0]}")
log "$deb: $(du -h "${debs[0]}" | cut -f1)"
in_root "$dev" dpkg-deb --info "/src/mismatch-lab/build/$deb" | sed -n '/Package:/,$p'
cp "${debs[0]}" "$pkg/root/"

# The user's root reaches the dev root's Xvfb through its socket; it gets
# neither Xvfb nor xdotool, so only the package's Depends are there.
mkdir -p "$pkg/tmp/.X11-unix"
mount --bind "$dev/tmp/.X11-unix" "$pkg/tmp/.X11-unix"
keep_docs
timed "pkg root: apt-get install ./$deb" in_root "$pkg" bash -c \
  "cd /root && apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ./$deb"
check_installed_files || fail "package contents"
timed "pkg root: mismatch-lab-cli probe --preset dense-tiny" \
  in_root "$pkg" bash -c 'cd /root && command -v mismatch-lab-cli && mismatch-lab-cli probe --preset dense-tiny'
# `report` runs mismatch-lab-report from the CLI's directory: prove the
# installed pair finds each other (a short warm-up, one step, an HTML report).
timed "pkg root: mismatch-lab-cli run + report" in_root "$pkg" bash -c \
  'cd /root && mismatch-lab-cli run --preset dense-tiny --steps 1 --set base.sft_steps=50 --db r.sqlite --cache-dir c \
   && mismatch-lab-cli report 1 --db r.sqlite --out r.html && test -s r.html'
# `bench --blas` opens OpenBLAS at run time, a Recommends (installed above
# without): a clear error naming the package without it, the comparison with it.
timed "pkg root: bench --blas without OpenBLAS (a clear error)" in_root "$pkg" bash -c \
  'cd /root && ! mismatch-lab-cli bench --preset dense-tiny --steps 1 --set rl.prompts_per_step=2 --blas 2>err.txt \
   && grep "apt install libopenblas0" err.txt'
timed "pkg root: bench --blas with libopenblas0" in_root "$pkg" bash -c \
  'cd /root && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libopenblas0 \
   && mismatch-lab-cli bench --preset dense-tiny --steps 1 --set rl.prompts_per_step=2 --blas | grep "OpenBLAS sgemm"'
timed "pkg root: desktop entry Exec (window up)" installed_start
timed "pkg root: man pages (man-db)" man_pages
timed "pkg root: apt-get remove --purge mismatch-lab" in_root "$pkg" bash -c \
  'DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -q mismatch-lab'
check_purged || fail "files left after the purge"
