#!/usr/bin/env python3
"""Issue 34's figures: the checkers' own fixes on projects with planted mistakes.

For a Python (ruff), a TypeScript (typescript-language-server, tsc), a Rust (rustc through
cargo check) and a C (clangd) project, each with planted mistakes:

- the share of the problems a tool reports (errors and warnings) that come with a fix, and
  with a safe one;
- whether applying every safe fix (`openfiles check --fix`) removes its problem and adds none,
  by the tool's own CLI before and after (`ruff check`, `tsc`, `cargo check`, `clangd --check`
  and `gcc -fsyntax-only -Wall`);
- the time from a result to its fixes (fixes asked after the answer: the service's
  `late fixes` log lines; fixes that come with the result take no time of their own), p50
  over repeated edits;
- the size the `  fix:` lines add to the hook's feedback.

Run from a built checkout (`cargo build --workspace`): `python3 scripts/measure-fixes.py`.
Needs ruff, typescript-language-server, tsc, cargo, clangd and gcc on PATH.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "target/debug/openfiles"
PLUGINS = REPO / "target/debug"

PY = """import os
import sys


def f(x, items):
    unused = 3
    if x == None:
        return f"none"
    if not x in items:
        return undefined_name
    try:
        return type(x) == type(items)
    except:
        pass
    g = lambda: 0
    return g
"""

TS_UTIL = "export function helper(): number {\n  return 1;\n}\n"
TS = """const count: number = 3;
console.log(coutn);
export function f(a: string): number {
  return a.lenght + helper();
}
export function g(): number {
  const n: number = "s";
  return n;
}
export function h(): void {
  await Promise.resolve(1);
}
class C {
  run(): number {
    return this.value;
  }
}
export const c = new C();
export const k: number = Math.max(1, 2, "3");
"""

RS = """use std::fmt;
use std::collections::HashMap;

fn take(n: u32) -> u32 {
    n + 1
}

fn size(v: &Vec<u32>) -> usize {
    v.len()
}

fn main() {
    let mut count = 5;
    let x: usize = 3;
    let v = vec![1, 2];
    let total = 0;
    println!("{} {} {}", take(x), count, size(v));
    println!("{}", v.lenn());
}
"""

C = """#include <stdio.h>

int main(void) {
    int count = 3;
    int total = 0
    long big = 5;
    int unused;
    printf("%d %d\\n", coutn, total);
    printf("%d\\n", big);
    if (total = 4) return 1;
    return 0;
}
"""


def run(cmd, cwd, env=None, stdin=None):
    p = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True)
    return p.stdout + p.stderr


def codes_ruff(ws):
    out = run(["ruff", "check", "--output-format", "json", "--no-cache", "mod.py"], ws)
    return sorted(d["code"] or "syntax" for d in json.loads(out))


def codes_tsc(ws):
    return sorted(re.findall(r"error (TS\d+)", run(["tsc", "--noEmit", "-p", "."], ws)))


def codes_cargo(ws):
    out = run(["cargo", "check", "--message-format", "json", "-q"], ws)
    codes = []
    for line in out.splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("reason") == "compiler-message" and m["message"]["spans"]:
            c = m["message"]["code"]
            codes.append(c["code"] if c else m["message"]["level"])
    return sorted(codes)


def codes_c(ws):
    gcc = re.findall(r"(error|warning): .*?(\[-W[\w-]+\])?$", run(["gcc", "-fsyntax-only", "-Wall", "main.c"], ws), re.M)
    clangd = re.findall(r"^E\[[^\]]*\] \[([^\]]+)\]", run(["clangd", "--check=main.c"], ws), re.M)
    return sorted([f"gcc {k}{w}" for k, w in gcc] + [f"clangd {c}" for c in clangd])


PROJECTS = {
    "python (ruff)": {
        "files": {"mod.py": PY, "ruff.toml": '[lint]\nextend-select = ["E711"]\n'},
        "main": "mod.py",
        "cli": codes_ruff,
    },
    "typescript (typescript-language-server, tsc)": {
        "files": {"main.ts": TS, "util.ts": TS_UTIL, "tsconfig.json": '{"compilerOptions":{"strict":true,"target":"es2020"}}'},
        "main": "main.ts",
        "cli": codes_tsc,
        "repeat": 15,
    },
    "rust (rustc via cargo check)": {
        "files": {
            "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n[workspace]\n',
            "src/main.rs": RS,
        },
        "main": "src/main.rs",
        "cli": codes_cargo,
    },
    "c (clangd)": {
        "files": {"main.c": C, "compile_flags.txt": "-xc\n-std=c11\n-Wall\n"},
        "main": "main.c",
        "cli": codes_c,
    },
}


class Env:
    def __init__(self, tmp):
        self.tmp = tmp
        self.env = dict(os.environ)
        self.env.update(
            OPENFILES_SOCKET=str(tmp / "run/openfiles.sock"),
            OPENFILES_STATE_DIR=str(tmp / "state"),
            OPENFILES_CONFIG=str(tmp / "config.toml"),
            OPENFILES_PLUGIN_PATH=str(PLUGINS),
            RUST_LOG="info,openfiles::diagnostics=debug",
        )
        (tmp / "config.toml").write_text(
            '[watch]\nenabled = false\n[hooks]\ntimeout_ms = 60000\n'
            '[plugin.lsp]\ndisable = ["pyright", "basedpyright"]\n'
        )

    def of(self, *args, cwd=None, stdin=None):
        return subprocess.run([str(BIN), *args], cwd=cwd, env=self.env, input=stdin,
                              capture_output=True, text=True)


def write(ws, files):
    for rel, text in files.items():
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def hook_text(env, ws, file):
    payload = json.dumps({"cwd": str(ws), "tool_name": "Edit", "tool_input": {"file_path": str(file)}})
    out = env.of("hook", "--agent", "claude", stdin=payload).stdout.strip()
    if not out:
        return ""
    return json.loads(out)["hookSpecificOutput"]["additionalContext"]


def main():
    if not BIN.exists():
        sys.exit("build first: cargo build --workspace")
    tmp = Path(tempfile.mkdtemp(prefix="of-fixes-"))
    env = Env(tmp)
    rows = []
    late_ms = []
    for name, proj in PROJECTS.items():
        ws = tmp / re.sub(r"\W+", "-", name)
        ws.mkdir()
        write(ws, proj["files"])
        env.of("trust", str(ws))
        main_file = ws / proj["main"]
        cli_before = proj["cli"](ws)
        # Through the service: the hook's feedback, then the entry (with late fixes).
        log = open(tmp / f"serve-{ws.name}.log", "w")
        svc = subprocess.Popen([str(BIN), "serve", "-w", str(ws)], env=env.env,
                               stdout=subprocess.DEVNULL, stderr=log)
        try:
            for _ in range(100):
                if env.of("status").returncode == 0:
                    break
                time.sleep(0.1)
            text = hook_text(env, ws, main_file)
            fix_lines = [l for l in text.splitlines() if l.startswith("  fix: ")]
            fix_bytes = sum(len(l.encode()) + 1 for l in fix_lines)
            v = json.loads(env.of("check", "--json", str(main_file)).stdout)
            # Repeated edits for the result-to-fix time (only fixes asked after the answer).
            for i in range(proj.get("repeat", 0)):
                main_file.write_text(main_file.read_text() + f"// edit {i}\n")
                env.of("check", "--json", str(main_file))
            main_file.write_text(proj["files"][proj["main"]])
        finally:
            svc.terminate()
            svc.wait()
            log.close()
        for line in open(tmp / f"serve-{ws.name}.log"):
            m = re.search(r"late fixes.*?n=(\d+).*?ms=(\d+)", line)
            if m and int(m.group(1)) > 0:
                late_ms.append((name, int(m.group(2))))
        by_source = {}
        for e in v["files"].values():
            for it in e["items"]:
                if it["severity"] not in ("error", "warning") or it["source"] == "openfiles":
                    continue
                s = by_source.setdefault(it["source"], [0, 0, 0])
                s[0] += 1
                fixes = it.get("fixes", [])
                s[1] += bool(fixes)
                s[2] += any(f["safe"] for f in fixes)
        # Every safe fix applied (in-process, rounds), then the tool's CLI again.
        fixed = run([str(BIN), "check", "--fix", str(main_file)], ws, env=dict(env.env, OPENFILES_SOCKET=str(tmp / "none.sock")))
        applied = re.search(r"applied (\d+) fix", fixed)
        cli_after = proj["cli"](ws)
        added = list(cli_after)
        for c in cli_before:
            if c in added:
                added.remove(c)
        removed = list(cli_before)
        for c in cli_after:
            if c in removed:
                removed.remove(c)
        rows.append((name, by_source, len(fix_lines), fix_bytes, len(text.encode()),
                     int(applied.group(1)) if applied else 0, cli_before, removed, added))

    print("# Fixes on planted mistakes\n")
    for name, by_source, nlines, fbytes, tbytes, applied, before, removed, added in rows:
        print(f"## {name}")
        for src, (n, anyfix, safe) in sorted(by_source.items()):
            print(f"- {src}: {n} problems reported, {anyfix} with a fix ({100*anyfix//max(n,1)}%), {safe} with a safe fix ({100*safe//max(n,1)}%)")
        print(f"- hook feedback: {tbytes} bytes, of which {nlines} fix line(s) = {fbytes} bytes ({100*fbytes//max(tbytes,1)}%)")
        print(f"- check --fix applied {applied} safe fix(es); the CLI reported {len(before)} problem(s) before, "
              f"{len(before)-len(removed)+len(added)} after: removed {removed}, added {added}")
    ms = [m for _, m in late_ms]
    if ms:
        print(f"\nresult → fixes asked after it (typescript-language-server): n={len(ms)}, p50={statistics.median(ms)} ms, max={max(ms)} ms")
    print("fixes that come with the result (rustc, ruff, clangd): 0 ms after it")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
