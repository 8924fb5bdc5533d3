"""Factory's Droid (0.225.2 tried): hooks in `.factory/settings.json` or `~/.factory/settings.json`.

Claude-shaped hooks; the same file holds Droid's other settings (custom models
with their keys), which stay as they are.
"""

from __future__ import annotations

from sciontool_py.harness.base import ClaudeShapedHarness

# Every hook event Droid 0.225.2 accepts, in the order of a session.
FIRED = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Notification",
    "SubagentStop",
    "PreCompact",
    "Stop",
    "SessionEnd",
)
TOOL_EVENTS = frozenset(("PreToolUse", "PostToolUse"))


class Droid(ClaudeShapedHarness):
    name = "droid"
    dialect = "droid"
    fired = FIRED
    tool_events = TOOL_EVENTS
    project_file = ".factory/settings.json"
    user_file = ".factory/settings.json"
