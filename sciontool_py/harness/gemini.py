"""Gemini CLI (0.61.0 tried): hooks in `.gemini/settings.json` or `~/.gemini/settings.json`."""

from __future__ import annotations

from typing import ClassVar

from sciontool_py.harness.base import Scope, SettingsHarness

# Every hook event Gemini CLI 0.61.0 fires, in the order of a session.
FIRED = (
    "SessionStart",
    "BeforeAgent",
    "PreCompress",
    "BeforeModel",
    "BeforeToolSelection",
    "AfterModel",
    "BeforeTool",
    "Notification",
    "AfterTool",
    "AfterAgent",
    "SessionEnd",
)
TOOL_EVENTS = frozenset(("BeforeTool", "AfterTool"))  # a matcher elsewhere is compared with other things
TIMEOUT_MS = 30_000  # Gemini CLI reads hook timeouts in milliseconds


class Gemini(SettingsHarness):
    name = "gemini"
    dialect = "gemini"
    fired = FIRED
    project_file = ".gemini/settings.json"
    user_file = ".gemini/settings.json"
    jsonc = True  # Gemini CLI strips // and /* */ comments from its settings
    unwired: ClassVar[dict[str, str]] = {
        # 300 firings for an answer in 300 chunks, each holding the stream: the model call ends
        # with the next event (BeforeTool, AfterAgent), its usage is in Gemini's transcript.
        "AfterModel": "fired once per streamed chunk",
    }
    notes = (
        "Gemini CLI loads a project's .gemini/settings.json only in a trusted folder when "
        "security.folderTrust is enabled.",
    )

    def command(self, scope: Scope, event: str) -> str:
        # Gemini CLI runs each hook command with `bash -c` off Windows (0.61.0's
        # getShellConfiguration), whatever SHELL says.
        return scope.bash_hook_command(self.dialect)

    def entry(self, event: str, command: str) -> dict[str, object]:
        # Gemini CLI needs a name on every hook.
        hook = {"name": f"scion-{event}", "type": "command", "command": command, "timeout": TIMEOUT_MS}
        if event in TOOL_EVENTS:
            return {"matcher": "*", "hooks": [hook]}
        return {"hooks": [hook]}
