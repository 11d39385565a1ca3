#!/usr/bin/env python3
"""The first edit of a session with the real agents (issue 42.4): Claude Code and Codex, run
headless against the scripted model (`tests/agents/model.py`) as the agent tests run them, edit
a real project about a second after the session started; how long did that edit's
`openfiles hook` take, and did its feedback hold the edited file's own problem?

Per project (click: `src/click/utils.py` gains a function returning an undefined name;
ky: `source/index.ts` gains a `number` constant holding a string), per agent, `--runs` times:

- a clone of the project's checkout (/work/projects/NAME, at its pinned commit) in a temp dir;
- a fresh `openfiles serve -w CLONE` (its own socket, state and config; default hook settings;
  plugins lsp and the language's project-wide one, as scripts/knockon-real.py), the clone
  trusted (`openfiles trust`);
- a fresh HOME; `openfiles hooks install --agent ID --workspace CLONE --bin WRAPPER`: the
  agent runs a tiny shell wrapper that times `openfiles hook` (start, end, stdin, stdout) and
  runs the real binary;
- the agent against model.py (`--append`, `--read-first` for Claude Code, `--edit-delay-ms`):
  the `SessionStart` hook warms the servers (the wrapper touches a file the model reads),
  the model answers with the edit `--gap-ms` after it started, or when the agent asks if later.

The first edit's hook is the first `PostToolUse` one naming the file. "Problem in hook": its
output names the appended problem's line (`FILE:LINE:`). "gap": SessionStart hook start → edit
hook start. Prints a table and `uptime` before and after. Not a test: figures for the README.

    cargo build --workspace   # or --release; --target target/release
    scripts/first-edit-agents.py [--runs 5] [--projects click,ky] [--agents claude,codex]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from knockon_service import Service  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "tests/agents/model.py")

# name: (edited file, text appended, a word on the problem's line, project-wide plugin)
PROJECTS = {
    "click": ("src/click/utils.py",
              "\n\ndef openfiles_probe() -> str:\n    return openfiles_undefined_name\n",
              "openfiles_undefined_name", "pyright"),
    "ky": ("source/index.ts",
           "\nexport const openfilesProbe: number = 'openfiles-probe';\n",
           "openfilesProbe", "tsc"),
}

WRAPPER = """#!/bin/bash
# Written by scripts/first-edit-agents.py: time `openfiles hook`, keep its input and output.
d=$(mktemp -d {dir}/hook.XXXXXX)
start=$(date +%s.%N)
case " $* " in *" SessionStart "*) touch {dir}/session-started;; esac
cat > "$d/in"
{real} "$@" < "$d/in" > "$d/out"
rc=$?
end=$(date +%s.%N)
echo "$start $end $rc $d $*" >> {log}
cat "$d/out"
exit $rc
"""

CODEX_MODELS = {"models": [{
    "slug": "stand-in", "display_name": "Stand-in", "description": None,
    "supported_reasoning_levels": [], "shell_type": "shell_command", "visibility": "list",
    "supported_in_api": True, "priority": 1, "availability_nux": None, "upgrade": None,
    "base_instructions": "You are a coding agent.", "model_messages": None,
    "supports_reasoning_summaries": False, "default_reasoning_summary": "auto",
    "support_verbosity": False, "default_verbosity": None, "apply_patch_tool_type": "freeform",
    "truncation_policy": {"mode": "bytes", "limit": 10000},
    "supports_parallel_tool_calls": False, "supports_image_detail_original": False,
    "context_window": 200000, "auto_compact_token_limit": None,
    "effective_context_window_percent": 95, "experimental_supported_tools": [],
    "input_modalities": ["text"], "supports_search_tool": False}]}


def agents_bin():
    prefix = os.environ.get("OPENFILES_AGENTS_PREFIX", "/opt/openfiles-agents")
    return os.path.join(prefix, "node_modules/.bin")


def start_model(tmp, target, append, delay_ms):
    """model.py writing `target`; (process, port)."""
    proc = subprocess.Popen(
        [sys.executable, MODEL, "--log", os.path.join(tmp, "requests.jsonl"), "--write", target,
         "--append", append, "--read-first", "--edit-delay-ms", str(delay_ms),
         "--delay-from", os.path.join(tmp, "session-started")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return proc, int(proc.stdout.readline())


def agent_env(svc, home, port):
    env = dict(svc.env, HOME=home, PATH=agents_bin() + os.pathsep + os.environ["PATH"],
               XDG_CONFIG_HOME=f"{home}/.config", XDG_DATA_HOME=f"{home}/.local/share",
               XDG_CACHE_HOME=f"{home}/.cache", XDG_STATE_HOME=f"{home}/.local/state",
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", NO_UPDATE_NOTIFIER="1",
               ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}", ANTHROPIC_API_KEY="sk-stand-in",
               STANDIN_KEY="stand-in", PWD=svc.ws)
    for k in ("CODEX_HOME", "RUST_LOG"):
        env.pop(k, None)
    return env


def codex_config(home, port, ws):
    os.makedirs(f"{home}/.codex", exist_ok=True)
    catalog = f"{home}/.codex/models.json"
    with open(catalog, "w") as f:
        json.dump(CODEX_MODELS, f)
    with open(f"{home}/.codex/config.toml", "w") as f:
        f.write(f'model = "stand-in"\nmodel_catalog_json = {json.dumps(catalog)}\n'
                f'model_provider = "standin"\ncheck_for_update_on_startup = false\n\n'
                f'[model_providers.standin]\nname = "stand-in"\n'
                f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\n'
                f'env_key = "STANDIN_KEY"\n\n[analytics]\nenabled = false\n\n'
                f'[projects.{json.dumps(ws)}]\ntrust_level = "trusted"\n')


def agent_command(agent, file):
    prompt = f"add a function to {file}"
    if agent == "claude":
        return [os.path.join(agents_bin(), "claude"), "-p", prompt, "--model", "claude-opus-4-5",
                "--permission-mode", "acceptEdits", "--allowedTools", "Read,Write"]
    return [os.path.join(agents_bin(), "codex"), "exec",
            "--dangerously-bypass-approvals-and-sandbox", prompt]


def hook_calls(log):
    """Every timed hook: dicts with start, end, args, payload, output."""
    calls = []
    if not os.path.exists(log):
        return calls
    for line in open(log):
        start, end, rc, d, *args = line.split()
        payload = open(f"{d}/in", errors="replace").read()
        calls.append({"start": float(start), "end": float(end), "rc": int(rc), "args": args,
                      "payload": payload, "output": open(f"{d}/out", errors="replace").read()})
    return calls


def texts(value):
    """Every string in a JSON value, joined (the hook prints JSON for most agents)."""
    if isinstance(value, str):
        return value + "\n"
    if isinstance(value, dict):
        return "".join(texts(v) for v in value.values())
    if isinstance(value, list):
        return "".join(texts(v) for v in value)
    return ""


def feedback(output):
    try:
        return texts(json.loads(output))
    except ValueError:
        return output


def one_run(a, project, agent, binary, plugins):
    """One session: (edit hook ms, problem in it, gap ms, feedback) or an error string."""
    file, append, word, _ = PROJECTS[project]
    tmp = tempfile.mkdtemp(prefix=f"of-first-edit-{project}-{agent}-")
    try:
        ws = os.path.join(tmp, "ws")
        subprocess.run(["git", "clone", "-q", os.path.join(a.projects_dir, project), ws],
                       check=True, stderr=subprocess.DEVNULL)
        target = os.path.join(ws, file)
        text = open(target).read() + append
        line = next(n for n, l in enumerate(text.splitlines(), 1) if word in l)
        home, log = os.path.join(tmp, "home"), os.path.join(tmp, "hooks.log")
        os.makedirs(home)
        wrapper = os.path.join(tmp, "openfiles-hook")
        with open(wrapper, "w") as f:
            f.write(WRAPPER.format(dir=tmp, real=binary, log=log))
        os.chmod(wrapper, 0o755)
        trust = dict(os.environ, OPENFILES_STATE_DIR=os.path.join(tmp, "state"),
                     OPENFILES_CONFIG=os.path.join(tmp, "config.toml"))
        os.makedirs(trust["OPENFILES_STATE_DIR"])
        subprocess.run([binary, "trust", ws], env=trust, check=True, capture_output=True)
        model, port = start_model(tmp, target, append, a.gap_ms)
        try:
            with Service(binary, plugins, ws, tmp, timeout_ms=a.timeout_ms) as svc:
                env = agent_env(svc, home, port)
                if agent == "codex":
                    codex_config(home, port, ws)
                subprocess.run([binary, "hooks", "install", "--agent", agent, "--workspace", ws,
                                "--bin", wrapper], env=env, cwd=ws, check=True,
                               capture_output=True)
                out = subprocess.run(agent_command(agent, file), env=env, cwd=ws,
                                     stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                     timeout=180)
                settled = wait_json(ws, file, line, a.settle) if a.settle else None
        finally:
            model.kill()
            model.wait()
        calls = hook_calls(log)
        starts = [c for c in calls if "SessionStart" in c["args"]]
        edits = [c for c in calls if "SessionStart" not in c["args"] and file in c["payload"]
                 and '"Read"' not in c["payload"]]
        if not edits:
            return f"no edit hook ({len(calls)} hooks ran); agent said: {out.stdout[-400:]}" \
                   f"{out.stderr[-400:]}"
        first = edits[0]
        said = feedback(first["output"])
        gap = (first["start"] - starts[0]["start"]) * 1000 if starts else None
        if settled is not None:
            settled -= first["start"]
        return ((first["end"] - first["start"]) * 1000, f"{file}:{line}:" in said, gap, said,
                settled)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def wait_json(ws, file, line, limit):
    """When (epoch seconds) `diagnostics.json` first had an error on FILE:LINE, or None."""
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            data = json.load(open(os.path.join(ws, ".openfiles/diagnostics.json")))
            items = data["files"][file]["items"]
            if any(i.get("line") == line and i.get("severity") == "error" for i in items):
                return time.time()
        except (OSError, ValueError, KeyError, TypeError):
            pass
        time.sleep(0.05)
    return None


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="See the module's doc comment for what one run does.")
    p.add_argument("--runs", type=int, default=5, help="sessions per project and agent (5)")
    p.add_argument("--projects", default="click,ky", help="of: click, ky (both)")
    p.add_argument("--agents", default="claude,codex", help="of: claude, codex (both)")
    p.add_argument("--gap-ms", type=int, default=1000,
                   help="the model answers with the edit this long after the SessionStart hook "
                        "started (1000: a fast model; never before the agent asks)")
    p.add_argument("--projects-dir", default="/work/projects",
                   help="where the pinned checkouts are (cloned, never modified)")
    p.add_argument("--target", default="target/debug", help="the build to measure")
    p.add_argument("--timeout-ms", type=int, default=None,
                   help="hooks.timeout_ms, the hook's deadline (default: the service's, 4000)")
    p.add_argument("--settle", type=float, default=0.0,
                   help="after the agent, wait up to this many seconds for the problem in "
                        "diagnostics.json and print edit hook start → there (default: don't)")
    p.add_argument("--show", action="store_true", help="print each first edit's feedback")
    p.add_argument("--keep", action="store_true", help="keep each run's temp dir")
    a = p.parse_args()
    t = os.path.abspath(a.target)
    binary = os.path.join(t, "openfiles")
    print(f"load before: {uptime()}", flush=True)
    rows = []
    for project in a.projects.split(","):
        plugins = [os.path.join(t, f"libopenfiles_plugin_{n}.so")
                   for n in ("lsp", PROJECTS[project][3])]
        for agent in a.agents.split(","):
            took, found, gaps, errors = [], 0, [], []
            for n in range(a.runs):
                r = one_run(a, project, agent, binary, plugins)
                if isinstance(r, str):
                    errors.append(r)
                    print(f"{project} {agent} run {n + 1}: {r}", flush=True)
                    continue
                took.append(r[0])
                found += r[1]
                if r[2] is not None:
                    gaps.append(r[2])
                json_at = "" if r[4] is None else f", in diagnostics.json after {r[4]:.2f} s"
                print(f"{project} {agent} run {n + 1}: hook {r[0]:.0f} ms, problem in hook: "
                      f"{r[1]}, gap {r[2] if r[2] is None else round(r[2])} ms{json_at}",
                      flush=True)
                if a.show:
                    print(r[3])
            rows.append((project, agent, took, found, gaps, len(errors)))
    print(f"load after: {uptime()}")
    print("\n| project | agent | first-edit hook p50 / max | problem in hook | gap p50 | failed |")
    print("|---|---|---|---|---|---|")
    for project, agent, took, found, gaps, failed in rows:
        hook = f"{statistics.median(took):.0f} / {max(took):.0f} ms" if took else "-"
        gap = f"{statistics.median(gaps):.0f} ms" if gaps else "-"
        print(f"| {project} | {agent} | {hook} | {found}/{len(took)} | {gap} | {failed} |")


if __name__ == "__main__":
    main()
