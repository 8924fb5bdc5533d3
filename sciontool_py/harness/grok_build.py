"""xAI Grok Build CLI: a hooks file of ours in `~/.grok/hooks/`, as Scion provisions it.

Grok sends its payload (with hookEventName) on stdin, except at SessionStart
and SessionEnd, where Scion pipes in the name itself; here those two commands
name their event instead (`sciontool hook SessionStart ...`), which also takes
a payload if Grok sends one. Only the user's hooks folder is known.
"""

from __future__ import annotations

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Scope, SettingsHarness

FIRED = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "SubagentStop",
    "Stop",
    "StopFailure",
    "StopCancelled",
    "SessionEnd",
)
NAMED = frozenset(("SessionStart", "SessionEnd"))


class GrokBuild(SettingsHarness):
    name = "grok-build"
    dialect = "grok-build"
    fired = FIRED
    user_file = ".grok/hooks/sciontool.json"

    def command(self, scope: Scope, event: str) -> str:
        if event in NAMED:
            return scope.shell_line(f"hook {event} --dialect={self.dialect}")
        return scope.hook_command(self.dialect)

    def entry(self, event: str, command: str) -> dict[str, object]:
        timeout = 10 if event == "Stop" else 5  # Scion's
        return {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}

    def target(self, scope: Scope) -> tuple[str, str]:
        if scope.project is not None:
            raise SciontoolError("grok-build reads hooks from ~/.grok/hooks/: use --user")
        return super().target(scope)
