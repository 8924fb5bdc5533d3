"""One scripted model behind the five wire formats the harnesses speak, on 127.0.0.1 only.

Anthropic Messages (Claude Code), Gemini streamGenerateContent (Gemini CLI), OpenAI
Responses (Codex) and OpenAI chat completions (opencode, Copilot CLI, Qwen Code, Droid, Mistral
Vibe, Hermes Agent), all streamed; and, under /augment/, a stand-in of Augment's own service
(Auggie's tenant): get-models with hooks enabled, chat-stream, an empty answer to the rest.

A request that offers the harness's shell tool is the agent's own ("main"); each one takes
the next `Reply` of its agent's script (an error reply with `repeat` stays), and once the
script is spent the model answers "All done.". Any other request (titles, classifiers) gets
a short text at once. Every request's start and end times are kept in `flights`: a request
in flight is the agent thinking, the ground truth of `e2e/truth.py`.
Several agents at once (two sessions in one HOME, a child harness run from a tool) each have
a script of their own: a request is the agent's whose tag (`agent-NAME`, in its prompt) comes
first in the request's body (a parent's later requests also quote its child's prompt, after
its own), and a request naming no tag is the scenario's one unnamed agent's.
Tool calls run `sh tool.sh MARKS ID SECONDS RC [COMMAND...]` (e2e/tool.sh), which writes start
and end markers.
"""

from __future__ import annotations

import gzip
import itertools
import json
import shlex
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FINAL = "All done."
SIDE = "Shell hello"
TOOL_SCRIPT = Path(__file__).resolve().parent / "tool.sh"

Json = dict[str, Any]
_ids = itertools.count(1)  # Claude Code groups a conversation by message id: each answer its own


@dataclass(frozen=True)
class Call:
    """One scripted shell command: runs SECONDS (or, HOLD, until the driver releases it; or RUN,
    a command such as a child harness), exits RC (RUN's status)."""

    id: str
    seconds: float = 0.0
    rc: int = 0
    hold: bool = False
    run: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reply:
    """What the model answers one main request: tool calls, a question to the user, text or an error."""

    calls: tuple[Call, ...] = ()
    text: str = FINAL
    error: int = 0  # an HTTP status: the request fails
    repeat: bool = False  # an error that every later main request gets too
    ask: bool = False  # the harness's question tool (Claude AskUserQuestion, opencode question ...)
    delay: float = 0.0  # seconds before the answer (0: the script's latency)
    escalate: bool = False  # Codex: the calls ask to run outside the sandbox (so the user approves)
    # Gemini: the text streamed in this many chunks, GAP seconds apart (only the last one
    # carries finishReason, as Gemini's API sends it).
    chunks: int = 1
    gap: float = 0.0


@dataclass
class Flight:
    start: float
    end: float | None
    main: bool
    path: str
    tools: tuple[str, ...]  # the tool names the request offered
    agent: str = ""  # the name of the agent whose script answered it ('' for the unnamed one)
    failed: bool = False  # answered with an HTTP error status


@dataclass
class Script:
    replies: list[Reply] = field(default_factory=list)
    marks: Path = Path("/dev/null")
    tool: Path = TOOL_SCRIPT  # a copy inside the project: harnesses ask before touching other folders
    latency: float = 0.6  # every main request takes this long unless its reply says otherwise
    position: int = 0

    def next(self) -> Reply:
        if self.position >= len(self.replies):
            return Reply(delay=self.latency)
        reply = self.replies[self.position]
        if not reply.repeat:
            self.position += 1
        return reply

    def command(self, call: Call) -> str:
        seconds = "hold" if call.hold else f"{call.seconds:g}"
        line = f"sh {self.tool} {self.marks} {call.id} {seconds} {call.rc}"
        return " ".join((line, *map(shlex.quote, call.run))) if call.run else line


def tag(agent: str) -> str:
    """What an agent's prompts carry so that its requests are answered from its script."""
    return f"agent-{agent}"


QUESTION = {
    "question": "Which color do you want?",
    "header": "Color",
    "options": [{"label": "Red", "description": "red"}, {"label": "Blue", "description": "blue"}],
    "multiSelect": False,
}


def _sse(events: Iterator[tuple[str | None, Json]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


# --- Anthropic Messages --------------------------------------------------------------------


def _anthropic(body: Json, reply: Reply | None, script: Script) -> bytes:
    usage = {"input_tokens": 900, "output_tokens": 30, "cache_read_input_tokens": 0}
    blocks: list[tuple[Json, Json]] = []
    if reply is not None and reply.ask:
        start = {"type": "tool_use", "id": "toolu_e2e_ask", "name": "AskUserQuestion", "input": {}}
        blocks.append(
            (start, {"type": "input_json_delta", "partial_json": json.dumps({"questions": [QUESTION]})})
        )
    for call in reply.calls if reply is not None else ():
        start = {"type": "tool_use", "id": f"toolu_e2e_{call.id}", "name": "Bash", "input": {}}
        args = {"command": script.command(call), "description": f"scripted tool {call.id}"}
        blocks.append((start, {"type": "input_json_delta", "partial_json": json.dumps(args)}))
    stop = "tool_use" if blocks else "end_turn"
    if not blocks:
        text = reply.text if reply is not None else SIDE
        blocks.append(({"type": "text", "text": ""}, {"type": "text_delta", "text": text}))

    def events() -> Iterator[tuple[str | None, Json]]:
        message = {
            "id": f"msg_e2e_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude"),
            "content": [],
            "stop_reason": None,
            "usage": usage,
        }
        yield "message_start", {"type": "message_start", "message": message}
        for index, (block, delta) in enumerate(blocks):
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage}
        yield "message_stop", {"type": "message_stop"}

    return _sse(events())


def _anthropic_main(body: Json) -> bool:
    return "Bash" in {t.get("name") for t in body.get("tools") or []}


# --- Gemini --------------------------------------------------------------------------------


def _gemini_main(body: Json) -> bool:
    declared = {f.get("name") for t in body.get("tools") or [] for f in t.get("functionDeclarations") or []}
    config = body.get("generationConfig") or {}
    structured = config.get("responseJsonSchema") or config.get("responseSchema")
    return (
        "run_shell_command" in declared
        and structured is None
        and config.get("responseMimeType") != "application/json"
    )


def _gemini_chunks(body: Json, reply: Reply | None, script: Script) -> list[Json]:
    """The answer as Gemini streams it: a text reply in `reply.chunks` pieces, the last one
    finishing the response (finishReason, usage); anything else in one chunk."""
    whole = _gemini(body, reply, script)
    if reply is None or reply.chunks <= 1 or reply.calls or reply.ask:
        return [whole]
    words = reply.text.split(" ")
    n = min(reply.chunks, len(words))
    pieces = [" ".join(words[len(words) * i // n : len(words) * (i + 1) // n]) for i in range(n)]
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": p + " "}]}, "index": 0}]}
        for p in pieces[:-1]
    ]
    last = json.loads(json.dumps(whole))
    last["candidates"][0]["content"]["parts"] = [{"text": pieces[-1]}]
    return [*chunks, last]


def _gemini(body: Json, reply: Reply | None, script: Script) -> Json:
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    parts: list[Json]
    if reply is None and (schema is not None or config.get("responseMimeType") == "application/json"):
        parts = [{"text": json.dumps(_from_schema(schema or {}))}]
    elif reply is not None and reply.ask:
        # Gemini CLI 0.61.0's ask_user requires each question's type.
        parts = [
            {"functionCall": {"name": "ask_user", "args": {"questions": [{**QUESTION, "type": "choice"}]}}}
        ]
    elif reply is not None and reply.calls:
        parts = [
            {"functionCall": {"name": "run_shell_command", "args": {"command": script.command(c)}}}
            for c in reply.calls
        ]
    else:
        parts = [{"text": reply.text if reply is not None else SIDE}]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
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


def _responses_shell(body: Json) -> tuple[str, Json] | None:
    tools = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}
    name = next((n for n in ("exec_command", "shell_command", "shell") if n in tools), None)
    return None if name is None else (name, tools[name])


def _responses(body: Json, reply: Reply | None, script: Script) -> bytes:
    items: list[Json] = []
    shell = _responses_shell(body)
    if reply is not None and reply.ask:
        question = {k: v for k, v in QUESTION.items() if k != "multiSelect"}
        args = {"questions": [{"id": "color", **question}]}
        items.append(_function_call("ask", "request_user_input", args))
    for call in reply.calls if reply is not None and shell is not None else ():
        assert shell is not None
        props = (shell[1].get("parameters") or {}).get("properties") or {}
        command = script.command(call)
        if "cmd" in props:
            args = {"cmd": command}
        elif (props.get("command") or {}).get("type") == "array":
            args = {"command": ["bash", "-lc", command]}
        else:
            args = {"command": command}
        if reply is not None and reply.escalate and "sandbox_permissions" in props:
            args.update(sandbox_permissions="require_escalated", justification="the scripted tool")
        if (call.hold or call.run) and "yield_time_ms" in props:
            args["yield_time_ms"] = 30000  # Codex's longest wait before it leaves a command running
        items.append(_function_call(call.id, shell[0], args))
    if not items:
        text = reply.text if reply is not None else SIDE
        content = [{"type": "output_text", "text": text, "annotations": []}]
        items.append(
            {
                "type": "message",
                "id": "msg_e2e",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        )
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
        for index, item in enumerate(items):
            for kind in ("response.output_item.added", "response.output_item.done"):
                yield kind, {"type": kind, "output_index": index, "item": item}
        done = {**response, "status": "completed", "output": items, "usage": usage}
        yield "response.completed", {"type": "response.completed", "response": done}

    return _sse(events())


def _function_call(call_id: str, name: str, args: Json) -> Json:
    return {
        "type": "function_call",
        "id": f"fc_e2e_{call_id}",
        "call_id": f"call_e2e_{call_id}",
        "name": name,
        "arguments": json.dumps(args),
        "status": "completed",
    }


# --- OpenAI chat completions ---------------------------------------------------------------


def _chat_tools(body: Json) -> dict[str, Json]:
    return {(t.get("function") or {}).get("name"): t.get("function") or {} for t in body.get("tools") or []}


# The shell tool of each chat-completions harness: opencode, Copilot CLI and Mistral Vibe, Qwen
# Code, Droid, Hermes Agent.
CHAT_SHELLS = ("bash", "run_shell_command", "Execute", "terminal")


def _chat_shell(tools: dict[str, Json]) -> str | None:
    return next((name for name in CHAT_SHELLS if name in tools), None)


def _placeholder(schema: Json, text: str) -> object:
    """A value a required parameter's schema accepts (Droid's Execute wants a risk level)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    zeros: dict[str, object] = {"boolean": False, "integer": 0, "number": 0}
    return zeros.get(kind, text) if isinstance(kind, str) else text


def _chat(body: Json, reply: Reply | None, script: Script) -> bytes:
    tools = _chat_tools(body)
    calls: list[tuple[str, str, Json]] = []
    if reply is not None and reply.ask and "question" in tools:
        calls.append(
            ("ask", "question", {"questions": [{k: v for k, v in QUESTION.items() if k != "multiSelect"}]})
        )
    elif reply is not None and reply.ask and "ask_user_question" in tools:  # Qwen Code: Claude's shape
        calls.append(("ask", "ask_user_question", {"questions": [QUESTION]}))
    elif reply is not None and reply.ask and "ask_user" in tools:  # Copilot CLI: a form
        choice = {"type": "string", "title": "Color", "enum": [o["label"] for o in QUESTION["options"]]}
        form = {"properties": {"color": choice}, "required": ["color"]}
        calls.append(("ask", "ask_user", {"message": QUESTION["question"], "requestedSchema": form}))
    shell = _chat_shell(tools) or "bash"
    params = tools.get(shell, {}).get("parameters") or {}
    for call in reply.calls if reply is not None else ():
        args: Json = {"command": script.command(call)}
        if (call.hold or call.run) and "initial_wait" in (params.get("properties") or {}):
            args["initial_wait"] = 600  # Copilot CLI leaves a command running after 30 s
        for name in params.get("required") or []:
            args.setdefault(
                name,
                _placeholder((params.get("properties") or {}).get(name) or {}, f"scripted tool {call.id}"),
            )
        calls.append((call.id, shell, args))
    if calls:
        delta: Json = {
            "role": "assistant",
            "tool_calls": [
                {
                    "index": i,
                    "id": f"call_e2e_{cid}",
                    "type": "function",
                    "function": {"name": n, "arguments": json.dumps(a)},
                }
                for i, (cid, n, a) in enumerate(calls)
            ],
        }
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": reply.text if reply is not None else SIDE}
        finish = "stop"
    base = {"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "model": body.get("model")}
    usage = {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930}

    def events() -> Iterator[tuple[str | None, Json]]:
        yield None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        yield None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        yield None, {**base, "choices": [], "usage": usage}

    return _sse(events()) + b"data: [DONE]\n\n"


# --- Augment's own API (Auggie) ----------------------------------------------------------------

# Auggie asks its tenant for the models and feature flags first; hooks run only where the
# tenant's flags enable them.
AUGMENT_MODELS = {
    "default_model": "fake-model",
    "models": [{"name": "fake-model", "suggested_prefix_char_count": 0, "suggested_suffix_char_count": 0}],
    "languages": [],
    "feature_flags": {"enable_hooks": True},
}
AUGMENT_SHELL = "launch-process"
_TOOL_USE, _RAW_RESPONSE = 5, 0  # Augment's response node types
_END_TURN, _TOOL_USE_REQUESTED = 1, 3  # its stop reasons


def _augment(body: Json, reply: Reply | None, script: Script) -> bytes:
    """One chat-stream answer, as newline-delimited JSON: tool_use nodes, or the text."""
    calls = reply.calls if reply is not None else ()
    if calls:
        nodes = [
            {
                "id": i + 1,
                "type": _TOOL_USE,
                "tool_use": {
                    "tool_use_id": f"toolu_e2e_{call.id}",
                    "tool_name": AUGMENT_SHELL,
                    "input_json": json.dumps(
                        {"command": script.command(call), "wait": True, "max_wait_seconds": 300}
                    ),
                },
            }
            for i, call in enumerate(calls)
        ]
        line: Json = {"text": "", "nodes": nodes, "stop_reason": _TOOL_USE_REQUESTED}
    else:
        text = reply.text if reply is not None else SIDE
        line = {
            "text": text,
            "nodes": [{"id": 0, "type": _RAW_RESPONSE, "content": text}],
            "stop_reason": _END_TURN,
        }
    return json.dumps(line).encode() + b"\n"


def _offered(body: Json) -> tuple[str, ...]:
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            names.append(tool.get("name") or (tool.get("function") or {}).get("name"))
            names += [f.get("name") for f in tool.get("functionDeclarations") or []]
    return tuple(str(n) for n in names if n)


# --- the server ----------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeModel
    agent = ""  # whose script answers this request

    def log_message(self, format: str, *args: object) -> None:
        pass  # the harness's output must stay readable

    def _reply(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _json(self, obj: object, status: int = 200) -> None:
        self._reply(status, json.dumps(obj).encode(), "application/json")

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path.endswith("/models"):
            self._json({"object": "list", "data": [{"id": "fake-model", "object": "model"}], "models": []})
        else:
            self._json({"error": {"message": "not found"}}, 404)

    def _stream(self, chunks: list[bytes], gap: float) -> None:
        """An event stream written as it goes (chunked), GAP seconds between CHUNKS."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, chunk in enumerate(chunks):
            if n:
                time.sleep(gap)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
            raw = gzip.decompress(raw)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        self.agent = self.server.agent_of(raw.decode("utf-8", "replace"))
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self._json({"input_tokens": 900})
        elif ":countTokens" in path:
            self._json({"totalTokens": 900})
        elif path.endswith("/messages"):
            self._answer(path, body, _anthropic_main(body), "anthropic")
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self._answer(path, body, _gemini_main(body), "gemini")
        elif path.endswith("/responses"):
            self._answer(path, body, _responses_shell(body) is not None, "responses")
        elif path.endswith("/chat/completions"):
            self._answer(path, body, _chat_shell(_chat_tools(body)) is not None, "chat")
        elif path == "/augment/chat-stream":
            self._answer(path, body, True, "augment")
        elif path == "/augment/get-models":
            self._json(AUGMENT_MODELS)
        elif path.startswith("/augment/"):
            self._json({})  # MCP settings, remote tools, error reports, telemetry: nothing to say
        else:
            self._json({"error": {"message": f"not served: {path}"}}, 404)

    def _answer(self, path: str, body: Json, main: bool, wire: str) -> None:
        flight = Flight(time.time(), None, main, path, _offered(body), self.agent)
        script = self.server.scripts.get(self.agent) or Script()
        with self.server.lock:
            self.server.flights.append(flight)
            reply = script.next() if main else None
        try:
            if reply is not None:
                time.sleep(reply.delay or script.latency)
            if reply is not None and reply.error:
                flight.failed = True
                message = {"type": "error", "error": {"type": "api_error", "message": "fake internal error"}}
                if wire == "gemini":
                    message = {
                        "error": {"code": reply.error, "message": "fake error", "status": "INVALID_ARGUMENT"}
                    }
                self._json(message, reply.error)
            elif wire == "anthropic":
                self._reply(200, _anthropic(body, reply, script), "text/event-stream")
            elif wire == "gemini" and ":streamGenerateContent" in path:
                chunks = [
                    b"data: " + json.dumps(c).encode() + b"\r\n\r\n"
                    for c in _gemini_chunks(body, reply, script)
                ]
                self._stream(chunks, reply.gap if reply is not None else 0.0)
            elif wire == "gemini":
                self._json(_gemini(body, reply, script))
            elif wire == "responses":
                self._reply(200, _responses(body, reply, script), "text/event-stream")
            elif wire == "augment":
                self._reply(200, _augment(body, reply, script), "application/json")
            else:
                self._reply(200, _chat(body, reply, script), "text/event-stream")
        finally:
            flight.end = time.time()


class FakeModel(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scripts: dict[str, Script] = {}  # by agent name; '' the unnamed agent's
        self.flights: list[Flight] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def load(self, scripts: dict[str, Script]) -> None:
        """The next session's scripts, by agent name; forgets the last session's requests."""
        with self.lock:
            self.scripts = scripts
            self.flights = []

    def agent_of(self, body: str) -> str:
        """The agent whose tag comes first in a request's BODY ('' when none does)."""
        found = [(body.find(tag(name)), name) for name in self.scripts if name]
        return min(((at, name) for at, name in found if at >= 0), default=(0, ""))[1]

    def __enter__(self) -> FakeModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
