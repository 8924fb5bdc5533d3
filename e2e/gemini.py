"""Gemini CLI in `make e2e`: `gemini -p --yolo` headless."""

from __future__ import annotations

import json
import signal

from harness import LOG, Harness, Tui
from session import Run

# AfterModel is not wired (once per streamed chunk: docs/harnesses.md): a model call reads
# thinking until the next event.
EXPECTED = [
    ("SessionStart", {"activity": "working", LOG: "[starting] Session started (source: startup)"}),
    ("BeforeAgent", {"activity": "thinking", LOG: "[thinking] Agent turn started"}),
    ("BeforeModel", {"activity": "thinking", LOG: "[thinking] LLM call started"}),
    (
        "BeforeTool",
        {"activity": "executing", "toolName": "run_shell_command", LOG: "Running tool: run_shell_command"},
    ),
    ("AfterTool", {"activity": "working", LOG: "[working] Tool run_shell_command completed"}),
    ("BeforeModel", {"activity": "thinking"}),
    ("AfterAgent", {"activity": "working", LOG: "[working] Agent turn completed"}),
    ("SessionEnd", {"phase": "stopped", LOG: "[stopped] Session ended (reason: exit)"}),
]


def setup(run: Run) -> dict[str, str]:
    settings = {
        # With a base URL set Gemini CLI otherwise picks the gateway auth and exits.
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "model": {"name": "gemini-2.5-flash"},
    }
    (run.home / ".gemini").mkdir()
    (run.home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    print(run.sciontool("harness", "install", "gemini", "--project", str(run.project)), end="")
    return run.env(
        GEMINI_API_KEY="fake-key", GOOGLE_GEMINI_BASE_URL=run.url, GEMINI_CLI_TRUST_WORKSPACE="true", CI="1"
    )


def headless(prompt: str, resume: bool) -> list[str]:
    # Headless mode offers the shell tool only with --yolo.
    return ["gemini", *(["--resume", "latest"] if resume else []), "-p", prompt, "--yolo"]


TUI = Tui(
    argv=["gemini"],
    trusted=["gemini", "--yolo"],
    ready="Type your message",
    approval="Allow execution of",
    # question: the ask_user tool (the first option picked with Enter)
    interrupted="Request cancelled",
    compact="/compress",
    compacted="compressed from",
    exit="/quit",
    silent={
        "approval-granted": "Gemini CLI fires no hook from an approval to the tool's end",
        "approval-denied": "Gemini CLI fires no hook after a denial (Esc ends the turn)",
    },
)

HARNESS = Harness(
    lifecycle=True,
    chunk_event="AfterModel",
    quit_signal=signal.SIGQUIT,  # Ctrl-\: no SessionEnd (SIGINT, SIGTERM and SIGHUP fire it)
    name="gemini",
    package="@google/gemini-cli",
    version="0.61.0",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    api_error=400,
    tui=TUI,  # Gemini CLI retries a 500 for minutes (6 s, 12 s, 24 s ...); a 400 it does not
)
