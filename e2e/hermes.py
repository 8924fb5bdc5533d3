"""Hermes Agent in `make e2e`: `hermes chat -q` against the fake model's chat completions.

Hermes is on PyPI (hermes-agent, Python 3.11 or later), installed in its own venv under the
cache. config.yaml names a custom OpenAI-compatible provider at the fake model (no login) and
`hooks_auto_accept: true`: Hermes otherwise asks at the terminal before a hook's first run, and
a run without a terminal skips the hooks.
"""

from __future__ import annotations

from harness import LOG, Harness
from session import CACHE, Run

EXPECTED = [
    ("on_session_start", {"activity": "working", LOG: "[starting] Session started"}),
    ("pre_llm_call", {"activity": "thinking", LOG: "[thinking] User prompt: say hello using the shell"}),
    ("pre_api_request", {"activity": "thinking", LOG: "[thinking] LLM call started"}),
    ("post_api_request", {"activity": "working", LOG: "[working] LLM call completed"}),
    ("pre_tool_call", {"activity": "executing", "toolName": "terminal", LOG: "Running tool: terminal"}),
    ("post_tool_call", {"activity": "working", LOG: "[working] Tool terminal completed"}),
    ("on_session_end", {"activity": "working", LOG: "[working] Agent turn completed"}),
    ("on_session_finalize", {"phase": "stopped"}),
]
CONFIG = """\
model:
  provider: custom
  base_url: {url}/v1
  default: gpt-4.1
  api_key: fake-key
  context_length: 131072
hooks_auto_accept: true
"""


def setup(run: Run) -> dict[str, str]:
    (run.home / ".hermes").mkdir()
    (run.home / ".hermes" / "config.yaml").write_text(CONFIG.format(url=run.url))
    print(run.sciontool("harness", "install", "hermes", "--user"), end="")
    return run.env(bin_dir=CACHE / "venv-hermes" / "bin")


def headless(prompt: str, resume: bool) -> list[str]:
    return ["hermes", "chat", "--yolo", "-Q", *(["--continue"] if resume else []), "-q", prompt]


HARNESS = Harness(
    name="hermes",
    package="hermes-agent",
    version="0.19.0",
    setup=setup,
    headless=headless,
    expected=EXPECTED,
    python=(3, 11),
    session_end="on_session_finalize",
)
