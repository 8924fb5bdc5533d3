"""Steps of a hook that its harness does not wait for, where the hook can answer first.

A hook process answers when it exits, so there each step runs where it is
called. The resident helper (relayed.py) sends a relayed hook's answer first
and then the steps only this package reads: the agent's record (under the
state lock, released after it), telemetry, the exit watcher's check. (The
hub's report stays in place: it is Scion's, inside its containers, where
nothing is relayed.) The helper runs one hook at a time, so the next hook
finds them done; the harness waits for none of them.

For most events it answers sooner still, once the envelope is decoded and
mapped, before any file is written (go_on; receiver/hook.py says which): the
status the harness does not need written before it goes on.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

_held: AnswerFirst | None = None  # the block a relayed hook runs in: the steps to run after it


def defer(step: Callable[[], object]) -> None:
    """Run STEP now, or, inside AnswerFirst, once its block (which answers) has ended."""
    if _held is None:
        step()
    else:
        _held.steps.append(step)


def go_on(response: str) -> None:
    """Answer the harness now, with RESPONSE on stdout and exit 0, before the hook's work, where
    a hook can answer before it ends (an AnswerFirst given EARLY: the resident helper); once.
    Elsewhere nothing: a hook process answers as it exits."""
    block = _held
    if block is not None and block.early is not None:
        early, block.early = block.early, None
        early(response)


class AnswerFirst:
    """Hold defer()'s steps back until the block ends, then run them in order: every one, also
    when the block or a step raised (a step may release a lock); the first error is raised then.
    EARLY: how go_on() answers the harness from inside the block (None: it does not)."""

    def __init__(self, early: Callable[[str], None] | None = None) -> None:
        self.early = early
        self.steps: list[Callable[[], object]] = []
        self.outer: AnswerFirst | None = None

    def __enter__(self) -> AnswerFirst:
        global _held
        self.outer, _held = _held, self
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        global _held
        steps, _held = self.steps, self.outer
        error: BaseException | None = None
        for step in steps:
            try:
                step()
            except BaseException as failed:  # the steps after it still run (a lock to release)
                error = error or failed
        if error is not None and exc is None:
            raise error
