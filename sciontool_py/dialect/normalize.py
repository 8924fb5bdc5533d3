"""Raw envelope -> canonical event, by the rules of Scion's mapping dialect."""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.errors import EventError
from sciontool_py.event import CanonicalEvent
from sciontool_py.vocabulary import FIELD_KINDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.dialect.spec import DialectSpec

_DEFAULT_STRINGS = ("prompt", "tool_name", "message", "reason", "source", "session_id", "error")
_INT64_MAX = 2**63 - 1


def raw_event_name(spec: DialectSpec, payload: dict[str, object]) -> str:
    for field in spec.name_fields:
        value = payload.get(field)
        if isinstance(value, str) and value:
            return value
    raise EventError(f"event name field(s) [{' '.join(spec.name_fields)}] missing or empty in input data")


def normalize(spec: DialectSpec, payload: object) -> CanonicalEvent:
    """Map one decoded envelope through a dialect; raises EventError on bad input."""
    if not isinstance(payload, dict):
        raise EventError(f"envelope must be a JSON object, not {_json_kind(payload)}")
    raw_name = raw_event_name(spec, payload)
    mapping = spec.mappings.get(raw_name)
    data: dict[str, object] = {}
    for field in _DEFAULT_STRINGS:
        value = payload.get(field)
        if isinstance(value, str) and value:
            data[field] = value
    for field in ("tool_input", "tool_output"):
        value = payload.get(field)
        if isinstance(value, str) and value:
            data[field] = value
    success = payload.get("success")
    if isinstance(success, bool):
        data["success"] = success
    if mapping is not None:
        for field, segments in mapping.fields.items():
            _apply_field(data, field, _walk(payload, segments))
    _extract_tokens(data, payload)
    file_path = _file_path(payload)
    if file_path:
        data["file_path"] = file_path
    name = mapping.event if mapping is not None else raw_name
    if (
        name == "agent-end"
        and not data.get("assistant_text")
        and spec.options.get("transcript_assistant_text")
    ):
        transcript = payload.get("transcript_path")
        if isinstance(transcript, str) and transcript:
            from sciontool_py.dialect.transcript import last_assistant_text

            text = last_assistant_text(transcript)
            if text:
                data["assistant_text"] = text
    return CanonicalEvent(name, raw_name, spec.name, data, payload)


def _walk(payload: dict[str, object], segments: tuple[str, ...]) -> object:
    value: object = payload
    for segment in segments:
        if not isinstance(value, dict):
            return None
        value = value.get(segment)
    return value


def _token(value: object) -> int:
    """A positive token count from a JSON number, else 0 (Go truncates toward zero)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not -9.3e18 < value < 9.3e18:
        return 0  # outside int64: Go's conversion gives no meaningful count
    count = int(value)
    return count if 0 < count <= _INT64_MAX else 0


def _apply_field(data: dict[str, object], field: str, value: object) -> None:
    kind = FIELD_KINDS[field]
    if kind == "string":
        if isinstance(value, str) and value:
            data[field] = value
    elif kind == "any":
        if value is None:
            return
        text = value if isinstance(value, str) else gojson.dumps(value)
        if text:
            data[field] = text
    elif kind == "number":
        count = _token(value)
        if count:
            data[field] = count
    elif isinstance(value, bool):
        data[field] = value


def _extract_tokens(data: dict[str, object], payload: dict[str, object]) -> None:
    found = _tokens_in(payload)
    if not found[0] and not found[1]:
        usage = payload.get("usage")
        if isinstance(usage, dict):
            found = _tokens_in(usage)
    for field, count in zip(("input_tokens", "output_tokens", "cached_tokens"), found, strict=True):
        if count:
            data[field] = count


def _tokens_in(obj: dict[str, object]) -> tuple[int, int, int]:
    return (
        _token(obj.get("input_tokens")) or _token(obj.get("prompt_tokens")),
        _token(obj.get("output_tokens")) or _token(obj.get("completion_tokens")),
        _token(obj.get("cached_tokens")) or _token(obj.get("cache_read_input_tokens")),
    )


def _file_path(payload: dict[str, object]) -> str:
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, dict):
        value = tool_input.get("file_path")
        if isinstance(value, str) and value:
            return value
    response = payload.get("tool_response")
    if isinstance(response, dict):
        for key in ("filePath", "file_path"):
            value = response.get(key)
            if isinstance(value, str) and value:
                return value
    value = payload.get("file_path")
    return value if isinstance(value, str) else ""


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__
