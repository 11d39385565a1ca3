#!/usr/bin/env python3
"""Python knock-on through the service (issue 33): what the pyright plugin (the command line
of the project's chosen type checker over the project: `pyright --outputjson`, `basedpyright
--outputjson` or `ty check`) adds to the hook, and whether the hook names the callers.

Generates the project of plugins/lsp/benches/python_knockon.py (a core library and PACKAGES
service packages, 7 modules each; package 0 already has an error), commits it, and for each
plugin set starts `openfiles serve` on it and makes EDITS edits that alternately break and
restore `core/money.py`'s `price_with_tax` signature, timing the wall clock of `openfiles hook`
after each (with `hooks.partial_after_ms` as long as the timeout, so the hook waits for every
source; with `--defaults`, the default `partial_after_ms` and `knock_on_wait_ms`: the hook
waits for pyright only while its last run was quick). Prints p50/max per plugin set, and for the breaking edits how many of the expected
callers (file:line) the hook named and whether it named the old error (it must not).
`--checker` picks the project's type checker (its config: `pyrightconfig.json`,
`[tool.basedpyright]` in `pyproject.toml`, or `ty.toml`; the language server checking the
edited file is the same checker's, by the lsp plugin's rule). Not a test: figures for the
report. Usage (after `cargo build --workspace`):

    scripts/pyright-knockon-times.py [--edits 12] [--packages 8] [--target target/debug] [--defaults]
        [--checker pyright|basedpyright|ty|all]
"""

import argparse
import os
import statistics
import subprocess
import tempfile

from knockon_service import Service, WAIT_FOR_ALL

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
GOOD = "def price_with_tax(amount: Money, rate: float) -> Money:"
BROKEN = "def price_with_tax(amount: Money, rate: float, region: str) -> Money:"


def service(i):
    pre = "    bad: int = 'x'  # already broken, before the session\n" if i == 0 else ""
    return (f"from core.money import Money, fmt, price_with_tax\n\n\n"
            f"def quote_{i}(cents: int) -> str:\n    base = Money(cents)\n{pre}"
            f"    total = price_with_tax(base, 0.2)\n    return fmt(total)\n")


CONFIGS = {
    "pyright": ("pyrightconfig.json", '{"include": ["."]}\n'),
    "basedpyright": ("pyproject.toml", '[tool.basedpyright]\ninclude = ["."]\ntypeCheckingMode = "standard"\n'),
    "ty": ("ty.toml", ""),
}


def make(root, packages, checker):
    os.makedirs(f"{root}/core")
    open(f"{root}/core/__init__.py", "w").close()
    open(f"{root}/core/money.py", "w").write(CORE)
    callers = []
    for i in range(packages):
        d = f"{root}/svc{i}"
        os.makedirs(d)
        open(f"{d}/__init__.py", "w").close()
        open(f"{d}/quotes.py", "w").write(service(i))
        callers.append(f"svc{i}/quotes.py:{7 if i == 0 else 6}:")
        for k in range(5):
            open(f"{d}/util{k}.py", "w").write(
                f"from core.money import Money, fmt\n\n\ndef f{k}(m: Money) -> str:\n    return fmt(m)\n")
    name, text = CONFIGS[checker]
    open(f"{root}/{name}", "w").write(text)
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    return callers


def run(binary, plugins, edits, packages, defaults, checker):
    tmp = tempfile.mkdtemp(prefix="pyright-knockon-")
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    callers = make(ws, packages, checker)
    lsp = "[plugin.lsp]\ndisable = [\"basedpyright\", \"ty\"]\n" if checker == "pyright" else ""
    money = os.path.join(ws, "core", "money.py")
    with Service(binary, plugins, ws, tmp, "" if defaults else WAIT_FOR_ALL, lsp) as svc:
        times, found, blamed = [], [], 0
        # One edit first to start the servers and take the baseline (not counted).
        for n in range(edits + 2):
            broken = n % 2 == 0
            with open(money, "w") as f:
                f.write(CORE.replace(GOOD, BROKEN) if broken else CORE)
            took, text = svc.hook(money)
            if n < 2:
                continue
            times.append(took)
            if broken:
                found.append(sum(1 for c in callers if f"- {c}" in text))
                # The old error is svc0/quotes.py's line 6, whatever the checker calls it.
                blamed += "- svc0/quotes.py:6:" in text
        return times, found, len(callers), blamed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--edits", type=int, default=12)
    p.add_argument("--packages", type=int, default=8)
    p.add_argument("--target", default="target/debug")
    p.add_argument("--defaults", action="store_true",
                   help="the default [hooks] grace and knock-on wait (not a hook that waits for everything)")
    p.add_argument("--checker", default="pyright", choices=[*CONFIGS, "all"])
    a = p.parse_args()
    t = os.path.abspath(a.target)
    binary = os.path.join(t, "openfiles")
    lsp = os.path.join(t, "libopenfiles_plugin_lsp.so")
    pyright = os.path.join(t, "libopenfiles_plugin_pyright.so")
    checkers = list(CONFIGS) if a.checker == "all" else [a.checker]
    for checker, (name, plugins) in ((c, s) for c in checkers for s in (
            (f"lsp (ruff + {c} language server)", [lsp]), (f"lsp + pyright plugin ({c} CLI)", [lsp, pyright]))):
        times, found, expected, blamed = run(binary, plugins, a.edits, a.packages, a.defaults, checker)
        print(f"{name}: hook p50 {statistics.median(times):.0f} ms, max {max(times):.0f} ms over {len(times)} edits; "
              f"callers named per breaking edit {found} of {expected}; old error blamed {blamed} times")


if __name__ == "__main__":
    main()
