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
        ("dialect: mine\nevent_name_field: x\nresponses: {A: {at: 2024-01-01}}\n", "cannot carry the date"),
    ],
)
def test_refused_with_a_message(text: str, message: str) -> None:
    found = problems(text)
    assert found and any(message in p for p in found), found


HEAD = "dialect: mine\nevent_name_field: hook_event_name\n"


def test_resumes_after_wait_names_mapped_events_that_set_an_activity() -> None:
    found = problems(
        """\
        dialect: mine
        event_name_field: hook_event_name
        mappings:
          PostToolUse:
            event: tool-end
          SubagentStop:
            event: subagent-end
        options:
          resumes_after_wait: [PostToolUse, PostToolUs, SubagentStop]
        """
    )
    assert found == [
        "d.yaml:9:37: options.resumes_after_wait: 'PostToolUs' is not a raw event in 'mappings'"
        " (did you mean 'PostToolUse'?)",
        "d.yaml:9:49: options.resumes_after_wait: 'SubagentStop' maps to subagent-end, which sets no activity",
    ]
    spec, found = check_text(
        HEAD + "mappings: {A: {event: tool-end}}\noptions: {resumes_after_wait: [A]}\n", "d"
    )
    assert found == [] and spec is not None and spec.options.given == {"resumes_after_wait": ["A"]}


def test_model_call_events_name_mapped_events() -> None:
    found = problems(
        """\
        dialect: mine
        event_name_field: hook_event_name
        mappings:
          PostToolBatch:
            event: tool-end
        options:
          model_call_events: [PostToolBatch, PostToolBach]
        """
    )
    assert found == [
        "d.yaml:7:38: options.model_call_events: 'PostToolBach' is not a raw event in 'mappings'"
        " (did you mean 'PostToolBatch'?)",
    ]


def test_yaml_is_read_as_yaml_1_2_like_scions_yaml_v3() -> None:
    text = HEAD + textwrap.dedent(
        """\
        mappings:
          on:
            event: tool-start
          yes:
            event: tool-end
            fields:
          "off":
            event: agent-end
            fields: {tool_name: 12:30, message: .on.yes}
        responses:
          on: {a: yes, b: no, c: on, d: off, e: y, f: True, g: ~, h: 12:30, i: 1e3}
          yes: {octal: 0o755, old-octal: 0755, hex: 0x1F, binary: 0b101, big: 1_000, dot: .5}
          "off": {2026-01-01: quoted keys are text, 5: so are numbers, date: "2026-01-01"}
        """
    )
    spec, found = check_text(text, "d.yaml")
    assert found == [] and spec is not None
    assert {raw: (m.event, m.fields) for raw, m in spec.mappings.items()} == {
        "on": ("tool-start", {}),
        "yes": ("tool-end", {}),
        "off": ("agent-end", {"tool_name": ("12:30",), "message": ("on", "yes")}),
    }
    assert spec.responses == {
        "on": {
            "a": "yes",
            "b": "no",
            "c": "on",
            "d": "off",
            "e": "y",
            "f": True,
            "g": None,
            "h": "12:30",
            "i": 1000.0,
        },
        "yes": {"octal": 493, "old-octal": 493, "hex": 31, "binary": 5, "big": 1000, "dot": 0.5},
        "off": {"2026-01-01": "quoted keys are text", "5": "so are numbers", "date": "2026-01-01"},
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (".nan", "d.yaml:5:8: responses.A.x: a JSON response cannot carry nan"),
        ("-.Inf", "d.yaml:5:8: responses.A.x: a JSON response cannot carry -inf"),
        ("2026-01-01", "d.yaml:5:8: responses.A.x: a JSON response cannot carry the date 2026-01-01"),
        ("2026-1-2T10:00:00Z", "d.yaml:5:8: responses.A.x: a JSON response cannot carry the date"),
        ("9007199254740993", "d.yaml:5:8: responses.A.x: a JSON response cannot carry 9007199254740993:"),
        ("[1, {z: [.inf]}]", "d.yaml:5:17: responses.A.x[1].z[0]: a JSON response cannot carry inf"),
        (
            "{1: one}",
            "d.yaml:5:9: responses.A.x: a JSON response cannot carry the key 1, which is not a string",
        ),
        ("{a: 1, a: 2}", "d.yaml:5:15: responses.A.x: duplicate key 'a'"),
        ("!!int twelve", "d.yaml:5:8: invalid YAML: cannot decode 'twelve' as int"),
    ],
)
def test_response_values_json_cannot_carry_are_refused_at_their_place(value: str, message: str) -> None:
    found = problems(HEAD + f"responses:\n  A:\n    x: {value}\n")
    assert len(found) == 1 and found[0].startswith(message), found


def test_values_that_are_fine_in_json_are_kept_exactly() -> None:
    spec, found = check_text(
        HEAD + "responses:\n  A: {max: 9007199254740992, f: 1e300, neg: -0x10}\n", "d.yaml"
    )
    assert found == [] and spec is not None
    assert spec.responses == {"A": {"max": 2**53, "f": 1e300, "neg": -16}}
