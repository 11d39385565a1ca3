#!/usr/bin/env python3
"""What `hooks.knock_on_wait_ms` does to a TypeScript hook (issue 33): with the default wait
(2 s) the edit's own hook waits for `tsc` when its last runs were quick and names the callers
the edit broke in files nobody edited; with `knock_on_wait_ms = 0` it answers once the
language server has (partial) and the callers come with a later hook.

Generates a TypeScript project (a core module and PACKAGES caller modules, one of them
already broken before the session), commits it, and for each setting starts `openfiles
serve` with the lsp and tsc plugins and makes EDITS edits that alternately break and restore
`core.ts`'s `priceWithTax` signature, timing `openfiles hook` after each. Prints p50/max,
and for the breaking edits how many callers (file:line) the edit's own hook named and whether
it named the old error (it must not). Not a test: figures for the report. Usage (after
`cargo build --workspace`):

    scripts/ts-knockon-wait-times.py [--edits 12] [--packages 8] [--target target/debug]
"""

import argparse
import os
import statistics
import subprocess
import tempfile

from knockon_service import Service

CORE = """export interface Money { cents: number; currency: string }

export function priceWithTax(amount: Money, rate: number): Money {
  return { cents: Math.round(amount.cents * (1 + rate)), currency: amount.currency };
}
"""
GOOD = "export function priceWithTax(amount: Money, rate: number): Money {"
BROKEN = "export function priceWithTax(amount: Money, rate: number, region: string): Money {"


def caller(i):
    old = "export const legacy: number = \"not a number\";\n" if i == 0 else ""
    return (f"import {{ priceWithTax }} from \"./core\";\n{old}\n"
            f"export const quote{i} = priceWithTax({{ cents: {i}, currency: \"EUR\" }}, 0.2);\n")


def make(ws, packages):
    os.makedirs(f"{ws}/src")
    open(f"{ws}/tsconfig.json", "w").write(
        '{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2020",'
        ' "module": "commonjs"}, "include": ["src"]}\n')
    open(f"{ws}/src/core.ts", "w").write(CORE)
    callers = []
    for i in range(packages):
        text = caller(i)
        open(f"{ws}/src/m{i}.ts", "w").write(text)
        line = next(n for n, l in enumerate(text.splitlines(), 1) if "priceWithTax(" in l)
        callers.append(f"src/m{i}.ts:{line}:")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", ws]
    subprocess.run(git[:-2] + ["init", "-q", ws], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "init"], check=True)
    return callers


def run(binary, plugins, edits, packages, wait_ms):
    tmp = tempfile.mkdtemp(prefix="of-ts-knockon-")
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    callers = make(ws, packages)
    core = os.path.join(ws, "src", "core.ts")
    hooks = "" if wait_ms is None else f"knock_on_wait_ms = {wait_ms}\n"
    with Service(binary, plugins, ws, tmp, hooks) as svc:
        times, found, blamed = [], [], 0
        # Two edits first to start the servers and take the baseline (not counted).
        for n in range(edits + 2):
            broken = n % 2 == 0
            with open(core, "w") as f:
                f.write(CORE.replace(GOOD, BROKEN) if broken else CORE)
            took, text = svc.hook(core)
            if n < 2:
                continue
            times.append(took)
            if broken:
                found.append(sum(1 for c in callers if f"- {c}" in text))
                blamed += "legacy" in text or "m0.ts:2:" in text
        return times, found, len(callers), blamed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--edits", type=int, default=12)
    p.add_argument("--packages", type=int, default=8)
    p.add_argument("--target", default="target/debug")
    a = p.parse_args()
    t = os.path.abspath(a.target)
    binary = os.path.join(t, "openfiles")
    plugins = [os.path.join(t, f"libopenfiles_plugin_{n}.so") for n in ("lsp", "tsc")]
    for name, wait_ms in (("knock_on_wait_ms = 0", 0), ("default knock_on_wait_ms (2 s)", None)):
        times, found, expected, blamed = run(binary, plugins, a.edits, a.packages, wait_ms)
        print(f"{name}: hook p50 {statistics.median(times):.0f} ms, max {max(times):.0f} ms over "
              f"{len(times)} edits; callers named by the edit's own hook {found} of {expected}; "
              f"old error blamed {blamed} times")


if __name__ == "__main__":
    main()
