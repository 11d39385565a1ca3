#!/usr/bin/env python3
"""Go knock-on through the service (issue 33): what the go plugin (its go/types
checker over the module) adds to the hook, and whether the hook names the broken callers.

Clones a real Go module (default: a local clone of github.com/google/go-cmp; nothing is
fetched), and for each plugin set starts `openfiles serve` on it and makes EDITS edits that
alternately break and restore the signature of an exported function used by another package
(go-cmp's `cmp/internal/function.NameOf`, called from package `cmp`), timing the wall clock of
`openfiles hook` after each (with `hooks.partial_after_ms` as long as the timeout, so the hook
waits for every source; with `--defaults`, the default `partial_after_ms` and
`knock_on_wait_ms`: the hook waits for the plugin only while its last run was quick). Prints p50/max per plugin set, and for the breaking edits how many of
the callers the compiler names (`go build -gcflags=-e ./...` on the broken tree: file:line)
the hook named, and whether it named an error the commit already had (it must not).
Not a test: figures for the report. Usage (after `cargo build --workspace`):

    scripts/go-knockon-times.py --repo /tmp/go-cmp [--edits 12] [--target target/debug] [--defaults]
"""

import argparse
import os
import re
import statistics
import subprocess
import tempfile

from knockon_service import Service, WAIT_FOR_ALL

FILE = "cmp/internal/function/func.go"
GOOD = "func NameOf(v reflect.Value) string {"
BROKEN = "func NameOf(v reflect.Value, qualified bool) string {"
GO_ENV = dict(os.environ, GOTOOLCHAIN="local", GOPROXY="off", GOFLAGS="")


def compiler_callers(ws):
    """file:line of every error `go build -gcflags=-e ./...` prints, outside the edited file."""
    out = subprocess.run(["go", "build", "-gcflags=-e", "./..."], cwd=ws, env=GO_ENV,
                         capture_output=True, text=True)
    found = set()
    for line in out.stderr.splitlines():
        m = re.match(r"^(?:\./)?([^\s:]+\.go):(\d+):\d+: ", line)
        if m and m.group(1) != FILE:
            found.add(f"{m.group(1)}:{m.group(2)}:")
    return sorted(found)


def old_errors(ws):
    """file:line of the errors the commit already has (go vet with the type checker is not
    needed: the compiler's list for the unedited tree)."""
    out = subprocess.run(["go", "vet", "./..."], cwd=ws, env=GO_ENV, capture_output=True, text=True)
    return sorted({f"{m.group(1)}:{m.group(2)}:" for m in
                   re.finditer(r"(?m)^(?:vet: )?(?:\./)?([^\s:]+\.go):(\d+):\d+: ", out.stderr)})


def run(binary, plugins, edits, repo, defaults=False):
    tmp = tempfile.mkdtemp(prefix="go-knockon-")
    ws = os.path.join(tmp, "ws")
    subprocess.run(["git", "clone", "-q", repo, ws], check=True)
    old = old_errors(ws)
    path = os.path.join(ws, FILE)
    committed = open(path).read()
    assert GOOD in committed, f"{FILE} has no {GOOD!r}"
    with Service(binary, plugins, ws, tmp, "" if defaults else WAIT_FOR_ALL) as svc:
        times, found, blamed, expected = [], [], 0, None
        # One edit first to start the servers and take the baseline (not counted).
        for n in range(edits + 2):
            broken = n % 2 == 0
            with open(path, "w") as f:
                f.write(committed.replace(GOOD, BROKEN) if broken else committed)
            if broken and expected is None:
                expected = compiler_callers(ws)
            took, text = svc.hook(path)
            if n < 2:
                continue
            times.append(took)
            if broken:
                found.append(sum(1 for c in expected if f"- {c}" in text))
                blamed += any(f"- {o}" in text for o in old)
            elif text.strip():
                blamed += 1  # a restored tree has nothing new to say
            if os.environ.get("GO_KNOCKON_VERBOSE"):
                print(f"--- edit {n} ({'break' if broken else 'restore'}), {took:.0f} ms:\n{text}")
        return times, found, len(expected or []), blamed, old


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--edits", type=int, default=12)
    p.add_argument("--repo", required=True, help="a local clone of github.com/google/go-cmp")
    p.add_argument("--target", default="target/debug")
    p.add_argument("--defaults", action="store_true",
                   help="the default [hooks] grace and knock-on wait (not a hook that waits for everything)")
    a = p.parse_args()
    t = os.path.abspath(a.target)
    binary = os.path.join(t, "openfiles")
    lsp = os.path.join(t, "libopenfiles_plugin_lsp.so")
    go = os.path.join(t, "libopenfiles_plugin_go.so")
    for name, plugins in (("lsp (gopls)", [lsp]), ("lsp + go plugin", [lsp, go])):
        times, found, expected, blamed, old = run(binary, plugins, a.edits, os.path.abspath(a.repo), a.defaults)
        print(f"{name}: hook p50 {statistics.median(times):.0f} ms, max {max(times):.0f} ms over {len(times)} edits; "
              f"compiler's callers named per breaking edit {found} of {expected}; "
              f"old errors ({len(old)} in the commit) or stale ones blamed {blamed} times")


if __name__ == "__main__":
    main()
