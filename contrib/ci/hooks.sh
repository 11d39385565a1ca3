#!/bin/sh
# Install the agents' hooks for the user (step 2 of contrib/ci; the dev container Feature
# runs it too): `openfiles hooks install --user --agent <id>` for every agent named.
#
#   OPENFILES_AGENTS  agent ids, comma- or space-separated (default: claude):
#                     claude codex copilot gemini cursor windsurf opencode
#   OPENFILES_BIN     the openfiles to run (default: the one on PATH)
set -eu
bin="${OPENFILES_BIN:-openfiles}"
agents="$(printf '%s' "${OPENFILES_AGENTS:-claude}" | tr ',' ' ')"
for agent in $agents; do
  "$bin" hooks install --user --agent "$agent"
done
"$bin" hooks status
