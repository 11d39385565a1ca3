#!/bin/sh
# Install openfiles for a CI job or a container (step 1 of contrib/ci; the dev container
# Feature runs it too). Nothing is started here: the first agent hook starts the service
# itself (autostart), and it exits when idle.
#
#   OPENFILES_SOURCE  an installed tree (bin/openfiles + lib/openfiles/plugins/*.so, as
#                     scripts/install.sh or a release archive lays it out) or a source
#                     checkout (built with its scripts/install.sh --no-units, needs cargo);
#                     empty: keep the openfiles already on PATH
#   OPENFILES_PREFIX  where to install (default ~/.local): $PREFIX/bin/openfiles and
#                     $PREFIX/lib/openfiles/plugins
#
# On GitHub Actions $PREFIX/bin is added to $GITHUB_PATH for the job's later steps.
set -eu
src="${OPENFILES_SOURCE:-}"
prefix="${OPENFILES_PREFIX:-$HOME/.local}"
# A literal ~/ (as a workflow input passes it) means the home folder.
# shellcheck disable=SC2088
case "$prefix" in "~/"*) prefix="$HOME/${prefix#"~/"}" ;; esac
say() { echo "openfiles-ci: $*"; }
if [ -z "$src" ]; then
  if command -v openfiles >/dev/null 2>&1; then
    say "using $(command -v openfiles)"
    openfiles --version
    exit 0
  fi
  say "no OPENFILES_SOURCE and no openfiles on PATH" >&2
  exit 2
fi
if [ -f "$src/bin/openfiles" ]; then
  mkdir -p "$prefix/bin" "$prefix/lib/openfiles/plugins"
  cp "$src/bin/openfiles" "$prefix/bin/.openfiles.new"
  chmod 0755 "$prefix/bin/.openfiles.new"
  mv -f "$prefix/bin/.openfiles.new" "$prefix/bin/openfiles"
  n=0
  for lib in "$src"/lib/openfiles/plugins/libopenfiles_plugin_*; do
    [ -e "$lib" ] || continue
    cp "$lib" "$prefix/lib/openfiles/plugins/"
    n=$((n + 1))
  done
  say "installed $prefix/bin/openfiles and $n plugin(s)"
elif [ -f "$src/Cargo.toml" ] && [ -x "$src/scripts/install.sh" ]; then
  PREFIX="$prefix" "$src/scripts/install.sh" --no-units
else
  say "$src is neither an installed tree (bin/openfiles) nor an openfiles checkout" >&2
  exit 2
fi
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$prefix/bin" >>"$GITHUB_PATH"
fi
"$prefix/bin/openfiles" --version
