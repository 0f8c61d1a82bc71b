#!/usr/bin/env bash
# The man pages (packaging/man, written by hand) against what the programs
# say: every command and option `mismatch-lab-cli --help` lists is in
# mismatch-lab-cli(1) and every command there is one the program has; every
# option of `mismatch-lab-cli report --help` is in mismatch-lab-report(1);
# every option of `mismatch-lab --help` is in mismatch-lab(1).
#   man_pages.sh SOURCE_DIR CLI [GUI]   (GUI: builds with the workbench)
set -euo pipefail
man=$1/packaging/man
cli=$2
gui=${3:-}

# A page as its reader sees the words: roff's \- as -, font changes and
# break points dropped.
plain() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\%//g' "$1"; }

# Every --option in the text on stdin must be in the page ($1).
has_options() {
  local page=$1 o missing=0 text
  text=$(plain "$page")
  while read -r o; do
    if ! grep -qE -- "(^|[^a-z-])$o([^a-z0-9-]|$)" <<<"$text"; then
      echo "$(basename "$page"): $o is in the program's --help, not in the page" >&2
      missing=1
    fi
  done < <(grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
  return $missing
}

fail=0
page=$man/mismatch-lab-cli.1.in
"$cli" --help | has_options "$page" || fail=1
# The commands: "  NAME ..." lines of --help; the page's COMMANDS section has
# one .TP entry per form, its tag starting with the command's name.
help_commands=$("$cli" --help | sed -nE 's/^  ([a-z][a-z-]*)( .*)?$/\1/p' | sort -u)
page_commands=$(plain "$page" | sed -n '/^\.SH COMMANDS/,/^\.SH /p' |
  sed -nE '/^\.TP/{n;s/^([a-z][a-z-]*).*/\1/p}' | sort -u)
# Without the workbench the CLI has no `report` (MLK_BUILD_GUI=OFF).
[ -n "$gui" ] || page_commands=$(grep -vx report <<<"$page_commands" || true)
if [ "$help_commands" != "$page_commands" ]; then
  echo "mismatch-lab-cli.1.in: the commands differ from --help's (< --help, > the page):" >&2
  diff <(echo "$help_commands") <(echo "$page_commands") >&2 || true
  fail=1
fi
[ -n "$help_commands" ] || { echo "no commands read from $cli --help" >&2; fail=1; }

if [ -n "$gui" ]; then
  "$cli" report --help | has_options "$man/mismatch-lab-report.1.in" || fail=1
  "$gui" --help | has_options "$man/mismatch-lab.1.in" || fail=1
fi
[ $fail -eq 0 ] && echo "man pages: every command and option of --help is documented"
exit $fail
