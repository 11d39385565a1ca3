#!/usr/bin/env python3
"""Python knock-on in the edit's own hook, cold and warm (issue 42.2), on a real project:
pallets/click at the pinned commit, `make_str` in `src/click/utils.py` gains a required
parameter, and the `reportCallIssue` at `src/click/core.py:2069` must be named in the hook
of that very edit (the default 4 s hook deadline, the default `knock_on_wait_ms`).

Clones REPO (a git checkout of click) to a temporary folder and starts `openfiles serve -w`
on it (a workspace the user named: trusted) with the lsp and pyright plugins. Cold: the
session-start hook (`openfiles hook` SessionStart, as agents send it: the warm-up), then,
`--first-edit-after` seconds later, the breaking edit and its hook; repeated `--cold` times
with a fresh service. Warm: once that edit's caller reached `diagnostics.json` (the server
and the baseline are done), `--edits` more edits alternately reverting and breaking the
file on the last service, each followed by its hook. Prints, per phase, the hook's wall
time (p50/max), how many breaking hooks named the caller, and how many reverting hooks still
named it (must be 0). Not a test: figures for the report. `--no-language-server` runs the
same with `[plugin.pyright] language_server = false` (the command line per check, before).

    git clone https://github.com/pallets/click /tmp/click
    git -C /tmp/click checkout 2c8cd3ac958a7eb316d67f2d316c27086c4c0369
    OPENFILES_BENCH_CLICK=/tmp/click scripts/python-knockon-hook.py [--cold 3] [--edits 10]
        [--target target/debug] [--no-language-server] [--wait-ms N]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from knockon_service import Service

FILE = "src/click/utils.py"
OLD = "def make_str(value: t.Any) -> str:"
NEW = "def make_str(value: t.Any, strict: bool) -> str:"
CALLER = "src/click/core.py:2069"


def session_start(svc):
    payload = json.dumps({"session_id": "bench", "cwd": svc.ws, "hook_event_name": "SessionStart",
                          "source": "startup"}).encode()
    subprocess.run([svc.binary, "hook", "--agent", "claude"], input=payload, env=svc.env,
                   cwd=svc.ws, capture_output=True, check=False)


def diagnostics(ws):
    try:
        return json.load(open(os.path.join(ws, ".openfiles", "diagnostics.json"))).get("files", {})
    except (OSError, ValueError):
        return {}


def summary(name, times, named, stale, breaking):
    print(f"{name}: hook p50 {statistics.median(times):.0f} ms, max {max(times):.0f} ms over "
          f"{len(times)} edits; caller {CALLER} named by {named} of {breaking} breaking hooks; "
          f"reverting hooks still naming it: {stale}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repo", default=os.environ.get("OPENFILES_BENCH_CLICK"))
    p.add_argument("--cold", type=int, default=3)
    p.add_argument("--edits", type=int, default=10)
    p.add_argument("--first-edit-after", type=float, default=1.0)
    p.add_argument("--settle", type=float, default=30.0,
                   help="seconds more before the warm edits (a loaded machine's runs finish)")
    p.add_argument("--target", default="target/debug")
    p.add_argument("--no-language-server", action="store_true")
    p.add_argument("--wait-ms", type=int, default=None,
                   help="hooks.knock_on_wait_ms (default: the service's, 2 s)")
    a = p.parse_args()
    if not a.repo:
        raise SystemExit("set OPENFILES_BENCH_CLICK (or --repo) to a click checkout")
    t = os.path.abspath(a.target)
    binary = os.path.join(t, "openfiles")
    plugins = [os.path.join(t, f"libopenfiles_plugin_{n}.so") for n in ("lsp", "pyright")]
    config = "[plugin.pyright]\nlanguage_server = false\n" if a.no_language_server else ""
    cold_times, cold_named = [], 0
    for run in range(a.cold):
        tmp = tempfile.mkdtemp(prefix="of-py-hook-")
        ws = os.path.join(tmp, "ws")
        subprocess.run(["git", "clone", "-q", a.repo, ws], check=True)
        target = os.path.join(ws, FILE)
        clean = open(target).read()
        broken = clean.replace(OLD, NEW, 1)
        assert broken != clean, f"{OLD!r} not in {FILE}"
        hooks = "" if a.wait_ms is None else f"knock_on_wait_ms = {a.wait_ms}\n"
        svc = Service(binary, plugins, ws, tmp, hooks, config, timeout_ms=None)
        with svc:
            session_start(svc)
            time.sleep(a.first_edit_after)
            open(target, "w").write(broken)
            took, ctx = svc.hook(target)
            cold_times.append(took)
            cold_named += CALLER in ctx
            if run + 1 < a.cold:
                continue
            # Warm: once the first edit's knock-on reached diagnostics.json (the servers and
            # the baseline are done).
            until = time.time() + 180
            while time.time() < until and "src/click/core.py" not in diagnostics(ws):
                time.sleep(0.5)
            time.sleep(a.settle)
            times, named, stale = [], 0, 0
            for n in range(a.edits):
                breaking = n % 2 == 1
                open(target, "w").write(broken if breaking else clean)
                took, ctx = svc.hook(target)
                times.append(took)
                if breaking:
                    named += CALLER in ctx
                else:
                    stale += CALLER in ctx
        if not os.environ.get("KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept", tmp)
    summary("cold (first edit, after the session-start warm-up)", cold_times, cold_named, 0,
            a.cold)
    summary("warm", times, named, stale, a.edits // 2)


if __name__ == "__main__":
    main()
