#!/usr/bin/env python3
"""A scripted stand-in for an agent's model API, on loopback, for tests/it/agents_real.rs.

Speaks the four wire formats the agents use, streamed the way each asks for:
Anthropic Messages (claude), OpenAI Responses (codex), OpenAI chat completions (opencode,
qwen) and Gemini generateContent / streamGenerateContent (gemini).

Every request is appended as one JSON line ({"path", "body", "t": when}) to --log. The answer depends
only on the request, so the agents' side requests (titles, token counts) cannot shift a
script: a request that already holds a tool result gets the text "Done."; one that offers
the tool we want gets a call of it (--write PATH --content TEXT: the agent's file-writing
tool; --mcp-tool WORD: the first offered tool whose name holds WORD, with --mcp-args);
anything else gets "OK.". Prints the port on the first line of stdout, then serves until
killed. Standard library only.

For scripts/first-edit-agents.py (an edit of an existing file, timed from the session's
start), three more options, all off by default:
--append TEXT: the write adds TEXT at the end of --write's current text (file-writing tools:
    the whole text; apply_patch: an `*** Update File` patch whose hunk only adds lines, which
    Codex appends at the end);
--read-first: when `Read` is offered (Claude Code writes an existing file only after reading
    it), the first call reads --write, the write comes after its result;
--edit-delay-ms N: the write is answered no earlier than N ms after the first request, or
    after --delay-from FILE's modification time when FILE exists by then (a file the
    session-start hook touches: N ms after the session started).
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOCK = threading.Lock()
WRITE_TOOLS = ["Write", "write_file", "write", "apply_patch", "exec_command"]
FIRST = []  # when the first request came (for --edit-delay-ms)


def content():
    """The written file's whole text: --content, or --write's text with --append added."""
    if not ARGS.append:
        return ARGS.content
    with open(ARGS.write) as f:
        return f.read() + ARGS.append


def patch():
    """The apply_patch input: adds --write with --content, or appends --append to it."""
    if ARGS.append:
        lines = "".join("+" + l + "\n" for l in ARGS.append.splitlines())
        return f"*** Begin Patch\n*** Update File: {ARGS.write}\n@@\n{lines}*** End Patch\n"
    lines = "".join("+" + l + "\n" for l in ARGS.content.splitlines())
    return f"*** Begin Patch\n*** Add File: {ARGS.write}\n{lines}*** End Patch\n"


def tool_args(name):
    """The arguments for a call of `name`, or None when it is not the tool we want."""
    if ARGS.mcp_tool:
        if ARGS.mcp_tool in name:
            return json.loads(ARGS.mcp_args)
        return None
    if name not in WRITE_TOOLS:
        return None
    if ARGS.edit_delay_ms and FIRST:
        since = FIRST[0]
        if ARGS.delay_from and os.path.exists(ARGS.delay_from):
            since = time.monotonic() - (time.time() - os.path.getmtime(ARGS.delay_from))
        time.sleep(max(0.0, since + ARGS.edit_delay_ms / 1000 - time.monotonic()))
    if name == "Write":
        return {"file_path": ARGS.write, "content": content()}
    if name == "write_file":
        return {"file_path": ARGS.write, "content": content()}
    if name == "write":
        return {"filePath": ARGS.write, "content": content()}
    patch_text = patch()
    if name == "apply_patch":
        return {"input": patch_text}
    if name == "exec_command":
        # Codex turns `apply_patch` run through its shell tool into its patch tool.
        return {"cmd": f"apply_patch <<'EOF'\n{patch_text}EOF\n"}
    return None


def choose(names, results):
    """('text', str) or ('tool', name, args); `results`: how many tool results the request holds."""
    if ARGS.read_first and "Read" in names and not ARGS.mcp_tool:
        if results == 0:
            return ("tool", "Read", {"file_path": ARGS.write})
        results -= 1
    if results:
        return ("text", "Done.")
    order = sorted(names, key=lambda n: WRITE_TOOLS.index(n) if n in WRITE_TOOLS else 99)
    for n in order:
        a = tool_args(n)
        if a is not None:
            return ("tool", n, a)
    return ("text", "OK.")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def send_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, data, event=None):
        out = ""
        if event:
            out += f"event: {event}\n"
        out += "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n"
        self.wfile.write(out.encode())
        self.wfile.flush()

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.endswith("/models"):
            return self.send_json({"object": "list", "data": [{"id": "stand-in", "object": "model"}], "models": []})
        # Anything else (a package registry pointed here to keep a run offline): not found.
        self.send_json({"error": "not found"}, 404)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.body()
        path = self.path.split("?")[0]
        with LOCK:
            if not FIRST:
                FIRST.append(time.monotonic())
            with open(ARGS.log, "a") as f:
                f.write(json.dumps({"path": self.path, "body": body, "t": time.time()}) + "\n")
        if path.endswith("/messages/count_tokens"):
            return self.send_json({"input_tokens": 10})
        if path.endswith("/messages"):
            return self.anthropic(body)
        if path.endswith("/responses"):
            return self.openai_responses(body)
        if path.endswith("/chat/completions"):
            return self.chat(body)
        if ":countTokens" in path:
            return self.send_json({"totalTokens": 10})
        if ":streamGenerateContent" in path or ":generateContent" in path:
            return self.gemini(body, ":streamGenerateContent" in path)
        self.send_json({"error": "unknown path"}, 404)

    # Anthropic Messages
    def anthropic(self, body):
        names = [t.get("name", "") for t in body.get("tools") or []]
        results = sum(
            1
            for m in body.get("messages") or [] if isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        act = choose(names, results)
        usage = {"input_tokens": 10, "output_tokens": 5}
        if act[0] == "tool":
            block = {"type": "tool_use", "id": f"toolu_0{results + 1}", "name": act[1], "input": act[2]}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": act[1]}
            stop = "end_turn"
        msg = {"id": "msg_01", "type": "message", "role": "assistant", "model": body.get("model", "m"),
               "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return self.send_json(msg)
        self.start_sse()
        start = dict(msg, content=[], stop_reason=None)
        self.sse({"type": "message_start", "message": start}, "message_start")
        if block["type"] == "tool_use":
            self.sse({"type": "content_block_start", "index": 0, "content_block": dict(block, input={})}, "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}, "content_block_delta")
        else:
            self.sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}, "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": block["text"]}}, "content_block_delta")
        self.sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")

    # OpenAI Responses
    def openai_responses(self, body):
        tools = body.get("tools") or []
        names = [t.get("name", "") for t in tools]
        kinds = {t.get("name", ""): t.get("type") for t in tools}
        items = body.get("input") or []
        has_result = any(isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output") for i in items)
        act = choose(names, has_result)
        if act[0] == "tool":
            if kinds.get(act[1]) == "custom":
                item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": act[1],
                        "input": act[2].get("input", json.dumps(act[2])), "status": "completed"}
            else:
                item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": act[1],
                        "arguments": json.dumps(act[2]), "status": "completed"}
        else:
            item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": act[1], "annotations": []}]}
        resp = {"id": "resp_1", "object": "response", "status": "completed", "model": body.get("model", "m"),
                "output": [item], "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                                            "input_tokens_details": {"cached_tokens": 0},
                                            "output_tokens_details": {"reasoning_tokens": 0}}}
        if not body.get("stream"):
            return self.send_json(resp)
        self.start_sse()
        self.sse({"type": "response.created", "response": dict(resp, status="in_progress", output=[])}, "response.created")
        self.sse({"type": "response.output_item.added", "output_index": 0, "item": item}, "response.output_item.added")
        self.sse({"type": "response.output_item.done", "output_index": 0, "item": item}, "response.output_item.done")
        self.sse({"type": "response.completed", "response": resp}, "response.completed")

    # OpenAI chat completions
    def chat(self, body):
        names = [(t.get("function") or {}).get("name", "") for t in body.get("tools") or []]
        has_result = any(m.get("role") == "tool" for m in body.get("messages") or [])
        act = choose(names, has_result)
        model = body.get("model", "m")
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if act[0] == "tool":
            call = {"id": "call_1", "type": "function", "function": {"name": act[1], "arguments": json.dumps(act[2])}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": act[1]}
            finish = "stop"
        if not body.get("stream"):
            return self.send_json({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
                                   "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})
        self.start_sse()
        chunk = lambda delta, fin=None, **kw: dict({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
                                                   "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]}, **kw)
        if act[0] == "tool":
            call = message["tool_calls"][0]
            self.sse(chunk({"role": "assistant", "content": None, "tool_calls": [dict(call, index=0)]}))
        else:
            self.sse(chunk({"role": "assistant", "content": act[1]}))
        self.sse(chunk({}, finish))
        self.sse({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": [], "usage": usage})
        self.sse("[DONE]")

    # Gemini
    def gemini(self, body, stream):
        names = [d.get("name", "") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
        has_result = any(
            "functionResponse" in p
            for c in body.get("contents") or [] for p in c.get("parts") or []
        )
        cfg = body.get("generationConfig") or {}
        if cfg.get("responseMimeType") == "application/json" or cfg.get("responseJsonSchema") or cfg.get("responseSchema"):
            act = ("text", json.dumps({"next_speaker": "user", "reasoning": "Done."}))
        else:
            act = choose(names, has_result)
        if act[0] == "tool":
            part = {"functionCall": {"name": act[1], "args": act[2]}}
        else:
            part = {"text": act[1]}
        resp = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                "modelVersion": "stand-in"}
        if not stream:
            return self.send_json(resp)
        self.start_sse()
        self.sse(resp)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--write", default="")
    p.add_argument("--content", default="")
    p.add_argument("--mcp-tool", default="")
    p.add_argument("--mcp-args", default="{}")
    p.add_argument("--append", default="")
    p.add_argument("--read-first", action="store_true")
    p.add_argument("--edit-delay-ms", type=int, default=0)
    p.add_argument("--delay-from", default="")
    ARGS = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
