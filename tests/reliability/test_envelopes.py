"""Whatever a tool returned ends up in an envelope: bad ones get one clear line and exit 1,
and normalization of any JSON value either works or raises the package's own error."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from conftest import REPO, TIMED, Agent
from hypothesis import given
from hypothesis import strategies as st

from sciontool_py import gojson
from sciontool_py.dialect.discover import find_dialect
from sciontool_py.dialect.normalize import normalize
from sciontool_py.errors import SciontoolError

CORPUS = REPO / "tests" / "data" / "bad-envelopes"
SEEDED = b'{\n  "activity": "working",\n  "keep": "me"\n}'
SCIONTOOL = Path(sys.executable).with_name("sciontool")

EXPECTED = {
    "invalid-json.json": "envelope: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 53",
    "top-level-array.json": "envelope must be a JSON object, not an array",
    "top-level-string.json": "envelope must be a JSON object, not a string",
    "top-level-number.json": "envelope must be a JSON object, not a number",
    "top-level-null.json": "envelope must be a JSON object, not null",
    "invalid-utf8-outside-a-string.json": (
        "envelope: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 35"
    ),
    "nul-byte.json": "envelope: invalid JSON: Invalid control character at: line 1 column 50",
    "deep-nesting.json": "envelope: invalid JSON: exceeded max depth of 10000",
    "non-string-event-name.json": (
        "event name field(s) [hook_event_name] missing or empty in input data (hook_event_name is a number, not a string)"
    ),
    "only-whitespace.json": "envelope is blank: expected one JSON object",
}


def test_the_corpus_is_complete() -> None:
    assert sorted(p.name for p in CORPUS.iterdir()) == sorted(EXPECTED)


def assert_refused(agent: Agent, result: subprocess.CompletedProcess[bytes], message: str) -> None:
    assert result.returncode == 1
    assert result.stderr.decode() == f"sciontool hook: {message}\n"  # one line, no traceback
    assert result.stdout == b""
    assert (agent.home / "agent-info.json").read_bytes() == SEEDED
    assert sorted(p.name for p in agent.home.iterdir()) == ["agent-info.json"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_envelope_is_one_line_exit_1_and_changes_nothing(agent: Agent, name: str) -> None:
    (agent.home / "agent-info.json").write_bytes(SEEDED)
    result = agent.hook((CORPUS / name).read_bytes(), "--dialect=core-agent")
    assert_refused(agent, result, EXPECTED[name])


@pytest.mark.parametrize(
    "envelope",
    [
        b'{"hook_event_name": "tool-start", "tool_name": "grep\xff\xfe"}',
        b'{"hook_event_name": "tool-start", "tool_name": "grep\\udc00\\ud800"}',
    ],
    ids=["invalid-utf8", "lone-surrogates"],
)
def test_bad_characters_in_a_string_become_u_fffd_and_the_event_counts(agent: Agent, envelope: bytes) -> None:
    # As Go's decoder: the event is processed, not lost.
    result = agent.hook(envelope, "--dialect=core-agent")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert agent.info == {"activity": "executing", "toolName": "grep\ufffd\ufffd"}
    assert agent.log_lines[-1].endswith("[executing] Running tool: grep\ufffd\ufffd")


def fifty_megabytes(tool_output: str) -> bytes:
    return b'{"hook_event_name": "tool-end", "tool_name": "cat", "tool_output": "' + tool_output.encode()


def run_big(agent: Agent, data: bytes) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """The hook on data, and the CPU seconds it took (load on the machine does not change them)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(
        [str(SCIONTOOL), "hook", "--dialect=core-agent"],
        input=data,
        capture_output=True,
        env=agent.env,
        timeout=60,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


@pytest.mark.slow
@TIMED
def test_a_50_mb_envelope_cut_short_is_refused_in_one_line(agent: Agent) -> None:
    (agent.home / "agent-info.json").write_bytes(SEEDED)
    result, cpu = run_big(agent, fifty_megabytes("x" * 50_000_000))  # the string never ends
    assert_refused(agent, result, "envelope: invalid JSON: Unterminated string starting at: line 1 column 68")
    assert cpu < 10, cpu


@pytest.mark.slow
@TIMED
def test_a_50_mb_tool_output_is_an_ordinary_event(agent: Agent) -> None:
    # Not refused: a tool may return that much, and refusing would lose the event.
    result, cpu = run_big(agent, fifty_megabytes("x" * 50_000_000) + b'"}')
    assert (result.returncode, result.stdout) == (0, b"")
    assert result.stderr == b""
    assert agent.log_lines[-1].endswith(" [sciontool] [INFO] [working] Tool cat completed")
    assert agent.info == {"activity": "working"}
    assert cpu < 10, cpu


# Values as Go's decoder (and gojson.loads) produce them: every number is a float64.
json_scalars = st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=30,
)
DIALECTS = ("core-agent", "claude", "gemini", "codex", "opencode", "agentino")
SPECS = {name: find_dialect(name) for name in DIALECTS}


def envelopes() -> st.SearchStrategy[tuple[str, object]]:
    """(dialect, envelope): any JSON value, or an object carrying one of the dialect's raw names."""

    @st.composite
    def named(draw: st.DrawFn) -> tuple[str, object]:
        dialect = draw(st.sampled_from(DIALECTS))
        spec = SPECS[dialect]
        body = draw(st.dictionaries(st.text(max_size=20), json_values, max_size=6))
        known = [*spec.mappings, "unmapped-event"]
        # Fields every dialect maps, so the paths in `fields:` meet objects, arrays and scalars.
        for key in ("tool_name", "tool_input", "tool_response", "usage", "prompt", "message", "success"):
            if draw(st.booleans()):
                body[key] = draw(json_values)
        body[draw(st.sampled_from(spec.name_fields))] = draw(st.sampled_from(known) | json_values)
        return dialect, body

    return st.tuples(st.sampled_from(DIALECTS), json_values) | named()


@given(envelopes())
def test_normalizing_any_json_value_succeeds_or_raises_our_error(case: tuple[str, object]) -> None:
    dialect, envelope = case
    try:
        event = normalize(SPECS[dialect], envelope)
    except SciontoolError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    line = event.to_json(include_raw=True)
    assert json.loads(line)["name"] == event.name


@given(json_values)
def test_gojson_round_trip_is_stable(value: object) -> None:
    text = gojson.dumps(value)
    assert gojson.loads(text) == value  # numbers are already float64, as Go decodes them
    assert gojson.dumps(gojson.loads(text)) == text
    assert json.loads(text, parse_int=float) == value  # and any JSON reader agrees


@given(json_values)
def test_gojson_indented_form_decodes_to_the_same_value(value: object) -> None:
    assert gojson.loads(gojson.dumps(value, indent="  ")) == value


def claude_stop(transcript: str) -> dict[str, object]:
    return {"hook_event_name": "Stop", "transcript_path": transcript}


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "/", "/nonexistent/t.jsonl"])
def test_a_transcript_path_that_is_not_a_regular_file_is_ignored(tmp_path: Path, special: str) -> None:
    # The envelope names the file: a FIFO would block the hook, /dev/zero is one endless line.
    if special == "fifo":
        special = str(tmp_path / "fifo")
        os.mkfifo(special)
    event = normalize(find_dialect("claude"), claude_stop(special))
    assert event.name == "agent-end" and "assistant_text" not in event.data


@pytest.mark.slow
def test_an_over_long_transcript_line_ends_the_reading_back_in_bounded_memory(tmp_path: Path) -> None:
    # The transcript is read from its end: a line longer than what is read back (Scion's
    # scanner stops at one over 16 MiB) ends the reading, and what came after it counts.
    transcript = tmp_path / "t.jsonl"
    before = {"type": "assistant", "message": {"content": "before the long line: never read"}}
    reply = {"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}]}}
    with open(transcript, "wb") as out:
        out.write(json.dumps(before).encode() + b"\n")
        out.write(b'{"type": "assistant", "pad": "' + b"x" * (48 << 20) + b'"}\n')
        out.write(json.dumps(reply).encode() + b"\n")
        out.write(b"[" * 100_000 + b"\n")  # nested too deeply for Go's decoder: skipped
    tracemalloc.start()
    try:
        event = normalize(find_dialect("claude"), claude_stop(str(transcript)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert event.data["assistant_text"] == "done"
    assert peak < 40 << 20, peak  # what is read back (4 MiB), never the 48 MiB line
