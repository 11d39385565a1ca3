#!/bin/sh
# The job summary (last step of contrib/ci, run even when the job failed): the problems of
# the session in a workspace, from `openfiles review --json`, as Markdown appended to
# $GITHUB_STEP_SUMMARY (or printed when that is unset). The service may have exited idle by
# now: `review` starts it again and it restores the session.
#
#   OPENFILES_WORKSPACE  the workspace (default: $GITHUB_WORKSPACE, else the current folder)
#   OPENFILES_BIN        the openfiles to run (default: the one on PATH)
#   OPENFILES_FAIL_ON_ERRORS=1  exit 1 when the session has errors
# Needs jq (on GitHub's runners); without it the summary is `openfiles review --list`.
set -eu
bin="${OPENFILES_BIN:-openfiles}"
ws="${OPENFILES_WORKSPACE:-${GITHUB_WORKSPACE:-$PWD}}"
out="${GITHUB_STEP_SUMMARY:-/dev/stdout}"
json="$("$bin" review --json "$ws")" || {
  printf '## openfiles\n\nNo session for %s (no agent edit reached openfiles).\n' "$ws" >>"$out"
  exit 0
}
if command -v jq >/dev/null 2>&1; then
  printf '%s' "$json" | jq -r '
    def cell: tostring | gsub("[|]"; "\\|") | gsub("[\r\n]"; " ");
    "## openfiles: \(.totals.errors) error(s), \(.totals.warnings) warning(s) in \(.totals.files) edited file(s)",
    "",
    (if (.totals.errors + .totals.warnings) == 0 then "No problems in the files the agents edited."
     else
       "| File | Line | Severity | Source | Code | Message |",
       "|---|---|---|---|---|---|",
       (.groups[].files[] as $f | $f.entry.items[]?
         | select(.severity == "error" or .severity == "warning")
         | "| \($f.key | cell) | \(.line):\(.column) | \(.severity) | \(.source // "" | cell) | \(.code // "" | cell) | \(.message | cell) |")
     end),
    ""' >>"$out"
else
  { printf '## openfiles\n\n```\n'; "$bin" review --list "$ws"; printf '```\n'; } >>"$out"
fi
if [ "${OPENFILES_FAIL_ON_ERRORS:-0}" = 1 ]; then
  errors="$(printf '%s' "$json" | sed -n 's/^    "errors": \([0-9]*\),*$/\1/p' | head -n 1)"
  [ "${errors:-0}" = 0 ] || exit 1
fi
