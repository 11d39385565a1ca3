#!/usr/bin/env python3
"""Knock-on on a real project, cold and warm (issue 42): does the edit's own hook name the
callers the edit broke in files nobody edited, how long until `diagnostics.json` holds every
one, and does a revert clear them — measured against the language's own command-line checker.

Clones REPO (a checkout at a pinned commit) into a temporary workspace and asks the reference
checker for its errors with FILE as committed and with OLD replaced by NEW: the errors the edit
adds in other files (file:line) are the callers to name, the errors the commit already had are
never to be blamed. The reference per language:

- python: `pyright --outputjson` at the root;
- typescript: `tsc --noEmit --pretty false` at the root (its `tsconfig.json`);
- rust: `cargo check --message-format short` (the workspace is trusted: `cargo check` builds);
- c: `clang-14 -fsyntax-only` over the `compile_commands.json` the script writes (every `.c`
  of the repository but `fuzzing/`, `-I.` and `-I` each folder holding a header; untracked).

Then a service of its own with the language's plugins (lsp and the project-wide one) and the
default hook settings:

- cold: a fresh service, the agent's `SessionStart` hook (the warm-up), `--start-gap` seconds
  (a fast model), then the breaking edit and its hook;
- warm: `--edits` more edits alternately restoring and breaking FILE.

With `--cold N`, N cold sessions instead (and no warm edits): each a fresh service with a
state dir of its own (no commit's baseline kept from an earlier one), the `SessionStart`
hook, `--start-gap` seconds, the breaking edit's hook, then FILE restored; per session the
hook's time, whether its text named every caller, when `diagnostics.json` had them all, and
whether the baseline came from the warm-up (`seed.rs`), a snapshot run the warm-up started
ahead of the edit (`base::prefetch`; the edit waits for it if it still runs) or one the edit started.

With `--kept run|seed` too, each cold session's state dir shares the commit's baselines
another session kept (`<state>/baselines`, as another worktree's at the same commit would
leave them: `diagnostics::baseline::shared`), made once beforehand by a session whose first
edit waited for its snapshot run (`run`), or whose session start's warm-up answered over the
clean tree (`seed`); the session's own baseline starts empty.

For each breaking edit: the hook's wall time, how many of the callers its own text named, and
the time from the edit until `diagnostics.json` had an `affectedBy` entry with an error on every
caller's line. For each restoring edit: whether its hook still named a caller, and the time
until no caller is left in `diagnostics.json`. Not a test: figures for README's knock-on table.

    scripts/knockon-real.py --lang python --repo /work/projects/click --file src/click/utils.py \\
        --old 'def make_str(value: t.Any) -> str:' --new 'def make_str(value: t.Any, strict: bool) -> str:'

The README's rows give each project's command line.

Pinned commits of the README's rows: pallets/click 2c8cd3ac958a7eb316d67f2d316c27086c4c0369,
sindresorhus/ky 3419113b48e034fdcf8fa6bd3be3da7b3d0d758f, BurntSushi/walkdir
6fd031c82ba5a4204b4ce6eae73dacb00dc072ec, DaveGamble/cJSON a29814f285cc531c00223743ad3c55cd38c0dc56
(`git clone https://github.com/OWNER/NAME && git -C NAME checkout COMMIT`).
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

from knockon_service import Service

PLUGINS = {"python": "pyright", "typescript": "tsc", "rust": "cargo-check", "c": "cc"}
HOOK_ERROR = re.compile(r"^- (\S+?):(\d+):\d+ error", re.M)


def pyright_errors(ws):
    out = subprocess.run(["pyright", "--outputjson"], cwd=ws, capture_output=True, text=True).stdout
    found = set()
    for d in json.loads(out).get("generalDiagnostics", []):
        if d["severity"] == "error" and d.get("file"):
            found.add((os.path.relpath(d["file"], ws), d["range"]["start"]["line"] + 1))
    return found


def tsc_errors(ws):
    out = subprocess.run(["tsc", "--noEmit", "--pretty", "false"], cwd=ws, capture_output=True,
                         text=True).stdout
    found = set()
    for m in re.finditer(r"^(.+?)\((\d+),\d+\): error TS", out, re.M):
        found.add((os.path.normpath(m[1]), int(m[2])))
    return found


def cargo_errors(ws):
    out = subprocess.run(["cargo", "check", "--quiet", "--message-format", "short"], cwd=ws,
                         capture_output=True, text=True).stderr
    found = set()
    for m in re.finditer(r"^(.+?):(\d+):\d+: error", out, re.M):
        found.add((os.path.normpath(m[1]), int(m[2])))
    return found


def c_units(ws):
    units = [p for p in glob.glob(f"{ws}/**/*.c", recursive=True)
             if "/fuzzing/" not in p and "/.git/" not in p]
    dirs = sorted({os.path.dirname(h) for h in glob.glob(f"{ws}/**/*.h", recursive=True)})
    flags = ["-std=c99", "-Wall"] + [f"-I{d}" for d in dirs]
    return [{"directory": ws, "file": u, "arguments": ["cc", *flags, "-c", u]} for u in sorted(units)]


def c_errors(ws):
    found = set()
    for e in c_units(ws):
        out = subprocess.run(["clang-14", "-fsyntax-only", "-fno-color-diagnostics",
                              "-fno-caret-diagnostics", *e["arguments"][1:-2], e["file"]],
                             cwd=ws, capture_output=True, text=True).stderr
        for m in re.finditer(r"^(.+?):(\d+):\d+: (?:fatal )?error:", out, re.M):
            path = os.path.normpath(os.path.join(ws, m[1]))
            if path.startswith(ws + "/"):
                found.add((os.path.relpath(path, ws), int(m[2])))
    return found


REFERENCE = {"python": pyright_errors, "typescript": tsc_errors, "rust": cargo_errors,
             "c": c_errors}


def callers_in_json(ws, expected):
    """How many expected callers `diagnostics.json` has as errors of an `affectedBy` entry."""
    try:
        doc = json.load(open(os.path.join(ws, ".openfiles", "diagnostics.json")))
    except (OSError, ValueError):
        return 0
    have = set()
    for rel, entry in doc.get("files", {}).items():
        if not entry.get("affectedBy"):
            continue
        for it in entry.get("items", []):
            if it.get("severity") == "error":
                have.add((rel, it.get("line")))
    return sum(1 for e in expected if e in have)


def wait_json(ws, expected, want_all, since, limit=90.0):
    """Seconds from `since` until `diagnostics.json` names every caller (want_all) or none."""
    while time.perf_counter() - since < limit:
        n = callers_in_json(ws, expected)
        if (want_all and n == len(expected)) or (not want_all and n == 0):
            return time.perf_counter() - since
        time.sleep(0.02)
    return None


def session_start(svc):
    payload = json.dumps({"session_id": "knockon", "cwd": svc.ws, "hook_event_name": "SessionStart",
                          "source": "startup"}).encode()
    subprocess.run([svc.binary, "hook", "--agent", "claude", "--event", "SessionStart"],
                   input=payload, env=svc.env, cwd=svc.ws, capture_output=True)


def edit(svc, target, text, expected, breaking):
    """Write, run the hook; (hook ms, callers its text named, seconds until diagnostics.json
    had them all / none)."""
    since = time.perf_counter()
    open(target, "w").write(text)
    took, ctx = svc.hook(target)
    named = {(m[1], int(m[2])) for m in HOOK_ERROR.finditer(ctx)}
    settled = wait_json(svc.ws, expected, breaking, since)
    return took, sum(1 for e in expected if e in named), settled, ctx


def fmt(s):
    return "never" if s is None else f"{s:.2f} s"


def kept_baselines(binary, plugins, ws, tmp, target, texts, a):
    """`--kept run`: a session (no session start) edits, waits for the commit's run over the
    snapshot to be kept, and restores FILE; `--kept seed`: a session start, its warm-up's
    answer over the clean tree kept as the commit's run (`seed.rs`). Its `<state>/baselines`."""
    clean, broken = texts
    own = os.path.join(tmp, "kept")
    store = os.path.join(own, "state", "baselines")
    os.makedirs(os.path.join(own, "state"), exist_ok=True)
    with Service(binary, plugins, ws, own, timeout_ms=a.timeout_ms) as svc:
        if a.kept == "seed":
            session_start(svc)
        else:
            open(target, "w").write(broken)
            svc.hook(target)
        until = time.time() + 300
        while not glob.glob(os.path.join(store, "*", "*", "*.json")):
            if time.time() > until:
                raise SystemExit("no run kept after 300 s")
            time.sleep(0.2)
        open(target, "w").write(clean)
    return store


def cold_sessions(a, binary, plugins, ws, tmp, target, texts, expected):
    """`--cold N`: N fresh services, each a session start, the gap and the first edit."""
    clean, broken = texts
    hooks, named_all, arrivals = [], 0, []
    store = kept_baselines(binary, plugins, ws, tmp, target, texts, a) if a.kept else None
    for i in range(a.cold):
        own = os.path.join(tmp, f"cold-{i}")
        os.makedirs(os.path.join(own, "state"), exist_ok=True)
        if store:
            # The one store, as every worktree of a service shares it (a copy would name
            # another snapshot folder than the kept runs say they ran in).
            os.symlink(store, os.path.join(own, "state", "baselines"))
        if a.lang == "rust":
            subprocess.run([binary, "trust", ws], check=True, capture_output=True,
                           env=dict(os.environ, OPENFILES_STATE_DIR=os.path.join(own, "state"),
                                    OPENFILES_CONFIG=os.path.join(own, "config.toml")))
        with Service(binary, plugins, ws, own, timeout_ms=a.timeout_ms) as svc:
            session_start(svc)
            time.sleep(a.start_gap)
            took, named, settled, ctx = edit(svc, target, broken, expected, True)
            open(target, "w").write(clean)
        log = open(os.path.join(own, "serve.log"), errors="replace").read()
        if a.log:
            shutil.copyfile(os.path.join(own, "serve.log"), f"{a.log}.{i + 1}")
        if "the warm-up over a clean tree is the commit's baseline" in log:
            origin = "from the warm-up"
        elif "the commit's baseline is kept: read during the warm-up" in log:
            origin = "kept at the commit by another session"
        elif "the commit's baseline is ready before the session's first edit" in log:
            origin = "run ahead by the warm-up"
        else:
            origin = "from a snapshot run"
        hooks.append(took)
        named_all += named == len(expected)
        arrivals.append(settled if settled is not None else float("inf"))
        print(f"cold {i + 1}/{a.cold} (gap {a.start_gap:.1f} s): hook {took:.0f} ms naming "
              f"{named}/{len(expected)} callers; all in diagnostics.json after {fmt(settled)}; "
              f"baseline {origin}")
        if a.show:
            print(ctx)
    print(f"cold ({a.cold} sessions, gap {a.start_gap:.1f} s): hook p50 "
          f"{statistics.median(hooks):.0f} ms (max {max(hooks):.0f}); every caller named by the "
          f"first edit's hook in {named_all}/{a.cold}; all in diagnostics.json p50 "
          f"{statistics.median(arrivals):.2f} s (max {max(arrivals):.2f})")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lang", required=True, choices=sorted(PLUGINS))
    p.add_argument("--repo", required=True, help="a checkout (cloned, never modified)")
    p.add_argument("--file", required=True, help="the edited file, relative to the repo")
    p.add_argument("--old", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--setup", help="a shell command run in the clone first (ky: npm install "
                   "--no-save --ignore-scripts, for the packages its tsconfig extends)")
    p.add_argument("--edits", type=int, default=8, help="warm edits after the cold one")
    p.add_argument("--think", type=float, default=0.0,
                   help="seconds between a warm edit's settling and the next edit (an agent's "
                        "turn; 0: at once)")
    p.add_argument("--start-gap", type=float, default=1.0,
                   help="seconds between SessionStart and the first edit")
    p.add_argument("--timeout-ms", type=int, default=4000,
                   help="hooks.timeout_ms, the hook's deadline (default: the service's, 4000)")
    p.add_argument("--cold", type=int, default=0, metavar="N",
                   help="measure N cold sessions (fresh service and state each) instead")
    p.add_argument("--kept", choices=["run", "seed"],
                   help="with --cold: each session shares the commit's run kept by another "
                        "session: its snapshot run, or its session start's answer")
    p.add_argument("--target", default="target/debug")
    p.add_argument("--show", action="store_true", help="print the cold edit's feedback")
    p.add_argument("--log", help="copy the service's log here at the end (with --cold, each "
                   "session's to LOG.1, LOG.2…; its level: RUST_LOG, "
                   "e.g. `debug` for the per-edit timeline)")
    a = p.parse_args()
    t = os.path.abspath(a.target)
    binary = os.path.join(t, "openfiles")
    plugins = [os.path.join(t, f"libopenfiles_plugin_{n.replace('-', '_')}.so")
               for n in ("lsp", PLUGINS[a.lang])]

    tmp = tempfile.mkdtemp(prefix="of-knockon-")
    ws = os.path.join(tmp, "ws")
    subprocess.run(["git", "clone", "-q", a.repo, ws], check=True)
    if a.setup:
        subprocess.run(a.setup, shell=True, cwd=ws, check=True, stdout=subprocess.DEVNULL)
    if a.lang == "c":
        with open(f"{ws}/compile_commands.json", "w") as f:
            json.dump(c_units(ws), f, indent=1)
        with open(f"{ws}/.git/info/exclude", "a") as f:
            f.write("compile_commands.json\n")
    target = os.path.join(ws, a.file)
    clean = open(target).read()
    if a.old not in clean:
        raise SystemExit(f"--old not found in {a.file}")
    broken = clean.replace(a.old, a.new, 1)
    before = REFERENCE[a.lang](ws)
    open(target, "w").write(broken)
    after = REFERENCE[a.lang](ws)
    open(target, "w").write(clean)
    expected = sorted(e for e in after - before if e[0] != a.file)
    print(f"reference: {len(before)} errors at the commit; the edit adds {len(expected)} in other "
          f"files: {', '.join(f'{f}:{n}' for f, n in expected)}")
    if not expected:
        raise SystemExit("the edit breaks no caller in another file: choose another")

    env_trust = dict(os.environ, OPENFILES_STATE_DIR=os.path.join(tmp, "state"),
                     OPENFILES_CONFIG=os.path.join(tmp, "config.toml"))
    os.makedirs(env_trust["OPENFILES_STATE_DIR"], exist_ok=True)
    if a.lang == "rust":
        subprocess.run([binary, "trust", ws], env=env_trust, check=True, capture_output=True)
    if a.cold:
        cold_sessions(a, binary, plugins, ws, tmp, target, (clean, broken), expected)
        shutil.rmtree(tmp, ignore_errors=True)
        return
    with Service(binary, plugins, ws, tmp, timeout_ms=a.timeout_ms) as svc:
        session_start(svc)
        time.sleep(a.start_gap)
        took, named, settled, ctx = edit(svc, target, broken, expected, True)
        print(f"cold (SessionStart, {a.start_gap:.1f} s, first edit): hook {took:.0f} ms naming "
              f"{named}/{len(expected)} callers; all in diagnostics.json after {fmt(settled)}")
        if a.show:
            print(ctx)
        hooks, names, alls, clears, stale = [], [], [], [], 0
        for n in range(a.edits):
            breaking = n % 2 == 1
            time.sleep(a.think)
            took, named, settled, ctx = edit(svc, target, broken if breaking else clean,
                                             expected, breaking)
            if breaking:
                hooks.append(took)
                names.append(named)
                alls.append(settled if settled is not None else float("inf"))
            else:
                stale += named > 0
                clears.append(settled if settled is not None else float("inf"))
        open(target, "w").write(clean)
        if hooks:
            print(f"warm ({len(hooks)} breaking edits): hook p50 {statistics.median(hooks):.0f} ms "
                  f"(max {max(hooks):.0f}); callers named by the edit's own hook {names} of "
                  f"{len(expected)}; all in diagnostics.json p50 {statistics.median(alls):.2f} s "
                  f"(max {max(alls):.2f})")
        print(f"reverts ({len(clears)}): cleared from diagnostics.json p50 "
              f"{statistics.median(clears):.2f} s; hooks still naming a caller: {stale}")
    if a.log:
        shutil.copyfile(os.path.join(tmp, "serve.log"), a.log)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
