"""Drive `openfiles mcp` with the official MCP Python SDK (PyPI `mcp`), over stdio.

Run by tests/mcp_sdk.rs against a real `openfiles serve`. Arguments come from the
environment: OPENFILES_BIN, WORKSPACE, BROKEN_FILE (a file with a type error, or empty),
and the OPENFILES_* variables the server needs. Every step asserts; the last line printed
is a JSON report the Rust test checks again.
"""

import json
import os
import socket
import sys
import threading

import anyio
import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
try:
    from mcp.shared.exceptions import MCPError as McpError  # SDK 2.x
except ImportError:  # SDK 1.x
    from mcp.shared.exceptions import McpError


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


class Observer:
    """A plain claws/2 peer on the workspace's socket, collecting what the bus carries."""

    def __init__(self, sock_path, topics):
        self.frames = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(sock_path)
        self.file = self.sock.makefile("rwb")
        self._send({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "observer", "peerName": "sdk-test"})
        for i, t in enumerate(topics):
            self._send({"id": 10 + i, "cmd": "subscribe", "protocol": "claws/2", "topic": t})
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, obj):
        self.file.write((json.dumps(obj) + "\n").encode())
        self.file.flush()

    def _read(self):
        for line in self.file:
            msg = json.loads(line)
            if msg.get("push") == "message":
                self.frames.append(msg)

    def topics(self):
        return [f["topic"] for f in self.frames]


async def main():
    ws = os.environ["WORKSPACE"]
    broken = os.environ.get("BROKEN_FILE", "")
    params = StdioServerParameters(
        command=os.environ["OPENFILES_BIN"],
        args=["mcp", "--workspace", ws],
        env=dict(os.environ),
    )
    report = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            report["protocolVersion"] = init.protocol_version
            report["serverName"] = init.server_info.name
            assert init.capabilities.tools is not None

            tools = (await session.list_tools()).tools
            names = [t.name for t in tools]
            for t in tools:
                jsonschema.Draft202012Validator.check_schema(t.input_schema)
                jsonschema.Draft7Validator.check_schema(t.input_schema)
            report["tools"] = len(tools)
            for must in ["claws_create", "claws_exec", "claws_read_log", "claws_worker", "claws_fleet",
                         "claws_workers_wait", "claws_lifecycle_plan", "claws_task_assign", "claws_rpc_call",
                         "openfiles_diagnostics", "openfiles_check", "openfiles_status"]:
                assert must in names, must

            sock = os.path.join(ws, ".claws", "claws.sock")
            observer = Observer(sock, ["tool.**", "system.worker.**"])

            # A terminal, a command with an exit code, its output read back.
            created = json.loads(text_of(await session.call_tool("claws_create", {"name": "sdk"})))
            term = created["terminal_id"]
            assert created["ok"] is True and created["correlation_id"], created
            out = text_of(await session.call_tool("claws_exec", {"id": term, "command": "echo from-exec; (exit 3)"}))
            assert out.startswith("exit 3\n") and "from-exec" in out, out
            report["exec"] = out
            log = text_of(await session.call_tool("claws_read_log", {"id": term, "lines": 20}))
            assert log.startswith(f"[term {term} · ") and "from-exec" in log, log

            # A blocking worker: a command that prints the marker; progress while it runs.
            progress = []

            async def on_progress(p, total, message):
                progress.append(p)

            res = await session.call_tool(
                "claws_worker",
                {"name": "w1", "command": "sleep 1; printf 'DONE_%s\\n' XYZ", "complete_marker": "DONE_XYZ",
                 "detach": False, "poll_interval_ms": 200},
                progress_callback=on_progress,
            )
            wtext = text_of(res)
            assert not res.is_error, wtext
            assert wtext.startswith("worker 'w1' COMPLETED"), wtext
            assert "marker:     DONE_XYZ" in wtext and "cleaned_up: true" in wtext, wtext
            report["worker"] = wtext.splitlines()[0]
            report["progress"] = len(progress)
            assert progress, "no progress notification during a blocking worker"

            # A detached worker, then claws_workers_wait.
            spawned = json.loads(text_of(await session.call_tool(
                "claws_worker", {"name": "w2", "command": "printf 'MISSION_%s\\n' COMPLETE", "poll_interval_ms": 200})))
            waited = json.loads(text_of(await session.call_tool(
                "claws_workers_wait", {"terminal_ids": [spawned["terminal_id"]], "timeout_ms": 60000,
                                       "poll_interval_ms": 200})))
            assert waited["complete"] == 1 and waited["results"][0]["status"] == "completed", waited
            report["workers_wait"] = waited["results"][0]["status"]

            # A fleet of two command workers, waited for together.
            fleet = json.loads(text_of(await session.call_tool("claws_fleet", {
                "workers": [{"name": "f1", "command": "echo MISSION_COMPLETE"},
                            {"name": "f2", "command": "sleep 1; echo MISSION_COMPLETE"}],
                "poll_interval_ms": 200})))
            assert fleet["fleet_size"] == 2 and all(w["status"] == "spawned" for w in fleet["workers"]), fleet
            both = json.loads(text_of(await session.call_tool("claws_workers_wait", {
                "terminal_ids": [w["terminal_id"] for w in fleet["workers"]], "timeout_ms": 60000,
                "poll_interval_ms": 200})))
            assert both["complete"] == 2 and both["pending"] == [], both
            report["fleet_complete"] = both["complete"]

            # An agent CLI worker: a stand-in agent (set with claws_set_bin) that shows a prompt
            # and cost line, reads the pasted mission and prints the marker. The mission names
            # the marker alone on a line: its echo must not end the worker.
            agent = os.path.join(os.environ["AGENT_DIR"], "fake-agent")
            with open(agent, "w", encoding="utf-8") as f:
                f.write("#!/bin/bash\nprintf 'fake agent booting (%s)\\n' \"$*\"\nsleep 0.3\n"
                        "printf '\u276f ready  cost:$0.00\\n'\n"
                        "while IFS= read -r line; do case \"$line\" in *please-finish*) sleep 0.5; "
                        "echo MISSION_COMPLETE; exit 0;; esac; done\n")
            os.chmod(agent, 0o755)
            set_bin = json.loads(text_of(await session.call_tool("claws_set_bin", {"name": agent})))
            assert set_bin["bin"] == agent, set_bin
            got = json.loads(text_of(await session.call_tool("claws_get_bin", {})))
            assert got == {"bin": agent, "source": "file"}, got
            res = await session.call_tool("claws_worker", {
                "name": "agent", "mission": "Check the build.\nWhen done, print:\nMISSION_COMPLETE\nplease-finish",
                "detach": False, "poll_interval_ms": 200})
            atext = text_of(res)
            assert atext.startswith("worker 'agent' COMPLETED"), atext
            assert "booted:     true" in atext and "marker:     MISSION_COMPLETE" in atext, atext
            assert "fake agent booting (--dangerously-skip-permissions --model claude-sonnet-4-6)" in atext, atext
            report["agent_worker"] = atext.splitlines()[0]
            await session.call_tool("claws_set_bin", {})

            # An orchestration tool, forwarded generically to the socket's `lifecycle.plan`:
            # the plan is logged and the lifecycle state comes back.
            plan = await session.call_tool("claws_lifecycle_plan", {"plan": "test the forwarding"})
            state = json.loads(text_of(plan))["state"]
            report["lifecycle_plan_phase"] = state["phase"]
            assert not plan.is_error and state["plan"] == "test the forwarding", text_of(plan)

            # Bad arguments: MCP errors, never a crash.
            errors = 0
            for name, args in [("claws_exec", {"id": 5, "command": "ls"}), ("claws_exec", {"id": "1"}),
                               ("no_such_tool", {}), ("claws_send", {"id": "1", "text": "x", "bogus": 1})]:
                try:
                    r = await session.call_tool(name, args)
                    assert r.is_error, (name, args, text_of(r))
                except McpError as e:
                    assert e.error.code == -32602, e.error
                errors += 1
            report["bad_arguments_rejected"] = errors

            # Cancellation: the SDK gives up after 1.5 s and sends notifications/cancelled;
            # the server interrupts the command, so the terminal answers the next exec.
            try:
                await session.call_tool("claws_exec", {"id": term, "command": "sleep 60; echo late"},
                                        read_timeout_seconds=1.5)
                raise AssertionError("a 60 s command finished within 1.5 s")
            except (McpError, TimeoutError) as e:
                report["cancelled"] = type(e).__name__
            after = text_of(await session.call_tool(
                "claws_exec", {"id": term, "command": "echo after-cancel", "timeout_ms": 20000}))
            assert after.startswith("exit 0") and "after-cancel" in after, after
            await session.send_ping()

            # Diagnostics of a file with a type error, fresh.
            if broken:
                diag = text_of(await session.call_tool("openfiles_diagnostics",
                                                       {"paths": [broken], "timeout_ms": 240000}))
                assert diag.startswith("OpenFiles found 1 error"), diag
                assert "E0308" in diag and "Fix these before you report the task as done." in diag, diag
                report["diagnostics"] = diag.splitlines()[1]
                session_diag = text_of(await session.call_tool("openfiles_diagnostics", {"timeout_ms": 240000}))
                assert "E0308" in session_diag, session_diag
                checked = text_of(await session.call_tool("openfiles_check",
                                                          {"paths": [broken], "timeout_ms": 240000}))
                assert "E0308" in checked and "1 file(s) checked: 1 error(s)" in checked, checked
            status = json.loads(text_of(await session.call_tool("openfiles_status", {})))
            assert status["served"] is True, status
            report["status_served"] = status["served"]

            closed = text_of(await session.call_tool("claws_close", {"id": term}))
            assert closed == f"closed terminal {term}", closed

            # The bus tools: a new identity, a subscription, a publish with echo, a drain
            # (one message although two subscriptions match it).
            hello = json.loads(text_of(await session.call_tool("claws_hello", {"role": "worker", "peerName": "sdk-peer"})))
            assert hello["peerId"], hello
            sub = json.loads(text_of(await session.call_tool("claws_subscribe", {"topic": "sdk.*"})))
            assert sub["subscriptionId"], sub
            first = json.loads(text_of(await session.call_tool("claws_drain_events", {})))
            mark = first["total_received"]
            pub = json.loads(text_of(await session.call_tool("claws_publish", {"topic": "sdk.ping", "payload": {"n": 1}, "echo": True})))
            assert pub["deliveredTo"] >= 1, pub
            pings = []
            for _ in range(20):  # bounded: other messages (terminal events) may arrive first
                drained = json.loads(text_of(await session.call_tool(
                    "claws_drain_events", {"since_index": mark, "wait_ms": 5000})))
                pings += [e for e in drained["events"] if e["topic"] == "sdk.ping"]
                mark = drained["total_received"]
                if pings:
                    break
            await anyio.sleep(0.3)  # a second delivery (two matching subscriptions) would be in by now
            late = json.loads(text_of(await session.call_tool("claws_drain_events", {"since_index": mark})))
            pings += [e for e in late["events"] if e["topic"] == "sdk.ping"]
            assert len(pings) == 1 and pings[0]["payload"] == {"n": 1}, pings
            report["drained_pings"] = len(pings)

            # Bus events the tools emit (as Claws's MCP server does).
            for _ in range(50):
                if "system.worker.completed" in observer.topics():
                    break
                await anyio.sleep(0.1)
            topics = observer.topics()
            for must in ["tool.claws_create.invoked", "tool.claws_exec.invoked",
                         "system.worker.spawned", "system.worker.completed"]:
                assert must in topics, (must, topics)
            done = [f for f in observer.frames if f["topic"] == "system.worker.completed"]
            assert any(f["payload"].get("status") == "completed" and f["payload"].get("completion_signal") == "marker"
                       for f in done), done
            report["events"] = sorted(set(t for t in topics if t.startswith("system.worker")))
    print(json.dumps(report))


if __name__ == "__main__":
    try:
        anyio.run(main)
    except Exception:
        import traceback
        traceback.print_exc()
        sys.exit(1)
