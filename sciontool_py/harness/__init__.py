"""`sciontool harness`: wire a harness's hooks to `sciontool hook --dialect=NAME`.

One module per harness; `jsonedit` and `tomledit` change settings files
without disturbing the rest of them. Never imported on the hook path.
"""

from __future__ import annotations

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Harness


def harnesses() -> dict[str, Harness]:
    from sciontool_py.harness.agentino import Agentino
    from sciontool_py.harness.antigravity import Antigravity
    from sciontool_py.harness.auggie import Auggie
    from sciontool_py.harness.claude import Claude
    from sciontool_py.harness.codex import Codex
    from sciontool_py.harness.copilot import Copilot
    from sciontool_py.harness.core_agent import CoreAgent
    from sciontool_py.harness.droid import Droid
    from sciontool_py.harness.gemini import Gemini
    from sciontool_py.harness.grok_build import GrokBuild
    from sciontool_py.harness.hermes import Hermes
    from sciontool_py.harness.mistral_vibe import MistralVibe
    from sciontool_py.harness.opencode import Opencode
    from sciontool_py.harness.qwen_code import QwenCode

    every = (
        Claude(),
        Gemini(),
        Codex(),
        Opencode(),
        CoreAgent(),
        Agentino(),
        Copilot(),
        Antigravity(),
        GrokBuild(),
        QwenCode(),
        Droid(),
        Auggie(),
        MistralVibe(),
        Hermes(),
    )
    return {h.name: h for h in every}


def find_harness(name: str) -> Harness:
    known = harnesses()
    if name not in known:
        raise SciontoolError(f"unknown harness {name!r}; known: {', '.join(known)}")
    return known[name]
