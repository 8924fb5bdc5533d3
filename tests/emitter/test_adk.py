"""End to end: a real ADK runner, the plugin, and real `sciontool hook` processes as the hooks."""

from __future__ import annotations

import asyncio
import io
import json
import shlex
import sys
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

pytest.importorskip("google.adk", reason="google-adk is not installed (pip install 'sciontool-py[adk]')")

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from sciontool_py.emitter import AllowAll, Dispatcher
from sciontool_py.emitter.adk import SciontoolHooksPlugin
from sciontool_py.emitter.config import parse_hooks

WEATHER_CALLS: list[str] = []


def get_weather(city: str) -> dict[str, str]:
    """Returns the weather in a city."""
    WEATHER_CALLS.append(city)
    return {"city": city, "forecast": "sunny"}


def _response(part: types.Part, partial: bool) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[part]), partial=partial or None)


class ScriptedLlm(BaseLlm):
    """First call: a function call; second call: text. Streams partial chunks when asked to."""

    model: str = "scripted"
    calls: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.calls += 1
        if self.calls == 1:
            call = types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Paris"}))
            if stream:
                yield _response(call, partial=True)  # core-agent skips tool parts of partial events
            yield _response(call, partial=False)
            return
        if stream:
            yield _response(types.Part(text="It is "), partial=True)
            yield _response(types.Part(text="sunny."), partial=True)
        yield _response(types.Part(text="It is sunny."), partial=False)


def _hooks(home: Path) -> dict[str, object]:
    python = shlex.quote(sys.executable)
    receiver = f"HOME={shlex.quote(str(home))} {python} -m sciontool_py hook --dialect=core-agent"
    log = shlex.quote(str(home / "envelopes.jsonl"))
    record = f"cat >> {log}; echo >> {log}"
    handlers = [{"command": record}, {"command": receiver, "timeout_seconds": 30}]
    return {event: handlers for event in ("tool-start", "tool-end", "model-start", "agent-end")}


def _run_turn(home: Path, streaming: bool, **dispatcher_options: bool) -> None:
    agent = LlmAgent(name="weather", model=ScriptedLlm(), instruction="Answer.", tools=[get_weather])
    dispatcher = Dispatcher(parse_hooks(_hooks(home)), gate=AllowAll(), **dispatcher_options)
    app = App(name="weather_app", root_agent=agent, plugins=[SciontoolHooksPlugin(dispatcher)])
    runner = InMemoryRunner(app=app)
    run_config = RunConfig(streaming_mode=StreamingMode.SSE if streaming else StreamingMode.NONE)

    async def go() -> list[str]:
        session = await runner.session_service.create_session(app_name="weather_app", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])
        texts = []
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=message, run_config=run_config
        ):
            if event.content and event.content.parts and event.content.parts[0].text and not event.partial:
                texts.append(event.content.parts[0].text)
        return texts

    assert asyncio.run(go()) == ["It is sunny."]


def _log_tags(home: Path) -> list[str]:
    return [line.split("] [")[2].split("]")[0] for line in (home / "agent.log").read_text().splitlines()]


def _envelopes(home: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (home / "envelopes.jsonl").read_text().splitlines()]


def test_streaming_run_drives_agent_state_through_a_real_sciontool_hook(tmp_path: Path) -> None:
    WEATHER_CALLS.clear()
    _run_turn(tmp_path, streaming=True)

    assert WEATHER_CALLS == ["Paris"]
    assert _envelopes(tmp_path) == [
        {"hook_event_name": "tool-start", "tool_input": {"city": "Paris"}, "tool_name": "get_weather"},
        {
            "hook_event_name": "tool-end",
            "tool_name": "get_weather",
            "tool_output": {"city": "Paris", "forecast": "sunny"},
        },
        {"hook_event_name": "model-start"},
        {"hook_event_name": "agent-end"},
    ]
    assert _log_tags(tmp_path) == ["executing", "working", "thinking", "working"]
    log = (tmp_path / "agent.log").read_text()
    assert "Running tool: get_weather" in log and "Agent turn completed" in log
    info = json.loads((tmp_path / "agent-info.json").read_text())
    assert info["activity"] == "working" and "toolName" not in info


def test_non_streaming_run_never_fires_model_start_as_in_core_agent(tmp_path: Path) -> None:
    _run_turn(tmp_path, streaming=False)

    assert [e["hook_event_name"] for e in _envelopes(tmp_path)] == ["tool-start", "tool-end", "agent-end"]
    assert _log_tags(tmp_path) == ["executing", "working", "working"]


def test_non_streaming_run_with_the_opt_in_fires_model_start_on_final_text(tmp_path: Path) -> None:
    _run_turn(tmp_path, streaming=False, model_start_on_final_text=True)

    assert _log_tags(tmp_path) == ["executing", "working", "thinking", "working"]


class FailingLlm(BaseLlm):
    model: str = "failing"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        raise RuntimeError("model unavailable")
        yield  # pragma: no cover - makes this an async generator


def test_a_failed_run_still_ends_the_turn_and_failing_hooks_do_not_break_it(tmp_path: Path) -> None:
    log = tmp_path / "ends"
    hooks = {"agent-end": [{"command": "exit 9"}, {"command": f"echo end >> {shlex.quote(str(log))}"}]}
    stderr = io.StringIO()
    dispatcher = Dispatcher(parse_hooks(hooks), gate=AllowAll(), stderr=stderr)
    agent = LlmAgent(name="broken", model=FailingLlm())
    runner = InMemoryRunner(
        app=App(name="broken_app", root_agent=agent, plugins=[SciontoolHooksPlugin(dispatcher)])
    )

    async def go() -> None:
        session = await runner.session_service.create_session(app_name="broken_app", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="hi")])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass

    with pytest.raises(RuntimeError, match="model unavailable"):  # the agent's own error, untouched
        asyncio.run(go())
    assert log.read_text() == "end\n"
    assert stderr.getvalue() == 'hooks: agent-end handler #0 ("exit 9"): exit status 9\n'
