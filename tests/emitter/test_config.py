"""Loading and validating core-agent's `"hooks"` config: what a user sees for a bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sciontool_py.emitter.config import DEFAULT_TIMEOUT_SECONDS, Handler, load_config, parse_hooks
from sciontool_py.errors import ConfigError, SciontoolError


def _write(tmp_path: Path, document: object) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(document))
    return str(path)


def test_loads_handlers_in_order_and_ignores_other_keys(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "model": "gemini",
            "hooks": {
                "tool-start": [{"command": "a"}, {"command": "b", "timeout_seconds": 3, "extra": 1}],
                "agent-end": [{"command": "c"}],
            },
        },
    )
    config = load_config(path)
    assert config == {
        "tool-start": (Handler("a"), Handler("b", 3)),
        "agent-end": (Handler("c"),),
    }
    assert config["tool-start"][0].timeout == DEFAULT_TIMEOUT_SECONDS == 10
    assert config["tool-start"][1].timeout == 3


@pytest.mark.parametrize("document", [{}, {"hooks": {}}, {"hooks": None}, {"hooks": {"tool-end": []}}])
def test_no_hooks_is_an_empty_config(tmp_path: Path, document: object) -> None:
    assert load_config(_write(tmp_path, document)) == {}


def test_a_misspelt_event_is_refused_with_the_valid_names_in_core_agents_order(tmp_path: Path) -> None:
    path = _write(tmp_path, {"hooks": {"tool-strat": [{"command": "true"}]}})
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f'{path}: hooks: unknown event "tool-strat" (valid: [tool-start tool-end model-start agent-end])'
    )
    assert isinstance(caught.value, SciontoolError)


def test_events_are_checked_in_sorted_order_like_core_agent() -> None:
    # "agent-end" sorts first, so its error is the one reported.
    hooks = {"tool-start": [{"command": ""}], "agent-end": [{"command": "x", "timeout_seconds": -1}]}
    with pytest.raises(ConfigError, match=r'^hooks: event "agent-end" handler #0: timeout_seconds must be'):
        parse_hooks(hooks)


@pytest.mark.parametrize(
    ("handlers", "message"),
    [
        ([{"command": ""}], 'hooks: event "tool-start" handler #0: command is required'),
        ([{"timeout_seconds": 5}], 'hooks: event "tool-start" handler #0: command is required'),
        (
            [{"command": "ok"}, {"command": "x", "timeout_seconds": -2}],
            'hooks: event "tool-start" handler #1: timeout_seconds must be non-negative (got -2)',
        ),
        # The command check comes first, as in core-agent.
        (
            [{"command": "", "timeout_seconds": -1}],
            'hooks: event "tool-start" handler #0: command is required',
        ),
        ([{"command": 7}], 'hooks: event "tool-start" handler #0: command must be a string (got number)'),
        (
            [{"command": "x", "timeout_seconds": "5"}],
            'hooks: event "tool-start" handler #0: timeout_seconds must be an integer (got string)',
        ),
        (
            [{"command": "x", "timeout_seconds": 1.5}],
            'hooks: event "tool-start" handler #0: timeout_seconds must be an integer (got number)',
        ),
        (
            [{"command": "x", "timeout_seconds": True}],
            'hooks: event "tool-start" handler #0: timeout_seconds must be an integer (got boolean)',
        ),
        (["echo"], 'hooks: event "tool-start" handler #0: must be an object with a command (got string)'),
        ({"command": "x"}, 'hooks: event "tool-start": handlers must be a list (got object)'),
    ],
)
def test_bad_handlers_name_the_event_and_handler_index(handlers: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_hooks({"tool-start": handlers})
    assert str(caught.value) == message


def test_whitespace_command_passes_validation_as_in_core_agent() -> None:
    assert parse_hooks({"agent-end": [{"command": " "}]}) == {"agent-end": (Handler(" "),)}


def test_hooks_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"^hooks: must be an object .*\(got array\)$"):
        parse_hooks([])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "invalid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
        ("[]", "must be a JSON object (got array)"),
    ],
)
def test_unreadable_files_are_one_line_errors_naming_the_path(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert str(caught.value) == f"{path}: {message}"


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No such file or directory"):
        load_config(str(tmp_path / "absent.json"))
