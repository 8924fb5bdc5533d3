"""Fuzzing dialect + envelope together: validation never raises, normalization succeeds
with JSON-serializable output or raises SciontoolError, and the in-process `sciontool
hook` entry never exits 2 nor reports an internal error.

`make test` runs 50 examples per test, a smoke run that keeps the targets working;
`make fuzz` runs SCIONTOOL_FUZZ_EXAMPLES (20000) per test.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sciontool_py import gojson
from sciontool_py.dialect.normalize import normalize
from sciontool_py.dialect.validate import check_text
from sciontool_py.errors import JSONError, SciontoolError
from sciontool_py.fastpath import guarded, hook_command
from sciontool_py.vocabulary import EVENTS, FIELD_KINDS

pytestmark = pytest.mark.fuzz
EXAMPLES = int(os.environ.get("SCIONTOOL_FUZZ_EXAMPLES", "50"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    # The hook test builds its own temp HOME per example; the fixture only patches globals.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

json_scalars = (
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
# Raw names and keys from a small pool, so envelopes and dialects meet often.
words = st.sampled_from(
    ["e", "event", "type", "tool", "name", "input", "usage", "a", "b", "Stop", "tool_name"]
)
good_paths = st.lists(words, min_size=1, max_size=3).map(lambda parts: "." + ".".join(parts))


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, bytes]:
    """(dialect.yaml text, envelope bytes).

    Three dialects in four are valid, and most envelopes carry one of the
    dialect's name fields with one of its raw names, so mappings get applied;
    the rest is wrong in some way.
    """
    valid = draw(st.integers(0, 3)) > 0
    events = st.sampled_from(EVENTS) if valid else st.sampled_from(EVENTS) | st.text(max_size=12)
    fields = st.sampled_from(sorted(FIELD_KINDS)) if valid else st.sampled_from(sorted(FIELD_KINDS)) | words
    paths = good_paths if valid else good_paths | st.text(max_size=8)
    doc: dict[str, object] = {
        "dialect": "fuzz" if valid else draw(st.text(max_size=6)),
        "event_name_fields": draw(st.lists(words, min_size=1, max_size=3)),
        "mappings": draw(
            st.dictionaries(
                words,
                st.fixed_dictionaries(
                    {"event": events, "fields": st.dictionaries(fields, paths, max_size=4)}
                ),
            )
        ),
    }
    if draw(st.booleans()):
        doc["responses"] = draw(
            st.dictionaries(words, st.dictionaries(st.text(max_size=5), json_values, max_size=3))
        )
    if draw(st.booleans()):
        doc["options"] = {
            "input_tools": draw(st.lists(words, max_size=3)),
            "transcript_assistant_text": True,
            "assistant_blocks": draw(st.booleans()),
        }
    text = yaml.safe_dump(doc, sort_keys=False)
    if not valid and draw(st.booleans()):  # damage the YAML itself
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.text(alphabet="[]{}:&*!-'\"\n #|>", max_size=4)) + text[cut:]
    name_fields: list[str] = doc["event_name_fields"]  # type: ignore[assignment]
    raw_names = [*doc["mappings"], "unmapped"]  # type: ignore[list-item, misc]
    return text, draw(envelope_bytes(name_fields, raw_names))


@st.composite
def envelope_bytes(draw: st.DrawFn, name_fields: list[str], raw_names: list[str]) -> bytes:
    kind = draw(st.integers(0, 9))  # Hypothesis favours small draws: 0 is the common, useful case
    if kind == 9:
        return draw(st.binary(max_size=40))  # anything at all
    if kind == 8:
        return gojson.dumps(draw(json_values)).encode()  # any JSON value
    body = draw(st.dictionaries(words, json_values, max_size=6))
    name = draw(st.sampled_from(raw_names)) if kind < 6 else draw(json_values)
    body[draw(st.sampled_from(name_fields))] = name
    text = gojson.dumps(body)
    if kind == 7:
        text = text[: draw(st.integers(0, len(text)))]  # cut short
    return text.encode()


@FUZZ
@given(cases())
def test_normalize_succeeds_with_json_output_or_raises_our_error(case: tuple[str, bytes]) -> None:
    dialect, data = case
    spec, problems = check_text(dialect, "fuzz.yaml")  # must not raise, whatever the YAML
    assert (spec is None) == bool(problems)
    if spec is None:
        return
    try:
        payload = gojson.loads(data.decode("utf-8", "replace"))
    except JSONError:
        return
    try:
        event = normalize(spec, payload)
    except SciontoolError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert json.loads(event.to_json(include_raw=True))["name"] == event.name


@FUZZ
@given(cases())
def test_the_hook_entry_never_exits_2_nor_fails_internally(
    monkeypatch: pytest.MonkeyPatch, case: tuple[str, bytes]
) -> None:
    dialect, data = case
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "dialect.yaml")
        with open(path, "w", encoding="utf-8") as out:
            out.write(dialect)
        os.mkdir(os.path.join(tmp, "home"))
        monkeypatch.setenv("HOME", os.path.join(tmp, "home"))
        monkeypatch.setenv("SCIONTOOL_CACHE_DIR", os.path.join(tmp, "cache"))
        for name in ("SCION_HUB_ENDPOINT", "SCION_HUB_URL", "SCION_MAX_TURNS", "SCION_MAX_MODEL_CALLS"):
            monkeypatch.delenv(name, raising=False)
        stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        monkeypatch.setattr(sys, "stdout", io.StringIO())
        monkeypatch.setattr(sys, "stderr", stderr)
        code = guarded("hook", hook_command, [f"--dialect-file={path}"])
        stderr.flush()
        errors = stderr.buffer.getvalue().decode("utf-8", "replace")  # type: ignore[attr-defined]
    assert "internal error" not in errors and "Traceback" not in errors
    if code == 1:
        assert errors.splitlines()[-1].startswith("sciontool hook: ")
