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
# Everything from the repository or a checker (file names, messages, codes) is text, never
# Markdown or HTML: `<a href=…>` must not become a link in the job's page. Characters either
# language acts on become character references (inside a table cell, `|` too), line ends
# spaces.
html() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'; }
# `&` first and `#` next: the references made after them hold both.
text() {
  printf '%s' "$1" | tr '\r\n' '  ' | sed -e 's/&/\&amp;/g' -e 's/#/\&#35;/g' \
    -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/|/\&#124;/g' -e 's/`/\&#96;/g' \
    -e 's/\[/\&#91;/g' -e 's/]/\&#93;/g' -e 's/\*/\&#42;/g' -e 's/_/\&#95;/g' \
    -e 's/~/\&#126;/g' -e 's/!/\&#33;/g' -e 's/\\/\&#92;/g'
}
json="$("$bin" review --json "$ws")" || {
  printf '## openfiles\n\nNo session for %s (no agent edit reached openfiles).\n' "$(text "$ws")" >>"$out"
  exit 0
}
if command -v jq >/dev/null 2>&1; then
  printf '%s' "$json" | jq -r '
    def cell: tostring | gsub("[\r\n]"; " ") | gsub("&"; "&amp;") | gsub("#"; "&#35;")
      | gsub("<"; "&lt;") | gsub(">"; "&gt;") | gsub("[|]"; "&#124;") | gsub("`"; "&#96;")
      | gsub("\\["; "&#91;") | gsub("]"; "&#93;") | gsub("[*]"; "&#42;") | gsub("_"; "&#95;")
      | gsub("~"; "&#126;") | gsub("!"; "&#33;") | gsub("\\\\"; "&#92;");
    "## openfiles: \(.totals.errors) error(s), \(.totals.warnings) warning(s) in \(.totals.files) edited file(s)",
    "",
    (if (.totals.errors + .totals.warnings) == 0 then "No problems in the files the agents edited."
     else
       "| File | Line | Severity | Source | Code | Message |",
       "|---|---|---|---|---|---|",
       (.groups[].files[] as $f | $f.entry.items[]?
         | select(.severity == "error" or .severity == "warning")
         | "| \($f.key | cell) | \(.line | cell):\(.column | cell) | \(.severity | cell) | \(.source // "" | cell) | \(.code // "" | cell) | \(.message | cell) |")
     end),
    ""' >>"$out"
else
  # In <pre> nothing is Markdown; escaped, nothing in it can close it.
  { printf '## openfiles\n\n<pre>\n'; "$bin" review --list "$ws" | html; printf '</pre>\n'; } >>"$out"
fi
if [ "${OPENFILES_FAIL_ON_ERRORS:-0}" = 1 ]; then
  errors="$(printf '%s' "$json" | sed -n 's/^    "errors": \([0-9]*\),*$/\1/p' | head -n 1)"
  [ "${errors:-0}" = 0 ] || exit 1
fi
