"""The harness the knock-on scripts share (`scripts/*knockon*.py`, issue 33): an `openfiles
serve` on one workspace with a socket, state and config of its own, and `openfiles hook` run
after an edit the way Claude Code runs it, timed. Not a test; imported by those scripts.
"""

import json
import os
import socket
import subprocess
import time

# The hook waits for every source: its grace as long as its timeout.
WAIT_FOR_ALL = "partial_after_ms = 120000\n"


class Service:
    """`openfiles serve -w WS` with the plugin libraries `plugins` and `[hooks]` settings
    `hooks` (lines) with `timeout_ms` (120000 unless given; the default is 4000)
    plus `config` (more TOML), its files in `tmp`. Use as a context manager: the service stops
    at the end."""

    def __init__(self, binary, plugins, ws, tmp, hooks="", config="", timeout_ms=120000):
        self.binary, self.ws = binary, ws
        self.env = dict(os.environ,
                        OPENFILES_SOCKET=os.path.join(tmp, "run", "of.sock"),
                        OPENFILES_STATE_DIR=os.path.join(tmp, "state"),
                        OPENFILES_CONFIG=os.path.join(tmp, "config.toml"),
                        OPENFILES_PLUGIN_PATH=":".join(plugins))
        with open(self.env["OPENFILES_CONFIG"], "w") as f:
            f.write(f"[hooks]\ntimeout_ms = {timeout_ms}\n" + hooks + config)
        self.log = open(os.path.join(tmp, "serve.log"), "w")
        self.proc = subprocess.Popen([binary, "serve", "-w", ws], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(self.env["OPENFILES_SOCKET"])
                s.close()
                return
            except OSError:
                time.sleep(0.05)

    def hook(self, path):
        """Run the hook for an edit of `path`: (milliseconds, the feedback text or "")."""
        payload = json.dumps({"cwd": self.ws, "hook_event_name": "PostToolUse",
                              "tool_name": "Edit", "tool_input": {"file_path": path}}).encode()
        start = time.perf_counter()
        out = subprocess.run([self.binary, "hook", "--agent", "claude"], input=payload,
                             env=self.env, cwd=self.ws, capture_output=True)
        took = (time.perf_counter() - start) * 1000
        text = out.stdout.decode()
        if text.strip():
            text = json.loads(text)["hookSpecificOutput"]["additionalContext"]
        return took, text

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()
