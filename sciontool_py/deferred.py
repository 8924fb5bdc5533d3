"""Steps of a hook that its harness does not wait for, where the hook can answer first.

A hook process answers when it exits, so there each step runs where it is
called. The helper (helper/relayed.py) sends a relayed hook's answer once
every file its event changes is written, agent-info.json, agent.log,
prompt.md, agent-limits.json and the agent's record among them, as a hook
process would before it exits (Scion's contract: a reader that takes no lock
finds the event). Only then the steps no file reader needs: telemetry's spool
and the exit watcher's check. The helper runs one hook at a time, so the next
hook finds them done; the harness waits for none of them.
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


class AnswerFirst:
    """Hold defer()'s steps back until the block ends, then run them in order: every one, also
    when the block or a step raised; the first error is raised then."""

    def __init__(self) -> None:
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
            except BaseException as failed:  # the steps after it still run
                error = error or failed
        if error is not None and exc is None:
            raise error
