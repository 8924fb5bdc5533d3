"""core-agent: hooks in the project's `.agents/config.json` (core-agent has no user-level config)."""

from __future__ import annotations

import os

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Scope, SettingsHarness

FIRED = ("tool-start", "tool-end", "model-start", "agent-end")  # core-agent rejects any other name
TIMEOUT_SECONDS = 10  # core-agent's own default


class CoreAgent(SettingsHarness):
    name = "core-agent"
    dialect = "core-agent"
    fired = FIRED

    def entry(self, event: str, command: str) -> dict[str, object]:
        return {"command": command, "timeout_seconds": TIMEOUT_SECONDS}

    def target(self, scope: Scope) -> tuple[str, str]:
        if scope.project is None:
            raise SciontoolError(
                "core-agent reads only a project's .agents/config.json, so there is no --user "
                "install; use --project DIR"
            )
        return agents_root(scope.project), ".agents/config.json"


def agents_root(project: str) -> str:
    """The folder whose .agents/ core-agent started in `project` would use: the nearest one up."""
    folder = os.path.abspath(project)
    while True:
        if os.path.isdir(os.path.join(folder, ".agents")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.abspath(project)
        folder = parent
