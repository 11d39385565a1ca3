#!/usr/bin/env python3
"""Read a `cargo test --no-fail-fast` log and print, one per line, each failed test binary's
rerun arguments and its failed tests: `ARGS<TAB>NAME NAME…` (ARGS as cargo prints them after
"to rerun pass"). A binary that failed without naming its tests (a crash) prints ARGS alone,
and so do failed doc-tests (their names hold spaces; cargo says "doctest failed"): a run
they fail stays failed.
Used by scripts/test.sh to run failed tests once more, alone."""
import re
import sys

names, in_failures = [], False
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    if line == "failures:":
        in_failures, names = True, []
        continue
    if in_failures:
        m = re.match(r"^    (\S+)$", line)
        if m:
            names.append(m.group(1))
            continue
        if line.startswith("test result:"):
            in_failures = False
        continue
    m = re.match(r"^error: (doc)?test failed, to rerun pass `(.*)`$", line)
    if m:
        print(m.group(2) + "\t" + ("" if m.group(1) else " ".join(names)))
        names = []
