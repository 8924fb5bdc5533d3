"""`sciontool harness`: wire a harness's hooks to `sciontool hook --dialect=NAME`.

One module per harness; `jsonedit` and `tomledit` change settings files
without disturbing the rest of them. Never imported on the hook path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sciontool_py.errors import SciontoolError

if TYPE_CHECKING:  # the CLI reads NAMES at each start: a harness's modules load only when it is used
    from sciontool_py.harness.base import Harness

# Every harness, in the order help and docs list them: name -> its module and class. The one
# list: cli.py's help and completion read the names here without importing a module.
_CLASSES = {
    "claude": "claude.Claude",
    "gemini": "gemini.Gemini",
    "codex": "codex.Codex",
    "opencode": "opencode.Opencode",
    "core-agent": "core_agent.CoreAgent",
    "agentino": "agentino.Agentino",
    "copilot": "copilot.Copilot",
    "antigravity": "antigravity.Antigravity",
    "grok-build": "grok_build.GrokBuild",
    "qwen-code": "qwen_code.QwenCode",
    "droid": "droid.Droid",
    "auggie": "auggie.Auggie",
    "mistral-vibe": "mistral_vibe.MistralVibe",
    "hermes": "hermes.Hermes",
}
NAMES = tuple(_CLASSES)
# agentino's hooks are registered in the agent's code: `harness show` prints the snippet, and
# install and uninstall refuse, having no settings file to change.
INSTALLABLE = tuple(name for name in NAMES if name != "agentino")


def find_harness(name: str) -> Harness:
    if name not in _CLASSES:
        raise SciontoolError(f"unknown harness {name!r}; known: {', '.join(NAMES)}")
    from importlib import import_module

    module, _, cls = _CLASSES[name].partition(".")
    harness: Harness = getattr(import_module(f"sciontool_py.harness.{module}"), cls)()
    return harness
