"""Antigravity (agy): a hook group of ours in the workspace's `.agents/hooks.json`.

agy reads named hook groups from `<workspace>/.agents/hooks.json`; Scion's
provisioning writes one (`scion-hooks`), with a jq wrapper adding the event
name agy's payloads lack. Here each command names its event with `--event`
instead, so nothing but sciontool has to be installed. agy reads the hook's
answer on stdout: the dialect's responses allow every tool call. Tool events
take a matcher group, the others a flat list. There is no user-level file.
"""

from __future__ import annotations

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Scope, SettingsHarness

FIRED = ("PreInvocation", "PreToolUse", "PostToolUse", "PostInvocation", "Stop")
TOOL_EVENTS = frozenset(("PreToolUse", "PostToolUse"))
TIMEOUT_SECONDS = 10  # Scion's: agy waits this long for a hook


class Antigravity(SettingsHarness):
    name = "antigravity"
    dialect = "antigravity"
    fired = FIRED
    root = "sciontool"  # our own named group: the user's groups are left alone

    def command(self, scope: Scope, event: str) -> str:
        return scope.shell_line(f"hook --dialect={self.dialect} --event={event}")

    def entry(self, event: str, command: str) -> dict[str, object]:
        hook = {"type": "command", "command": command, "timeout": TIMEOUT_SECONDS}
        if event in TOOL_EVENTS:
            return {"matcher": ".*", "hooks": [hook]}
        return hook

    def target(self, scope: Scope) -> tuple[str, str]:
        if scope.project is None:
            raise SciontoolError(
                "antigravity reads hooks only from a workspace's .agents/hooks.json, so there is "
                "no --user install; use --project DIR"
            )
        return scope.project, ".agents/hooks.json"
