"""Issue 28, item 9 (its JSON part): a JSON state file nested 100,000 deep, as an agent can leave
one, is an ordinary JSON error at the JSON layer: every file the hook reads is then damaged
(read as empty, rewritten whole), never a RecursionError, never a traceback. The real hook, and
every decoding entry of gojson."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from conftest import Agent, HubServer
from otlp import HttpReceiver
from telemetry.test_cli import hub_env, run_session, wait_idle
from telemetry.test_worker import NOTE, finished, http_env, messages, url
from worker_watch import watch

from sciontool_py import codec, gojson, gojson_bounded
from sciontool_py.errors import JSONError

DEPTH = 100_000


def deep_documents() -> list[bytes]:
    return [
        b"[" * DEPTH + b"]" * DEPTH,
        b'{"a":' * DEPTH + b"1" + b"}" * DEPTH,
        b'{"session": ' + b"[{" * DEPTH,  # cut short too
        b'{"a": "\\ud800", "b": ' + b'[{"c":' * DEPTH + b"0" + b"}]" * DEPTH + b"}",
        b"[" * DEPTH + b" \x00 trailing",
    ]


DECODERS: dict[str, Callable[[bytes], object]] = {
    "loads": lambda data: gojson.loads(gojson.decode_utf8(data)),
    "loads go_depth": lambda data: gojson.loads(gojson.decode_utf8(data), go_depth=True),
    "gojson_bounded.loads": gojson_bounded.loads,
    "gojson_bounded.first_value": gojson_bounded.first_value,
    "GoCodec.loads": codec.GO.loads,
}


@pytest.mark.parametrize("decode", DECODERS.values(), ids=DECODERS)
@pytest.mark.parametrize("padding", [0, 1 << 20], ids=["small", "past 256 KiB"])
def test_every_decoder_of_the_json_layer_refuses_too_deep_as_json(
    decode: Callable[[bytes], object], padding: int
) -> None:
    for data in deep_documents():
        if padding:  # a large document: read by gojson_bounded
            data = b'{"pad": "' + b"x" * padding + b'", "deep": ' + data + b"}"
        with pytest.raises(JSONError) as raised:
            decode(data)
        assert "\n" not in str(raised.value) and str(raised.value).startswith("invalid JSON")


def deep_record() -> str:
    return '{"session": "s", "open": ' + '{"a": [' * DEPTH + "]}" * DEPTH + "}"


PRE = {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash"}
STOP = {"hook_event_name": "Stop", "session_id": "s"}


@pytest.mark.parametrize(
    ("name", "dialect", "envelope", "env"),
    [
        # The session state of a dialect that keeps it, in HOME inside a Scion agent (outside,
        # in the agent's own record).
        ("agent-sessions.json", "qwen-code", PRE, {"SCION_AGENT_ID": "agent-7"}),
        ("agent-info.json", "claude", PRE, {}),
        ("agent-limits.json", "claude", STOP, {"SCION_MAX_TURNS": "5"}),  # a turn is counted
    ],
)
def test_a_100000_deep_state_file_is_damaged_and_rewritten(
    agent: Agent, name: str, dialect: str, envelope: dict[str, object], env: dict[str, str]
) -> None:
    state = agent.home / name
    state.write_text(deep_record())
    for _ in range(2):
        ran = agent.hook(envelope, f"--dialect={dialect}", SCION_LOG_LEVEL="debug", **env)
        assert (ran.returncode, ran.stderr) == (0, b""), ran.stderr
    log = (agent.home / "agent.log").read_text()
    assert "RecursionError" not in log and "internal error" not in log
    assert isinstance(json.loads(state.read_text()), dict)
    assert state.stat().st_size < 10_000  # rewritten whole, as a new state
    if name == "agent-limits.json":
        assert "exceeded max depth of 10000; counting from 0" in log
        assert json.loads(state.read_text())["turn_count"] == 2


def test_a_100000_deep_session_metrics_file_starts_over(agent: Agent, hub: HubServer) -> None:
    state = agent.home / ".scion" / "session-metrics.json"
    state.parent.mkdir()
    state.write_text(deep_record())
    run_session(agent, {**hub_env(hub.url), "SCION_LOG_LEVEL": "debug"}, [PRE])
    wait_idle(agent.home)
    log = (agent.home / "agent.log").read_text()
    assert "RecursionError" not in log and "internal error" not in log
    assert "Session metrics: starting over: parsing" in log and "exceeded max depth of 10000" in log
    assert not state.exists() or json.loads(state.read_text())["version"] == 1


def test_a_100000_deep_open_spans_file_is_forgotten_and_telemetry_goes_on(agent: Agent) -> None:
    # telemetry-spans.json, which the worker reads with the json package for its integers.
    spans = agent.home / ".scion" / "telemetry-spans.json"
    spans.parent.mkdir()
    spans.write_text('{"version": 1, "open": ' + "[" * DEPTH + "]" * DEPTH + "}")
    spans.chmod(0o600)
    receiver = HttpReceiver()
    try:
        finished(watch(NOTE, http_env(agent, url(receiver))))
        receiver.wait_for(lambda: len(receiver.logs()) == 1)
        assert messages(receiver) == ["from the hook"]
    finally:
        receiver.close()
    log = (agent.home / "agent.log").read_text()
    assert "Hook telemetry: open spans forgotten: .scion/telemetry-spans.json: nested too deeply" in log
    assert "RecursionError" not in log and "worker stopped" not in log
