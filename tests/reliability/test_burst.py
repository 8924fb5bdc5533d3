"""A burst: 100 hooks of one harness at once in one HOME, the harness waiting for none of them
(Claude Code's `"async": true` hooks), in their own processes or served by the HOME's helper.

Every event is applied once and in the order the harness fired it, no hook gives up the state
lock (so no update is lost: every turn is counted), and every call leaves exactly its line.
The harness is a stand-in process that starts the 100 real hooks, then waits for them all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import TIMED, Agent

from sciontool_py.helper import RELAY

pytestmark = [TIMED, pytest.mark.slow]

TURNS = 25
HOOK = f"{Path(sys.executable).with_name('sciontool')} hook --dialect=claude"
# Fires each envelope (a line of stdin) at `sh -c $HOOK` without waiting, then waits for all.
HARNESS = """\
import os, subprocess, sys
hooks = []
for line in sys.stdin:
    hook = subprocess.Popen(["sh", "-c", os.environ["HOOK"]], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)
    hook.stdin.write(line.encode())
    hook.stdin.close()
    hooks.append(hook)
print(" ".join(str(hook.wait()) for hook in hooks))
"""


def turn(n: int) -> list[dict[str, object]]:
    call = {"session_id": "s1", "tool_name": "Bash", "tool_use_id": f"t{n}"}
    return [
        {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": f"turn {n}"},
        {"hook_event_name": "PreToolUse", **call},
        {"hook_event_name": "PostToolUse", **call},
        {"hook_event_name": "Stop", "session_id": "s1"},
    ]


@pytest.mark.parametrize("served", ["own process", "python relay", "shell relay"])
def test_a_hundred_hooks_at_once_are_each_applied_once_in_order_none_unlocked(
    agent: Agent, tmp_path: Path, served: str
) -> None:
    envelopes = [envelope for n in range(TURNS) for envelope in turn(n)]
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    env = {
        **agent.env,
        "HOOK": f"bash {RELAY} {HOOK}" if served == "shell relay" else HOOK,
        "SCIONTOOL_EXIT_WATCH": "off" if served == "own process" else "on",
        "SCIONTOOL_HELPER_LINGER": "0",
        "SCION_MAX_TURNS": "1000",  # counted in agent-limits.json, under the state lock
    }
    stdin = "".join(json.dumps(envelope) + "\n" for envelope in envelopes)
    done = subprocess.run(
        [sys.executable, str(script)], input=stdin, capture_output=True, text=True, env=env, timeout=300
    )
    assert done.stdout.split() == ["0"] * len(envelopes), done.stderr
    lines = agent.log_lines
    assert [line for line in lines if "still held" in line] == []
    messages = [line.split("] ", 3)[3] for line in lines]
    # The harness has exited: the helper may have said its end already (the one line beside the hooks').
    ended = "Session ended (reason: the harness exited without a session end)"
    assert messages.count(ended) <= (0 if served == "own process" else 1)
    messages = [m for m in messages if m != ended]
    expected = Counter(
        {"Running tool: Bash": TURNS, "Tool Bash completed": TURNS, "Agent turn completed": TURNS}
    )
    expected.update(f"User prompt: turn {n}" for n in range(TURNS))
    assert Counter(messages) == expected, lines  # each event once, and no other line
    # In the order the harness fired them: each turn's prompt, tool, end, in turn.
    assert [m for m in messages if m.startswith("User prompt: ")] == [
        f"User prompt: turn {n}" for n in range(TURNS)
    ]
    limits = json.loads((agent.home / "agent-limits.json").read_text())
    assert limits["turn_count"] == TURNS
