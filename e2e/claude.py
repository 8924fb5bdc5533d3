"""Claude Code in `make e2e`: `claude -p` headless, the TUI in tmux for prompts."""

from __future__ import annotations

import json
import signal

from harness import LOG, Harness, Tui
from session import Run

EXPECTED = [
    ("SessionStart", {"activity": "working", LOG: "[starting] Session started (source: startup)"}),
    ("UserPromptSubmit", {"activity": "thinking", LOG: "[thinking] User prompt: say hello using the shell"}),
    ("PreToolUse", {"activity": "executing", "toolName": "Bash", LOG: "[executing] Running tool: Bash"}),
    ("PostToolUse", {"activity": "working", LOG: "[working] Tool Bash completed"}),
    ("PostToolBatch", {"activity": "thinking"}),  # the model is called next, with no hook of its own
    ("Stop", {"activity": "working", LOG: "[working] Agent turn completed"}),
    ("SessionEnd", {"phase": "stopped", LOG: "[stopped] Session ended (reason: other)"}),
]


def setup(run: Run) -> dict[str, str]:
    # The TUI skips its first-run screens: onboarding done, the fake key approved, the folder trusted.
    state = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": ["sk-test-fake"], "rejected": []},
        "projects": {
            str(run.project): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        },
    }
    (run.home / ".claude.json").write_text(json.dumps(state) + "\n")
    print(run.sciontool("harness", "install", "claude", "--project", str(run.project)), end="")
    return run.env(
        ANTHROPIC_BASE_URL=run.url,
        ANTHROPIC_API_KEY="sk-test-fake",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CODE_MAX_RETRIES="0",  # an API error ends the turn at once
    )


def headless(prompt: str, resume: bool) -> list[str]:
    # -p denies a command that needs approval; the scripted tool is allowed up front.
    return ["claude", *(["--continue"] if resume else []), "-p", prompt, "--allowedTools", "Bash"]


TUI = Tui(
    argv=["claude"],
    trusted=["claude", "--allowedTools", "Bash"],
    ready="? for shortcuts",
    approval="Do you want to proceed?",
    interrupted="Interrupted",
    compact="/compact",
    compacted="Compacted",
    silent={
        "approval-granted": "Claude Code fires no hook from an approval to the tool's end",
        "approval-denied": "Claude Code fires no hook after a denial (Esc ends the turn)",
        "interrupt": "Claude Code fires no hook on Esc during a tool",
    },
)

HARNESS = Harness(
    lifecycle=True,
    quit_signal=signal.SIGINT,  # Ctrl-C to `claude -p`: exit 1, no SessionEnd (SIGTERM and SIGHUP fire it)
    name="claude",
    package="@anthropic-ai/claude-code",
    version="2.1.197",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    tui=TUI,
)
