"""Every core-agent fixture envelope is what the emitter sends for the matching agent event.

Reads fixtures/core-agent/*.json (shared with the receiver's tests) and
tests/data/emitter/*.json: ``{"envelope": ..., "expect": canonical event}``.
The envelope must come out byte for byte as Go would marshal it, and the
receiver must turn those bytes into the expected event.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sciontool_py import gojson
from sciontool_py.dialect.discover import resolve
from sciontool_py.dialect.normalize import normalize
from sciontool_py.emitter import envelope
from sciontool_py.emitter.firing import ThinkingWindow

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = sorted((ROOT / "fixtures" / "core-agent").glob("*.json")) + sorted(
    (ROOT / "tests" / "data" / "emitter").glob("*.json")
)
# The keys core-agent's dispatcher writes for each event it fires.
EMITTED_KEYS = {
    "tool-start": {"hook_event_name", "tool_name", "tool_input"},
    "tool-end": {"hook_event_name", "tool_name", "tool_output"},
    "model-start": {"hook_event_name"},
    "agent-end": {"hook_event_name"},
}


def _agent_event(sent: dict[str, object]) -> dict[str, object] | None:
    """The ADK event (JSON form) core-agent fires this envelope for; None means the turn's end."""
    name = sent["hook_event_name"]
    if name == "tool-start":
        return {
            "content": {"parts": [{"functionCall": {"name": sent["tool_name"], "args": sent["tool_input"]}}]}
        }
    if name == "tool-end":
        response = {"name": sent["tool_name"], "response": sent["tool_output"]}
        return {"content": {"parts": [{"function_response": response}]}}
    if name == "model-start":
        return {"partial": True, "content": {"parts": [{"text": "Thinking"}]}}
    return None


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_envelope_is_reproduced_and_normalizes(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no harness dialect may stand in for the packaged one
    fixture = gojson.loads(path.read_text(encoding="utf-8"))
    assert isinstance(fixture, dict)
    sent = fixture["envelope"]
    assert isinstance(sent, dict)
    keys = EMITTED_KEYS.get(str(sent.get("hook_event_name")))
    if keys is None or set(sent) - {"session_id"} != keys:
        pytest.skip(f"core-agent never sends this envelope ({sorted(sent)}): receiver-only fixture")
    session_id = sent.get("session_id", "")
    assert isinstance(session_id, str)

    window = ThinkingWindow()
    event = _agent_event(sent)
    firings = window.feed(event) if event is not None else [window.end_turn()]

    assert len(firings) == 1
    body = envelope.encode(envelope.build(firings[0].event, session_id, firings[0].extra))
    assert body == gojson.dumps(sent).encode("utf-8")
    canonical = normalize(resolve("core-agent", None), gojson.loads(body.decode("utf-8")))
    assert json.loads(canonical.to_json()) == json.loads(json.dumps(fixture["expect"]))
