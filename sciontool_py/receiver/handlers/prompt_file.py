"""prompt.md: the agent's first prompt, kept for Scion's task display."""

from __future__ import annotations

from sciontool_py.fs import regular_size, typed_mode, write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent


def save_first_prompt(home: str, event: CanonicalEvent) -> None:
    if event.name not in ("prompt-submit", "agent-start"):
        return
    prompt = event.text("prompt")
    if not prompt:
        return
    mode = typed_mode(home)
    if (regular_size(home, "prompt.md", mode) or 0) > 0:
        return  # missing, empty, or not a plain file (a symlink, a FIFO): write it
    write_atomic(home, "prompt.md", prompt, mode=mode)
