"""dialect.yaml validation: typos fail loudly, at their line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sciontool_py.dialect.discover import list_dialects
from sciontool_py.dialect.validate import check_text

SHIPPED = {"core-agent", "claude", "gemini", "codex", "opencode", "agentino"}


def problems(text: str) -> list[str]:
    spec, found = check_text(textwrap.dedent(text), "d.yaml")
    assert (spec is None) == bool(found)
    return [str(p) for p in found]


def test_every_shipped_dialect_is_valid_and_listed() -> None:
    listed = dict(list_dialects())
    assert set(listed) >= SHIPPED
    for name in SHIPPED:
        spec, found = check_text(Path(listed[name]).read_text(), listed[name])
        assert found == [] and spec is not None and spec.name == name


def test_misspelled_canonical_event_names_the_right_one() -> None:
    found = problems(
        """\
        dialect: mine
        event_name_field: hook_event_name
        mappings:
          PreTool:
            event: tool-strat
        """
    )
    assert found == [
        "d.yaml:5:12: mappings.PreTool.event: 'tool-strat' is not a canonical event (did you mean 'tool-start'?)"
    ]


def test_all_problems_are_reported_with_lines() -> None:
    found = problems(
        """\
        dialect: mine
        event_name_field: hook_event_name
        mapings: {}
        mappings:
          A:
            event: agent-end
            feilds: {}
          B:
            event: tool-start
            fields:
              tool_nam: .name
              tool_input: ..x
        responses:
          A: [1]
        """
    )
    assert found == [
        "d.yaml:3:1: dialect file: unknown key 'mapings' (did you mean 'mappings'?)",
        "d.yaml:7:5: mappings.A: unknown key 'feilds' (did you mean 'fields'?)",
        "d.yaml:11:7: mappings.B.fields: 'tool_nam' is not an event data field (did you mean 'tool_name'?)",
        "d.yaml:12:19: mappings.B.fields.tool_input: malformed path '..x' (expected .key or .a.b.c)",
        "d.yaml:14:6: responses.A: must be a mapping (printed as a JSON object)",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("event_name_field: x\n", "missing required key 'dialect'"),
        ("dialect: mine\n", "missing required key 'event_name_field' or 'event_name_fields'"),
        ("dialect: ../etc\nevent_name_field: x\n", "must match [a-z0-9][a-z0-9._-]*"),
        ("dialect: mine\nevent_name_fields: []\n", "must be a non-empty list"),
        ("dialect: [x\n", "invalid YAML"),
        ("- a\n- b\n", "dialect file must be a mapping"),
        ("", "the file is empty"),
        ("dialect: mine\ndialect: again\nevent_name_field: x\n", "duplicate key 'dialect'"),
        ("dialect: mine\nevent_name_field: x\noptions: {input_tools: yes}\n", "must be a list of strings"),
        ("dialect: mine\nevent_name_field: x\noptions: {colour: red}\n", "unknown key 'colour'"),
        ("a: &x [1]\nb: *x\n", "aliases (*name) are not allowed"),
        ("dialect: !!python/object:os.system x\nevent_name_field: x\n", "python/object"),
        ("dialect: mine\nevent_name_field: x\nresponses: {A: {at: 2024-01-01}}\n", "JSON cannot carry"),
    ],
)
def test_refused_with_a_message(text: str, message: str) -> None:
    found = problems(text)
    assert found and any(message in p for p in found), found
