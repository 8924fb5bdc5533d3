"""agentino: hooks are registered in the agent's Python code, so there is no file to write."""

from __future__ import annotations

import json

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Edit, Harness, Scope, routed_events
from sciontool_py.integrations.agentino import EVENTS


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
        events = routed_events(self.dialect, EVENTS)
        # agentino's contexts name no event: each command says which one it was registered for.
        # The agent's own code holds it: no path into this install (the shell relay's) belongs there.
        prefix = f"{scope.command} hook --dialect={self.dialect} --event="
        return (
            "# agentino (agentino-framework >= 1.1.1), in the agent's code; hooks is its HookManager.\n"
            "# In process, with sciontool-py installed beside agentino: all thirteen events, no subprocess.\n"
            "from sciontool_py.integrations.agentino import register\n"
            "\n"
            "register(hooks)\n"
            "\n"
            "# Or one hook process per event, with only agentino in the agent's environment:\n"
            f"for event in {json.dumps(events)}:\n"
            f"    hooks.register(event, command={json.dumps(prefix)} + event)\n"
            "\n"
            "# Either way, agentino's agent loop finds the manager in its context:\n"
            "from agentino.core.context import set_context\n"
            "\n"
            "set_context(_hook_manager=hooks)\n"
        )
