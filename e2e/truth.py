"""The truth ratio: how much of a session agent-info.json said what the agent was doing.

A `Poller` reads $HOME/agent-info.json every 50 ms. The ground truth at a moment, strongest first:
- no harness process alive: `stopped` (right: phase `stopped`, no live activity);
- the driver awaits the human (an approval or question on screen): `waiting_for_input`;
- a scripted tool runs (between its start and end markers, e2e/tool.sh): `executing`;
- a model request is in flight at the fake model: `thinking`;
- otherwise `working` (alive, between steps, Scion's "Ready"; `completed` is right too). An
  interactive prompt awaiting the next message is `working` too: the turn is over.
While alive, a sample is right only when its phase is not `stopped`.

Around each change of the truth a sample may show the state before or after it for SLACK
seconds either side: a hook is a process the harness starts, and it runs before the step it
announces (PreToolUse before the tool). Windows where the harness fires no hook at all are
excluded and listed. `executing` is right LEAD seconds before a tool's start marker and
`thinking` LEAD seconds before a model request: the harness is preparing the step (it runs its
pre-step hooks, and waits for them, before it starts the shell or sends the request). So is
`executing` LEAD seconds before the human is asked: the harnesses run a tool's pre-step hook
(PreToolUse, BeforeTool) before they check its permission and draw the approval.
In the last EXIT_SLACK seconds before an exit `stopped` is right too (the
harness has ended its session and is shutting down), and so it is while the harness finishes:
from its last model request or tool (headless) or from the exit command the driver typed (TUI)
to its exit; `measure(..., finishing=False)` leaves that out (the stricter figure).
Ratio = right samples / samples outside the windows.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

POLL = 0.05
SLACK = float(os.environ.get("E2E_SLACK", "0.5"))
LEAD = float(
    os.environ.get("E2E_LEAD", "1.0")
)  # a harness prepares a step (pre-step hooks, a shell, the request) this long before it starts
EXIT_SLACK = 1.0  # a harness may end its session (SessionEnd) this long before its process exits
LIVE = frozenset({"working", "thinking", "executing", "waiting_for_input"})
RIGHT: dict[str, frozenset[str]] = {
    "thinking": frozenset({"thinking"}),
    "executing": frozenset({"executing"}),
    "waiting_for_input": frozenset({"waiting_for_input"}),
    "working": frozenset({"working", "completed"}),
}

Span = tuple[float, float]


@dataclass
class Sample:
    t: float
    info: dict[str, Any] | None


class Poller:
    """Samples agent-info.json every 50 ms on a thread, from start() to stop()."""

    def __init__(self, home: Path) -> None:
        self.path = home / "agent-info.json"
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.time()
            try:
                info = json.loads(self.path.read_text())
            except (OSError, ValueError):
                info = None
            self.samples.append(Sample(t, info if isinstance(info, dict) else None))
            self._stop.wait(max(0.0, POLL - (time.time() - t)))

    def start(self) -> Poller:
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        self._stop.set()
        self._thread.join()
        return self.samples


@dataclass
class Truth:
    """What happened in one scenario, in wall-clock seconds (time.time())."""

    alive: list[Span] = field(default_factory=list)  # each harness process, launch to exit
    tools: list[Span] = field(default_factory=list)  # marker start to end
    flights: list[Span] = field(default_factory=list)  # model requests in flight
    human: list[Span] = field(default_factory=list)  # an approval / question on screen, unanswered
    windows: list[tuple[float, float, str]] = field(default_factory=list)  # excluded: no hook fires
    finishing: list[Span] = field(default_factory=list)  # the work is over; the harness exits

    def at(self, t: float) -> str:
        if not _inside(t, self.alive):
            return "stopped"
        if _inside(t, self.human):
            return "waiting_for_input"
        if _inside(t, self.tools):
            return "executing"
        if _inside(t, self.flights):
            return "thinking"
        return "working"

    def changes(self) -> list[float]:
        spans = self.alive + self.tools + self.flights + self.human
        return sorted({edge for span in spans for edge in span})


def _inside(t: float, spans: list[Span]) -> bool:
    return any(a <= t < b for a, b in spans)


def right(truth: str, info: dict[str, Any] | None) -> bool:
    info = info or {}
    phase, activity = info.get("phase"), info.get("activity")
    if truth == "stopped":
        return phase == "stopped" and activity not in LIVE
    return phase != "stopped" and activity in RIGHT[truth]


def said(info: dict[str, Any] | None) -> str:
    if info is None:
        return "(no file)"
    parts = [str(info.get("activity") or "-")]
    if info.get("phase"):
        parts.append(f"phase={info['phase']}")
    return " ".join(parts)


def read_marks(path: Path, end_by: float) -> list[Span]:
    """Start/end markers as spans; a tool killed without its trap ends by END_BY."""
    starts: dict[str, float] = {}
    spans: list[Span] = []
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) != 3:
                continue  # a line cut short by a signal; the tool's other end marks it
            kind, ident, stamp = parts
            if kind == "start":
                starts[ident] = float(stamp)
            elif ident in starts:
                spans.append((starts.pop(ident), float(stamp)))
    spans += [(start, end_by) for start in starts.values()]
    return spans


@dataclass
class Ratio:
    ratio: float
    judged: int
    wrong: list[tuple[float, str, str]]  # (t, truth, said) of wrong samples
    excluded: float  # seconds inside windows


def measure(truth: Truth, samples: list[Sample], start: float, end: float, finishing: bool = True) -> Ratio:
    edges = truth.changes()
    judged = 0
    good = 0
    wrong = []
    excluded = sum(max(0.0, min(b, end) - max(a, start)) for a, b, _ in truth.windows)
    for sample in samples:
        t = sample.t
        if not start <= t <= end or any(a <= t < b for a, b, _ in truth.windows):
            continue
        judged += 1
        near = [e for e in edges if abs(e - t) <= SLACK]
        states = {truth.at(t)} | {truth.at(e - 1e-6) for e in near} | {truth.at(e) for e in near}
        if any(0 <= b - t <= EXIT_SLACK for _, b in truth.alive) or (
            finishing and _inside(t, truth.finishing)
        ):
            states.add("stopped")
        if any(0 <= a - t <= LEAD for a, _ in truth.tools + truth.human):
            states.add("executing")
        if any(0 <= a - t <= LEAD for a, _ in truth.flights):
            states.add("thinking")
        if any(right(state, sample.info) for state in states):
            good += 1
        else:
            wrong.append((t, truth.at(t), said(sample.info)))
    return Ratio(good / judged if judged else 1.0, judged, wrong, excluded)


def wrong_stretches(ratio: Ratio, origin: float) -> list[str]:
    """Consecutive wrong samples that said the same merged: 'from-to s: said Y, truth X/Z'."""
    out: list[list[Any]] = []
    for t, truth, shown in ratio.wrong:
        if out and out[-1][3] == shown and t - out[-1][1] <= 3 * POLL:
            out[-1][1] = t
            if truth not in out[-1][2]:
                out[-1][2].append(truth)
        else:
            out.append([t, t, [truth], shown])
    return [f"{a - origin:6.2f}-{b - origin:6.2f} s: said {sh}, truth {'/'.join(tr)}" for a, b, tr, sh in out]
