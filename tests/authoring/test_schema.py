"""The JSON Schema of dialect.yaml: generated, committed, and in agreement with the loader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, REPO
from jsonschema import Draft202012Validator

from sciontool_py.dialect.validate import check_text

SCHEMA_FILE = REPO / "dialects" / "dialect.schema.json"
DIALECT_FILES = sorted(REPO.glob("dialects/*/dialect.yaml")) + sorted(FIXTURES.glob("*/dialect.yaml"))
VALIDATOR = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))

HEAD = "dialect: mine\nevent_name_field: hook_event_name\n"
VALID = [
    HEAD,
    "dialect: a.b-c_1\nevent_name_fields: [type, event]\nevent_name_field: x\n",
    HEAD
    + "mappings:\n  A:\n    event: tool-start\n    fields:\n      tool_name: name\n      tool_input: .a.b.c\n",
    HEAD + "mappings: {}\nresponses:\n  A: {decision: allow}\noptions:\n  input_tools: [X]\n",
    HEAD + "options:\n  transcript_assistant_text: false\n",
    HEAD + "mappings:\n  A:\n    event: agent-end\n    fields:\nresponses:\noptions:\n",
    HEAD + "mappings:\n  A:\n    event: tool-end\noptions:\n  resumes_after_wait: [A]\n",
]
INVALID = {
    "no dialect": "event_name_field: x\n",
    "no name field": "dialect: mine\n",
    "bad name": "dialect: ../etc\nevent_name_field: x\n",
    "upper-case name": "dialect: Mine\nevent_name_field: x\n",
    "empty name fields": "dialect: mine\nevent_name_fields: []\n",
    "empty name field": "dialect: mine\nevent_name_field: ''\n",
    "misspelt top key": HEAD + "mapings: {}\n",
    "mappings not a mapping": HEAD + "mappings: [a]\n",
    "unknown event": HEAD + "mappings:\n  A:\n    event: tool-strat\n",
    "no event": HEAD + "mappings:\n  A:\n    fields: {}\n",
    "misspelt mapping key": HEAD + "mappings:\n  A:\n    event: agent-end\n    feilds: {}\n",
    "unknown field": HEAD + "mappings:\n  A:\n    event: agent-end\n    fields:\n      tool_nam: .x\n",
    "double dot": HEAD + "mappings:\n  A:\n    event: agent-end\n    fields:\n      prompt: ..x\n",
    "trailing dot": HEAD + "mappings:\n  A:\n    event: agent-end\n    fields:\n      prompt: .x.\n",
    "path space": HEAD + "mappings:\n  A:\n    event: agent-end\n    fields:\n      prompt: ' .x'\n",
    "path number": HEAD + "mappings:\n  A:\n    event: agent-end\n    fields:\n      prompt: 3\n",
    "response list": HEAD + "responses:\n  A: [1]\n",
    "unknown option": HEAD + "options:\n  transcript: true\n",
    "option type": HEAD + "options:\n  transcript_assistant_text: 'yes'\n",
    "option items": HEAD + "options:\n  input_tools: [1]\n",
    "resuming event not a list": HEAD + "options:\n  resumes_after_wait: PostToolUse\n",
}


def test_committed_schema_is_what_the_command_prints() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "dialect", "schema"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert out.stdout == SCHEMA_FILE.read_text(), (
        "regenerate: sciontool dialect schema > dialects/dialect.schema.json"
    )


@pytest.mark.parametrize("path", DIALECT_FILES, ids=[str(p.relative_to(REPO)) for p in DIALECT_FILES])
def test_every_dialect_validates_and_names_the_schema(path: Path) -> None:
    text = path.read_text()
    first = text.splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    assert (path.parent / first.split("=", 1)[1]).resolve() == SCHEMA_FILE
    assert list(VALIDATOR.iter_errors(yaml.safe_load(text))) == []


@pytest.mark.parametrize("text", VALID)
def test_schema_and_loader_both_accept(text: str) -> None:
    assert check_text(text, "d.yaml")[1] == []
    assert VALIDATOR.is_valid(yaml.safe_load(text))


@pytest.mark.parametrize("text", INVALID.values(), ids=INVALID.keys())
def test_schema_and_loader_both_refuse(text: str) -> None:
    assert check_text(text, "d.yaml")[1] != []
    assert not VALIDATOR.is_valid(yaml.safe_load(text))
