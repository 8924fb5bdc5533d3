"""GitHub Copilot CLI in `make e2e`: `copilot -p` headless against the fake model, the TUI in tmux.

Copilot CLI talks to any OpenAI-compatible endpoint offline (`copilot help providers`):
COPILOT_OFFLINE with COPILOT_PROVIDER_BASE_URL / _API_KEY and COPILOT_MODEL, no GitHub login.
Its hooks file names each event on the command line; the payload comes on stdin.
"""

from __future__ import annotations

import json
import signal

from harness import LOG, Harness, Tui
from session import Run

EXPECTED = [
    ("sessionStart", {"activity": "working", LOG: "[starting] Session started (source: new)"}),
    (
        "userPromptSubmitted",
        {"activity": "thinking", LOG: "[thinking] User prompt: say hello using the shell"},
    ),
    ("preToolUse", {"activity": "executing", "toolName": "bash", LOG: "[executing] Running tool: bash"}),
    # The tool's result goes to the model: thinking (the dialect's model_call_events).
    ("postToolUse", {"activity": "thinking", LOG: "[working] Tool bash completed"}),
    ("agentStop", {"activity": "working", LOG: "[working] Agent turn completed"}),
    ("sessionEnd", {"phase": "stopped", LOG: "[stopped] Session ended (reason: complete)"}),
]


def setup(run: Run) -> dict[str, str]:
    # The TUI asks once whether to trust the folder: the project is trusted up front.
    (run.home / ".copilot").mkdir()
    config = {"trustedFolders": [str(run.project)], "appTipShown": True}
    (run.home / ".copilot" / "config.json").write_text(json.dumps(config) + "\n")
    print(run.sciontool("harness", "install", "copilot", "--user"), end="")
    return run.env(
        COPILOT_OFFLINE="true",
        COPILOT_PROVIDER_BASE_URL=f"{run.url}/v1",
        COPILOT_PROVIDER_API_KEY="fake-key",
        COPILOT_MODEL="gpt-4.1",
        COPILOT_AUTO_UPDATE="false",
    )


def headless(prompt: str, resume: bool) -> list[str]:
    return [
        "copilot",
        *(["--continue"] if resume else []),
        "-p",
        prompt,
        "--allow-all-tools",
        "--no-auto-update",
    ]


TUI = Tui(
    argv=["copilot", "--no-auto-update"],
    trusted=["copilot", "--allow-all-tools", "--no-auto-update"],
    ready="? help",
    approval="Do you want to run this command?",
    question="Which color do you want?",  # ask_user: a form, Red preselected
    interrupt=("C-c",),  # Esc only arms "esc esc interrupt"; Ctrl+C stops the turn
    interrupted="Operation cancelled by user",
    compact="/compact",
    compacted="Compaction completed",
    silent={
        "approval-granted": "Copilot CLI fires no hook from an approval to the tool's end",
        "approval-denied": "Copilot CLI fires no hook after a denial (Esc ends the turn)",
        "interrupt": "Copilot CLI fires no hook on Ctrl+C during a tool (it kills the tool)",
    },
)

HARNESS = Harness(
    lifecycle=True,
    # A V8 fatal error (the heap exhausted) aborts: no sessionEnd (SIGINT, SIGTERM, SIGHUP and
    # SIGQUIT fire it).
    quit_signal=signal.SIGABRT,
    session_end="sessionEnd",
    name="copilot",
    package="@github/copilot",
    version="1.0.102",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    tui=TUI,
    extra=(),
    extra_prefix=None,
    # No model hook: a prompt, and a tool's end (the model is called with its result), say thinking.
    model_hooks=("userPromptSubmitted", "postToolUse"),
    silent_model="Copilot CLI says nothing before this model request (a retry: no prompt, no tool's end)",
)
