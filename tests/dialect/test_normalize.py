"""Normalization rules that fixtures cannot show on their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sciontool_py.dialect.discover import find_dialect
from sciontool_py.dialect.normalize import normalize
from sciontool_py.dialect.spec import DialectSpec, Mapping
from sciontool_py.errors import EventError


def spec(**kw: object) -> DialectSpec:
    args: dict[str, object] = {
        "name": "t",
        "name_fields": ("hook_event_name",),
        "mappings": {},
        "responses": {},
        "options": {},
        "source": "t.yaml",
    }
    args.update(kw)
    return DialectSpec(**args)  # type: ignore[arg-type]


def test_missing_event_name_names_every_field_tried() -> None:
    with pytest.raises(EventError) as err:
        normalize(spec(name_fields=("type", "event")), {"type": "", "event": 42})
    # Scion's message, then what stood where a name was expected.
    assert str(err.value) == (
        "event name field(s) [type event] missing or empty in input data (event is a number, not a string)"
    )


@pytest.mark.parametrize("value", [[1], "x", 3.0, None, True])
def test_non_object_envelope_is_an_event_error(value: object) -> None:
    with pytest.raises(EventError, match="must be a JSON object"):
        normalize(spec(), value)


def test_unmapped_event_passes_through_with_defaults() -> None:
    event = normalize(spec(), {"hook_event_name": "Custom", "tool_input": {"a": 1}, "success": False})
    assert json.loads(event.to_json()) == {"name": "Custom", "raw_name": "Custom", "dialect": "t", "data": {}}


def test_raw_is_the_whole_envelope_only_on_request() -> None:
    env = {"hook_event_name": "x", "n": 1.0}
    event = normalize(spec(), env)
    assert '"raw"' not in event.to_json()
    assert event.to_json(include_raw=True).endswith(',"data":{"raw":{"hook_event_name":"x","n":1}}}')


def test_mapped_fields_override_defaults() -> None:
    s = spec(mappings={"X": Mapping("tool-start", {"tool_name": ("inner", "name")})})
    event = normalize(s, {"hook_event_name": "X", "tool_name": "outer", "inner": {"name": "inner"}})
    assert event.name == "tool-start" and event.data["tool_name"] == "inner"


def test_claude_reads_assistant_text_from_the_transcript(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "stale"}]}},
        {"type": "user", "message": {"content": "next"}},
        {
            "type": "assistant",
            "message": {"content": [{"type": "text", "text": "Done "}, {"type": "tool_use"}]},
        },
        "not json",
        {"message": {"role": "assistant", "content": "and checked. "}},
    ]
    transcript.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    claude = find_dialect("claude")
    event = normalize(claude, {"hook_event_name": "Stop", "transcript_path": str(transcript)})
    assert event.data["assistant_text"] == "Done and checked."
    preferred = normalize(
        claude,
        {"hook_event_name": "Stop", "transcript_path": str(transcript), "last_assistant_message": "hi"},
    )
    assert preferred.data["assistant_text"] == "hi"
    gone = normalize(claude, {"hook_event_name": "Stop", "transcript_path": str(tmp_path / "missing")})
    assert "assistant_text" not in gone.data
    # A NUL byte in the path (Hypothesis found it): no such file, so no text, and no error.
    nul = normalize(claude, {"hook_event_name": "Stop", "transcript_path": "t\x00.jsonl"})
    assert nul.name == "agent-end" and "assistant_text" not in nul.data


def test_claude_keeps_the_transcripts_blocks_and_only_the_text_as_assistant_text(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"content": "fix it"}},
        {"type": "assistant", "message": {"content": [{"type": "thinking", "thinking": "hmm"}]}},
        {"type": 5, "message": {"content": "a wrong-typed entry is skipped whole"}},
        {"type": "assistant", "message": "not an object: skipped"},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": " Fixed. "}, None]}},
    ]
    transcript.write_text("\r\n".join(json.dumps(x) for x in lines) + "\r\n")
    event = normalize(find_dialect("claude"), {"hook_event_name": "Stop", "transcript_path": str(transcript)})
    assert json.loads(event.to_json())["data"] == {
        "assistant_text": "Fixed.",
        # A block's text is kept as sent; only the joined assistant_text is trimmed.
        "assistant_content": {
            "blocks": [{"type": "thinking", "text": "hmm"}, {"type": "text", "text": " Fixed. "}]
        },
    }
    # A final message with only thinking is content: the transcript is not read.
    only_thinking = {"hook_event_name": "Stop", "transcript_path": str(transcript)}
    only_thinking["last_assistant_message"] = [{"type": "thinking", "thinking": "still thinking"}]
    event = normalize(find_dialect("claude"), only_thinking)
    assert "assistant_text" not in event.data
    assert json.loads(event.to_json())["data"]["assistant_content"] == {
        "blocks": [{"type": "thinking", "text": "still thinking"}]
    }


def test_event_name_fields_win_over_the_legacy_field(tmp_path: Path) -> None:
    path = tmp_path / "dialect.yaml"
    path.write_text("dialect: t\nevent_name_field: legacy\nevent_name_fields: [type]\n")
    from sciontool_py.dialect.load import compile_dialect

    s = compile_dialect(str(path))
    with pytest.raises(EventError, match=r"\[type\]"):
        normalize(s, {"legacy": "x"})
