#!/usr/bin/env bash
# Claws's own auth suite (extension/test/claws-auth.test.js of the public Claws repository,
# neunaha/claws) against openfiles: the suite runs unchanged but for where its secret lives,
# with scripts/claws-suite/extension.js in place of the extension's bundle.
#
#   scripts/claws-auth-suite.sh CLAWS [OPENFILES_BIN] [--unmapped]
#
# CLAWS: a checkout of the Claws repository, or its bare git directory (read at HEAD).
# The suite writes its secret to `<workspace>/auth.token`; openfiles never reads a secret a
# workspace supplies, so that one line is mapped to the user's config folder
# (`$XDG_CONFIG_HOME/openfiles/auth.token`) and the suite runs under umask 077, as a user
# keeps a secret. `--unmapped` keeps the suite's own path: its valid-token checks then fail
# (openfiles refuses the workspace's file), which shows the mapping is the only change.
# Prints the suite's report; the last line is "N passed, M failed".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
claws="${1:?usage: $0 CLAWS_CHECKOUT_OR_GIT_DIR [OPENFILES_BIN] [--unmapped]}"
bin="${2:-$here/../target/debug/openfiles}"
mode="${3:-mapped}"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/extension/test" "$tmp/extension/dist" "$tmp/home" "$tmp/config/openfiles"
chmod 700 "$tmp/config" "$tmp/config/openfiles"
suite="$tmp/extension/test/claws-auth.test.js"
if [ -d "$claws/extension" ]; then
  cp "$claws/extension/test/claws-auth.test.js" "$suite"
else
  git --git-dir="$claws" show HEAD:extension/test/claws-auth.test.js >"$suite"
fi
cp "$here/claws-suite/extension.js" "$tmp/extension/dist/extension.js"
if [ "$mode" != "--unmapped" ]; then
  from="const tokenPath = path.join(workspaceRoot, 'auth.token');"
  to="const tokenPath = path.join(process.env.XDG_CONFIG_HOME, 'openfiles', 'auth.token');"
  grep -qF "$from" "$suite" || { echo "the suite's token line changed: $from" >&2; exit 2; }
  sed -i "s|$from|$to|" "$suite"
fi
umask 077
status=0
env HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" OPENFILES_STATE_DIR="$tmp/state" \
  OPENFILES_AUTOSTART=0 OPENFILES_BIN="$bin" node "$suite" || status=$?
exit "$status"
