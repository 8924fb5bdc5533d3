"""GitHub Copilot CLI (1.0.102 tried): a hooks file of ours in `~/.copilot/hooks/`.

Copilot loads every `*.json` in `$HOME/.copilot/hooks/` (user) and in a
repository's `.github/hooks/` (project; those fire only with `--trust-folder`).
Its payloads name no event, so each command names its own
(`sciontool hook preToolUse --dialect=copilot`), and the hook merges the payload
from stdin under that name, as Scion's provisioning does.
"""

from __future__ import annotations

from typing import ClassVar

from sciontool_py.harness.base import Scope, SettingsHarness

# Every hook event Copilot CLI 1.0.102 fires, in the order of a session.
FIRED = (
    "sessionStart",
    "userPromptSubmitted",
    "userPromptTransformed",
    "preToolUse",
    "permissionRequest",
    "postToolUse",
    "postToolUseFailure",
    "errorOccurred",
    "notification",
    "subagentStart",
    "subagentStop",
    "preCompact",
    "agentStop",
    "sessionEnd",
)
TIMEOUT_SECONDS = 30


class Copilot(SettingsHarness):
    name = "copilot"
    dialect = "copilot"
    fired = FIRED
    project_file = ".github/hooks/sciontool.json"
    user_file = ".copilot/hooks/sciontool.json"
    command_key = "bash"
    preamble: ClassVar[dict[str, object]] = {"version": 1}
    notes = (
        "Copilot CLI runs a repository's .github/hooks/ only with --trust-folder; "
        "~/.copilot/hooks/ (--user) always.",
    )

    def command(self, scope: Scope, event: str) -> str:
        return scope.shell_line(f"hook {event} --dialect={self.dialect}")

    def entry(self, event: str, command: str) -> dict[str, object]:
        return {"type": "command", "bash": command, "timeoutSec": TIMEOUT_SECONDS}
