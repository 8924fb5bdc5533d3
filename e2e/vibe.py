"""Mistral Vibe in `make e2e`: `vibe -p` against the fake model's chat completions.

Vibe is on PyPI (mistral-vibe, Python 3.12 or later), installed in its own venv under the cache.
A provider in ~/.vibe/config.toml points at the fake model; no login. Its hooks are only three
(pre_tool, post_tool, post_agent): nothing is said before the first tool nor at the end.
"""

from __future__ import annotations

from harness import LOG, Harness
from session import CACHE, Run

EXPECTED = [
    (
        "pre_tool",
        {
            "activity": "executing",
            "toolName": "file_system.bash",
            LOG: "[executing] Running tool: file_system.bash",
        },
    ),
    # The tool's result goes to the model: thinking (the dialect's model_call_events).
    ("post_tool", {"activity": "thinking", LOG: "[working] Tool file_system.bash completed"}),
    ("post_agent", {"activity": "working", LOG: "[working] Agent turn completed"}),
]
CONFIG = """\
active_model = "fake"
enable_telemetry = false
enable_update_checks = false
enable_notifications = false
experimental_enable_model_catalog = false
api_retry_max_elapsed_time = 0.0

[[providers]]
name = "fake"
api_base = "{url}/v1"
api_key_env_var = ""
backend = "generic"

[[models]]
name = "gpt-4.1"
provider = "fake"
alias = "fake"
"""


def setup(run: Run) -> dict[str, str]:
    (run.home / ".vibe").mkdir()
    (run.home / ".vibe" / "config.toml").write_text(CONFIG.format(url=run.url))
    print(run.sciontool("harness", "install", "mistral-vibe", "--user"), end="")
    return run.env(bin_dir=CACHE / "venv-mistral-vibe" / "bin")


def headless(prompt: str, resume: bool) -> list[str]:
    return ["vibe", "--trust", "--auto-approve", *(["--continue"] if resume else []), "-p", prompt]


HARNESS = Harness(
    name="mistral-vibe",
    package="mistral-vibe",
    version="3.0.2",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    python=(3, 12),
    session_end="",  # Vibe fires none
    # No model hook, no prompt hook: only a tool's end says thinking.
    model_hooks=("post_tool",),
    silent_model="Mistral Vibe says nothing before this model request (no prompt hook, no tool's end)",
)
