"""prompt.md: the agent's first prompt, kept for Scion's task display."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent


def save_first_prompt(home: str, event: CanonicalEvent) -> None:
    if event.name not in ("prompt-submit", "agent-start"):
        return
    prompt = event.text("prompt")
    if not prompt:
        return
    path = os.path.join(home, "prompt.md")
    try:
        if os.path.getsize(path) > 0:
            return
    except OSError:
        pass  # missing: write it
    with open(path, "wb") as handle:
        handle.write(prompt.encode("utf-8", "surrogatepass"))
