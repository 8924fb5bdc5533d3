"""agent.log as Scion's newest logger writes it: UTC RFC 3339 stamps, levels, quiet hook and status."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from conftest import Agent

from sciontool_py.log.level import LEVELS, parse_spec
from sciontool_py.log.writer import timestamp

AT = 1796008365 * 10**9  # 2026-11-30T03:12:45Z
PROMPT: dict[str, object] = {"hook_event_name": "UserPromptSubmit", "prompt": "fix the build"}
TOOL: dict[str, object] = {"hook_event_name": "PreToolUse", "tool_name": "Bash"}


@pytest.mark.parametrize(
    ("ns", "stamp"),
    [
        (AT, "2026-11-30T03:12:45Z"),
        (AT + 100_000_000, "2026-11-30T03:12:45.1Z"),
        (AT + 123_456_789, "2026-11-30T03:12:45.123456789Z"),
        (AT + 1_000, "2026-11-30T03:12:45.000001Z"),
    ],
)
def test_stamps_are_utc_rfc3339_nano_with_trailing_zeros_trimmed(ns: int, stamp: str) -> None:
    assert timestamp(ns) == stamp


def test_a_hook_line_is_stamped_now_in_utc_and_nothing_goes_to_stderr(agent: Agent) -> None:
    result = agent.hook(TOOL, TZ="America/Los_Angeles")
    assert (result.returncode, result.stderr) == (0, b"")
    [line] = agent.log_lines
    stamp, rest = line.split(" ", 1)
    written = datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    assert stamp.endswith("Z") and abs(written.timestamp() - time.time()) < 60
    assert rest == "[sciontool] [INFO] [executing] Running tool: Bash"


def test_status_is_quiet_on_stderr_too(agent: Agent) -> None:
    result = agent.run("status", "blocked", "need a key")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert agent.log_lines[-1].endswith("[INFO] [blocked] Agent blocked: need a key")


def test_scion_log_level_warn_drops_info_lines_but_not_the_state(agent: Agent) -> None:
    assert agent.hook(TOOL, SCION_LOG_LEVEL="warn").returncode == 0
    assert agent.log_lines == []
    assert agent.info == {"activity": "executing", "toolName": "Bash"}


def test_a_component_level_applies_to_lines_of_that_tag(agent: Agent) -> None:
    spec = "info,thinking=error"
    agent.hook(PROMPT, SCION_LOG_LEVEL=spec)
    agent.hook(TOOL, SCION_LOG_LEVEL=spec)
    assert [line.split(" ", 1)[1] for line in agent.log_lines] == [
        "[sciontool] [INFO] [executing] Running tool: Bash"
    ]


def test_an_invalid_level_means_info(agent: Agent) -> None:
    agent.hook(TOOL, SCION_LOG_LEVEL="loud")
    assert len(agent.log_lines) == 1


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("", (LEVELS["info"], {})),
        ("DEBUG", (LEVELS["debug"], {})),
        (" warning ", (LEVELS["warn"], {})),
        (
            "error,Hub.Auth=debug, x = warn",
            (LEVELS["error"], {"hub.auth": LEVELS["debug"], "x": LEVELS["warn"]}),
        ),
        ("info,debug", (LEVELS["info"], {})),  # only the first entry may be bare
        (",debug", (LEVELS["info"], {})),
        ("loud,a=debug,b=loud,=info", (LEVELS["info"], {"a": LEVELS["debug"]})),
    ],
)
def test_level_specs_parse_as_scions(spec: str, parsed: tuple[int, dict[str, int]]) -> None:
    assert parse_spec(spec) == parsed
