#!/usr/bin/env python3
"""The floor of issue 42.3: pyright-langserver alone on the monorepo fixture of
`benches/monorepo.rs` (PACKAGES packages `packages/pkgN/src/pkgN/core.py`, each with its
module's errors; "plain": no pyright configuration, the workspace is the one project;
"configured": a `[tool.pyright]` table in every package, each a workspace folder) — no
openfiles in between.

For each case and diagnostic mode ("workspace": every file of every program, what the
pyright plugin's warm server does; "openFilesOnly": only the files opened, what the lsp
plugin's per-file server does), it starts `pyright-langserver --stdio`, initializes it with
the projects as workspace folders, opens the edited files in openFilesOnly mode, and times
until every edited file has its diagnostics and the server is quiet (no progress running,
QUIET_MS without a push); it samples the server's process tree RSS (peak). Not a test:
figures for the report (quote `uptime` beside them). Usage:

    scripts/pyright-monorepo-floor.py [--packages 12] [--runs 3]
"""

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time

QUIET_MS = 500


def module(i):
    return (f"import os\n\n\ndef f{i}(x: int) -> str:\n    return x + undefined_{i}\n\n\n"
            f"VALUE: int = f{i}(1)\n")


def build(ws, n, configured):
    files = []
    for i in range(n):
        pkg = f"{ws}/packages/pkg{i}"
        os.makedirs(f"{pkg}/src/pkg{i}")
        extra = "[tool.pyright]\nreportMissingModuleSource = \"warning\"\n" if configured else ""
        open(f"{pkg}/pyproject.toml", "w").write(
            f"[project]\nname = \"pkg{i}\"\nversion = \"0.1.0\"\n[tool.ruff]\nline-length = 100\n{extra}")
        open(f"{pkg}/src/pkg{i}/__init__.py", "w").close()
        f = f"{pkg}/src/pkg{i}/core.py"
        open(f, "w").write(module(i))
        files.append(f)
    roots = [f"{ws}/packages/pkg{i}" for i in range(n)] if configured else [ws]
    return files, roots


def tree_rss_kib(pid):
    def rss(p):
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
        except OSError:
            pass
    return total


class Server:
    def __init__(self, cwd, mode):
        self.proc = subprocess.Popen(["pyright-langserver", "--stdio"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.mode, self.lock = mode, threading.Lock()
        self.published, self.active, self.last_push, self.initialized = {}, set(), time.monotonic(), False
        threading.Thread(target=self.read, daemon=True).start()

    def send(self, msg):
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        out = self.proc.stdout
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.handle(json.loads(out.read(length)))

    def handle(self, msg):
        method = msg.get("method")
        with self.lock:
            if msg.get("id") == 1 and "result" in msg:
                self.initialized = True
            elif method == "textDocument/publishDiagnostics":
                uri = msg["params"]["uri"]
                self.published[uri] = len(msg["params"]["diagnostics"])
                self.last_push = time.monotonic()
            elif method == "$/progress":
                kind = msg["params"]["value"].get("kind")
                token = str(msg["params"]["token"])
                if kind == "begin":
                    self.active.add(token)
                elif kind == "end":
                    self.active.discard(token)
                self.last_push = time.monotonic()
        if "id" in msg and method:  # a request of the server's
            result = None
            if method == "workspace/configuration":
                analysis = {"diagnosticMode": self.mode, "autoSearchPaths": True, "useLibraryCodeForTypes": True}
                result = [{"analysis": analysis} if i.get("section") == "python" else
                          analysis if i.get("section") == "python.analysis" else None
                          for i in msg["params"]["items"]]
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})


def uri(p):
    return "file://" + p


def measure(files, roots, mode):
    sampled = {"peak": 0}
    start = time.monotonic()
    srv = Server(roots[0], mode)
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            sampled["peak"] = max(sampled["peak"], tree_rss_kib(srv.proc.pid))
            time.sleep(0.1)
    threading.Thread(target=sample, daemon=True).start()
    folders = [{"uri": uri(r), "name": os.path.basename(r)} for r in roots]
    srv.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": uri(roots[0]), "workspaceFolders": folders,
        "capabilities": {"window": {"workDoneProgress": True},
                         "workspace": {"configuration": True, "workspaceFolders": True},
                         "textDocument": {"publishDiagnostics": {}}}}})
    while not srv.initialized:
        time.sleep(0.01)
    srv.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    srv.send({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {
        "python": {"analysis": {"diagnosticMode": mode, "autoSearchPaths": True, "useLibraryCodeForTypes": True}}}}})
    if mode == "openFilesOnly":
        for f in files:
            srv.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri(f), "languageId": "python", "version": 1, "text": open(f).read()}}})
    wanted = [uri(f) for f in files]
    while True:
        time.sleep(0.02)
        with srv.lock:
            done = all(srv.published.get(u) for u in wanted) and not srv.active
            quiet = time.monotonic() - srv.last_push >= QUIET_MS / 1000
        if done and quiet:
            break
        if time.monotonic() - start > 300:
            raise SystemExit(f"not settled in 300 s: {srv.published}")
    took = time.monotonic() - start - QUIET_MS / 1000
    stop.set()
    srv.proc.terminate()
    srv.proc.wait()
    return took, sampled["peak"] // 1024


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--packages", type=int, default=12)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    print("load:", open("/proc/loadavg").read().strip())
    for configured in (False, True):
        for mode in ("workspace", "openFilesOnly"):
            times, peaks = [], []
            for _ in range(a.runs):
                with tempfile.TemporaryDirectory(prefix="pyright-floor-") as tmp:
                    ws = os.path.realpath(tmp)
                    files, roots = build(ws, a.packages, configured)
                    took, peak = measure(files, roots, mode)
                    times.append(took)
                    peaks.append(peak)
            case = "configured" if configured else "plain"
            print(f"{case} ({a.packages} packages, {len(roots)} workspace folders), {mode}: "
                  f"settled in {', '.join(f'{t:.2f}' for t in times)} s; peak RSS {max(peaks)} MiB")
    print("load:", open("/proc/loadavg").read().strip())


if __name__ == "__main__":
    main()
