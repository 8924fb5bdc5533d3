"""Each agent of a scenario judged apart: its ground truth, its own record, its ratio and its end.

Outside Scion every agent keeps its own status, in $HOME/.scion/agents/KEY.json (KEY names its
harness process, `p<pid>-<start time>`); agent-info.json is what Scion would show of them. A
record is the agent's whose hook calls have the record's process nearest above them: the
recorder notes each call's ancestors and $E2E_AGENT, and a child harness's calls have its
parent's harness above them too, only farther up. A record no hook call names that way (a hook
that ran after its harness was gone, keyed by session) is no agent's own: a second row in
`sciontool agents` for one agent, reported as a failure.

An agent's status at a moment is the most recently updated of its own records then (a resumed
session is a new process, so a new record). Its truth (truth.py) is filled here from what the
driver, the fake model and the tool markers saw: its processes' lives, its model requests (by
the tag its prompts carry), its scripted tools (by the script they came from).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import truth
from fake_model import Flight
from session import MAIN, Agent, Session


def raw_name(record: dict[str, Any]) -> str:
    """The envelope's event: named on the command line (Copilot CLI), from stdin, or (Codex's
    notify) from the JSON argument."""
    named = [a for a in record["args"][1:] if not a.startswith(("-", "{"))]
    if named:
        return str(named[0])
    text = record["stdin"].strip() or (record["args"][-1] if record["args"] else "")
    try:
        envelope = json.loads(text)
    except ValueError:
        return "?"
    if not isinstance(envelope, dict):
        return "?"
    return str(envelope.get("hook_event_name") or envelope.get("type") or "?")


def owners(keys: set[str], calls: list[dict[str, Any]]) -> dict[str, str]:
    """The agent of each record KEY its hook calls name (keys no call names are left out)."""
    found: dict[str, str] = {}
    for key in keys:
        pid, _, start = key[1:].partition("-")
        if not key.startswith("p") or not pid.isdigit() or not start.isdigit():
            continue
        depths = [(c["ancestors"].index(int(pid)), c["agent"]) for c in calls if int(pid) in c["ancestors"]]
        if depths:
            found[key] = min(depths)[1]
    return found


def status_of(own: set[str]) -> truth.Status:
    """An agent's status in a sample: the info of the most recently updated of its records."""

    def status(sample: truth.Sample) -> dict[str, Any] | None:
        mine = [r for k, r in sample.records.items() if k in own]
        newest = max(mine, key=lambda r: float(r.get("updated") or 0), default=None)
        info = newest.get("info") if newest is not None else None
        return info if isinstance(info, dict) else None

    return status


def fill(session: Session, silent: str, model_hooks: tuple[str, ...], session_end: str) -> None:
    """Each agent's truth from what the scenario saw (its process lives are the driver's).
    SILENT and MODEL_HOOKS: the harness's unannounced model requests (_silent_models);
    SESSION_END: the raw event of its session's end (_ends)."""
    calls = session.run.records()
    ended = session.ended
    called = {c.id: name for name, s in session.scripts.items() for r in s.replies for c in r.calls}
    last_exit = max((b for a in session.agents.values() for _, b in a.truth.alive), default=ended)
    marks = truth.read_marks(session.run.marks, end_by=last_exit, gone=session.poller.gone)
    for agent in session.agents.values():
        t = agent.truth
        if agent.inside in marks:  # a child harness lives as long as the tool that runs it
            t.alive.append(marks[agent.inside])
            agent.headless_runs.append(0)
        flights = [f for f in session.model.flights if f.agent == agent.name]
        t.flights += [(f.start, f.end or ended) for f in flights]
        t.tools += [span for ident, span in marks.items() if called.get(ident, MAIN) == agent.name]
        t.release()
        mine = [c for c in calls if c["agent"] == agent.name]
        _startup(agent, mine, session.began)
        if silent:
            _silent_models(t, mine, silent, model_hooks)
        _silent_failures(t, [f for f in flights if f.main], mine)
        _finishing(agent)
        _ends(agent, mine, session_end)


def _ends(agent: Agent, calls: list[dict[str, Any]], session_end: str) -> None:
    """How each headless run ended, where the driver did not say (a kill): as Scion's init would
    classify it, a non-zero exit with no session end fired before it is a crash (`error`, said by
    the exit watcher, which has REACTION seconds); anything else `stopped`. The harness fired the
    end when its process is among the call's ancestors: opencode's bridge has a detached shell
    send the disposal once opencode is gone, however it died (SIGKILL too), which is no end the
    harness said. (Where no call has the harness among its ancestors, a daemon's, any counts.)"""
    t = agent.truth
    for index, code in agent.codes.items():
        began, ended = t.alive[index]
        if code == 0 or any(e == ended for e, _ in t.ends):
            continue
        pid = agent.launched[index] if index < len(agent.launched) else 0
        during = [c for c in calls if began <= c["t0"] <= ended]
        own = any(pid in c["ancestors"] for c in during)
        said = any(raw_name(c) == session_end and (pid in c["ancestors"] or not own) for c in during)
        if not said:
            t.ends.append((ended, "error"))


def _startup(agent: Agent, calls: list[dict[str, Any]], began: float) -> None:
    """From each launch to the end of its first hook: this process has said nothing yet. A call
    the previous process left running (opencode's exit hand-off, as the next one starts) is not
    this one's: the launched process is not among the call's ancestors."""
    ordered = sorted((c["t0"], c["t1"], c["ancestors"]) for c in calls)
    for i, (start, end) in enumerate(agent.truth.alive):
        pid = agent.launched[i] if i < len(agent.launched) else 0
        during = [(t1, up) for t0, t1, up in ordered if start <= t0 <= end]
        # A harness whose hooks no process of its own starts (a daemon), or a child harness
        # (no pid known), has none with the pid: its first hook is the first call.
        first = next((t1 for t1, up in during if pid in up), during[0][0] if during else end)
        # Before its first launch the agent does not exist yet: nothing to judge.
        agent.truth.windows.append((began if i == 0 else start, first, "startup, until the first hook"))


def _silent_models(t: truth.Truth, calls: list[dict[str, Any]], why: str, hooks: tuple[str, ...]) -> None:
    """Model requests no hook announced: excluded, with the harness's reason. A request is
    announced by a call of one of HOOKS (a prompt, a tool's end) that started after the agent's
    previous request ended (or, for its first, after its launch) and before this one began."""
    said = sorted(c["t0"] for c in calls if raw_name(c) in hooks)
    previous = [start for start, _ in t.alive]
    for began, ended in sorted(t.flights):
        since = max(
            [e for _, e in t.flights if e <= began] + [p for p in previous if p <= began], default=0.0
        )
        if not any(since <= t0 <= began for t0 in said):
            t.windows.append((began, ended, why))


def _silent_failures(t: truth.Truth, main: list[Flight], calls: list[dict[str, Any]]) -> None:
    """A failed request no hook reports, until the harness tries again or exits (Droid retries
    for minutes; Qwen Code and Vibe give up and exit): nothing says the wait, excluded from the
    failure on."""
    for n, failed in enumerate(main):
        if not failed.failed or failed.end is None:
            continue
        exits = [b for a, b in t.alive if a <= failed.start <= b]
        after = min([f.start for f in main[n + 1 :]] + exits, default=failed.end)
        if not any(failed.start <= c["t0"] <= after for c in calls):
            t.windows.append(
                (failed.end, after, "no hook says a failed request, until the retry or the exit")
            )


def _finishing(agent: Agent) -> None:
    """A headless harness's work is over at the end of its last model request or tool."""
    t = agent.truth
    for index in agent.headless_runs:
        began, ended = t.alive[index]
        steps = [b for a, b in t.flights + t.tools if began <= a <= ended]
        t.finishing.append((min(max(steps, default=ended), ended), ended))


@dataclass
class Judged:
    """One agent's figures: its record's ratio (and without the finishing spans), its final
    state, and how long the end took to be said where the harness said none."""

    agent: Agent
    ratio: truth.Ratio
    strict: truth.Ratio
    final: str
    final_right: bool
    reactions: list[tuple[str, float | None]]  # (the end state, seconds from the exit to it said)


def judge(session: Session) -> tuple[list[Judged], list[str]]:
    """Every agent that ran, judged on its own records; and the records that are no agent's."""
    samples = session.samples
    seen = {key for s in samples for key in s.records}
    owned = owners(seen, session.run.records())
    out = []
    for agent in session.agents.values():
        if not agent.truth.alive:
            continue
        status = status_of({k for k, name in owned.items() if name == agent.name})
        t = agent.truth
        ratio = truth.measure(t, samples, session.began, session.ended, status=status)
        strict = truth.measure(t, samples, session.began, session.ended, finishing=False, status=status)
        last = status(samples[-1]) if samples else None
        expected = t.at(session.ended)
        reactions = []
        for exited, state in t.ends:
            said = next((s.t for s in samples if s.t >= exited and truth.right(state, status(s))), None)
            reactions.append((state, None if said is None else said - exited))
        out.append(Judged(agent, ratio, strict, truth.said(last), truth.right(expected, last), reactions))
    strays = []
    for key in sorted(seen - set(owned)):
        record = samples[-1].records.get(key) if samples else None
        record = record or next(s.records[key] for s in reversed(samples) if key in s.records)
        strays.append(
            f"record {key} is no agent's own (harness {record.get('harness')}, session "
            f"{record.get('session')}, {truth.said(record.get('info'))}): a hook ran with no harness above it"
        )
    return out, strays


def shown(session: Session) -> tuple[truth.Ratio, str, bool]:
    """agent-info.json: its ratio against the agents it may show (the top-level ones), and its
    final state, which must be the end of the one that exited last."""
    top = [a.truth for a in session.agents.values() if a.truth.alive and not a.parent]
    samples = session.samples
    if len(top) == 1:
        ratio = truth.measure(top[0], samples, session.began, session.ended)
    else:
        ratio = truth.measure_shown(top, samples, session.began, session.ended)
    last = max(top, key=lambda t: max(b for _, b in t.alive)) if top else truth.Truth()
    final = samples[-1].info if samples else None
    return ratio, truth.said(final), truth.right(last.at(session.ended), final)
