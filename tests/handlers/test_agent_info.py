"""agent-info.json in-process: Scion's activity rules, and the file as Scion's Go writes it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import event, read_info

from sciontool_py.receiver.handlers import agent_info


def apply(info: dict[str, object], name: str, input_tools: tuple[str, ...] = (), **data: object) -> bool:
    return agent_info.apply_event(info, event(name, **data), list(input_tools))


def test_a_missing_or_damaged_file_reads_as_empty(home: Path) -> None:
    assert agent_info.read(str(home)) == {}
    for damage in (b"", b"[1]", b'{"activity": "id', b"\xff"):
        (home / "agent-info.json").write_bytes(damage)
        assert agent_info.read(str(home)) == {}


def test_written_as_gos_marshal_indent_keys_sorted_html_escaped_no_newline(home: Path) -> None:
    agent_info.write(
        str(home), {"toolName": "a<b>&c", "activity": "executing", "n": 3.0, "x": {"b": 1, "a": 2}}
    )
    assert (home / "agent-info.json").read_text() == (
        '{\n  "activity": "executing",\n  "n": 3,\n  "toolName": "a\\u003cb\\u003e\\u0026c",\n'
        '  "x": {\n    "a": 2,\n    "b": 1\n  }\n}'
    )
    assert read_info(home)["toolName"] == "a<b>&c"
    assert os.stat(home / "agent-info.json").st_mode & 0o777 == 0o644


def test_a_write_replaces_the_file_and_leaves_no_temp_file(home: Path) -> None:
    (home / "agent-info.json").write_text('{"activity": "blocked", "keep": 1}')
    info = agent_info.read(str(home))
    agent_info.set_activity(info, "thinking")
    agent_info.write(str(home), info)
    assert read_info(home) == {"activity": "thinking", "keep": 1}
    assert sorted(p.name for p in home.iterdir()) == ["agent-info.json"]


def test_an_unwritable_file_raises_naming_it(home: Path) -> None:
    (home / "agent-info.json").mkdir()
    with pytest.raises(OSError) as caught:
        agent_info.write(str(home), {"activity": "working"})
    assert caught.value.filename == str(home / "agent-info.json")
    assert sorted(p.name for p in home.iterdir()) == ["agent-info.json"]


def test_set_activity_keeps_the_tool_only_while_executing_and_drops_legacy_keys() -> None:
    info: dict[str, object] = {"phase": "running", "status": "old", "sessionStatus": "x"}
    agent_info.set_activity(info, "executing", "grep")
    assert info == {"phase": "running", "activity": "executing", "toolName": "grep"}
    agent_info.set_activity(info, "thinking", "grep")
    assert info == {"phase": "running", "activity": "thinking"}
    agent_info.set_activity(info, "")
    assert info == {"phase": "running"}


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("session-start", {}, {"activity": "working"}),
        ("prompt-submit", {"prompt": "hi"}, {"activity": "thinking"}),
        ("agent-start", {}, {"activity": "thinking"}),
        ("model-start", {}, {"activity": "thinking"}),
        ("model-end", {}, {"activity": "working"}),
        ("tool-start", {"tool_name": "ls"}, {"activity": "executing", "toolName": "ls"}),
        ("tool-start", {}, {"activity": "executing"}),
        ("tool-end", {"tool_name": "ls"}, {"activity": "working"}),
        ("agent-end", {}, {"activity": "working"}),
        ("response-complete", {}, {"activity": "completed"}),
        ("notification", {"message": "?"}, {"activity": "waiting_for_input"}),
    ],
)
def test_each_harness_event_sets_its_activity(name: str, data: dict[str, object], expected: object) -> None:
    info: dict[str, object] = {"activity": "executing", "toolName": "old"}
    assert apply(info, name, **data)
    assert info == expected


@pytest.mark.parametrize(
    ("name", "phase", "activity"),
    [
        ("pre-start", "starting", None),
        ("post-start", "running", "working"),
        ("pre-stop", "stopping", None),
        ("session-end", "stopped", None),
    ],
)
def test_lifecycle_events_set_the_phase_even_over_a_sticky_activity(
    name: str, phase: str, activity: str | None
) -> None:
    info: dict[str, object] = {"activity": "blocked"}
    assert apply(info, name)
    assert info.get("phase") == phase and info.get("activity") == activity


@pytest.mark.parametrize("name", ["subagent-end", "compaction"])
def test_events_without_an_activity_change_nothing(name: str) -> None:
    info: dict[str, object] = {"activity": "thinking"}
    assert not apply(info, name)
    assert info == {"activity": "thinking"}


@pytest.mark.parametrize(
    "sticky", ["waiting_for_input", "blocked", "completed", "limits_exceeded", "crashed"]
)
def test_a_sticky_activity_survives_ordinary_events_until_new_work(sticky: str) -> None:
    info: dict[str, object] = {"activity": sticky}
    for name in ("tool-end", "model-start", "model-end", "agent-end", "response-complete"):
        assert not apply(info, name)
        assert info == {"activity": sticky}
    assert apply(info, "prompt-submit", prompt="again")
    assert info == {"activity": "thinking"}


def test_tool_start_clears_waiting_for_input_but_no_other_sticky_activity() -> None:
    info: dict[str, object] = {"activity": "waiting_for_input"}
    assert apply(info, "tool-start", tool_name="ls")
    assert info == {"activity": "executing", "toolName": "ls"}
    for sticky in ("blocked", "completed", "limits_exceeded", "crashed"):
        info = {"activity": sticky}
        assert not apply(info, "tool-start", tool_name="ls")
        assert info == {"activity": sticky}


def test_a_notification_always_replaces_a_sticky_activity() -> None:
    info: dict[str, object] = {"activity": "completed"}
    assert apply(info, "notification")
    assert info == {"activity": "waiting_for_input"}


def test_an_input_tool_means_waiting_for_the_user_even_over_a_sticky_activity() -> None:
    info: dict[str, object] = {"activity": "blocked"}
    assert apply(info, "tool-start", ("AskUserQuestion",), tool_name="AskUserQuestion")
    assert info == {"activity": "waiting_for_input"}


def resume(info: dict[str, object], name: str, raw_name: str, resumes: tuple[str, ...]) -> bool:
    return agent_info.apply_event(info, event(name, raw_name), [], resumes)


def test_a_resuming_raw_event_replaces_waiting_for_input_with_its_own_activity() -> None:
    info: dict[str, object] = {"activity": "waiting_for_input"}
    assert resume(info, "tool-end", "PostToolUse", ("PostToolUse", "PostToolUseFailure"))
    assert info == {"activity": "working"}


def test_resuming_is_off_without_the_option_and_for_other_raw_events() -> None:
    for resumes, raw_name in [((), "PostToolUse"), (("PostToolUseFailure",), "PostToolUse")]:
        info: dict[str, object] = {"activity": "waiting_for_input"}
        assert not resume(info, "tool-end", raw_name, resumes)
        assert info == {"activity": "waiting_for_input"}


@pytest.mark.parametrize("sticky", ["blocked", "completed", "limits_exceeded", "crashed"])
def test_a_resuming_raw_event_leaves_every_other_sticky_activity(sticky: str) -> None:
    # Only a wait for the user ends when the user answers: a finished task stays finished.
    info: dict[str, object] = {"activity": sticky}
    assert not resume(info, "tool-end", "PostToolUse", ("PostToolUse",))
    assert info == {"activity": sticky}
