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

# The events after which Claude Code may end the turn or exit: it waits for these hooks, and each
# of them waits for every earlier one (turns.py), so none is cut off. It runs the others in the
# background ("async"), as it ran an observer hook: they cost it a process start, not the hook.
WAITED = frozenset(("Stop", "StopFailure", "SessionEnd"))


class Claude(ClaudeShapedHarness):
    name = "claude"
    dialect = "claude"
    fired = FIRED
    tool_events = TOOL_EVENTS
    project_file = ".claude/settings.json"
    user_file = ".claude/settings.json"

    def hook(self, event: str, command: str) -> dict[str, object]:
        hook = super().hook(event, command)
        if event not in WAITED:
            hook["async"] = True
        return hook
