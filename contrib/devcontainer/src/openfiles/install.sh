#!/bin/sh
# The openfiles dev container Feature (containers.dev): install an openfiles tree and the
# agents' hooks for the container's user. Options arrive as upper-case variables (SOURCE,
# AGENTS, PREFIX); the container's user is $_REMOTE_USER (home
# $_REMOTE_USER_HOME) when the build runs as root, else the user running this. Nothing is
# started: the first hook starts the service (autostart) and it exits when idle, so no
# service manager is needed in the container.
set -eu
source="${SOURCE:-}"
prefix="${PREFIX:-/usr/local}"
say() { echo "openfiles feature: $*"; }

# The agents option names agents `openfiles hooks install` knows, and nothing else: each is
# checked against that list here and later passed as one argument, never pasted into a
# shell command.
known="claude codex copilot gemini qwen cursor windsurf opencode"
agents=""
# Split into words, never expanded as file names (`*`).
set -f
for agent in $(printf '%s' "${AGENTS:-claude}" | tr ',' ' '); do
  case " $known " in
    *" $agent "*) agents="$agents $agent" ;;
    *)
      say "unknown agent in the agents option: '$agent' (known: $known)" >&2
      exit 2
      ;;
  esac
done
set +f
case "$prefix" in
  /*) ;;
  *)
    say "the prefix option must be an absolute path, not '$prefix'" >&2
    exit 2
    ;;
esac

if [ -n "$source" ]; then
  case "$source" in
    https://*)
      work="$(mktemp -d)"
      if command -v curl >/dev/null 2>&1; then
        curl -fsSL "$source" -o "$work/openfiles.tar.gz"
      else
        wget -q -O "$work/openfiles.tar.gz" "$source"
      fi
      tar -xzf "$work/openfiles.tar.gz" -C "$work"
      source="$(dirname "$(find "$work" -path '*/bin/openfiles' -type f | head -n 1)")/.."
      ;;
  esac
  if [ ! -f "$source/bin/openfiles" ]; then
    say "$source has no bin/openfiles (an installed openfiles tree is expected)" >&2
    exit 2
  fi
  mkdir -p "$prefix/bin" "$prefix/lib/openfiles/plugins"
  cp "$source/bin/openfiles" "$prefix/bin/.openfiles.new"
  chmod 0755 "$prefix/bin/.openfiles.new"
  mv -f "$prefix/bin/.openfiles.new" "$prefix/bin/openfiles"
  for lib in "$source"/lib/openfiles/plugins/libopenfiles_plugin_*; do
    [ -e "$lib" ] || continue
    cp "$lib" "$prefix/lib/openfiles/plugins/"
    chmod 0644 "$prefix/lib/openfiles/plugins/$(basename "$lib")"
  done
  bin="$prefix/bin/openfiles"
elif command -v openfiles >/dev/null 2>&1; then
  bin="$(command -v openfiles)"
else
  say "no source option and no openfiles on PATH" >&2
  exit 2
fi
say "$("$bin" --version)"

# As the container's user: their hooks and config, files they own. The prefix and the agent
# reach the user's shell as its arguments ($1, $2), not as part of its script.
user="${_REMOTE_USER:-}"
install_hooks() {
  if [ "$(id -u)" = 0 ] && [ -n "$user" ] && [ "$user" != root ]; then
    su -s /bin/sh "$user" -c 'PATH="$1/bin:$PATH"; export PATH; exec openfiles hooks install --user --agent "$2"' \
      openfiles-feature "$prefix" "$1"
  else
    (PATH="$prefix/bin:$PATH" && export PATH && exec openfiles hooks install --user --agent "$1")
  fi
}
for agent in $agents; do
  install_hooks "$agent"
done
say "done; the first agent hook starts the service"
