#!/usr/bin/env bash
# Run openfiles in the foreground with the current directory registered as a workspace.
#
# Builds the binary and the plugins (release; honours CARGO_TARGET_DIR), lays them out as an
# installed package does (target/dist/bin/openfiles + target/dist/lib/openfiles/plugins/*.so, so the service finds its
# plugins without configuration), and starts `openfiles serve -w "$PWD"`. Extra arguments go
# to `openfiles serve` (e.g. --socket PATH). Stop it with Ctrl-C.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$here/target}"
# Cargo's own progress shows (a cold release build takes minutes).
echo "serve.sh: building (release) into $target …" >&2
cargo build --release --manifest-path "$here/Cargo.toml" --workspace --exclude openfiles-test-fixtures
dist="$target/dist"
mkdir -p "$dist/bin" "$dist/lib/openfiles/plugins"
install -m 0755 "$target/release/openfiles" "$dist/bin/openfiles"
# Plugin libraries are named libopenfiles_plugin_<name>.so (.dylib on macOS; see
# plugins/api/README.md); copies under the names from before that rule, left by an older
# run, are removed so they do not go stale.
rm -f "$dist"/lib/openfiles/plugins/libopenfiles_{tsc,cargo_check}.{so,dylib}
for lib in "$target"/release/libopenfiles_plugin_*.so "$target"/release/libopenfiles_plugin_*.dylib; do
  [ -e "$lib" ] && install -m 0644 "$lib" "$dist/lib/openfiles/plugins/"
done
exec "$dist/bin/openfiles" serve --workspace "$PWD" "$@"
