"""Raw envelope -> canonical event, by the rules of Scion's mapping dialect."""

from __future__ import annotations

from sciontool_py.codec import GO
from sciontool_py.errors import EventError
from sciontool_py.event import CanonicalEvent
from sciontool_py.vocabulary import PAYLOAD_FIELDS, STRING_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.codec import GoCodec
    from sciontool_py.dialect.spec import DialectSpec, Mapping

# The top-level keys each step of event_data reads. keys_that_fill_data is their union, and the
# normalize stream writes an envelope with none of them from a template, so a step that reads a
# new key must add it to its table here.
# Defaults: strings, tool payloads only as strings, success as a boolean.
DEFAULT_KEYS = frozenset((*STRING_FIELDS, "error", *PAYLOAD_FIELDS, "success"))
TOKEN_KEYS = frozenset(
    (
        "usage",
        "input_tokens",
        "prompt_tokens",
        "output_tokens",
        "completion_tokens",
        "cached_tokens",
        "cache_read_input_tokens",
    )
)
FILE_PATH_KEYS = frozenset(("tool_input", "tool_response", "file_path"))
TRANSCRIPT_KEYS = frozenset(("transcript_path",))  # agent-end, with the dialect's transcript option
_INT64_MAX = 2**63 - 1


def raw_event_name(spec: DialectSpec, payload: dict[str, object], fallback: str | None = None) -> str:
    """The first non-empty string among the dialect's name fields; else fallback (the name a
    harness gives on the command line when its envelopes carry none, as agentino's do)."""
    for field in spec.name_fields:
        value = payload.get(field)
        if isinstance(value, str) and value:
            return value
    if fallback:
        return fallback
    # Scion's message, plus what was there instead when it was not a string.
    wrong = [
        f"{f} is {_json_kind(payload[f])}"
        for f in spec.name_fields
        if not isinstance(payload.get(f, ""), str)
    ]
    detail = f" ({', '.join(wrong)}, not a string)" if wrong else ""
    raise EventError(
        f"event name field(s) [{' '.join(spec.name_fields)}] missing or empty in input data{detail}"
    )


def keys_that_fill_data(spec: DialectSpec, raw_name: str) -> frozenset[str]:
    """Top-level keys without which the event of raw_name has empty data."""
    mapping = spec.mappings.get(raw_name)
    keys = DEFAULT_KEYS | TOKEN_KEYS | FILE_PATH_KEYS
    if mapping is not None:
        keys |= {path[0] for path in mapping.fields.values()}
    if _reads_transcript(spec, mapping.event if mapping is not None else raw_name):
        keys |= TRANSCRIPT_KEYS
    return keys


def normalize(
    spec: DialectSpec, payload: object, codec: GoCodec = GO, fallback_name: str | None = None
) -> CanonicalEvent:
    """Map one decoded envelope through a dialect; raises EventError on bad input.

    codec writes object payloads as Go's json.Marshal would (the normalize
    stream passes a faster one that gives the same bytes). fallback_name is the
    raw event name when the envelope names none (`hook --event`); a name in the
    envelope wins.
    """
    if not isinstance(payload, dict):
        raise EventError(f"envelope must be a JSON object, not {_json_kind(payload)}")
    raw_name = raw_event_name(spec, payload, fallback_name)
    mapping = spec.mappings.get(raw_name)
    name = mapping.event if mapping is not None else raw_name
    data = event_data(spec, payload, name, mapping, codec)
    return CanonicalEvent(name, raw_name, spec.name, data, payload)


def event_data(
    spec: DialectSpec,
    payload: dict[str, object],
    name: str,
    mapping: Mapping | None,
    codec: GoCodec,
) -> dict[str, object]:
    """The data fields of the event `name` (by `mapping`, if any) from an envelope."""
    encode = codec.payload_text
    data: dict[str, object] = {}
    for field, value in payload.items():  # envelopes have few keys; cheaper than a set intersection
        if field in DEFAULT_KEYS:
            if field == "success":
                if value is True or value is False:
                    data[field] = value
            elif type(value) is str and value:
                data[field] = value
    if mapping is not None:
        for field, key in mapping.top_strings:
            value = payload.get(key)
            if type(value) is str and value:
                data[field] = value
        for field, key in mapping.top_payloads:
            value = payload.get(key)
            if value is not None:
                text = value if type(value) is str else encode(value)
                if text:
                    data[field] = text
        for field, kind, path in mapping.nested:
            value = payload
            for key in path:
                value = value.get(key) if type(value) is dict else None
            if value is None:
                continue  # a missing path changes nothing
            if kind == "string":
                if type(value) is str and value:
                    data[field] = value
            elif kind == "any":
                text = value if type(value) is str else encode(value)
                if text:
                    data[field] = text
            elif kind == "number":
                count = token_count(value)
                if count:
                    data[field] = count
            elif type(value) is bool:
                data[field] = value
            elif type(value) is str and value.casefold() == "success":  # Copilot's resultType
                data[field] = True
    if not TOKEN_KEYS.isdisjoint(payload):
        extract_tokens(data, payload)
    # FILE_PATH_KEYS, narrowed: a tool_input object counts only when it holds a file_path.
    tool_input = payload.get("tool_input")
    if (
        (type(tool_input) is dict and "file_path" in tool_input)
        or "tool_response" in payload
        or "file_path" in payload
    ):
        file_path = _file_path(payload)
        if file_path:
            data["file_path"] = file_path
    if name == "agent-end" and spec.options:
        blocks = spec.options.assistant_blocks
        if blocks or (_reads_transcript(spec, name) and not data.get("assistant_text")):
            _assistant_turn(spec, payload, mapping, data, blocks)
    return data


def _reads_transcript(spec: DialectSpec, name: str) -> bool:
    """Whether an event of this canonical name may take its assistant text from the transcript."""
    return name == "agent-end" and spec.options.transcript_assistant_text


def _assistant_turn(
    spec: DialectSpec,
    payload: dict[str, object],
    mapping: Mapping | None,
    data: dict[str, object],
    blocks: bool,
) -> None:
    """An agent-end's assistant text (and with assistant_blocks its content) as Scion's claude
    dialect reads it: from the final message, else from the transcript."""
    from sciontool_py.assistant import from_message

    content = None
    if blocks:
        data.pop("assistant_text", None)  # read again below: blocks, not a plain string
        path = mapping.fields.get("assistant_text") if mapping is not None else None
        if path is not None:
            content = from_message(_walk(payload, path))
    if content is None and spec.options.transcript_assistant_text:
        transcript = payload.get("transcript_path")
        if type(transcript) is str and transcript:
            from sciontool_py.dialect.transcript import last_assistant_turn

            content = last_assistant_turn(transcript)
    if content is None:
        return
    text = content.text_only()
    if text:
        data["assistant_text"] = text
    if blocks:
        data["assistant_content"] = content


def _walk(payload: dict[str, object], path: tuple[str, ...]) -> object:
    value: object = payload
    for key in path:
        value = value.get(key) if type(value) is dict else None
    return value


def token_count(value: object) -> int:
    """A positive token count from a JSON number, else 0 (Go truncates toward zero)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not -9.3e18 < value < 9.3e18:
        return 0  # outside int64: Go's conversion gives no meaningful count
    count = int(float(value))  # through float64, as Go decodes every number
    return count if 0 < count <= _INT64_MAX else 0


# (field, its own name, the other name read only while the field is still 0)
TOKEN_NAMES = (
    ("input_tokens", "input_tokens", "prompt_tokens"),
    ("output_tokens", "output_tokens", "completion_tokens"),
    ("cached_tokens", "cached_tokens", "cache_read_input_tokens"),
)


def extract_tokens(data: dict[str, object], payload: dict[str, object]) -> None:
    """Scion's shared extraction, on the data as the mapping left it: a count replaces a
    field only when > 0, and `usage` is read only while input and output are both 0."""
    _take_tokens(data, payload)
    if "input_tokens" not in data and "output_tokens" not in data:
        usage = payload.get("usage")
        if type(usage) is dict:
            _take_tokens(data, usage)


def _take_tokens(data: dict[str, object], source: dict[str, object]) -> None:
    # Most of these names are missing: a call of token_count only for a value.
    for field, name, other in TOKEN_NAMES:
        value = source.get(name)
        count = token_count(value) if value is not None else 0
        if count:
            data[field] = count
        elif field not in data:
            value = source.get(other)
            count = token_count(value) if value is not None else 0
            if count:
                data[field] = count


def _file_path(payload: dict[str, object]) -> str:
    tool_input = payload.get("tool_input")
    if type(tool_input) is dict:
        value = tool_input.get("file_path")
        if type(value) is str and value:
            return value
    response = payload.get("tool_response")
    if type(response) is dict:
        for key in ("filePath", "file_path"):
            value = response.get(key)
            if type(value) is str and value:
                return value
    value = payload.get("file_path")
    return value if type(value) is str else ""


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__
