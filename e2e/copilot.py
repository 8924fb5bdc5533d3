"""GitHub Copilot CLI in `make e2e`: `copilot -p` headless against the fake model.

Copilot CLI talks to any OpenAI-compatible endpoint offline (`copilot help providers`):
COPILOT_OFFLINE with COPILOT_PROVIDER_BASE_URL / _API_KEY and COPILOT_MODEL, no GitHub login.
Its hooks file names each event on the command line; the payload comes on stdin.
"""

from __future__ import annotations

from harness import LOG, Harness
from session import Run

EXPECTED = [
    ("sessionStart", {"activity": "working", LOG: "[starting] Session started (source: new)"}),
    (
        "userPromptSubmitted",
        {"activity": "thinking", LOG: "[thinking] User prompt: say hello using the shell"},
    ),
    ("preToolUse", {"activity": "executing", "toolName": "bash", LOG: "[executing] Running tool: bash"}),
    ("postToolUse", {"activity": "working", LOG: "[working] Tool bash completed"}),
    ("agentStop", {"activity": "working", LOG: "[working] Agent turn completed"}),
    ("sessionEnd", {"phase": "stopped", LOG: "[stopped] Session ended (reason: complete)"}),
]


def setup(run: Run) -> dict[str, str]:
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


HARNESS = Harness(
    name="copilot",
    package="@github/copilot",
    version="1.0.102",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    extra=(),
    extra_prefix=None,
)
