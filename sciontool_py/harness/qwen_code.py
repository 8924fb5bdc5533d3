"""Qwen Code (0.24.4 tried): hooks in `.qwen/settings.json` or `~/.qwen/settings.json`.

A Gemini CLI fork whose hooks are Claude-shaped; like Gemini CLI it reads
comments in its settings. No timeout is written: Qwen Code's default applies.
"""

from __future__ import annotations

from sciontool_py.harness.base import ClaudeShapedHarness

# Every hook event Qwen Code 0.24.4 accepts, in the order of a session.
FIRED = (
    "InstructionsLoaded",
    "SessionStart",
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
    "Notification",
    "MessageDisplay",
    "PreCompact",
    "PostCompact",
    "TodoCreated",
    "TodoCompleted",
    "Stop",
    "StopFailure",
    "SessionEnd",
    "SessionDelete",
)
TOOL_EVENTS = frozenset(("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"))


class QwenCode(ClaudeShapedHarness):
    name = "qwen-code"
    dialect = "qwen-code"
    fired = FIRED
    tool_events = TOOL_EVENTS
    project_file = ".qwen/settings.json"
    user_file = ".qwen/settings.json"
    jsonc = True
