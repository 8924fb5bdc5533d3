"""`sciontool harness`: wire a harness's hooks to `sciontool hook --dialect=NAME`.

One module per harness; `jsonedit` and `tomledit` change settings files
without disturbing the rest of them. Never imported on the hook path.
"""

from __future__ import annotations

from sciontool_py.errors import SciontoolError
from sciontool_py.harness.base import Harness


def harnesses() -> dict[str, Harness]:
    from sciontool_py.harness.agentino import Agentino
    from sciontool_py.harness.claude import Claude
    from sciontool_py.harness.codex import Codex
    from sciontool_py.harness.core_agent import CoreAgent
    from sciontool_py.harness.gemini import Gemini
    from sciontool_py.harness.opencode import Opencode

    return {h.name: h for h in (Claude(), Gemini(), Codex(), Opencode(), CoreAgent(), Agentino())}


def find_harness(name: str) -> Harness:
    known = harnesses()
    if name not in known:
        raise SciontoolError(f"unknown harness {name!r}; known: {', '.join(known)}")
    return known[name]
