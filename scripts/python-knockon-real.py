#!/usr/bin/env python3
"""Python knock-on on a real project (issue 33): does the edit's own hook name every caller
the edit broke in files nobody edited, exactly as the checker's own command line finds them,
and what does it cost?

Clones REPO (a git checkout) to a temporary folder, and asks the checker's CLI (`pyright
--outputjson`, `basedpyright --outputjson` or `ty check --output-format concise`, at the
project's root, with the project's config) for its errors with FILE as committed and with
OLD replaced by NEW in it: the errors the edit adds in other files (file:line) are the
expected knock-on. Then starts `openfiles serve` (lsp + pyright plugins) on the clone and
makes EDITS edits alternately breaking and restoring FILE, timing `openfiles hook` after each.
Prints the hook p50/max, how many expected callers each breaking edit's hook named, anything
it named in other files that the CLI did not (must be none), and whether an error the
commit already had was blamed. Not a test: figures for the report.

    scripts/python-knockon-real.py --repo /tmp/requests --file src/requests/utils.py \\
        --old 'def get_auth_from_url(url: str)' --new 'def get_auth_from_url(url: str, strict: bool)' \\
        [--checker pyright] [--wait-ms 2000] [--edits 12] [--target target/debug]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile

from knockon_service import Service


def cli_errors(ws, checker):
    """{(file relative to ws, line)} of the checker's errors over the project."""
    if checker == "ty":
        out = subprocess.run(["ty", "check", "--output-format", "concise"], cwd=ws,
                             capture_output=True, text=True).stdout
        found = set()
        for line in out.splitlines():
            m = re.match(r"^(.+?):(\d+):\d+: error\[", line)
            if m:
                found.add((os.path.relpath(os.path.join(ws, m[1]), ws), int(m[2])))
        return found
    out = subprocess.run([checker, "--outputjson"], cwd=ws, capture_output=True, text=True).stdout
    found = set()
    for d in json.loads(out).get("generalDiagnostics", []):
        if d["severity"] == "error" and d.get("file"):
            found.add((os.path.relpath(d["file"], ws), d["range"]["start"]["line"] + 1))
    return found


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repo", required=True)
    p.add_argument("--file", required=True, help="the edited file, relative to the repo")
    p.add_argument("--old", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--checker", default="pyright", choices=["pyright", "basedpyright", "ty"])
    p.add_argument("--wait-ms", type=int, default=None,
                   help="hooks.knock_on_wait_ms (default: the service's default)")
    p.add_argument("--edits", type=int, default=12)
    p.add_argument("--target", default="target/debug")
    p.add_argument("--show", action="store_true", help="print the last breaking edit's feedback")
    a = p.parse_args()
    t = os.path.abspath(a.target)
    binary = os.path.join(t, "openfiles")
    plugins = [os.path.join(t, f"libopenfiles_plugin_{n}.so") for n in ("lsp", "pyright")]

    tmp = tempfile.mkdtemp(prefix="of-py-real-")
    ws = os.path.join(tmp, "ws")
    subprocess.run(["git", "clone", "-q", a.repo, ws], check=True)
    if a.checker == "ty" and not os.path.exists(os.path.join(ws, "ty.toml")):
        # The project asks for ty (the plugins' rule), committed so the baseline has it.
        open(os.path.join(ws, "ty.toml"), "w").close()
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", ws]
        subprocess.run(git + ["add", "ty.toml"], check=True)
        subprocess.run(git + ["commit", "-qm", "ty"], check=True)
    target = os.path.join(ws, a.file)
    clean = open(target).read()
    if a.old not in clean:
        raise SystemExit(f"--old not found in {a.file}")
    broken = clean.replace(a.old, a.new, 1)

    before = cli_errors(ws, a.checker)
    open(target, "w").write(broken)
    after = cli_errors(ws, a.checker)
    open(target, "w").write(clean)
    expected = sorted(e for e in after - before if e[0] != a.file)
    old_files = sorted({f for f, _ in before if f != a.file})
    print(f"{a.checker} CLI: {len(before)} errors as committed; the edit adds {len(expected)} "
          f"in other files: {', '.join(f'{f}:{l}' for f, l in expected)}")

    hooks = "" if a.wait_ms is None else f"knock_on_wait_ms = {a.wait_ms}\n"
    with Service(binary, plugins, ws, tmp, hooks) as svc:
        times, named, extra, blamed, shown = [], [], set(), 0, ""
        counted, stale = [], 0
        # Two edits first to start the servers and take the baseline (not counted).
        for n in range(a.edits + 2):
            breaking = n % 2 == 0
            open(target, "w").write(broken if breaking else clean)
            took, ctx = svc.hook(target)
            if n < 2:
                continue
            times.append(took)
            lines = set()
            for m in re.finditer(r"^- (\S+?):(\d+):\d+ error", ctx, re.M):
                lines.add((m[1], int(m[2])))
            others = {e for e in lines if e[0] != a.file}
            if breaking and a.show:
                shown = ctx
            if breaking:
                named.append(sum(1 for e in expected if e in others))
                extra |= others - set(expected)
                m = re.search(r"… and (\d+) more in (\d+) files", ctx)
                counted.append(int(m[1]) if m else 0)
            else:
                stale += bool(others)
            blamed += any(f in ctx for f in old_files if f not in {e[0] for e in expected})
        print(f"hook p50 {statistics.median(times):.0f} ms, max {max(times):.0f} ms over "
              f"{len(times)} edits; expected callers named by each breaking edit's own hook "
              f"{named} of {len(expected)} (the hook lists 10 errors and counts the rest: "
              f"{counted} more); named but not by the CLI: {sorted(extra) or 'none'}; "
              f"hooks naming a file with only old errors: {blamed}; restoring edits whose hook "
              f"still named a broken caller: {stale}")
        if a.show:
            print(shown)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
