"""Replay a recorded core-agent session through `sciontool hook` in a throwaway HOME.

Each envelope is piped to the installed `sciontool hook --dialect=core-agent`
exactly as core-agent's dispatcher would; after each step the demo prints
agent-info.json and the new agent.log line, the files Scion reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

SESSION = Path(__file__).with_name("core-agent-session.jsonl")


def main() -> int:
    sciontool = Path(sys.executable).with_name("sciontool")
    with tempfile.TemporaryDirectory(prefix="sciontool-demo-") as home:
        env = {**os.environ, "HOME": home}
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
            print("agent-info.json:", Path(home, "agent-info.json").read_text().replace("\n", "\n  "))
            lines = log.read_text().splitlines()
            for line in lines[seen:]:
                print("agent.log:", line)
            seen = len(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
