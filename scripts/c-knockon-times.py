#!/usr/bin/env python3
"""C/C++ knock-on through the service (issue 33): what the cc plugin (clang -fsyntax-only
over the translation units an edited header reaches) adds to the hook, and whether the hook
names the callers the edit broke.

Takes a real C project (a git clone, e.g. of github.com/redis/hiredis), clones it into a
temporary workspace, writes its compile_commands.json (untracked, absolute paths: the
library's units, test.c and the examples, with the Makefile's flags; examples whose
libraries are not installed are old errors), and for each plugin set starts `openfiles
serve` on it and makes EDITS edits that alternately break and restore a header prototype
(`redisFree` in hiredis.h gains a parameter), timing the wall clock of `openfiles hook` after
each (with `hooks.partial_after_ms` as long as the timeout, so the hook waits for every
source; with `--defaults`, the default `partial_after_ms` and `knock_on_wait_ms`: the hook
waits for the plugin only while its last run was quick). The reference is clang -fsyntax-only run by hand over every unit, before and after
the edit: its new errors are the callers to name, its errors before the edit the old ones
that must never be blamed. Prints hook p50/max per plugin set, callers named per breaking
edit, old errors blamed, and the items of the files the plugin marked affected matched
against the reference. Not a test: figures for the report. Usage (after `cargo build
--workspace`):

    scripts/c-knockon-times.py --repo /tmp/hiredis [--edits 12] [--target target/debug] [--defaults]
"""

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

from knockon_service import Service, WAIT_FOR_ALL

HEADER = "hiredis.h"
GOOD = "void redisFree(redisContext *c);"
BROKEN = "void redisFree(redisContext *c, int flags);"
FLAGS = ["-std=c99", "-O3", "-fPIC", "-Wall", "-Wextra", "-Wstrict-prototypes", "-Wwrite-strings",
         "-Wno-missing-field-initializers", "-g", "-ggdb", "-pedantic"]
LIB = ["alloc", "net", "hiredis", "sds", "async", "read", "sockcompat", "ssl", "test"]
ERROR = re.compile(r"^(.*?):(\d+):(\d+): (?:fatal )?error: (.*?)(?: \[-W[^\]]*\])?$")
HOOK_LINE = re.compile(r"^- (.*?):(\d+):(\d+) error(?: \S+)? \((.*?)\): (.*)$")
MORE = re.compile(r"^- … and (\d+) more in (\d+) files?$")


def write_db(ws):
    entries = []
    for f in LIB:
        entries.append({"directory": ws, "file": f"{ws}/{f}.c",
                        "arguments": ["cc", *FLAGS, "-c", "-o", f"{f}.o", f"{f}.c"]})
    for p in sorted(glob.glob(f"{ws}/examples/*.c")):
        entries.append({"directory": ws, "file": p,
                        "arguments": ["cc", *FLAGS, "-I.", "-o", "examples/x", p]})
    with open(f"{ws}/compile_commands.json", "w") as f:
        json.dump(entries, f, indent=1)
    with open(f"{ws}/.git/info/exclude", "a") as f:
        f.write("compile_commands.json\n")
    return entries


def by_hand(ws, entries, compiler):
    """Errors of `compiler` -fsyntax-only over every unit: {(relpath, line, col, message)}."""
    if "clang" in os.path.basename(compiler):
        plain = ["-fno-color-diagnostics", "-fno-caret-diagnostics", "-fdiagnostics-absolute-paths"]
    else:
        plain = ["-fdiagnostics-plain-output", "-fdiagnostics-column-unit=byte"]
    found = set()
    for e in entries:
        args = [a for a in e["arguments"][1:] if a not in ("-c",)]
        i = args.index("-o")
        del args[i:i + 2]
        out = subprocess.run([compiler, "-fsyntax-only", *plain, *args], cwd=e["directory"], capture_output=True)
        for line in out.stderr.decode(errors="replace").splitlines():
            m = ERROR.match(line)
            if m:
                path = os.path.normpath(os.path.join(e["directory"], m.group(1)))
                if not path.startswith(ws + "/"):
                    continue
                found.add((os.path.relpath(path, ws), int(m.group(2)), int(m.group(3)), m.group(4)))
    return found


def run(binary, plugins, edits, repo, clang, config="", defaults=False):
    tmp = tempfile.mkdtemp(prefix="c-knockon-")
    ws = os.path.join(tmp, "ws")
    subprocess.run(["git", "clone", "-q", repo, ws], check=True)
    entries = write_db(ws)
    header = os.path.join(ws, HEADER)
    committed = open(header).read()
    assert GOOD in committed, f"{GOOD!r} not in {HEADER}"
    old = by_hand(ws, entries, clang)
    with open(header, "w") as f:
        f.write(committed.replace(GOOD, BROKEN))
    new = by_hand(ws, entries, clang) - old
    new = {e for e in new if e[0] != HEADER}
    with open(header, "w") as f:
        f.write(committed)
    with Service(binary, plugins, ws, tmp, "" if defaults else WAIT_FOR_ALL, config) as svc:
        times, named, blamed, matched, first_text = [], [], 0, [], ""
        # One edit pair first to start the servers and take the baseline (not counted).
        for n in range(edits + 2):
            broken = n % 2 == 0
            with open(header, "w") as f:
                f.write(committed.replace(GOOD, BROKEN) if broken else committed)
            took, text = svc.hook(header)
            lines, more = set(), 0
            for line in text.splitlines():
                m = HOOK_LINE.match(line)
                if m:
                    lines.add((m.group(1), int(m.group(2)), m.group(5)))
                m = MORE.match(line)
                if m:
                    more = int(m.group(1))
            if n == 2:
                first_text = text
            if n < 2:
                continue
            times.append(took)
            blamed += sum(1 for (p, l, _, msg) in old if (p, l, msg) in lines)
            if broken:
                named.append((sum(1 for (p, l, _, msg) in new if (p, l, msg) in lines), more))
                # diagnostics.json is written just after the hook's answer: wait for it.
                mine, until = set(), time.time() + 10
                while time.time() < until:
                    try:
                        diag = json.load(open(os.path.join(ws, ".openfiles", "diagnostics.json")))
                    except (OSError, ValueError):
                        diag = {}
                    mine = set()
                    for key, entry in diag.get("files", {}).items():
                        if entry.get("affectedBy"):
                            for it in entry.get("items", []):
                                if it.get("severity") == "error":
                                    mine.add((key, it["line"], it["column"], it["message"]))
                    if mine or not lines:
                        break
                    time.sleep(0.1)
                matched.append((len(mine & new), len(new), len(mine - new)))
    shutil.rmtree(tmp, ignore_errors=True)
    return times, named, len(new), blamed, matched, sorted(new), first_text


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repo", required=True, help="a git clone of hiredis")
    p.add_argument("--edits", type=int, default=12)
    p.add_argument("--target", default="target/debug")
    p.add_argument("--defaults", action="store_true",
                   help="the default hooks.partial_after_ms and knock_on_wait_ms")
    p.add_argument("--clang", default=shutil.which("clang") or shutil.which("clang-14"))
    a = p.parse_args()
    t = os.path.abspath(a.target)
    binary = os.path.join(t, "openfiles")
    lsp = os.path.join(t, "libopenfiles_plugin_lsp.so")
    cc = os.path.join(t, "libopenfiles_plugin_cc.so")
    gcc = shutil.which("gcc")
    sets = (("lsp (clangd)", [lsp], a.clang, ""), ("lsp + cc plugin (clang)", [lsp, cc], a.clang, ""),
            ("lsp + cc plugin (gcc, the fallback)", [lsp, cc], gcc, f'[plugin.cc]\ncompiler = "{gcc}"\n'))
    for name, plugins, reference, config in sets:
        times, named, expected, blamed, matched, new, text = run(
            binary, plugins, a.edits, os.path.abspath(a.repo), reference, config, a.defaults)
        print(f"{name}: hook p50 {statistics.median(times):.0f} ms, max {max(times):.0f} ms over {len(times)} edits; "
              f"new errors (listed, '… and N more') per breaking edit {named} of {expected}; old errors blamed {blamed}; "
              f"affected items matched vs {os.path.basename(reference)} by hand (matched, expected, extra) {matched}")
        print("  first measured hook:", *text.splitlines(), sep="\n    ")
        print("  new errors by hand:", *[f"{p}:{l}:{c} {m}" for (p, l, c, m) in new], sep="\n    ")


if __name__ == "__main__":
    main()
