#!/usr/bin/env python3
"""Warm hook time per agent: p50 (and min/max) of `openfiles hook --agent ID` over N edits.

Starts `openfiles serve` (lsp plugin: ruff + pyright) on a fresh git workspace, warms the
checkers with one edit, then for each agent writes `src/app.py` anew (an undefined name, a
different line each time) and runs the hook with that agent's payload shape, timing the
wall clock of the whole hook (report, wait for the checkers, print). Not a test: figures
for the report. Usage (from the repository, after `cargo build` and the lsp plugin):

    scripts/hook-times.py [--runs 12] [--bin target/debug/openfiles]
        [--plugin target/debug/libopenfiles_plugin_lsp.so]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def payload(agent, ws, path):
    rel = os.path.relpath(path, ws)
    if agent == "codex":
        patch = f"*** Begin Patch\n*** Update File: {rel}\n@@\n-x\n+y\n*** End Patch\n"
        return {"cwd": ws, "hook_event_name": "PostToolUse", "tool_name": "apply_patch", "tool_input": {"command": patch}}
    if agent == "gemini":
        return {"cwd": ws, "hook_event_name": "AfterTool", "tool_name": "write_file", "tool_input": {"file_path": path, "content": "…"}}
    if agent == "qwen":
        return {"cwd": ws, "hook_event_name": "PostToolUse", "tool_name": "write_file", "tool_input": {"file_path": path, "content": "…"}}
    if agent == "opencode":
        return {"cwd": ws, "hook_event_name": "PostToolUse", "tool_name": "write", "tool_input": {"filePath": path, "content": "…"}}
    return {"cwd": ws, "hook_event_name": "PostToolUse", "tool_name": "Write", "tool_input": {"file_path": path, "content": "…"}}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=12)
    p.add_argument("--bin", default="target/debug/openfiles")
    p.add_argument("--plugin", default="target/debug/libopenfiles_plugin_lsp.so")
    a = p.parse_args()
    binary = os.path.abspath(a.bin)
    tmp = tempfile.mkdtemp(prefix="hook-times-")
    ws = os.path.join(tmp, "ws")
    os.makedirs(os.path.join(ws, "src"))
    subprocess.run(["git", "init", "-q", ws], check=True)
    env = dict(os.environ,
               OPENFILES_SOCKET=os.path.join(tmp, "run", "of.sock"),
               OPENFILES_STATE_DIR=os.path.join(tmp, "state"),
               OPENFILES_CONFIG=os.path.join(tmp, "config.toml"),
               OPENFILES_PLUGIN_PATH=os.path.abspath(a.plugin))
    open(env["OPENFILES_CONFIG"], "w").close()
    log = open(os.path.join(tmp, "serve.log"), "w")
    svc = subprocess.Popen([binary, "serve", "-w", ws], env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(env["OPENFILES_SOCKET"])
                s.close()
                break
            except OSError:
                time.sleep(0.05)
        app = os.path.join(ws, "src", "app.py")
        n = 0

        def edit_and_hook(agent):
            nonlocal n
            n += 1
            with open(app, "w") as f:
                f.write(f"def f{n}():\n    return undefined_name_{n}\n")
            start = time.perf_counter()
            out = subprocess.run([binary, "hook", "--agent", agent], input=json.dumps(payload(agent, ws, app)).encode(),
                                 env=env, cwd=ws, capture_output=True)
            took = (time.perf_counter() - start) * 1000
            return took, out.stdout.decode()

        took, out = edit_and_hook("claude")
        print(f"first edit (cold checkers): {took:.0f} ms, feedback: {'F821' in out}")
        edit_and_hook("claude")
        for agent in ["claude", "codex", "gemini", "qwen", "opencode"]:
            times, fed = [], 0
            for _ in range(a.runs):
                took, out = edit_and_hook(agent)
                times.append(took)
                fed += "F821" in out
            print(f"{agent:9} p50 {statistics.median(times):6.1f} ms  min {min(times):6.1f}  max {max(times):6.1f}  feedback {fed}/{a.runs}")
    finally:
        svc.terminate()
        svc.wait()


if __name__ == "__main__":
    sys.exit(main())
