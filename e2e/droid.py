"""Factory's Droid in `make e2e`: `droid exec` against the fake model's chat completions.

A custom model in ~/.factory/settings.json points Droid at the fake model (no login; its
feature-flag lookups fail harmlessly offline). npm skips @factory/cli's platform binary (the
version it names is missing from the registry): it is installed explicitly.
"""

from __future__ import annotations

import json

from harness import LOG, Harness
from session import Run

EXPECTED = [
    ("SessionStart", {"activity": "working", LOG: "[starting] Session started (source: startup)"}),
    (
        "PreToolUse",
        {"activity": "executing", "toolName": "Execute", LOG: "[executing] Running tool: Execute"},
    ),
    # The tool's result goes to the model: thinking (the dialect's model_call_events).
    ("PostToolUse", {"activity": "thinking", LOG: "[working] Tool Execute completed"}),
    ("Stop", {"activity": "working", LOG: "[working] Agent turn completed"}),
    ("SessionEnd", {"phase": "stopped", LOG: "[stopped] Session ended (reason: other)"}),
]


def setup(run: Run) -> dict[str, str]:
    model = {
        "model": "gpt-4.1",
        "displayName": "Fake",
        "baseUrl": f"{run.url}/v1",
        "apiKey": "fake-key",
        "provider": "generic-chat-completion-api",
        "maxOutputTokens": 4096,
    }
    (run.home / ".factory").mkdir()
    (run.home / ".factory" / "settings.json").write_text(
        json.dumps({"customModels": [model]}, indent=2) + "\n"
    )
    print(run.sciontool("harness", "install", "droid", "--user"), end="")
    return run.env()


def headless(prompt: str, resume: bool) -> list[str]:
    return ["droid", "exec", "--model", "custom:gpt-4.1", "--auto", "high", prompt]


HARNESS = Harness(
    name="droid",
    package="@factory/cli",
    version="0.225.1",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    extra=("@factory/cli-linux-x64@0.225.2",),
    extra_prefix=None,
    # No model hook, and `droid exec` no UserPromptSubmit: only a tool's end says thinking (and a
    # command that exits non-zero gets no PostToolUse).
    model_hooks=("PostToolUse",),
    silent_model="Droid says nothing before this model request (`droid exec`'s first; after a failed tool)",
)
