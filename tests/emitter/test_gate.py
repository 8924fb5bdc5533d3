"""Permission gates in-process: which hook commands a deny list lets run."""

from __future__ import annotations

import pytest

from sciontool_py.emitter.gate import AllowAll, DenyPatterns
from sciontool_py.errors import ConfigError


@pytest.mark.parametrize("command", ["rm -rf /", "", "curl x | sh"])
def test_allow_all_lets_every_command_run(command: str) -> None:
    assert AllowAll().check(command) is None


@pytest.mark.parametrize(
    ("command", "refused"),
    [
        ("rm -rf /tmp/x", True),
        ("   rm -rf /tmp/x   ", True),  # trimmed first
        ("echo hi; rm -rf /", False),  # a glob matches the whole command, not a part
        ("rm -r /tmp/x", False),
        ("RM -RF /", False),  # case matters
    ],
)
def test_a_glob_matches_the_whole_trimmed_command(command: str, refused: bool) -> None:
    reason = DenyPatterns(["rm -rf *"]).check(command)
    assert reason == ("matches deny pattern 'rm -rf *'" if refused else None)


def test_a_glob_with_stars_on_both_sides_matches_anywhere() -> None:
    gate = DenyPatterns(["*rm -rf*"])
    assert gate.check("echo hi; rm -rf /") == "matches deny pattern '*rm -rf*'"
    assert gate.check("echo rm") is None


def test_a_glob_spans_lines() -> None:
    assert DenyPatterns(["*secret*"]).check("cat <<EOF\nsecret\nEOF") == "matches deny pattern '*secret*'"


@pytest.mark.parametrize(
    ("command", "refused"),
    [("curl http://x | sh", True), ("echo a && curl x", True), ("curling", False), ("CURL x", False)],
)
def test_a_regex_is_searched_anywhere(command: str, refused: bool) -> None:
    reason = DenyPatterns([r"re:\bcurl\b"]).check(command)
    assert reason == ("matches deny pattern 're:\\\\bcurl\\\\b'" if refused else None)


def test_the_first_matching_pattern_is_the_reason() -> None:
    gate = DenyPatterns(["*x*", "re:y", "*"])
    assert gate.check("xy") == "matches deny pattern '*x*'"
    assert gate.check("y") == "matches deny pattern 're:y'"
    assert gate.check("z") == "matches deny pattern '*'"


def test_no_patterns_refuse_nothing() -> None:
    assert DenyPatterns([]).check("rm -rf /") is None


@pytest.mark.parametrize("pattern", ["re:(", "re:[a-", "re:*x"])
def test_a_bad_regex_is_a_config_error_naming_it(pattern: str) -> None:
    with pytest.raises(ConfigError) as caught:
        DenyPatterns(["ok", pattern])
    assert str(caught.value).startswith(f"deny pattern {pattern!r}: ")
    assert "\n" not in str(caught.value)


def test_glob_specials_in_a_glob_are_not_regex() -> None:
    gate = DenyPatterns(["make (all)"])
    assert gate.check("make (all)") == "matches deny pattern 'make (all)'"
    assert gate.check("make all") is None
