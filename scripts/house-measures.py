#!/usr/bin/env python3
"""The house's measures (ARCHITECTURE.md, "Measures"), outside tests: `Result<_, String>`
signatures, functions over 80 lines, source files over 700 lines, integration-test binaries.

Usage: scripts/house-measures.py [ROOT] [--list]

Test code is left out: files under tests/ and benches/, `tests.rs`/`testing.rs` modules, the
test fixtures' plugins, and a file's `#[cfg(test)] mod tests` (by convention its last item).
A function is measured from its `fn` line to the line closing its body (braces counted outside
strings, chars and comments, roughly: good enough for a trend)."""
import os
import re
import sys

ROOT = os.path.abspath(next((a for a in sys.argv[1:] if not a.startswith("--")), "."))
LIST = "--list" in sys.argv


def product_files():
    for top in ("src", "crates", "plugins"):
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            parts = d.split(os.sep)
            if "tests" in parts or "benches" in parts or "test-fixtures" in parts or "target" in parts:
                continue
            for f in files:
                if f.endswith(".rs") and f not in ("tests.rs", "testing.rs"):
                    yield os.path.join(d, f)


def product_text(path):
    text = open(path, encoding="utf-8").read()
    i = text.find("#[cfg(test)]\nmod tests")
    return text[:i] if i >= 0 else text


def strip(line):
    # Drop string and char literals and line comments so braces inside them do not count.
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    i = line.find("//")
    return line[:i] if i >= 0 else line


FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"C\"\s+)?fn\s+(\w+)")


def long_functions(path, lines):
    out = []
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth, start, opened = 0, i, False
        j = i
        while j < len(lines):
            s = strip(lines[j])
            if not opened and ";" in s and "{" not in s:
                break  # a declaration without a body
            depth += s.count("{") - s.count("}")
            if "{" in s:
                opened = True
            if opened and depth <= 0:
                break
            j += 1
        n = j - start + 1
        if opened and n > 80:
            out.append((n, f"{os.path.relpath(path, ROOT)}:{start + 1} {m.group(7)}"))
        i = j + 1 if opened else i + 1
    return out


results, fns, big = 0, [], []
result_sites = []
for path in product_files():
    text = product_text(path)
    lines = text.split("\n")
    flat = re.sub(r"\s+", " ", text)
    for m in re.finditer(r"Result<[^<>]*?(<[^<>]*>[^<>]*?)*, String>", flat):
        results += 1
        result_sites.append(os.path.relpath(path, ROOT))
    fns += long_functions(path, lines)
    if len(lines) > 700:
        big.append((len(lines), os.path.relpath(path, ROOT)))

binaries = 0
for d, dirs, files in os.walk(ROOT):
    if "target" in d.split(os.sep) or os.sep + "." in d or "fuzz" in d.split(os.sep):
        dirs[:] = []
        continue
    if os.path.basename(d) == "tests":
        binaries += sum(1 for f in files if f.endswith(".rs"))
        binaries += sum(1 for s in dirs if os.path.isfile(os.path.join(d, s, "main.rs")))

print(f"Result<_, String> outside tests: {results}")
print(f"functions over 80 lines: {len(fns)}")
print(f"source files over 700 lines: {len(big)}")
print(f"integration-test binaries: {binaries}")
if LIST:
    for n, f in sorted(fns, reverse=True):
        print(f"  fn {n:4} {f}")
    for n, f in sorted(big, reverse=True):
        print(f"  file {n:4} {f}")
    from collections import Counter
    for f, n in Counter(result_sites).most_common():
        print(f"  Result<_, String> {n:3} {f}")
