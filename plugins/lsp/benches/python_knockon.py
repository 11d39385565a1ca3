#!/usr/bin/env python3
"""Python knock-on, measured (issue 33, part 1): after an edit breaks a function's signature,
how fast does each candidate project-wide pass name the broken callers in files never
touched, and does it name only those?

Generates a realistic multi-package project (core library + N service packages importing it,
a few errors already present: the baseline), then for EDITS edits alternately breaks and
restores one core function's signature and times, per candidate:

  cli        `pyright --outputjson` at the project root (pyright's own CLI, cold each run)
  cli-ty     `ty check --output-format concise` (Astral's checker; not pyright's rules)
  lsp-ws     pyright-langserver with diagnosticMode "workspace": didChange of the edited file
             -> the first push for the caller file that contains the new error
  lsp-open   pyright-langserver, openFilesOnly (today's mode): does it report the caller at all?

Prints, per candidate: p50/max ms, callers found (file:line) vs expected, new errors blamed
elsewhere. usage: python_knockon.py [EDITS] [PACKAGES]
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, threading, time, queue

EDITS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
PACKAGES = int(sys.argv[2]) if len(sys.argv) > 2 else 8

CORE = '''from dataclasses import dataclass


@dataclass
class Money:
    cents: int
    currency: str = "EUR"


def price_with_tax(amount: Money, rate: float) -> Money:
    return Money(int(amount.cents * (1 + rate)), amount.currency)


def fmt(amount: Money) -> str:
    return f"{amount.cents / 100:.2f} {amount.currency}"
'''
BROKEN_SIG = "def price_with_tax(amount: Money, rate: float, region: str) -> Money:"
GOOD_SIG = "def price_with_tax(amount: Money, rate: float) -> Money:"


def service(i):
    # Line 7 calls price_with_tax: the caller that breaks. Package 0 has an error already.
    pre = "    bad: int = 'x'  # already broken, before the session\n" if i == 0 else ""
    return (f'''from core.money import Money, fmt, price_with_tax


def quote_{i}(cents: int) -> str:
    base = Money(cents)
{pre}    total = price_with_tax(base, 0.2)
    return fmt(total)


def plain_{i}(cents: int) -> str:
    return fmt(Money(cents))
''')


def make(root):
    os.makedirs(f"{root}/core")
    open(f"{root}/core/__init__.py", "w").close()
    open(f"{root}/core/money.py", "w").write(CORE)
    for i in range(PACKAGES):
        d = f"{root}/svc{i}"
        os.makedirs(d)
        open(f"{d}/__init__.py", "w").close()
        open(f"{d}/quotes.py", "w").write(service(i))
        for k in range(5):  # filler modules that do not call the function
            open(f"{d}/util{k}.py", "w").write(f"from core.money import Money, fmt\n\n\ndef f{k}(m: Money) -> str:\n    return fmt(m)\n")
    open(f"{root}/pyrightconfig.json", "w").write('{"include": ["."]}\n')


def expected_callers(root):
    out = []
    for i in range(PACKAGES):
        lines = open(f"{root}/svc{i}/quotes.py").read().splitlines()
        n = next(k for k, l in enumerate(lines) if "price_with_tax(base" in l) + 1
        out.append((f"svc{i}/quotes.py", n))
    return sorted(out)


def errors_cli(root):
    r = subprocess.run(["pyright", "--outputjson"], cwd=root, capture_output=True, text=True)
    v = json.loads(r.stdout)
    return sorted((os.path.relpath(d["file"], root), d["range"]["start"]["line"] + 1)
                  for d in v["generalDiagnostics"] if d["severity"] == "error")


def errors_ty(root):
    r = subprocess.run(["ty", "check", "--output-format", "concise"], cwd=root, capture_output=True, text=True)
    out = []
    for l in r.stdout.splitlines():
        parts = l.split(":")
        if len(parts) > 3 and "error[" in parts[3]:
            out.append((parts[0], int(parts[1])))
    return sorted(out)


def set_sig(root, broken):
    p = f"{root}/core/money.py"
    text = open(p).read()
    text = text.replace(GOOD_SIG, BROKEN_SIG) if broken else text.replace(BROKEN_SIG, GOOD_SIG)
    open(p, "w").write(text)
    return text


def bench_cli(name, fn, root):
    base = set(fn(root))
    times, found_all, blamed = [], None, set()
    for e in range(EDITS):
        broken = e % 2 == 0
        set_sig(root, broken)
        t = time.perf_counter()
        errs = set(fn(root))
        times.append((time.perf_counter() - t) * 1e3)
        if broken:
            new = errs - base
            callers = sorted(x for x in new if not x[0].startswith("core/"))
            found_all = callers
            blamed |= {x for x in new if x not in set(expected_callers(root))}
    set_sig(root, False)
    return times, found_all, blamed


class Lsp:
    def __init__(self, root, mode):
        self.root = root
        self.p = subprocess.Popen(["pyright-langserver", "--stdio"], cwd=root, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.q = queue.Queue()
        self.id = 0
        self.settings = {"python": {"analysis": {"diagnosticMode": mode}}}
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        f = self.p.stdout
        while True:
            hdr = {}
            while True:
                line = f.readline()
                if not line:
                    return
                line = line.decode().strip()
                if not line:
                    break
                k, v = line.split(":", 1)
                hdr[k.lower()] = v.strip()
            self.q.put(json.loads(f.read(int(hdr["content-length"]))))

    def send(self, m):
        b = json.dumps(m).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
        self.p.stdin.flush()

    def request(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        return self.id

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def pump(self, until, secs=120):
        end = time.time() + secs
        while time.time() < end:
            try:
                m = self.q.get(timeout=0.2)
            except queue.Empty:
                continue
            if "method" in m and "id" in m:
                res = None
                if m["method"] == "workspace/configuration":
                    res = []
                    for it in m["params"]["items"]:
                        v = self.settings
                        for part in (it.get("section") or "").split("."):
                            v = v.get(part, {}) if part else v
                        res.append(v or None)
                self.send({"jsonrpc": "2.0", "id": m["id"], "result": res})
                continue
            if until(m):
                return m
        return None


def bench_lsp(root, mode):
    s = Lsp(root, mode)
    uri = lambda rel: "file://" + os.path.join(root, rel)
    rel = lambda u: os.path.relpath(u[len("file://"):], root)
    latest = {}  # file -> error lines of its latest push

    def record(m):
        if m.get("method") == "textDocument/publishDiagnostics":
            latest[rel(m["params"]["uri"])] = {d["range"]["start"]["line"] + 1
                                               for d in m["params"]["diagnostics"] if d.get("severity", 1) == 1}
        return m

    rid = s.request("initialize", {"processId": os.getpid(), "rootUri": uri(""),
                                   "workspaceFolders": [{"uri": uri(""), "name": "p"}],
                                   "capabilities": {"workspace": {"configuration": True},
                                                    "textDocument": {"publishDiagnostics": {"versionSupport": True}}}})
    s.pump(lambda m: m.get("id") == rid)
    s.notify("initialized", {})
    s.notify("workspace/didChangeConfiguration", {"settings": s.settings})
    text = open(f"{root}/core/money.py").read()
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri("core/money.py"), "languageId": "python", "version": 1, "text": text}})
    callers = expected_callers(root)
    # Let the first (workspace) analysis finish: every caller file has been published.
    s.pump(lambda m: record(m) and all(c in latest for c, _ in callers), 120)
    s.pump(lambda m: record(m) and False, 2)
    baseline = {f: set(v) for f, v in latest.items()}
    times, found, blamed = [], [], set()
    for e in range(EDITS):
        broken = e % 2 == 0
        text = set_sig(root, broken)
        t = time.perf_counter()
        s.notify("textDocument/didChange", {"textDocument": {"uri": uri("core/money.py"), "version": e + 2}, "contentChanges": [{"text": text}]})

        def caller_ok(c):
            f, line = c
            return (line in latest.get(f, set())) == broken
        # The first caller named: what the hook needs (file:line of one broken caller).
        first = s.pump(lambda m: record(m) and any(caller_ok(c) for c in callers), 30)
        if first is None:
            times.append(None)
            continue
        times.append((time.perf_counter() - t) * 1e3)
        s.pump(lambda m: record(m) and all(caller_ok(c) for c in callers), 30)
        if broken:
            found = [c for c in callers if caller_ok(c)]
            for f, lines in latest.items():
                for line in lines - baseline.get(f, set()):
                    if (f, line) not in callers and not f.startswith("core/"):
                        blamed.add((f, line))
    s.p.kill()
    set_sig(root, False)
    return times, found, blamed


def report(name, times, found, blamed=None):
    ok = [t for t in times if t is not None]
    missing = len(times) - len(ok)
    p50 = statistics.median(ok) if ok else float("nan")
    print(json.dumps({"candidate": name, "edits": len(times), "p50_ms": round(p50, 1),
                      "max_ms": round(max(ok), 1) if ok else None, "no_answer": missing,
                      "callers_found": len(found or []),
                      "callers_expected": PACKAGES,
                      "first_caller": (f"{found[0][0]}:{found[0][1]}" if found else None),
                      "blamed_elsewhere": sorted(f"{a}:{b}" for a, b in (blamed or []))}))


def main():
    root = tempfile.mkdtemp(prefix="knockon-")
    try:
        make(root)
        t, f, b = bench_cli("cli", errors_cli, root)
        report("pyright --outputjson", t, f, b)
        if shutil.which("ty"):
            t, f, b = bench_cli("cli-ty", errors_ty, root)
            report("ty check", t, f, b)
        t, f, b = bench_lsp(root, "workspace")
        report("pyright-langserver workspace (first caller)", t, f, b)
        t, f, b = bench_lsp(root, "openFilesOnly")
        report("pyright-langserver openFilesOnly", t, f, b)
    finally:
        shutil.rmtree(root, ignore_errors=True)


main()
