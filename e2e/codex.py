"""Codex in `make e2e`: `codex exec` headless."""

from __future__ import annotations

import signal

from harness import LOG, Harness, Tui
from session import Run

EXPECTED = [
    ("SessionStart", {"activity": "working", LOG: "[starting] Session started (source: startup)"}),
    ("UserPromptSubmit", {"activity": "thinking", LOG: "[thinking] User prompt: say hello using the shell"}),
    # Neither model request hook is wired (docs/harnesses.md): the prompt and a tool's end say a
    # request starts, the next hook that it ended.
    ("PreToolUse", {"activity": "executing", "toolName": "Bash", LOG: "[executing] Running tool: Bash"}),
    ("PostToolUse", {"activity": "thinking", LOG: "[working] Tool Bash completed"}),
    ("Stop", {"activity": "working", LOG: "[working] Agent turn completed"}),
    ("agent-turn-complete", {"activity": "completed", LOG: "[completed] Agent completed task"}),
    ("SessionEnd", {"phase": "stopped", LOG: "[stopped] Session ended (reason: other)"}),
]


def setup(run: Run) -> dict[str, str]:
    (run.home / ".codex").mkdir()
    (run.home / ".codex" / "config.toml").write_text(
        "# e2e: a local fake model\n"
        'model = "gpt-5-fake"\n'
        'model_provider = "fake"\n'
        'approval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n'
        "\n"
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{run.url}/v1"\n'
        'env_key = "FAKE_OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"  # an API error ends the turn at once
        "stream_max_retries = 0\n"
    )
    print(run.sciontool("harness", "install", "codex", "--user"), end="")
    return run.env(FAKE_OPENAI_API_KEY="fake")


def headless(prompt: str, resume: bool) -> list[str]:
    argv = ["codex", "exec", *(["resume", "--last"] if resume else [])]
    argv += ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    # User hooks run only once trusted; a scripted run skips the review.
    return [*argv, "--dangerously-bypass-hook-trust", prompt]


TUI = Tui(
    # config.toml says approval_policy "never"; the scripted call asks to leave the sandbox.
    argv=["codex", "--dangerously-bypass-hook-trust", "-a", "on-request", "-s", "workspace-write"],
    # request_user_input is offered outside Plan mode only with this feature on.
    trusted=[
        "codex",
        "--dangerously-bypass-hook-trust",
        "--dangerously-bypass-approvals-and-sandbox",
        "--enable",
        "default_mode_request_user_input",
    ],
    ready="Ask Codex to do anything",
    approval="Would you like to run the following command?",
    interrupted="interrupted",
    # Esc ends the turn; the command goes on (`1 background terminal running`) until /stop or exit.
    backgrounded="background terminal running",
    compact="/compact",
    compacted="Context compacted",
    exit="/quit",
    silent={"approval-granted": "Codex 0.171.0 fires no hook from an approval to the tool's end"},
)

HARNESS = Harness(
    lifecycle=True,
    quit_signal=signal.SIGTERM,  # no SessionEnd
    name="codex",
    package="@openai/codex",
    version="0.171.0",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    tui=TUI,
)
