"""`sciontool_py.integrations.agentino` against the real agentino (agentino-framework, the
`[agentino]` extra): a HookManager with register() applied, fired with the contexts agentino's
agent loop builds, in process and through real `sciontool hook` processes, and one real agent
turn against a scripted model on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import log_entries, read_info

agentino = pytest.importorskip("agentino")
from agentino import Agent, HookManager  # noqa: E402
from agentino.core.context import reset, set_context  # noqa: E402
from agentino.core.tool import tool  # noqa: E402

from sciontool_py.errors import DialectError  # noqa: E402
from sciontool_py.integrations.agentino import EVENTS, register  # noqa: E402

SCIONTOOL = str(Path(sys.executable).with_name("sciontool"))
# What agentino 1.1.1's agent loop fires around one tool call (agentino/core/agent.py).
PRE = {"tool_name": "shell", "arguments": {"command": "ls"}}
POST = {"tool_name": "shell", "arguments": {"command": "ls"}, "result": "a.txt\nb.txt"}
TOOL_LINES = [("INFO", "executing", "Running tool: shell"), ("INFO", "working", "Tool shell completed")]


def fire(hooks: HookManager, event: str, context: dict[str, object]) -> object:
    return asyncio.run(hooks.fire(event, context))


def not_blocked(result: object) -> bool:
    """agentino goes on with the call: no block, no message, no rewrite of arguments or result."""
    return (
        result.blocked is False  # type: ignore[attr-defined]
        and result.message == ""  # type: ignore[attr-defined]
        and result.arguments_override is None  # type: ignore[attr-defined]
        and result.result_override is None  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize("mode", ["callback", "command"])
def test_the_agent_loops_tool_events_update_the_status(home: Path, mode: str) -> None:
    hooks = HookManager()
    register(hooks, mode=mode, executable=SCIONTOOL)
    assert hooks.list_hooks() == dict.fromkeys(EVENTS, 1)
    pre, post = copy.deepcopy(PRE), copy.deepcopy(POST)
    assert not_blocked(fire(hooks, "PreToolUse", pre))
    assert read_info(home) == {"activity": "executing", "toolName": "shell"}
    assert not_blocked(fire(hooks, "PostToolUse", post))
    assert read_info(home) == {"activity": "working"}
    assert log_entries(home) == TOOL_LINES
    assert (pre, post) == (PRE, POST)  # agentino's dicts are left as they were


def test_callbacks_write_nothing_to_the_applications_stderr(
    home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    hooks = HookManager()
    register(hooks)
    fire(hooks, "SessionStart", {"session_id": "s1", "source": "startup"})
    fire(hooks, "UserPromptSubmit", {"prompt": "list the files"})
    assert capfd.readouterr() == ("", "")  # as `sciontool hook`: agent.log has every line
    assert read_info(home) == {"activity": "thinking"}
    assert (home / "prompt.md").read_text() == "list the files"
    assert [m for _, _, m in log_entries(home)] == [
        "Session started (source: startup)",
        "User prompt: list the files",
    ]


def test_every_event_agentino_fires_is_mapped(home: Path) -> None:
    hooks = HookManager()
    register(hooks)
    for event in EVENTS:
        fire(hooks, event, {})
    entries = log_entries(home)
    assert len(entries) == len(EVENTS)
    assert all(level == "INFO" and not message.startswith("Event: ") for level, _, message in entries)


def test_the_end_of_a_tool_that_asked_the_user_ends_the_wait(home: Path) -> None:
    """An application's Notification from inside a tool: the tool's end means the user answered."""
    hooks = HookManager()
    register(hooks)
    fire(hooks, "PreToolUse", PRE)
    fire(hooks, "Notification", {"message": "Deploy to production?"})
    assert read_info(home) == {"activity": "waiting_for_input"}
    fire(hooks, "PostToolUse", POST)
    assert read_info(home) == {"activity": "working"}
    fire(hooks, "Notification", {"message": "Approve?"})
    fire(hooks, "Stop", {"last_assistant_message": "Waiting."})  # not an answer: the wait stays
    assert read_info(home) == {"activity": "waiting_for_input"}


def test_a_failure_is_one_error_line_and_never_blocks(home: Path) -> None:
    hooks = HookManager()
    register(hooks)
    circular: dict[str, object] = {"tool_name": "shell"}
    circular["arguments"] = circular  # json.dumps refuses it, as it would for a command hook
    assert not_blocked(fire(hooks, "PreToolUse", circular))
    (home / "agent-info.json").mkdir()  # a state file that cannot be written
    assert not_blocked(fire(hooks, "PreToolUse", {"tool_name": "x", "arguments": {}}))
    entries = log_entries(home)
    assert entries[0] == (
        "ERROR",
        None,
        "sciontool hook --event=PreToolUse: internal error: ValueError: Circular reference detected",
    )
    assert entries[1] == ("INFO", "executing", "Running tool: x")
    level, _, message = entries[2]
    assert (level, message.split(":")[0]) == ("ERROR", "Hook processing failed")


def test_an_internal_errors_traceback_follows_its_line_at_debug(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCION_LOG_LEVEL", "debug")
    hooks = HookManager()
    register(hooks)
    circular: dict[str, object] = {"tool_name": "shell"}
    circular["arguments"] = circular
    assert not_blocked(fire(hooks, "PreToolUse", circular))
    line, (level, tag, trace) = log_entries(home)
    assert line == (
        "ERROR",
        None,
        "sciontool hook --event=PreToolUse: internal error: ValueError: Circular reference detected",
    )
    assert (level, tag) == ("DEBUG", None)
    assert trace.startswith(
        "sciontool hook --event=PreToolUse: internal error: Traceback (most recent call last):\\n"
    )
    assert trace.endswith("ValueError: Circular reference detected")


def test_a_value_json_cannot_hold_is_read_as_its_text(home: Path) -> None:
    hooks = HookManager()
    register(hooks)
    path = Path("/srv/data.csv")
    fire(hooks, "PreToolUse", {"tool_name": "read", "arguments": {"path": path, "lines": (1, 2)}})
    assert read_info(home) == {"activity": "executing", "toolName": "read"}


def test_events_fired_at_once_from_tasks_and_threads_are_all_recorded(home: Path) -> None:
    hooks = HookManager()
    register(hooks)

    async def calls(prefix: str) -> None:
        async def call(n: int) -> None:
            name = f"{prefix}{n}"
            await hooks.fire("PreToolUse", {"tool_name": name, "arguments": {}})
            await hooks.fire("PostToolUse", {"tool_name": name, "arguments": {}, "result": ""})

        await asyncio.gather(*(call(n) for n in range(10)))

    threads = [threading.Thread(target=asyncio.run, args=(calls(f"t{t}-"),)) for t in range(3)]
    for thread in threads:
        thread.start()
    asyncio.run(calls("main-"))
    for thread in threads:
        thread.join(timeout=60)
    messages = [m for _, _, m in log_entries(home)]
    names = [f"{p}{n}" for p in ("main-", "t0-", "t1-", "t2-") for n in range(10)]
    assert sorted(messages) == sorted(
        [f"Running tool: {n}" for n in names] + [f"Tool {n} completed" for n in names]
    )
    for name in names:  # each call's start is on file before its end
        assert messages.index(f"Running tool: {name}") < messages.index(f"Tool {name} completed")
    assert read_info(home) == {"activity": "working"}


def test_a_dialect_that_cannot_be_found_fails_at_register(home: Path) -> None:
    hooks = HookManager()
    for mode in ("callback", "command"):
        with pytest.raises(DialectError, match="unknown dialect 'agentin'"):
            register(hooks, "agentin", mode=mode)
    with pytest.raises(ValueError, match="mode must be one of callback, command, not 'shell'"):
        register(hooks, mode="shell")
    assert hooks.list_hooks() == {}


def test_command_mode_runs_the_executable_it_is_given(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "my tools"
    folder.mkdir()
    (folder / "sciontool").symlink_to(SCIONTOOL)
    hooks = HookManager()
    register(hooks, mode="command", executable=str(folder / "sciontool"))
    fire(hooks, "Notification", {"message": "Approve the deploy?", "event": "deploy"})
    # The context's own "event" key does not rename the event it was fired as.
    assert read_info(home) == {"activity": "waiting_for_input"}
    assert log_entries(home) == [("INFO", "waiting_for_input", "Notification: Approve the deploy?")]


class ScriptedModel(http.server.ThreadingHTTPServer):
    """An OpenAI chat-completions endpoint on 127.0.0.1 answering with `replies`, in order."""

    def __init__(self, replies: list[dict[str, object]]) -> None:
        self.replies = replies
        super().__init__(("127.0.0.1", 0), _ModelHandler)


class _ModelHandler(http.server.BaseHTTPRequestHandler):
    server: ScriptedModel

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps(self.server.replies.pop(0)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _choice(message: dict[str, object], finish: str) -> dict[str, object]:
    return {"choices": [{"message": message, "finish_reason": finish}], "usage": {"prompt_tokens": 10}}


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "shell", "arguments": '{"command": "ls"}'},
    }
    server = ScriptedModel(
        [
            _choice({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"),
            _choice({"role": "assistant", "content": "Two files."}, "stop"),
        ]
    )
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("mode", ["callback", "command"])
def test_a_real_agent_turn_with_one_tool_call(home: Path, model: ScriptedModel, mode: str) -> None:
    seen: list[object] = []

    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        seen.append((command, read_info(home)))  # the tool runs once PreToolUse is on file
        return "a.txt\nb.txt"

    hooks = HookManager()
    register(hooks, mode=mode, executable=SCIONTOOL)
    agent = Agent(
        model="scripted",
        tools=[shell],
        api_key="test",
        base_url=f"http://127.0.0.1:{model.server_port}/v1",
        auto_compact=False,
    )
    token = set_context(_hook_manager=hooks)  # where agentino's agent loop looks for hooks
    try:
        assert asyncio.run(agent.run("list the files")) == "Two files."
    finally:
        reset(token)
    assert seen == [("ls", {"activity": "executing", "toolName": "shell"})]
    assert read_info(home) == {"activity": "working"}
    assert log_entries(home) == TOOL_LINES
    assert model.replies == []


def test_importing_the_integration_imports_nothing_heavy() -> None:
    probe = (
        "import sys\n"
        "import sciontool_py.integrations.agentino\n"
        "sys.stdout.write(' '.join(sorted(sys.modules)))\n"
    )
    loaded = set(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout.split()
    )
    heavy = {b"agentino", b"typer", b"click", b"yaml", b"json", b"re", b"asyncio", b"httpx", b"concurrent"}
    assert b"sciontool_py.integrations.agentino" in loaded
    assert not loaded & heavy


def test_the_harness_snippet_runs_as_printed(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{Path(SCIONTOOL).parent}{os.pathsep}{os.environ['PATH']}")
    shown = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "harness", "show", "agentino"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    hooks = HookManager()
    # In a context of its own: the snippet's set_context must not outlive this test.
    contextvars.copy_context().run(exec, compile(shown, "harness show agentino", "exec"), {"hooks": hooks})
    assert hooks.list_hooks() == dict.fromkeys(EVENTS, 2)  # register() and the command loop
    fire(hooks, "PreToolUse", PRE)
    assert log_entries(home) == [TOOL_LINES[0]] * 2  # both forms ran


def test_in_process_callbacks_export_telemetry_as_the_hook_does(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The callbacks' after-answer step: one paired tool span from PreToolUse to PostToolUse."""
    from otlp import GrpcReceiver

    found = GrpcReceiver()
    try:
        monkeypatch.setenv("SCION_OTEL_GRPC_PORT", str(found.port))
        monkeypatch.setenv("SCION_AGENT_ID", "agent-7")
        monkeypatch.setenv("SCION_TELEMETRY_REDACT", " ")  # opted in: the tool output is checked below
        hooks = HookManager()
        register(hooks)
        fire(hooks, "PreToolUse", copy.deepcopy(PRE))
        fire(hooks, "PostToolUse", copy.deepcopy(POST))
        found.wait_for(lambda: len(found.logs()) == 2 and len(found.spans()) == 1)
    finally:
        found.close()
    [span] = found.spans()
    assert span.item.name == "agent.tool.call"  # type: ignore[attr-defined]
    assert span.attributes["tool_name"] == "shell" and span.attributes["event.dialect"] == "agentino"
    assert span.attributes["tool_output"] == "a.txt\nb.txt" and "duration_ms" in span.attributes
    assert span.resource["scion.agent.id"] == "agent-7"
    assert read_info(home) == {"activity": "working"}


class Unprintable:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __str__(self) -> str:
        raise self.exc


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt()])
def test_a_value_whose_str_raises_system_exit_costs_neither_agentino_nor_the_event(
    home: Path, exc: BaseException
) -> None:
    hooks = HookManager()
    register(hooks)
    context = {"tool_name": "grep", "arguments": {"pattern": Unprintable(exc)}}
    assert not_blocked(fire(hooks, "PreToolUse", context))  # nothing escaped into agentino
    assert read_info(home) == {"activity": "executing", "toolName": "grep"}
    assert [e for e in log_entries(home) if e[0] == "ERROR"] == []


def test_a_tuple_key_does_not_lose_the_event(home: Path) -> None:
    hooks = HookManager()
    register(hooks)
    context = {"tool_name": "grep", "arguments": {(1, 2): "cell", "nested": [{("a",): 1}]}}
    assert not_blocked(fire(hooks, "PreToolUse", context))
    assert read_info(home) == {"activity": "executing", "toolName": "grep"}
    assert context["arguments"] == {(1, 2): "cell", "nested": [{("a",): 1}]}  # agentino's dict untouched


def test_a_100_mb_context_is_read_off_the_event_loop(home: Path) -> None:
    hooks = HookManager()
    register(hooks)
    big = {
        "tool_name": "read",
        "result": "x" * (100 << 20),
        "arguments": {"rows": [[i, "y" * 40] for i in range(200_000)]},
    }

    async def scene() -> tuple[int, float]:
        # A ticker on the agent's loop. Work done on the loop holds it for the whole round
        # trip: not one tick in between. Off the loop the ticker goes on while the work runs
        # (the C encoder holds the GIL for one long string at a time, so only some of its
        # ticks get through); counted, not timed, so a loaded machine only lowers the count.
        loop = asyncio.get_running_loop()
        ticks: list[float] = []
        stop = asyncio.Event()

        async def tick() -> None:
            while not stop.is_set():
                await asyncio.sleep(0.005)
                ticks.append(loop.time())

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0.05)
        started = loop.time()
        await hooks.fire("PostToolUse", big)
        ended = loop.time()
        stop.set()
        await ticker
        return sum(started < t < ended for t in ticks), ended - started

    during, took = asyncio.run(scene())
    assert read_info(home) == {"activity": "working"}
    print(f"{during} ticks in {took:.2f} s")
    assert during >= 3, (during, took)
