"""The truth ratio: how much of a session an agent's status said what the agent was doing.

A `Poller` reads $HOME/agent-info.json (what Scion shows) and every agent's own record
($HOME/.scion/agents/*.json) every 50 ms. The ground truth of one agent at a moment, strongest
first:
- no harness process alive: how it ended, `stopped` (right: phase `stopped`, no live activity)
  or, killed mid-tool or gone mid-turn without its end hook, `error` (phase `error`, no live
  activity, a detail.message); from the exit the watcher has REACTION seconds to say it, and
  meanwhile the state before is right too;
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

POLL = 0.05
SLACK = float(os.environ.get("E2E_SLACK", "0.5"))
LEAD = float(
    os.environ.get("E2E_LEAD", "1.0")
)  # a harness prepares a step (pre-step hooks, a shell, the request) this long before it starts
EXIT_SLACK = 1.0  # a harness may end its session (SessionEnd) this long before its process exits
REACTION = 5.0  # seconds the exit watcher may take to say the end of a harness that said none
AGENTS = ".scion/agents"  # each agent's own record, outside Scion (sciontool_py/registry.py)
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
    info: dict[str, Any] | None  # agent-info.json
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # each agent's record, by key


class Poller:
    """Samples agent-info.json every 50 ms on a thread, from start() to stop(); meanwhile notes
    when a scripted tool's process vanished without its end marker (`gone`: id -> time)."""

    def __init__(self, home: Path, marks: Path) -> None:
        self.path = home / "agent-info.json"
        self.agents = home / AGENTS
        self.marks = marks
        self.samples: list[Sample] = []
        self.gone: dict[str, float] = {}
        self._seen: set[str] = set()  # tools whose pid was seen running tool.sh (not in a pid namespace)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.time()
            info = _read(self.path)
            records = {}
            try:
                names = os.listdir(self.agents)
            except OSError:
                names = []
            for name in names:
                record = _read(self.agents / name)
                if name.endswith(".json") and record is not None:
                    records[name[:-5]] = record
            self.samples.append(Sample(t, info, records))
            self._watch_tools(t)
            self._stop.wait(max(0.0, POLL - (time.time() - t)))

    def _watch_tools(self, t: float) -> None:
        try:
            lines = self.marks.read_text().splitlines()
        except OSError:
            return
        running: dict[str, int] = {}
        for line in lines:
            fields = line.split()
            if fields[0] == "start" and len(fields) == 4:
                running[fields[1]] = int(fields[3])
            elif fields[0] == "end":
                running.pop(fields[1], None)
        for ident, pid in running.items():
            if ident in self.gone:
                continue
            if _runs_tool(pid):
                self._seen.add(ident)
            elif ident in self._seen:
                self.gone[ident] = t

    def start(self) -> Poller:
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        self._stop.set()
        self._thread.join()
        return self.samples


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


@dataclass
class Truth:
    """What happened to one agent in a scenario, in wall-clock seconds (time.time())."""

    alive: list[Span] = field(default_factory=list)  # each harness process, launch to exit
    tools: list[Span] = field(default_factory=list)  # marker start to end
    flights: list[Span] = field(default_factory=list)  # model requests in flight
    human: list[Span] = field(default_factory=list)  # an approval / question on screen, unanswered
    windows: list[tuple[float, float, str]] = field(default_factory=list)  # excluded: no hook fires
    finishing: list[Span] = field(default_factory=list)  # the work is over; the harness exits
    released: list[float] = field(default_factory=list)  # running tools left to the background
    # How a process ended that did not say it with its end hook: (its exit, `stopped` or
    # `error`); other exits are `stopped`. From each such exit the watcher has REACTION seconds.
    ends: list[tuple[float, str]] = field(default_factory=list)

    def release(self) -> None:
        """A tool running when the harness released it is the agent's step only until then."""
        for at in self.released:
            self.tools = [(a, min(b, at) if a <= at else b) for a, b in self.tools]

    def at(self, t: float) -> str:
        if not _inside(t, self.alive):
            return max(((e, s) for e, s in self.ends if e <= t), default=(0.0, "stopped"))[1]
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

    def allowed(self, t: float, edges: list[float], finishing: bool = True) -> set[str]:
        """The states right at T: the truth, and what the slacks allow around it."""
        near = [e for e in edges if abs(e - t) <= SLACK]
        states = {self.at(t)} | {self.at(e - 1e-6) for e in near} | {self.at(e) for e in near}
        if any(0 <= b - t <= EXIT_SLACK for _, b in self.alive) or (finishing and _inside(t, self.finishing)):
            states.add("stopped")
        if any(0 <= a - t <= LEAD for a, _ in self.tools + self.human):
            states.add("executing")
        if any(0 <= a - t <= LEAD for a, _ in self.flights):
            states.add("thinking")
        for exited, _ in self.ends:
            if 0 <= t - exited <= REACTION:
                states.add(self.at(exited - 1e-6))
        return states


def _inside(t: float, spans: list[Span]) -> bool:
    return any(a <= t < b for a, b in spans)


def right(truth: str, info: dict[str, Any] | None) -> bool:
    info = info or {}
    phase, activity = info.get("phase"), info.get("activity")
    if truth == "stopped":
        return phase == "stopped" and activity not in LIVE
    if truth == "error":
        detail = info.get("detail")
        said = isinstance(detail, dict) and bool(detail.get("message"))
        return phase == "error" and activity not in LIVE and said
    return phase not in ("stopped", "error") and activity in RIGHT[truth]


def said(info: dict[str, Any] | None) -> str:
    if info is None:
        return "(no file)"
    parts = [str(info.get("activity") or "-")]
    if info.get("phase"):
        parts.append(f"phase={info['phase']}")
    return " ".join(parts)


def _runs_tool(pid: int) -> bool:
    """PID runs tool.sh (a zombie, killed and not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z" and b"tool.sh" in command


def read_marks(path: Path, end_by: float, gone: dict[str, float] | None = None) -> dict[str, Span]:
    """Each tool's span from its start and end markers, by id; a tool killed without its trap
    ends when its process was seen gone (GONE), else by END_BY."""
    starts: dict[str, float] = {}
    spans: dict[str, Span] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) < 3:
                continue  # a line cut short by a signal; the tool's other end marks it
            kind, ident, stamp = parts[:3]
            if kind == "start":
                starts[ident] = float(stamp)
            elif ident in starts:
                spans[ident] = (starts.pop(ident), float(stamp))
    spans.update({ident: (start, (gone or {}).get(ident, end_by)) for ident, start in starts.items()})
    return spans


@dataclass
class Ratio:
    ratio: float
    judged: int
    wrong: list[tuple[float, str, str]]  # (t, truth, said) of wrong samples
    excluded: float  # seconds inside windows


Status = Callable[[Sample], "dict[str, Any] | None"]  # the status judged, out of a sample


def shown(sample: Sample) -> dict[str, Any] | None:
    return sample.info


def measure(
    truth: Truth,
    samples: list[Sample],
    start: float,
    end: float,
    finishing: bool = True,
    status: Status = shown,
) -> Ratio:
    """The share of SAMPLES in which STATUS (agent-info.json by default) was right for TRUTH."""
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
        info = status(sample)
        if any(right(state, info) for state in truth.allowed(t, edges, finishing)):
            good += 1
        else:
            wrong.append((t, truth.at(t), said(info)))
    return Ratio(good / judged if judged else 1.0, judged, wrong, excluded)


def measure_shown(truths: list[Truth], samples: list[Sample], start: float, end: float) -> Ratio:
    """agent-info.json with several agents at once: what Scion would show for one of them. A sample
    is right when it is right for one of the agents alive then (an ended state only when it is
    right for every one of them: one agent's end must not read as everyone's), or, with none
    alive, for the one that exited last."""
    edges = [t.changes() for t in truths]
    windows = [w for t in truths for w in t.windows]
    judged = good = 0
    wrong = []
    for sample in samples:
        t = sample.t
        if not start <= t <= end or any(a <= t < b for a, b, _ in windows):
            continue
        judged += 1
        live = [(truth, e) for truth, e in zip(truths, edges, strict=True) if _inside(t, truth.alive)]
        if not live:
            last = max(truths, key=lambda truth: max((b for _, b in truth.alive if b <= t), default=0.0))
            live = [(last, edges[truths.index(last)])]
        allowed = [truth.allowed(t, e) for truth, e in live]
        ok = any(right(s, sample.info) for states in allowed for s in states)
        if ok and (sample.info or {}).get("phase") in ("stopped", "error"):
            ok = all(any(right(s, sample.info) for s in states) for states in allowed)
        if ok:
            good += 1
        else:
            wrong.append((t, "/".join(sorted({truth.at(t) for truth, _ in live})), said(sample.info)))
    return Ratio(good / judged if judged else 1.0, judged, wrong, 0.0)


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
