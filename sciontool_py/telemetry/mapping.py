"""A spooled event -> the spans, log records and metric points Scion's hook exports for it.

Pure: no OpenTelemetry here (export.py hands the result to the SDK), so
the rules are tested in-process.  Beyond Scion, a start is kept open (in
pairing.OpenSpans) and its end exports one span with the real start time,
`duration_ms` and the duration histograms; an end with no open start is
Scion's single unpaired span.  A span or log record whose name Scion's
filter (settings.Policy, from the record's variables) does not admit is
left out; the metric points stay, as in Scion (its filter drops spans and
log records only).  The record's text passed the rest of the policy in
the hook.

A record comes from a file the agent can write, so nothing in it is
trusted: text is cut to record.VALUE_LIMIT with any lone surrogate made
U+FFFD (protobuf would refuse the whole request), a count outside int64 is
no count, and a record whose time is not one is refused (Unusable), alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from sciontool_py.console import cut
from sciontool_py.telemetry.pairing import INT64_MAX, OpenSpans, clean
from sciontool_py.telemetry.record import ATTRIBUTE_FIELDS, VALUE_LIMIT
from sciontool_py.telemetry.settings import (
    SPAN_NAMES,
    Policy,
    cut_label,
    metric_attributes,
    model_label,
    usage_from_hooks,
)

STARTS = ("tool-start", "model-start", "agent-start")
END_OF = {"tool-end": "tool-start", "model-end": "model-start", "agent-end": "agent-start"}
_USAGE_ATTRIBUTES = (
    ("gen_ai.usage.input_tokens", "input_tokens"),
    ("gen_ai.usage.output_tokens", "output_tokens"),
    ("gen_ai.usage.cached_tokens", "cached_tokens"),
)
_TOKEN_TYPES = (
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache_read", "cached_tokens"),
    ("cache_write", "cache_write_tokens"),
    ("reasoning", "reasoning_tokens"),
)


class Unusable(ValueError):
    """A record that exports nothing: why."""


class SpanOut:
    """A finished span: its ids, times (ns), attributes and status (None: unset; "" with ok)."""

    __slots__ = ("attributes", "end_ns", "error", "name", "ok", "span_id", "start_ns", "trace_id")

    def __init__(
        self,
        name: str,
        ids: tuple[int, int],
        start_ns: int,
        end_ns: int,
        attributes: dict[str, object],
        data: Mapping[str, object],
    ) -> None:
        self.name = name
        self.trace_id, self.span_id = ids
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.attributes = attributes
        self.error = _text(data, "error")
        self.ok = data.get("success") is True


class LogOut:
    """A log record (INFO, body = span name) correlated with the span of ids."""

    __slots__ = ("attributes", "body", "ids", "time_ns")

    def __init__(self, body: str, time_ns: int, ids: tuple[int, int], attributes: dict[str, object]) -> None:
        self.body = body
        self.time_ns = time_ns
        self.ids = ids
        self.attributes = attributes


class PointOut:
    """One counter increment or histogram value."""

    __slots__ = ("attributes", "histogram", "name", "value")

    def __init__(self, name: str, value: float, attributes: dict[str, str], histogram: bool = False) -> None:
        self.name = name
        self.value = value
        self.attributes = attributes
        self.histogram = histogram


class Translation:
    def __init__(self) -> None:
        self.spans: list[SpanOut] = []
        self.logs: list[LogOut] = []
        self.points: list[PointOut] = []


def new_ids() -> tuple[int, int]:
    """A random (trace id, span id), never zero (zero means invalid in OTLP)."""
    return int.from_bytes(os.urandom(16), "big") or 1, int.from_bytes(os.urandom(8), "big") or 1


def translate(record: Mapping[str, object], open_spans: OpenSpans, out: Translation) -> None:
    """Add what one record exports to out; a start is kept in open_spans, an end takes its start.
    Unusable: the record exports nothing (and changes nothing)."""
    name = _text(record, "name")
    span_name = SPAN_NAMES.get(name)
    if span_name is None:
        return
    time_ns = record.get("time_ns")
    if type(time_ns) is not int or not 0 <= time_ns <= INT64_MAX:
        raise Unusable("its time_ns is not a time in nanoseconds")
    data = _mapping(record.get("data"))
    variables = _mapping(record.get("env"))
    env = {key: _text(variables, key) for key, value in variables.items() if isinstance(value, str)}
    admits = Policy(env).admits
    attributes = event_attributes(record, span_name, data)
    log_attributes = {**attributes, **_outcome(data)}
    logs = out.logs if admits(span_name) else []
    if name in STARTS:
        ids = new_ids()
        entry = {"key": _key(name, data), "name": span_name, "start_ns": time_ns, "attributes": attributes}
        open_spans.open({**entry, "trace_id": f"{ids[0]:032x}", "span_id": f"{ids[1]:016x}"})
        logs.append(LogOut(span_name, time_ns, ids, log_attributes))
        return
    start = open_spans.close(_key(END_OF[name], data), time_ns) if name in END_OF else None
    if start is None:  # Scion's single span, started and ended at once
        ids = new_ids()
        if admits(span_name):
            out.spans.append(SpanOut(span_name, ids, time_ns, time_ns, attributes, data))
        logs.append(LogOut(span_name, time_ns, ids, log_attributes))
        _points(name, data, env, None, out)
        return
    start_ns = _int(start["start_ns"])
    end_ns = max(time_ns, start_ns)  # a wall clock stepped back between two processes: no negative span
    duration_ms = (end_ns - start_ns) // 1_000_000
    ids = (int(str(start["trace_id"]), 16), int(str(start["span_id"]), 16))
    start_attributes = _mapping(start["attributes"])
    span_attributes = {**start_attributes, "duration_ms": duration_ms, **_outcome(data)}
    if _text(data, "tool_output"):
        span_attributes["tool_output"] = _text(data, "tool_output")
    if admits(str(start["name"])):
        out.spans.append(SpanOut(str(start["name"]), ids, start_ns, end_ns, span_attributes, data))
    logs.append(LogOut(span_name, time_ns, ids, log_attributes))
    _points(name, data, env, duration_ms, out)


def event_attributes(
    record: Mapping[str, object], span_name: str, data: Mapping[str, object]
) -> dict[str, object]:
    """A span's attributes: event.name, then each field the event carries (model: its own only)."""
    found: dict[str, object] = {"event.name": span_name}
    for key, field in (("event.raw_name", "raw_name"), ("event.dialect", "dialect")):
        value = _text(record, field)
        if value:
            found[key] = value
    for field in ATTRIBUTE_FIELDS:
        value = _text(data, field)
        if value:
            found[field] = value
    model = _text(data, "model")
    if model.strip():
        found["model"] = cut_label(model)
    return found


def _outcome(data: Mapping[str, object]) -> dict[str, object]:
    """success, error and the token counts > 0: what an end adds to its span and every log record carries."""
    found: dict[str, object] = {}
    if data.get("success") is True:
        found["success"] = True
    if _text(data, "error"):
        found["error"] = _text(data, "error")
    for key, field in _USAGE_ATTRIBUTES:
        if _int(data.get(field)) > 0:
            found[key] = _int(data.get(field))
    return found


def _points(
    name: str, data: Mapping[str, object], env: Mapping[str, str], duration_ms: int | None, out: Translation
) -> None:
    common = metric_attributes(env)
    status = "error" if _text(data, "error") else "success"
    if name == "tool-end":
        tool = {**common, "tool_name": _text(data, "tool_name")}
        out.points.append(PointOut("agent.tool.calls", 1, {**tool, "status": status}))
        if duration_ms is not None:
            out.points.append(PointOut("agent.tool.duration", float(duration_ms), tool, histogram=True))
    elif name == "model-end":
        model = model_label(_text(data, "model"), env)
        if usage_from_hooks(env):
            out.points.append(PointOut("gen_ai.api.calls", 1, {**common, "model": model, "status": status}))
            _tokens(data, env, model, out)
        if duration_ms is not None:
            out.points.append(
                PointOut(
                    "gen_ai.api.duration", float(duration_ms), {**common, "model": model}, histogram=True
                )
            )
    elif name == "session-end":
        session_status = "error" if _text(data, "error") else "completed"
        out.points.append(PointOut("agent.session.count", 1, {**common, "status": session_status}))
    if name != "model-end" and _int(data.get("api_calls")) and usage_from_hooks(env):
        # The model calls a turn's transcript told of (handlers/usage.py), with their tokens.
        model = model_label(_text(data, "model"), env)
        calls = _int(data.get("api_calls"))
        out.points.append(
            PointOut("gen_ai.api.calls", calls, {**common, "model": model, "status": "success"})
        )
        _tokens(data, env, model, out)


def _tokens(data: Mapping[str, object], env: Mapping[str, str], model: str, out: Translation) -> None:
    harness = {"harness": env["SCION_HARNESS"]} if env.get("SCION_HARNESS") else {}
    for token_type, field in _TOKEN_TYPES:
        count = _int(data.get(field))
        if count > 0:
            labels = {**harness, "model": model, "token_type": token_type}
            out.points.append(PointOut("scion.usage.tokens", count, labels))


def _key(start_event: str, data: Mapping[str, object]) -> str:
    """What pairs an end with its start: the start's event, the session and the tool."""
    return "\x00".join((start_event, _text(data, "session_id"), _text(data, "tool_name")))


def _text(data: Mapping[str, object], field: str) -> str:
    value = data.get(field)
    return clean(cut(value, VALUE_LIMIT)) if isinstance(value, str) else ""


def _int(value: object) -> int:
    """A count: 0 for anything else, or for more than an OTLP int64 holds."""
    return value if type(value) is int and value <= INT64_MAX else 0


def _mapping(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}
