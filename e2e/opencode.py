"""opencode in `make e2e`: `opencode run` headless, hooks through the package's bridge plugin."""

from __future__ import annotations

import json
import shutil
import signal

from harness import LOG, Harness, Tui
from session import CACHE, Run

# opencode installs @opencode-ai/plugin into its config folder at a start, and waits for that
# install once a plugin is to be loaded: each throwaway HOME gets the folder as opencode leaves
# it after its own install (made once into the cache), so no run waits for the registry.
PLUGIN_PACKAGE = "@opencode-ai/plugin@1.18.33"
CONFIG_SEED = "opencode-config"

EXPECTED = [
    ("session.created", {"activity": "working", LOG: "[starting] Session started"}),
    # The turn is prepared (seconds at a TUI's start) before the model is called.
    (
        "message.updated.user",
        {"activity": "working", LOG: '[working] User prompt: "say hello using the shell"'},
    ),
    ("chat.params", {"activity": "thinking", LOG: "[thinking] LLM call started"}),
    ("tool.execute.before", {"activity": "executing", "toolName": "bash", LOG: "Running tool: bash"}),
    ("tool.execute.after", {"activity": "working", LOG: "[working] Tool bash completed"}),
    ("message.part.updated.step-finish", {"activity": "working", LOG: "[working] LLM call completed"}),
    ("session.idle", {"activity": "working", LOG: "[working] Agent turn completed"}),
]


def setup(run: Run) -> dict[str, str]:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "fake/fake-model",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "fake",
                "options": {"baseURL": f"{run.url}/v1", "apiKey": "fake"},
                "models": {"fake-model": {"name": "fake-model"}},
            }
        },
    }
    (run.project / "opencode.json").write_text(json.dumps(config, indent=2) + "\n")
    seed, folder = CACHE / CONFIG_SEED, run.home / ".config" / "opencode"
    folder.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(seed / name, folder / name)
    (folder / "node_modules").symlink_to(seed / "node_modules")
    # The user's plugin folder: a project's .opencode/ would be one more folder to install into.
    print(run.sciontool("harness", "install", "opencode", "--user"), end="")
    return run.env(
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_SHARE="1",
    )


def headless(prompt: str, resume: bool) -> list[str]:
    return ["opencode", "run", *(["--continue"] if resume else []), prompt]


TUI = Tui(
    # Bash runs without asking unless the config says "ask".
    argv=["env", 'OPENCODE_CONFIG_CONTENT={"permission": {"bash": "ask"}}', "opencode"],
    trusted=["opencode"],
    ready="Ask anything",
    approval="Permission required",
    deny=("Right", "Right", "Enter"),  # Allow once, Allow always, Reject
    question="Which color",
    interrupt=("Escape", "Escape"),  # the first Esc only arms it
    interrupted="· interrupted",  # 1.18.33: "Build · fake-model · interrupted" under the turn
    queues=True,
)

HARNESS = Harness(
    lifecycle=True,
    quit_signal=signal.SIGTERM,  # opencode fires nothing; its bridge's exit watch sends the disposal
    session_end="server.instance.disposed",
    name="opencode",
    package="opencode-ai",
    version="1.18.33",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    api_error=400,  # opencode retries a 500 for minutes; a 400 it does not
    tui=TUI,
    extra=(PLUGIN_PACKAGE,),
    extra_prefix=CONFIG_SEED,
)
