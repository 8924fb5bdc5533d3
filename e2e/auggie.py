"""Augment's Auggie in `make e2e`: `auggie --print` against the fake model's stand-in of Augment's API.

Auggie has no model-provider setting: it talks to its tenant, Augment's own service. Here the
login (`AUGMENT_SESSION_AUTH`, any token) names the fake model's /augment/ as the tenant URL,
which answers get-models (with the `enable_hooks` feature flag: Auggie runs no hook without it)
and chat-stream in Augment's wire format, and every other call with `{}`.
"""

from __future__ import annotations

import json

from harness import LOG, Harness
from session import Run

EXPECTED = [
    ("SessionStart", {"activity": "working", LOG: "[starting] Session started"}),
    ("PromptSubmit", {"activity": "thinking", LOG: "[thinking] User prompt: say hello using the shell"}),
    (
        "PreToolUse",
        {
            "activity": "executing",
            "toolName": "launch-process",
            LOG: "[executing] Running tool: launch-process",
        },
    ),
    # The tool's result goes to the model: thinking (the dialect's model_call_events).
    ("PostToolUse", {"activity": "thinking", LOG: "[working] Tool launch-process completed"}),
    ("Stop", {"activity": "working", LOG: "[working] Agent turn completed"}),
    ("SessionEnd", {"phase": "stopped", LOG: "[stopped] Session ended"}),
]


def setup(run: Run) -> dict[str, str]:
    print(run.sciontool("harness", "install", "auggie", "--user"), end="")
    login = {"accessToken": "fake-token", "tenantURL": f"{run.url}/augment/", "scopes": ["email"]}
    return run.env(AUGMENT_SESSION_AUTH=json.dumps(login))


def headless(prompt: str, resume: bool) -> list[str]:
    return ["auggie", *(["--continue"] if resume else []), "--print", prompt]


HARNESS = Harness(
    name="auggie",
    package="@augmentcode/auggie",
    version="0.36.0",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    api_error=400,  # unrecoverable for Auggie; a 500 it retries for minutes
    # No model hook: a prompt, and a tool's end (the model is called with its result), say thinking.
    model_hooks=("PromptSubmit", "PostToolUse"),
    silent_model="Auggie says nothing before this model request (a retry: no prompt, no tool's end)",
)
