#!/usr/bin/env python3
"""pyright-langserver's own timeline after a change (issue 42.2's floor): not a test.

Copies REPO (click by default) to a temporary folder, starts `pyright-langserver --stdio`
there in workspace mode (as the pyright plugin does: `diagnosticMode = workspace`), waits
until its first analysis settled, then changes FILE (--old → --new), tells the server with
`workspace/didChangeWatchedFiles` (what the plugin sends) and prints, in ms since that
notification, every `publishDiagnostics` (file, number of diagnostics, errors) and work-done
progress event until --quiet-ms of silence after the last progress end.

    scripts/pyright-ls-timeline.py --repo /work/projects/click --file src/click/utils.py \\
        --old 'def make_str(value: t.Any) -> str:' \\
        --new 'def make_str(value: t.Any, strict: bool) -> str:'

`--cold N`: N fresh starts instead, each timed from the server's start (the `--open` files
opened right after `initialized`): when --user and FILE first had diagnostics, and when the
first analysis ended — what a session's first edit could get from a server started by the
session start's warm-up (issue 42.2, cold).
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse


def frame(proc, msg):
    body = json.dumps(msg).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def reader(proc, events):
    out = proc.stdout
    while True:
        length = None
        while True:
            line = out.readline()
            if not line:
                return
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        msg = json.loads(out.read(length))
        analysis = {"diagnosticMode": "workspace", "autoSearchPaths": True,
                    "useLibraryCodeForTypes": True}
        if msg.get("method") == "workspace/configuration":
            items = msg["params"]["items"]
            result = [{"analysis": analysis} if i.get("section") == "python"
                      else analysis if i.get("section") == "python.analysis" else None
                      for i in items]
            frame(proc, {"jsonrpc": "2.0", "id": msg["id"], "result": result})
        elif "id" in msg and "method" in msg:
            frame(proc, {"jsonrpc": "2.0", "id": msg["id"], "result": None})
        events.append((time.monotonic(), msg))


def uri(path):
    return "file://" + urllib.parse.quote(path)


def settle(events, since_index, quiet_ms, limit_s):
    """Wait until a progress end is followed by quiet_ms of silence (or, with no progress,
    three times that); return the index."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        time.sleep(0.02)
        tail = events[since_index:]
        ends = [t for t, m in tail if m.get("method") == "$/progress"
                and m["params"]["value"].get("kind") == "end"]
        silence = time.monotonic() - tail[-1][0] if tail else 0
        # No progress at all (a re-check too short to report one): three times the quiet.
        if tail and silence >= quiet_ms / 1000 * (1 if ends else 3):
            return len(events)
    return len(events)


def show(events, t1, ws, a, quiet):
    """Print the events (unless `quiet`); the ms until `a.user` was first published."""
    first = None
    for t, m in events:
        ms = 1000 * (t - t1)
        if m.get("method") == "textDocument/publishDiagnostics":
            diags = m["params"]["diagnostics"]
            errors = sum(1 for d in diags if d.get("severity") == 1)
            path = urllib.parse.unquote(m["params"]["uri"])[len("file://") + len(ws) + 1:]
            if path == a.user and first is None:
                first = ms
            if quiet:
                continue
            print(f"{ms:8.0f} ms  publish  {path}  {len(diags)} diagnostics, {errors} errors")
            for d in diags if a.show else []:
                if d.get("severity") == 1:
                    line = d["range"]["start"]["line"] + 1
                    print(f"             {line}: {d['message'].splitlines()[0]}")
        elif m.get("method") == "$/progress" and not quiet:
            v = m["params"]["value"]
            print(f"{ms:8.0f} ms  progress {v.get('kind')} {v.get('title') or v.get('message') or ''}")
    return first


def start(ws):
    """pyright-langserver started and initialized in workspace mode at `ws`: (process, events)."""
    proc = subprocess.Popen([shutil.which("pyright-langserver"), "--stdio"], cwd=ws,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    events = []
    threading.Thread(target=reader, args=(proc, events), daemon=True).start()
    frame(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": uri(ws),
        "workspaceFolders": [{"uri": uri(ws), "name": "ws"}],
        "capabilities": {"window": {"workDoneProgress": True},
                         "workspace": {"configuration": True, "workspaceFolders": True},
                         "textDocument": {"publishDiagnostics": {}}}}})
    frame(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return proc, events


def cold(a):
    """One fresh start (see --cold): print when --user and --file first had diagnostics."""
    tmp = tempfile.mkdtemp(prefix="pyright-timeline-")
    ws = os.path.join(tmp, "ws")
    shutil.copytree(a.repo, ws, ignore=shutil.ignore_patterns(".git"))
    t0 = time.monotonic()
    proc, events = start(ws)
    try:
        for f in a.open:
            path = os.path.join(ws, f)
            frame(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": uri(path), "languageId": "python", "version": 1,
                                 "text": open(path).read()}}})
        settle(events, 0, 1500, 120)
        first, end = {}, None
        for t, m in events:
            if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["diagnostics"]:
                path = urllib.parse.unquote(m["params"]["uri"])[len("file://") + len(ws) + 1:]
                first.setdefault(path, 1000 * (t - t0))
            elif m.get("method") == "$/progress" and m["params"]["value"].get("kind") == "end":
                end = 1000 * (t - t0)
        fmt = lambda ms: "never" if ms is None else f"{ms:.0f} ms"
        print(f"cold, open {a.open or 'none'}: {a.user} {fmt(first.get(a.user))}, {a.file} "
              f"{fmt(first.get(a.file))}, first analysis ended {fmt(end)}")
    finally:
        proc.terminate()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", default="/work/projects/click")
    p.add_argument("--file", default="src/click/utils.py")
    p.add_argument("--old", default="def make_str(value: t.Any) -> str:")
    p.add_argument("--new", default="def make_str(value: t.Any, strict: bool) -> str:")
    p.add_argument("--quiet-ms", type=int, default=1000)
    p.add_argument("--show", action="store_true", help="print each error's line and message")
    p.add_argument("--open", nargs="*", default=[], metavar="FILE",
                   help="files opened (`didOpen`) first: pyright checks open files before the "
                        "rest; an open FILE is changed with `didChange`")
    p.add_argument("--user", default="src/click/core.py",
                   help="the file whose first publish after each breaking change is timed")
    p.add_argument("--prime", metavar="FILE",
                   help="before the first change, FILE opened with a comment appended (in "
                        "memory only) and closed again, each settled: one re-analysis pass "
                        "ahead of the change")
    p.add_argument("--repeat", type=int, default=1,
                   help="N breaking changes (each then reverted); the timeline of the first "
                        "is printed, then the p50 of --user's first publish")
    p.add_argument("--cold", type=int, default=0, metavar="N",
                   help="N fresh starts: when --user and FILE first had diagnostics, and the "
                        "first analysis's end, in ms since the server started")
    a = p.parse_args()
    if a.cold:
        for _ in range(a.cold):
            cold(a)
        return
    tmp = tempfile.mkdtemp(prefix="pyright-timeline-")
    ws = os.path.join(tmp, "ws")
    shutil.copytree(a.repo, ws, ignore=shutil.ignore_patterns(".git"))
    proc, events = start(ws)
    try:
        t0 = time.monotonic()
        n = settle(events, 0, 1500, 120)
        print(f"first analysis settled after {1000 * (time.monotonic() - t0):.0f} ms")
        target = os.path.join(ws, a.file)
        text = open(target).read()
        assert a.old in text, f"{a.old!r} is not in {a.file}"
        opened = {os.path.join(ws, f): 1 for f in a.open}
        for path in opened:
            frame(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": uri(path), "languageId": "python", "version": 1,
                                 "text": open(path).read()}}})
        if opened:
            n = settle(events, n, 1500, 120)
        if a.prime:
            path = os.path.join(ws, a.prime)
            t0 = time.monotonic()
            frame(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": uri(path), "languageId": "python", "version": 1,
                                 "text": open(path).read() + "\n# primed\n"}}})
            n = settle(events, n, a.quiet_ms, 60)
            frame(proc, {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {
                "textDocument": {"uri": uri(path)}}})
            n = settle(events, n, a.quiet_ms, 60)
            print(f"primed with {a.prime} in {(time.monotonic() - t0) * 1000:.0f} ms "
                  f"(including {2 * a.quiet_ms} ms of quiet)")
        texts = [text.replace(a.old, a.new, 1), text]
        firsts = []
        for i in range(max(1, 2 * a.repeat - 1)):
            new = texts[i % 2]
            open(target, "w").write(new)
            if target in opened:
                opened[target] += 1
                frame(proc, {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                    "textDocument": {"uri": uri(target), "version": opened[target]},
                    "contentChanges": [{"text": new}]}})
            else:
                frame(proc, {"jsonrpc": "2.0", "method": "workspace/didChangeWatchedFiles",
                             "params": {"changes": [{"uri": uri(target), "type": 2}]}})
            t1 = time.monotonic()
            settle(events, n, a.quiet_ms, 60)
            first = show(events[n:], t1, ws, a, quiet=i > 0)
            n = len(events)
            if i % 2 == 0 and first is not None:
                firsts.append(first)
        if a.repeat > 1:
            print(f"in order: {', '.join(f'{f:.0f}' for f in firsts)}")
            firsts.sort()
            print(f"{a.user} first re-published after the breaking change: p50 "
                  f"{firsts[len(firsts) // 2]:.0f} ms over {len(firsts)} "
                  f"({', '.join(f'{f:.0f}' for f in firsts)})")
    finally:
        proc.terminate()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
