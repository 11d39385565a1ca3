#!/usr/bin/env python3
"""Issue 42.3's items check: the Pyright items of every .py file of a project (a copy, trusted,
through `openfiles check --json`) with the lsp plugin's pyright-langserver alone (the pyright
plugin disabled) against both plugins, where the pyright plugin's warm server stands in for
the lsp plugin's on the files its project tracks (CheckRequest::served). Prints the counts and
every item only one side has; "equal" when none.

Usage: scripts/pyright-one-analysis.py TARGET_DIR PROJECT [SUBFOLDER]
  TARGET_DIR: a build's folder with `openfiles` and the lsp and pyright plugin libraries
  (target/debug); PROJECT: e.g. /work/projects/click (copied to a temp dir, never edited)."""
import json, os, shutil, subprocess, sys, tempfile, glob

BIN = sys.argv[1]          # target/debug dir with openfiles and the plugin libraries
SRC = sys.argv[2]          # project to copy
SUB = sys.argv[3] if len(sys.argv) > 3 else "."

def run(config):
    tmp = tempfile.mkdtemp(prefix="of-cmp")
    ws = os.path.join(tmp, "ws")
    shutil.copytree(SRC, ws, symlinks=True)
    ws = os.path.realpath(ws)
    cfg = os.path.join(tmp, "config.toml")
    open(cfg, "w").write(config)
    env = dict(os.environ, OPENFILES_CONFIG=cfg, OPENFILES_STATE_DIR=os.path.join(tmp, "state"),
               OPENFILES_SOCKET=os.path.join(tmp, "sock"), OPENFILES_AUTOSTART="0",
               OPENFILES_PLUGIN_PATH=":".join(os.path.join(BIN, f"libopenfiles_plugin_{n}.so") for n in ("lsp", "pyright")))
    subprocess.run([os.path.join(BIN, "openfiles"), "trust", ws], env=env, check=True, capture_output=True)
    files = sorted(glob.glob(os.path.join(ws, SUB, "**/*.py"), recursive=True))
    out = subprocess.run([os.path.join(BIN, "openfiles"), "check", "--json", "--timeout", "300", *files],
                         env=env, capture_output=True, text=True, cwd=ws)
    data = json.loads(out.stdout)
    entries = data if isinstance(data, list) else data.get("files", data)
    items = {}
    if isinstance(entries, dict):
        entries = [dict(v, path=k) for k, v in entries.items()]
    for e in entries:
        p = os.path.relpath(os.path.join(ws, e["path"]), ws) if not os.path.isabs(e["path"]) else os.path.relpath(e["path"], ws)
        items[p] = sorted((i["line"], i["column"], i["severity"], i.get("code") or "", i["message"])
                          for i in e.get("items", []) if i["source"] == "Pyright")
    shutil.rmtree(tmp, ignore_errors=True)
    return items, len(files)

lsp, n = run('[plugins]\ndisabled = ["pyright"]\n[plugin.lsp]\ndisable = ["ruff", "basedpyright", "ty"]\n')
plug, _ = run('[plugin.lsp]\ndisable = ["ruff", "basedpyright", "ty"]\n')
count = lambda d, sev=None: sum(1 for v in d.values() for i in v if sev is None or i[2] == sev)
print(f"{n} files; lsp's pyright: {count(lsp)} items ({count(lsp, 'hint')} hints); "
      f"both plugins, trusted (the warm server standing in where its project tracks the file): {count(plug)} items ({count(plug, 'hint')} hints)")
diff = 0
for f in sorted(set(lsp) | set(plug)):
    a, b = set(lsp.get(f, [])), set(plug.get(f, []))
    for i in sorted(a - b):
        diff += 1; print("only lsp    ", f, i)
    for i in sorted(b - a):
        diff += 1; print("only plugin ", f, i)
print("equal" if diff == 0 else f"{diff} differences")
