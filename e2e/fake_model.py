"""One scripted model behind the four wire formats the harnesses speak, on 127.0.0.1 only.

Anthropic Messages (Claude Code), Gemini streamGenerateContent (Gemini CLI), OpenAI
Responses (Codex) and OpenAI chat completions (opencode, Copilot CLI, Qwen Code, Droid), all
streamed. Every
conversation goes the same way: while the request carries no tool result and
offers a shell tool, the model calls it with `echo hello`; once a result is
there it answers "All done."; any other request (titles, classifiers) gets a
short text. Stdlib only; every request is kept in `requests` for the report.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHELL = "echo hello"
FINAL = "All done."
SIDE = "Shell hello"

Json = dict[str, Any]


def _sse(events: Iterator[tuple[str | None, Json]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


# --- Anthropic Messages --------------------------------------------------------------------


def _anthropic(body: Json) -> bytes:
    messages = body.get("messages") or []
    last = messages[-1].get("content") if messages else None
    answered = isinstance(last, list) and any(b.get("type") == "tool_result" for b in last)
    tools = {t.get("name") for t in body.get("tools") or []}
    usage = {"input_tokens": 900, "output_tokens": 30, "cache_read_input_tokens": 0}
    if not answered and "Bash" in tools:
        block: Json = {"type": "tool_use", "id": "toolu_e2e_1", "name": "Bash", "input": {}}
        delta: Json = {
            "type": "input_json_delta",
            "partial_json": json.dumps({"command": SHELL, "description": "say hello"}),
        }
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": FINAL if answered else SIDE}
        stop = "end_turn"

    def events() -> Iterator[tuple[str | None, Json]]:
        message = {
            "id": "msg_e2e",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude"),
            "content": [],
            "stop_reason": None,
            "usage": usage,
        }
        yield "message_start", {"type": "message_start", "message": message}
        yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage}
        yield "message_stop", {"type": "message_stop"}

    return _sse(events())


# --- Gemini --------------------------------------------------------------------------------


def _gemini(body: Json) -> Json:
    parts = [p for c in body.get("contents") or [] for p in c.get("parts") or []]
    answered = any("functionResponse" in p for p in parts)
    declared = {f.get("name") for t in body.get("tools") or [] for f in t.get("functionDeclarations") or []}
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema is not None or config.get("responseMimeType") == "application/json":
        part: Json = {"text": json.dumps(_from_schema(schema or {}))}
    elif not answered and "run_shell_command" in declared:
        part = {"functionCall": {"name": "run_shell_command", "args": {"command": SHELL}}}
    else:
        part = {"text": FINAL if answered else SIDE}
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 30, "totalTokenCount": 930},
    }


def _from_schema(schema: Json) -> object:
    """A value that fits a JSON schema well enough for a classifier call."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: _from_schema(v) for k, v in (schema.get("properties") or {}).items()}
    return {"array": [], "boolean": False, "number": 0, "integer": 0}.get(kind, "ok")


# --- OpenAI Responses ----------------------------------------------------------------------


def _responses(body: Json) -> bytes:
    items = body.get("input") if isinstance(body.get("input"), list) else []
    answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items)
    tools = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}
    shell = next((n for n in ("exec_command", "shell_command", "shell") if n in tools), None)
    if not answered and shell is not None:
        props = (tools[shell].get("parameters") or {}).get("properties") or {}
        if "cmd" in props:
            args: Json = {"cmd": SHELL}
        elif (props.get("command") or {}).get("type") == "array":
            args = {"command": ["bash", "-lc", SHELL]}
        else:
            args = {"command": SHELL}
        item: Json = {
            "type": "function_call",
            "id": "fc_e2e",
            "call_id": "call_e2e",
            "name": shell,
            "arguments": json.dumps(args),
            "status": "completed",
        }
    else:
        text = FINAL if answered else SIDE
        item = {
            "type": "message",
            "id": "msg_e2e",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    usage = {
        "input_tokens": 900,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 30,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 930,
    }
    response = {"id": "resp_e2e", "object": "response", "model": body.get("model"), "output": []}

    def events() -> Iterator[tuple[str | None, Json]]:
        yield (
            "response.created",
            {"type": "response.created", "response": {**response, "status": "in_progress"}},
        )
        for kind in ("response.output_item.added", "response.output_item.done"):
            yield kind, {"type": kind, "output_index": 0, "item": item}
        done = {**response, "status": "completed", "output": [item], "usage": usage}
        yield "response.completed", {"type": "response.completed", "response": done}

    return _sse(events())


# --- OpenAI chat completions ---------------------------------------------------------------


# The shell tool of each chat-completions harness: opencode and Copilot CLI, Qwen Code, Droid.
CHAT_SHELLS = ("bash", "run_shell_command", "Execute")


def _placeholder(schema: Json) -> object:
    """A value a required parameter's schema accepts (Droid's Execute wants a risk level)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    zeros: dict[str, object] = {"boolean": False, "integer": 0, "number": 0}
    return zeros.get(kind, "say hello") if isinstance(kind, str) else "say hello"


def _chat(body: Json) -> bytes:
    answered = any(m.get("role") == "tool" for m in body.get("messages") or [])
    tools = {(t.get("function") or {}).get("name"): t.get("function") or {} for t in body.get("tools") or []}
    shell = next((name for name in CHAT_SHELLS if name in tools), None)
    if not answered and shell is not None:
        params = tools[shell].get("parameters") or {}
        args: Json = {"command": SHELL}
        for name in params.get("required") or []:
            args.setdefault(name, _placeholder((params.get("properties") or {}).get(name) or {}))
        call = {"index": 0, "id": "call_e2e", "type": "function"}
        call["function"] = {"name": shell, "arguments": json.dumps(args)}
        delta: Json = {"role": "assistant", "tool_calls": [call]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": FINAL if answered else SIDE}
        finish = "stop"
    base = {"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "model": body.get("model")}
    usage = {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930}

    def events() -> Iterator[tuple[str | None, Json]]:
        yield None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        yield None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        yield None, {**base, "choices": [], "usage": usage}

    return _sse(events()) + b"data: [DONE]\n\n"


# --- the server ----------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeModel

    def log_message(self, format: str, *args: object) -> None:
        pass  # the harness's output must stay readable

    def _reply(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, obj: object, status: int = 200) -> None:
        self._reply(status, json.dumps(obj).encode(), "application/json")

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.server.requests.append(("GET", self.path))
        path = self.path.split("?")[0]
        if path.endswith("/models"):
            self._json({"object": "list", "data": [{"id": "fake-model", "object": "model"}], "models": []})
        else:
            self._json({"error": {"message": "not found"}}, 404)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
            raw = gzip.decompress(raw)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        self.server.requests.append(("POST", self.path))
        path = self.path.split("?")[0]
        sse = "text/event-stream"
        if path.endswith("/messages/count_tokens"):
            self._json({"input_tokens": 900})
        elif path.endswith("/messages"):
            self._reply(200, _anthropic(body), sse)
        elif ":streamGenerateContent" in path:
            self._reply(200, b"data: " + json.dumps(_gemini(body)).encode() + b"\r\n\r\n", sse)
        elif ":generateContent" in path:
            self._json(_gemini(body))
        elif ":countTokens" in path:
            self._json({"totalTokens": 900})
        elif path.endswith("/responses"):
            self._reply(200, _responses(body), sse)
        elif path.endswith("/chat/completions"):
            self._reply(200, _chat(body), sse)
        else:
            self._json({"error": {"message": f"not served: {path}"}}, 404)


class FakeModel(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, str]] = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> FakeModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
