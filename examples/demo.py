"""Replay a recorded core-agent session through `sciontool hook` in a throwaway HOME.

Each envelope is piped to the installed `sciontool hook --dialect=core-agent`
exactly as core-agent's dispatcher would; after each step the demo prints
agent-info.json and the new agent.log line, the files Scion reads, and what the
activity means. It ends with the command that wires a real harness.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from sciontool_py.harness import INSTALLABLE

SESSION = Path(__file__).with_name("core-agent-session.jsonl")
INTRO = """\
Scion runs coding agents (Claude Code, Gemini CLI, Codex, ...), each in a container of its own,
and shows what each one is doing. The agent's harness runs `sciontool hook` at every tool, model
and turn boundary with one JSON envelope on stdin; the hook writes the agent's activity to
$HOME/agent-info.json and a line to $HOME/agent.log, which Scion reads. Here four envelopes of a
recorded core-agent session go through the hook, in a throwaway HOME.
"""
# What each activity of the session tells whoever reads agent-info.json.
MEANING = {
    "executing": "a tool is running (toolName says which)",
    "thinking": "the model is working on a reply",
    "working": "the agent is up; no tool runs and the model is not asked (between calls, after a turn)",
}


def main() -> int:
    sciontool = Path(sys.executable).with_name("sciontool")
    print(INTRO)
    with tempfile.TemporaryDirectory(prefix="sciontool-demo-") as home:
        # No telemetry export: the demo's events are not for a collector that may listen here.
        env = {**os.environ, "HOME": home, "SCION_TELEMETRY_ENABLED": "false"}
        log = Path(home, "agent.log")
        seen = 0
        for step, envelope in enumerate(SESSION.read_text().splitlines(), 1):
            print(f"--- step {step}: {envelope}")
            result = subprocess.run(
                [str(sciontool), "hook", "--dialect=core-agent"],
                input=envelope.encode(),
                env=env,
                capture_output=True,
            )
            if result.returncode != 0:
                print(result.stderr.decode(), file=sys.stderr)
                return result.returncode
            info = Path(home, "agent-info.json").read_text()
            print("agent-info.json:", info.replace("\n", "\n  "))
            lines = log.read_text().splitlines()
            for line in lines[seen:]:
                print("agent.log:", line)
            seen = len(lines)
            activity = next(a for a in MEANING if f'"activity": "{a}"' in info)
            print(f"=> {activity}: {MEANING[activity]}")
    others = ", ".join(name for name in INSTALLABLE if name != "claude")
    print(
        "\nNext, wire a real harness: in your project's folder, see what install would change\n"
        "(--dry-run writes nothing), then run it without --dry-run:\n"
        f"  {sciontool} harness install claude --dry-run\n"
        + textwrap.fill(
            f"Or instead of claude: {others}. `harness uninstall NAME` gives back every byte.", 96
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
