"""Spooled event -> spans, log records and metric points (SPEC §7), and the pairing of starts and ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import event

from sciontool_py.telemetry import export, mapping, pairing, record, settings
from sciontool_py.telemetry.mapping import Translation, translate
from sciontool_py.telemetry.pairing import OpenSpans

MS = 1_000_000
# Scion's privacy policy turned off (a list of spaces is an empty list): these tests are about the
# mapping; test_privacy.py has the policy.
NO_POLICY = {
    "SCION_TELEMETRY_FILTER_EXCLUDE": " ",
    "SCION_TELEMETRY_REDACT": " ",
    "SCION_TELEMETRY_HASH": " ",
}
ENV = {"SCION_AGENT_ID": "a1", "SCION_HARNESS": "claude", "SCION_PROJECT_ID": "p1", **NO_POLICY}


def spooled(name: str, at_ms: int, env: dict[str, str] | None = None, **data: object) -> dict[str, object]:
    """A record as the hook spools it (through record.make), at at_ms."""
    env = env or ENV
    made = record.make(
        event(name, raw_name=f"Raw{name}", dialect="claude", **data), at_ms * MS, env, settings.Policy(env)
    )
    return json.loads(made)  # type: ignore[no-any-return]


def run(home: Path, *records: dict[str, object]) -> Translation:
    spans = OpenSpans(str(home))
    out = Translation()
    for found in records:
        translate(found, spans, out)
    spans.save()
    return out


def test_a_single_event_is_one_span_started_and_ended_at_once_and_one_log_record(home: Path) -> None:
    out = run(home, spooled("session-start", 5, session_id="s1", source="startup"))
    [span] = out.spans
    assert (span.name, span.start_ns, span.end_ns) == ("agent.session.start", 5 * MS, 5 * MS)
    assert span.attributes == {
        "event.name": "agent.session.start",
        "event.raw_name": "Rawsession-start",
        "event.dialect": "claude",
        "session_id": "s1",
        "source": "startup",
    }
    [log] = out.logs
    assert (log.body, log.time_ns, log.ids) == ("agent.session.start", 5 * MS, (span.trace_id, span.span_id))
    assert out.points == []


def test_a_tool_call_pairs_across_processes_into_one_span_with_its_real_duration(home: Path) -> None:
    start = run(home, spooled("tool-start", 1000, session_id="s1", tool_name="Bash", tool_input='{"c":"ls"}'))
    assert start.spans == []  # the start waits for its end (in the pairing file, not in memory)
    [start_log] = start.logs
    assert start_log.body == "agent.tool.call"
    end = run(
        home, spooled("tool-end", 1250, session_id="s1", tool_name="Bash", tool_output="a\nb", success=True)
    )
    [span] = end.spans
    assert (span.name, span.start_ns, span.end_ns) == ("agent.tool.call", 1000 * MS, 1250 * MS)
    assert (span.trace_id, span.span_id) == start_log.ids
    assert span.attributes["duration_ms"] == 250
    assert span.attributes["tool_input"] == '{"c":"ls"}' and span.attributes["tool_output"] == "a\nb"
    assert span.attributes["event.name"] == "agent.tool.call" and span.attributes["success"] is True
    assert span.ok and not span.error
    [end_log] = end.logs
    assert (end_log.body, end_log.ids) == ("agent.tool.result", start_log.ids)
    points = {(p.name, p.histogram): p for p in end.points}
    calls = points[("agent.tool.calls", False)]
    assert (calls.value, calls.attributes) == (1, {**_common(), "tool_name": "Bash", "status": "success"})
    duration = points[("agent.tool.duration", True)]
    assert (duration.value, duration.attributes) == (250.0, {**_common(), "tool_name": "Bash"})
    assert json.loads((home / pairing.FILE).read_text())["open"] == []


def test_an_end_without_its_start_is_scions_unpaired_span_without_a_duration(home: Path) -> None:
    out = run(home, spooled("tool-end", 9, session_id="s1", tool_name="Read", error="denied"))
    [span] = out.spans
    assert (span.name, span.start_ns, span.end_ns) == ("agent.tool.result", 9 * MS, 9 * MS)
    assert "duration_ms" not in span.attributes and span.error == "denied"
    assert [(p.name, p.attributes["status"]) for p in out.points] == [("agent.tool.calls", "error")]
    assert out.logs[0].attributes["error"] == "denied"


def test_parallel_calls_of_one_tool_end_in_the_order_they_began(home: Path) -> None:
    first = run(home, spooled("tool-start", 10, session_id="s", tool_name="Read")).logs[0].ids
    second = run(home, spooled("tool-start", 20, session_id="s", tool_name="Read")).logs[0].ids
    other_session = run(home, spooled("tool-end", 25, session_id="t", tool_name="Read")).spans[0]
    assert other_session.name == "agent.tool.result"  # another session's end does not take them
    ends = run(
        home,
        spooled("tool-end", 30, session_id="s", tool_name="Read"),
        spooled("tool-end", 40, session_id="s", tool_name="Read"),
    )
    assert [(s.trace_id, s.span_id) for s in ends.spans] == [first, second]
    assert [s.attributes["duration_ms"] for s in ends.spans] == [20, 20]


def test_an_expired_start_is_not_paired(home: Path) -> None:
    run(home, spooled("model-start", 0, session_id="s"))
    late = pairing.TTL_NS // MS + 1
    out = run(home, spooled("model-end", late, session_id="s"))
    assert out.spans[0].name == "gen_ai.api.response" and "duration_ms" not in out.spans[0].attributes


def test_open_starts_are_bounded_oldest_dropped(home: Path) -> None:
    run(
        home,
        *(spooled("tool-start", i, session_id="s", tool_name=f"t{i}") for i in range(pairing.MAX_OPEN + 3)),
    )
    kept = json.loads((home / pairing.FILE).read_text())["open"]
    assert len(kept) == pairing.MAX_OPEN and kept[0]["attributes"]["tool_name"] == "t3"


def test_a_damaged_pairing_file_starts_empty(home: Path) -> None:
    (home / ".scion").mkdir()
    (home / pairing.FILE).write_text("{not json")
    out = run(home, spooled("agent-end", 5, session_id="s"))
    assert out.spans[0].name == "agent.turn.end"


@pytest.mark.parametrize("source", ["", "native", "HOOKS"])
def test_usage_needs_scion_usage_source_hooks(home: Path, source: str) -> None:
    env = {**ENV, "SCION_USAGE_SOURCE": source}
    out = run(home, spooled("model-end", 1, env, input_tokens=7, output_tokens=3))
    assert out.points == []  # unpaired: no duration either
    assert out.logs[0].attributes["gen_ai.usage.input_tokens"] == 7  # spans and logs are not gated


def test_usage_points_by_token_type_with_exactly_harness_model_and_token_type(home: Path) -> None:
    env = {**ENV, "SCION_USAGE_SOURCE": "hooks", "SCION_MODEL": "fallback"}
    run(home, spooled("model-start", 100, env, session_id="s"))
    tokens = {
        "input_tokens": 7,
        "output_tokens": 3,
        "cached_tokens": 2,
        "cache_write_tokens": 1,
        "reasoning_tokens": 4,
    }
    out = run(home, spooled("model-end", 160, env, session_id="s", **tokens))
    usage = [(p.attributes, p.value) for p in out.points if p.name == "scion.usage.tokens"]
    assert usage == [
        ({"harness": "claude", "model": "fallback", "token_type": kind}, count)
        for kind, count in [
            ("input", 7),
            ("output", 3),
            ("cache_read", 2),
            ("cache_write", 1),
            ("reasoning", 4),
        ]
    ]
    calls = [p for p in out.points if p.name == "gen_ai.api.calls"]
    assert [p.attributes for p in calls] == [{**_common(), "model": "fallback", "status": "success"}]
    [duration] = [p for p in out.points if p.name == "gen_ai.api.duration"]
    assert (duration.value, duration.attributes) == (60.0, {**_common(), "model": "fallback"})
    [span] = out.spans
    assert (
        span.name == "gen_ai.api.request" and "model" not in span.attributes
    )  # spans: the event's own model only
    assert {k: v for k, v in span.attributes.items() if k.startswith("gen_ai.")} == {
        "gen_ai.usage.input_tokens": 7,
        "gen_ai.usage.output_tokens": 3,
        "gen_ai.usage.cached_tokens": 2,
    }


def test_session_end_counts_a_session_completed_or_in_error(home: Path) -> None:
    ok = run(home, spooled("session-end", 1, reason="exit")).points
    failed = run(home, spooled("session-end", 2, error="crash")).points
    assert [(p.name, p.attributes) for p in ok + failed] == [
        ("agent.session.count", {**_common(), "status": "completed"}),
        ("agent.session.count", {**_common(), "status": "error"}),
    ]


def test_events_without_a_span_name_export_nothing(home: Path) -> None:
    out = run(home, spooled("subagent-end", 1), {**spooled("tool-end", 2), "name": "no-such-event"})
    assert (out.spans, out.logs, out.points) == ([], [], [])


def test_the_hook_cuts_huge_values_before_spooling() -> None:
    made = json.loads(record.make(event("tool-end", tool_output="x" * 100_000), 1, {}, settings.Policy(ENV)))
    assert made["data"]["tool_output"] == "x" * record.VALUE_LIMIT + "..."


def test_scion_resource_attributes_win_over_otel_resource_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "scion.agent.id=theirs,team=blue")
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    found = export.resource({"SCION_AGENT_ID": "ours"}, scion=False).attributes
    assert (found["scion.agent.id"], found["team"], found["service.name"]) == ("ours", "blue", "sciontool")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "my-agents")
    assert export.resource({}, scion=False).attributes["service.name"] == "my-agents"


def _common() -> dict[str, str]:
    return {"agent_id": "a1", "harness": "claude", "project_id": "p1"}


def test_new_ids_are_never_zero() -> None:
    assert all(trace and span for trace, span in (mapping.new_ids() for _ in range(100)))
