"""Augment's Auggie CLI (0.36.0 tried): hooks in `.augment/settings.json` or `~/.augment/settings.json`.

Claude-shaped groups, but Auggie's matcher is a regular expression that defaults
to every tool, so no matcher is written (Claude's `"*"` is no valid regex), and
its hooks object is strict: an event name it does not know voids the whole
block, so only its seven are ever written. No timeout: Auggie's default (60 s).
"""

from __future__ import annotations

from sciontool_py.harness.base import SettingsHarness

# Every hook event Auggie 0.36.0 accepts, in the order of a session.
FIRED = (
    "SessionStart",
    "PromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Notification",
    "Stop",
    "SessionEnd",
)


class Auggie(SettingsHarness):
    name = "auggie"
    dialect = "auggie"
    fired = FIRED
    project_file = ".augment/settings.json"
    user_file = ".augment/settings.json"

    def entry(self, event: str, command: str) -> dict[str, object]:
        return {"hooks": [{"type": "command", "command": command}]}
