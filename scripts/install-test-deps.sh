#!/usr/bin/env bash
# Install everything the test suite talks to, idempotently: real shells, real language
# servers, real compilers, systemd tools, Nix's evaluator. Safe to run again and again;
# it only installs what is missing. Needs root (or sudo) for apt.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

need_apt=()
have() { command -v "$1" >/dev/null 2>&1; }
have zsh || need_apt+=(zsh)
have fish || need_apt+=(fish)
have clangd || need_apt+=(clangd)
have clang-14 || have clang || need_apt+=(clang-14)   # the cc plugin reads translation units with clang -fsyntax-only (~6.5 MB beside clangd)
have gcc || need_apt+=(gcc)                          # the cc plugin's fallback, tested too
have nix-instantiate || need_apt+=(nix-bin)
have systemd-socket-activate || need_apt+=(systemd)
have setpriv || need_apt+=(util-linux)
have nsenter || need_apt+=(util-linux)
have unshare || need_apt+=(util-linux)
have systemd-analyze || need_apt+=(systemd)
have vi || need_apt+=(vim-tiny)
have top || need_apt+=(procps)
have tmux || need_apt+=(tmux)            # tests/it/review.rs drives the review TUI in a real terminal
have git || need_apt+=(git)
have python3 || need_apt+=(python3)
[ -x /usr/bin/python3 ] || need_apt+=(python3)  # a system python any uid can run (tests run clients as nobody)
have node || need_apt+=(nodejs)
have npm || need_apt+=(npm)
have shellcheck || need_apt+=(shellcheck)   # bash-language-server runs it
have go || need_apt+=(golang-go)            # gopls needs the toolchain; tests compare with go vet
have gopls || need_apt+=(gopls)

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "install-test-deps: apt: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if ! have ruff; then
  echo "install-test-deps: pip: ruff"
  python3 -m pip install -q --disable-pip-version-check ruff
fi

if ! python3 -c 'import pytest' >/dev/null 2>&1; then
  echo "install-test-deps: pip: pytest (the tests plugin's Python runner, plugins/tests)"
  python3 -m pip install -q --disable-pip-version-check pytest
fi

if ! python3 -c 'import mcp, jsonschema' >/dev/null 2>&1; then
  echo "install-test-deps: pip: mcp (the MCP Python SDK, for tests/it/mcp_sdk.rs)"
  python3 -m pip install -q --disable-pip-version-check mcp jsonschema
fi

# The other Python type checkers (tested against their own command lines), pinned.
pip_need=()
have basedpyright-langserver || pip_need+=(basedpyright==1.40.2)
have ty || pip_need+=(ty==0.0.104)
python3 -c 'import yaml' >/dev/null 2>&1 || pip_need+=(pyyaml)   # the YAML tests' reference parser
have taplo || pip_need+=(taplo==0.9.3)   # the TOML tests' reference: taplo's CLI (prebuilt; no language server in it)
pip_pid=""
if [ ${#pip_need[@]} -gt 0 ]; then
  echo "install-test-deps: pip: ${pip_need[*]}"
  # Beside npm's installs below (each is mostly waiting on the network).
  python3 -m pip install -q --disable-pip-version-check "${pip_need[@]}" &
  pip_pid=$!
fi

npm_need=()
have pyright-langserver || npm_need+=(pyright)
have tsc || npm_need+=(typescript@5)
have typescript-language-server || npm_need+=(typescript-language-server)
# TypeScript 7's native preview: `tsgo`, a node wrapper around a platform binary shipped in an
# optional dependency (@typescript/native-preview-linux-x64, …) that npm installs with it.
have tsgo || npm_need+=(@typescript/native-preview@7.0.0-dev.20260707.2)   # the preview the tests were written against
have bash-language-server || npm_need+=(bash-language-server)
# ESLint, JSON, CSS and HTML servers; YAML; Dockerfiles (with dockerfile-utils, whose lint
# command the tests compare with); PHP; the ESLint CLI and library the ESLint server loads.
have vscode-eslint-language-server || npm_need+=(vscode-langservers-extracted@4.10.0)
have yaml-language-server || npm_need+=(yaml-language-server@1.19.2)
have docker-langserver || npm_need+=(dockerfile-language-server-nodejs@0.15.0)
have intelephense || npm_need+=(intelephense@1.16.5)
have eslint || npm_need+=(eslint@9.39.5)
if [ ${#npm_need[@]} -gt 0 ]; then
  echo "install-test-deps: npm: ${npm_need[*]}"
  $SUDO npm install -g --no-audit --no-fund --loglevel=error "${npm_need[@]}" >/dev/null
fi

# TOML: taplo's own language server, the WebAssembly build npm's @taplo/lsp ships, run by our
# host plugins/lsp/taplo (the PyPI and npm builds of the taplo CLI leave the server out, and
# `cargo install taplo-cli --features lsp` compiles ~260 crates). A copy, not a link
# (--install-links), installed again when the host changed. About 5 s.
repo="$(cd "$(dirname "$0")/.." && pwd)"
if ! cmp -s "$(npm root -g)/openfiles-taplo-lsp/server.js" "$repo/plugins/lsp/taplo/server.js"; then
  echo "install-test-deps: npm: openfiles-taplo-lsp (plugins/lsp/taplo, @taplo/lsp)"
  $SUDO npm install -g --install-links --no-audit --no-fund --loglevel=error "$repo/plugins/lsp/taplo" >/dev/null
fi

# The real agent CLIs for tests/it/agents_real.rs, pinned, in their own prefix (nothing on
# the global PATH changes): OPENFILES_AGENTS_PREFIX, default /opt/openfiles-agents. About
# 45 s and 1.4 GB cold; a no-op when the pinned versions are there.
AGENTS_PREFIX="${OPENFILES_AGENTS_PREFIX:-/opt/openfiles-agents}"
agents=(
  @anthropic-ai/claude-code@2.1.332
  @openai/codex@0.171.0
  @google/gemini-cli@0.61.0
  opencode-ai@1.18.33
  @qwen-code/qwen-code@0.24.4
)
agents_ok=1
for spec in "${agents[@]}"; do
  name="${spec%@*}"; version="${spec##*@}"
  pkg="$AGENTS_PREFIX/node_modules/$name/package.json"
  if [ ! -f "$pkg" ] || ! grep -q "\"version\": \"$version\"" "$pkg"; then agents_ok=0; fi
done
if [ "$agents_ok" = 0 ]; then
  echo "install-test-deps: npm (into $AGENTS_PREFIX): ${agents[*]}"
  $SUDO mkdir -p "$AGENTS_PREFIX"
  $SUDO npm install --prefix "$AGENTS_PREFIX" --no-audit --no-fund --loglevel=error "${agents[@]}" >/dev/null
fi

# vitest and jest for the tests plugin's tests (plugins/tests/tests/it/js.rs), pinned, in
# their own prefix (a generated project links its node_modules there):
# OPENFILES_JS_TESTS_PREFIX, default /opt/openfiles-js-tests. About 20 s cold; a no-op when
# the pinned versions are there.
JS_TESTS_PREFIX="${OPENFILES_JS_TESTS_PREFIX:-/opt/openfiles-js-tests}"
js_tests=(vitest@4.1.12 jest@30.5.2)
js_ok=1
for spec in "${js_tests[@]}"; do
  name="${spec%@*}"; version="${spec##*@}"
  pkg="$JS_TESTS_PREFIX/node_modules/$name/package.json"
  if [ ! -f "$pkg" ] || ! grep -q "\"version\": \"$version\"" "$pkg"; then js_ok=0; fi
done
if [ "$js_ok" = 0 ]; then
  echo "install-test-deps: npm (into $JS_TESTS_PREFIX): ${js_tests[*]}"
  $SUDO mkdir -p "$JS_TESTS_PREFIX"
  $SUDO npm install --prefix "$JS_TESTS_PREFIX" --no-audit --no-fund --loglevel=error "${js_tests[@]}" >/dev/null
fi

if [ -n "$pip_pid" ]; then wait "$pip_pid"; fi

# rust-analyzer for the lsp plugin's navigation test (plugins/lsp/tests/it/nav_partial.rs):
# the toolchain's own component (rustup's proxy exists without it). A no-op when installed.
if ! rust-analyzer --version >/dev/null 2>&1; then
  echo "install-test-deps: rustup component add rust-analyzer"
  rustup component add rust-analyzer >/dev/null
fi

# Every crate Cargo.lock names, for every platform (`cargo build` fetches the host's alone):
# tests/it/packaging_nix.rs plans the Nix build with `cargo metadata --offline --locked`,
# which needs them all in the local cache. A no-op when they are there.
cargo fetch --locked --quiet

# pyenv shims: make freshly pip-installed executables visible.
if have pyenv; then pyenv rehash >/dev/null 2>&1 || true; fi
echo "install-test-deps: ok"
