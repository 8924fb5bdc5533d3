"""Claude Code (2.1.197 tried): hooks in `.claude/settings.json` or `~/.claude/settings.json`."""

from __future__ import annotations

from sciontool_py.harness.base import ClaudeShapedHarness

# Every hook event Claude Code 2.1.197 fires, in the order of a session.
FIRED = (
    "SessionStart",
    "Setup",
    "InstructionsLoaded",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "TeammateIdle",
    "Elicitation",
    "ElicitationResult",
    "Notification",
    "MessageDisplay",
    "PreCompact",
    "PostCompact",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "Stop",
    "StopFailure",
    "SessionEnd",
)
# The events whose matcher is compared with the tool name; the others take none.
TOOL_EVENTS = frozenset(
    ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied")
)


class Claude(ClaudeShapedHarness):
    name = "claude"
    dialect = "claude"
    fired = FIRED
    tool_events = TOOL_EVENTS
    project_file = ".claude/settings.json"
    user_file = ".claude/settings.json"
