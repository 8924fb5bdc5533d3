"""The screen is the user's: what an agent controls (a tool name, a prompt, a project folder, a
name or harness planted in a record) never reaches the terminal as an escape sequence or a
control character, and each line of `sciontool agents` and of its live view fits 80 columns at 80,
as a person sees them in tmux (capture-pane, wrapped lines joined)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Agent
from standin import StandIn, eventually
from test_agents import claude, tmux

from sciontool_py import agents_view, process, registry

OSC52 = "\x1b]52;c;SGVsbG8=\x07"  # sets the clipboard (tmux: a paste buffer) to "Hello"
CPR = "\x1b[6n"  # asks the terminal where its cursor is: the answer is typed into the input
HOSTILE = OSC52 + CPR + "\x9b6n\x7f\u202e"  # and a C1 CSI, DEL, a bidi override

pytestmark = pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")


def columns(line: str) -> int:
    """A line's terminal columns, as a terminal counts them (wide 2, combining 0)."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line
    )


def controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F]


@pytest.fixture
def hostile(agent: Agent, tmp_path: Path) -> Iterator[None]:
    """A real agent whose tool name and prompt carry escapes and CJK, and a planted record of
    this test's own (live) process, CJK and escapes in every text."""
    harness = StandIn(agent, tmp_path, "claude", SCIONTOOL_EXIT_WATCH="off")
    harness.send(claude("UserPromptSubmit", "A", prompt="日本語のテキスト" * 20 + HOSTILE))
    harness.send(claude("PreToolUse", "A", tool_name="ツール" + HOSTILE, tool_use_id="t1"))
    me = os.getpid()
    record = registry.Record(registry.process_key(me, process.stat(me)[3]))  # type: ignore[index]
    record.name, record.harness, record.session = "名前の長いエージェント" + HOSTILE, HOSTILE, HOSTILE
    record.project = "/tmp/" + OSC52 + "プロジェクト" * 5
    record.message = CPR + "😀é̀" * 60
    record.info = {"phase": "running", "activity": "executing", "toolName": "道具" + HOSTILE}
    record.updated = record.since = 1.0
    registry.write(str(agent.home), record)
    try:
        yield
    finally:
        harness.close()


def test_the_text_of_the_list_holds_no_control_character_and_fits_80_columns(
    agent: Agent, hostile: None
) -> None:
    found = agents_view.rows(str(agent.home))
    lines = agents_view.table(found, 80, 2.0)
    assert len(lines) == 3
    for line in lines:
        assert not controls(line) and columns(line) <= 80, line
    assert "Running ツール?]5" in lines[1] + lines[2]  # shown, harmless
    for width in (20, 50, 120):
        assert all(columns(line) <= width for line in agents_view.table(found, width, 2.0))
    as_json = agents_view.dumps([row.to_json() for row in found])
    assert not controls(as_json) and json.loads(as_json)[0]["message"]  # the texts kept, escaped


def env_line(agent: Agent) -> str:
    names = ("HOME", "PATH", "SCIONTOOL_CACHE_DIR", "SCIONTOOL_EXIT_WATCH")
    return " ".join(f"{k}='{v}'" for k, v in agent.env.items() if k in names)


def start_tmux(socket: Path, command: str) -> None:
    tmux(socket, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24", f"sleep 1; {command}")
    tmux(socket, "set-option", "-g", "set-clipboard", "on")  # OSC 52 then makes a paste buffer


def test_agents_in_tmux_at_80_columns_asks_the_terminal_nothing(
    agent: Agent, tmp_path: Path, hostile: None
) -> None:
    answers = tmp_path / "typed"
    # After the list: whatever the terminal typed back into the input (a cursor report), raw.
    after = (
        "import os, select, sys, tty; tty.setraw(0); r = select.select([0], [], [], 2)[0]; "
        f"open({str(answers)!r}, 'wb').write(os.read(0, 256) if r else b'')"
    )
    command = (
        f"env {env_line(agent)} TERM=xterm {sys.executable} -m sciontool_py agents; "
        f'{sys.executable} -c "{after}"; echo list-ended; sleep 60'
    )
    socket = tmp_path / "tmux.sock"
    start_tmux(socket, command)
    try:
        screen = lambda: tmux(socket, "capture-pane", "-p", "-J")  # noqa: E731
        assert eventually(lambda: "list-ended" in screen()), screen()
        lines = screen().splitlines()
        assert lines[0].split() == ["AGENT", "STATE", "SINCE", "PROJECT", "TOKENS", "MESSAGE"]
        assert all(columns(line) <= 80 for line in lines), lines
        assert any("名前の長いエ" in line for line in lines) and any(
            "Running ツール" in line for line in lines
        )
        assert tmux(socket, "list-buffers") == ""  # no clipboard write
        assert answers.read_bytes() == b""  # no cursor report typed in
    finally:
        tmux(socket, "kill-server")


def test_the_watch_view_in_tmux_at_80_columns_asks_the_terminal_nothing(
    agent: Agent, tmp_path: Path, hostile: None
) -> None:
    command = f"env {env_line(agent)} TERM=xterm {sys.executable} -m sciontool_py agents --watch; sleep 60"
    socket = tmp_path / "tmux.sock"
    start_tmux(socket, command)
    try:
        screen = lambda: tmux(socket, "capture-pane", "-p", "-J")  # noqa: E731
        assert eventually(lambda: "Running ツール" in screen() and "Running 道具" in screen()), screen()
        lines = screen().splitlines()
        assert all(columns(line) <= 80 for line in lines), lines
        assert lines[0].startswith("sciontool agents: 2 in ")
        assert tmux(socket, "list-buffers") == ""
        tmux(socket, "send-keys", "q")  # the view quits on q: no cursor report got in its way
        assert eventually(lambda: "sciontool agents:" not in screen()), screen()
    finally:
        tmux(socket, "kill-server")
