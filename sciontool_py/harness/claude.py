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

# Claude Code waits for these hooks, and each of them waits for every earlier one (turns.py): the
# ones after which it asks the person (the status says so before the prompt shows) or may end the
# turn or exit (no event is cut off). The others it runs in the background ("async"): they cost
# it a process start, not the hook.
WAITED = frozenset(("PermissionRequest", "Notification", "Stop", "StopFailure", "SessionEnd"))


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
