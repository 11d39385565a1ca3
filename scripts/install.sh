#!/usr/bin/env bash
# Install openfiles from this source checkout for the current user, in one command:
#
#   scripts/install.sh            # build (release), install, write and enable the units
#   scripts/install.sh --no-units # build and install only
#
# Puts the binary in $PREFIX/bin (default ~/.local) and the plugin libraries where that
# binary looks for them ($PREFIX/lib/openfiles/plugins, i.e. ../lib/openfiles/plugins next to
# the binary), so the service finds its checkers without configuration; then runs
# `openfiles service install --now` with the installed binary. Honours CARGO_TARGET_DIR.
# Safe to run again (an upgrade): the service is restarted onto the new binary.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${PREFIX:-$HOME/.local}"
units=1
for a in "$@"; do
  case "$a" in
    --no-units) units=0 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument $a (see --help)" >&2; exit 2 ;;
  esac
done
target="${CARGO_TARGET_DIR:-$here/target}"
echo "install.sh: building (release) into $target …"
cargo build --release --manifest-path "$here/Cargo.toml" --workspace --exclude openfiles-test-fixtures
mkdir -p "$prefix/bin" "$prefix/lib/openfiles/plugins"
# A running binary is replaced, not rewritten (a rename keeps the old file for its process).
install -m 0755 "$target/release/openfiles" "$prefix/bin/.openfiles.new"
mv -f "$prefix/bin/.openfiles.new" "$prefix/bin/openfiles"
# Plugin libraries are named libopenfiles_plugin_<name>.so (.dylib on macOS; see
# plugins/api/README.md). An upgrade from an install made before that rule removes the old
# names (libopenfiles_tsc, libopenfiles_cargo_check): the service would skip them anyway
# while the new name sits next to them, but they would go stale.
plugins="$prefix/lib/openfiles/plugins"
n=0
for lib in "$target"/release/libopenfiles_plugin_*.so "$target"/release/libopenfiles_plugin_*.dylib; do
  [ -e "$lib" ] || continue
  install -m 0644 "$lib" "$plugins/.new"
  mv -f "$plugins/.new" "$plugins/$(basename "$lib")"
  n=$((n + 1))
done
for old in openfiles_tsc openfiles_cargo_check; do
  new="${old/openfiles_/openfiles_plugin_}"
  for ext in so dylib; do
    if [ -e "$plugins/lib$new.$ext" ] && [ -e "$plugins/lib$old.$ext" ]; then
      rm -f "$plugins/lib$old.$ext"
    fi
  done
done
echo "install.sh: $prefix/bin/openfiles and $n plugin(s) in $plugins"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "install.sh: note: $prefix/bin is not on your PATH; agents' hooks are written with the absolute path" ;;
esac
if [ "$units" = 1 ]; then
  "$prefix/bin/openfiles" service install --now
  # An upgrade over a running service: make it run the new binary.
  "$prefix/bin/openfiles" service restart >/dev/null 2>&1 || true
fi
"$prefix/bin/openfiles" plugins || true
