"""Inside Scion, which harness process ends a session, for harnesses that exit without a session end.

`qwen -p` and `vibe -p` fire no hook when they exit, so agent-info.json would
say `working` for good. With the dialect option watch_harness_exit, the hook
records under the state lock, per session, the harness process (process.py:
by pid and start time, so a recycled pid is never taken for it); the HOME's
exit watcher (sciontool_py/receiver/harness_exit.py) applies a session-end once that
process has exited, unless the session ended meanwhile or another process
took it up. Outside Scion every agent is watched by its own record instead
(handlers/agent_state.py).
"""

from __future__ import annotations

from sciontool_py import process
from sciontool_py.receiver.handlers import sessions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent


def harness() -> list[int] | None:
    """[pid, start time] of the harness this hook runs under; None when /proc cannot say."""
    chain = process.ancestors()
    at = process.harness_index(chain)
    return None if at < 0 else [chain[at][0], chain[at][1]]


def claim(state: sessions.SessionState, event: CanonicalEvent) -> tuple[str, list[int]] | None:
    """Under the state lock: (session, harness) when the session's harness process is new to STATE
    (recorded there, for the watcher); None when it is known already or nothing should be."""
    session = sessions.key_text(event.text("session_id"))
    if event.name == "session-end" or state.has_ended(session):
        return None
    found = harness()
    if found is None or state.watched.get(session) == found:
        return None
    state.watch(session, found)  # a new process (a resume) replaces the last: its watch stands down
    return session, found
