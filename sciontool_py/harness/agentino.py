"""agentino: hooks are registered in the agent's Python code, so there is no file to write."""

from __future__ import annotations

import json

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Edit, Harness, Scope, routed_events

# agentino's thirteen events.
FIRED = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
    "Stop",
    "StopFailure",
)


class Agentino(Harness):
    name = "agentino"
    dialect = "agentino"

    def install(self, scope: Scope) -> list[Edit]:
        raise SciontoolError(
            "agentino's hooks are registered in code, not in a settings file: "
            "see `sciontool harness show agentino`"
        )

    uninstall = install

    def show(self, scope: Scope) -> str:
        events = routed_events(self.dialect, FIRED)
        command = scope.hook_command(self.dialect)
        return (
            "# agentino: register Scion's hook as a shell hook on every event the dialect maps\n"
            f"for event in {json.dumps(events)}:\n"
            f"    hooks.register(event, {json.dumps(command)})\n"
        )
