"""`make e2e`: the real harnesses, wired by `sciontool harness install`, against a fake model.

Installs each harness from npm (or PyPI, in a venv) into .e2e-cache/ (once), then runs its scenarios
(harness.py; a harness is one module: claude.py, gemini.py, codex.py, opencode.py), each in a
throwaway HOME and project, offline against e2e/fake_model.py, with e2e/hook_recorder.py first
on PATH as `sciontool`. For every scenario it prints the truth ratio (truth.py): the share of
the session in which agent-info.json said what the agent was doing; and whether the final
state is right. The hello scenario also checks every hook call against the harness's
expectations.

Usage: python e2e/run.py [HARNESS...] [--only SCENARIO,...]
(default: all ten; E2E_KEEP=1 keeps the temp folder; E2E_SLACK sets the reaction slack.)
Exit 0 when every final state and every expectation holds; ratios are reported, not failed on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import auggie
import claude
import codex
import copilot
import droid
import gemini
import hermes
import opencode
import qwen
import truth
import vibe
from fake_model import FakeModel, Script
from harness import LOG, Harness, Scenario, Step
from session import CACHE, Run, Session

HARNESSES: dict[str, Harness] = {
    h.name: h
    for h in (
        claude.HARNESS,
        gemini.HARNESS,
        codex.HARNESS,
        opencode.HARNESS,
        copilot.HARNESS,
        qwen.HARNESS,
        droid.HARNESS,
        vibe.HARNESS,
        hermes.HARNESS,
        auggie.HARNESS,
    )
}
TOOL = Path(__file__).resolve().parent / "tool.sh"


def install_harnesses(harnesses: list[Harness]) -> None:
    for harness in harnesses:
        if harness.python:
            install_venv(harness)
    harnesses = [h for h in harnesses if not h.python]
    prefix = CACHE / "npm"
    missing = []
    for harness in harnesses:
        manifest = prefix / "node_modules" / harness.package / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text()).get("version") != harness.version:
            missing.append(f"{harness.package}@{harness.version}")
    extras: dict[Path, list[str]] = {}
    for harness in harnesses:
        if harness.extra:
            where = CACHE / harness.extra_prefix if harness.extra_prefix else prefix
            marker = where / "node_modules" / harness.extra[0].rsplit("@", 1)[0] / "package.json"
            if not marker.exists():
                extras.setdefault(where, []).extend(harness.extra)
    if missing:
        extras.setdefault(prefix, []).extend(missing)
    for where, packages in extras.items():
        print(f"npm install {' '.join(packages)} into {where} ...", flush=True)
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(where), *packages],
            check=True,
            stdout=subprocess.DEVNULL,
        )


def install_venv(harness: Harness) -> None:
    """A PyPI harness in its own venv under the cache (its bin goes on PATH after the recorder)."""
    venv = CACHE / f"venv-{harness.name}"
    python = venv / "bin" / "python"
    found = (
        subprocess.run(
            [str(python), "-m", "pip", "show", harness.package], capture_output=True, text=True, check=False
        )
        if python.exists()
        else None
    )
    if found is not None and f"Version: {harness.version}" in found.stdout:
        return
    print(f"pip install {harness.package}=={harness.version} into {venv} ...", flush=True)
    if not python.exists():
        subprocess.run([interpreter(harness.python or (3, 10)), "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"{harness.package}=={harness.version}"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def interpreter(oldest: tuple[int, int]) -> str:
    """A Python at least this new: $E2E_PYTHON, this one, or python3.X on PATH."""
    names = [os.environ.get("E2E_PYTHON", ""), sys.executable]
    names += [f"python3.{minor}" for minor in range(14, oldest[1] - 1, -1)]
    for name in filter(None, names):
        found = (
            subprocess.run(
                [name, "-c", "import sys; print(*sys.version_info[:2])"],
                capture_output=True,
                text=True,
                check=False,
            )
            if shutil.which(name)
            else None
        )
        if found is not None and found.returncode == 0 and tuple(map(int, found.stdout.split())) >= oldest:
            return name
    raise SystemExit(f"no Python {oldest[0]}.{oldest[1]} or later found: set E2E_PYTHON to one")


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


def follow(records: list[dict[str, Any]], steps: list[Step]) -> list[str]:
    """The steps the calls do not bear out, in order (empty when all hold)."""
    problems = []
    position = 0
    for event, expected in steps:
        for i in range(position, len(records)):
            if raw_name(records[i]) == event:
                info = records[i]["info"] or {}
                wanted = {k: v for k, v in expected.items() if k != LOG}
                if any(info.get(k) != v for k, v in wanted.items()):
                    problems.append(
                        f"{event}: agent-info.json {json.dumps(info)}, expected {json.dumps(wanted)}"
                    )
                log = records[i]["log"]
                if LOG in expected and not (len(log) == 1 and log[0].endswith(expected[LOG])):
                    problems.append(
                        f"{event}: agent.log {json.dumps(log)}, expected one line ending {expected[LOG]!r}"
                    )
                position = i + 1
                break
        else:
            problems.append(f"{event}: no hook call (after the previous step)")
    return problems


def check_hooks(harness: Harness, session: Session) -> tuple[list[str], list[str]]:
    """The hello scenario's checks of every hook call: (failures, pending report lines)."""
    records = session.run.records()
    failures = []
    for proc in session.procs:
        if proc.returncode != 0:
            failures.append(f"{harness.name} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
        if "All done." not in proc.stdout:
            failures.append(f"{harness.name} did not print the model's answer: {proc.stdout.strip()[-200:]}")
    failures += follow(records, harness.expected)
    for record in records:
        # As Scion's hook: quiet on stderr (the harness captures it), exit 0.
        if record["rc"] != 0 or record["stderr"]:
            stderr = " | ".join(record["stderr"].splitlines())
            failures.append(f"{raw_name(record)}: hook exited {record['rc']}, stderr: {stderr[-400:]}")
        # One INFO line per call: a WARN or ERROR line is a state file the hook could not handle.
        if len(record["log"]) != 1 or " [sciontool] [INFO] " not in record["log"][0]:
            failures.append(f"{raw_name(record)}: agent.log lines {json.dumps(record['log'])}")
    pending = []
    for what, steps in harness.pending:
        problems = follow(records, steps)
        state = "holds: move it to EXPECTED" if not problems else f"not yet: {problems[0]}"
        pending.append(f"PENDING {what}: {state}")
    return failures, pending


@dataclass
class Outcome:
    harness: str
    scenario: str
    ratio: truth.Ratio
    strict: truth.Ratio  # without the finishing spans
    final: str  # what agent-info.json said at the end
    final_right: bool
    failures: list[str]
    seconds: float
    load: float  # the 1-minute load average when the scenario ended: ratios drop under load


def startup_windows(session: Session) -> None:
    """From each launch to the end of its first hook: this process has said nothing yet. A call
    the previous process left running (opencode's exit hand-off, as the next one starts) is not
    this one's: the launched process is not among the call's ancestors."""
    calls = sorted((r["t0"], r["t1"], r.get("ancestors", [])) for r in session.run.records())
    for i, (began, ended) in enumerate(session.truth.alive):
        pid = session.launched[i] if i < len(session.launched) else 0
        during = [(t1, up) for t0, t1, up in calls if began <= t0 <= ended]
        # A harness whose hooks no process of its own starts (a daemon) has none with the pid.
        first = next((t1 for t1, up in during if pid in up), during[0][0] if during else ended)
        session.truth.windows.append(
            (session.began if i == 0 else began, first, "startup, until the first hook")
        )


def silent_models(harness: Harness, session: Session) -> None:
    """Model requests the harness announced with no hook: excluded, with the harness's reason."""
    if not harness.silent_model:
        return
    starts = [r["t0"] for r in session.run.records() if raw_name(r) in harness.model_hooks]
    for began, ended in session.truth.flights:
        if not any(began - truth.LEAD - truth.SLACK <= t <= began for t in starts):
            session.truth.windows.append((began, ended, harness.silent_model))


def finishing(session: Session) -> None:
    """A headless harness's work is over at the end of its last model request or tool."""
    for index in session.headless_runs:
        began, ended = session.truth.alive[index]
        steps = [b for a, b in session.truth.flights + session.truth.tools if began <= a <= ended]
        session.truth.finishing.append((min(max(steps, default=ended), ended), ended))


def dump(run: Run, session: Session) -> None:
    """What the ratio was computed from, to recompute it under another definition."""
    data = {
        "began": session.began,
        "ended": session.ended,
        "truth": {k: v for k, v in vars(session.truth).items()},
        "samples": [(s.t, s.info) for s in session.samples],
    }
    (run.root / "truth.json").write_text(json.dumps(data))


def play(harness: Harness, scenario: Scenario, model: FakeModel, root: Path) -> Outcome:
    run = Run(f"{harness.name}-{scenario.name}", root / harness.name / scenario.name, model.url)
    shutil.copy(TOOL, run.project / "tool.sh")
    env = harness.setup(run)
    if scenario.hooks_checked:
        env["E2E_SERIAL"] = "1"  # each call's agent.log lines apart, for the transition checks
    tool = run.project / "tool.sh"
    model.load(Script(list(scenario.replies), marks=run.marks, tool=tool, latency=scenario.latency))
    failures: list[str] = []
    with Session(run, env) as session:
        try:
            scenario.drive(session, harness)
        except (TimeoutError, subprocess.TimeoutExpired) as error:
            failures.append(f"driver: {error}")
            for screen in session.tuis:
                screen.close(timeout=0)
    if os.environ.get("E2E_VERBOSE"):
        for f in model.flights:
            began, ended = f.start - session.began, (f.end or session.ended) - session.began
            print(f"  request {began:6.2f}-{ended:6.2f} {'main' if f.main else 'side'} {f.path}")
    flights = [(f.start, f.end or session.ended) for f in model.flights]
    session.truth.flights += flights
    last_exit = max((b for _, b in session.truth.alive), default=session.ended)
    session.truth.tools += truth.read_marks(run.marks, end_by=last_exit, gone=session.poller.gone)
    session.truth.release()
    startup_windows(session)
    silent_models(harness, session)
    finishing(session)
    ratio = truth.measure(session.truth, session.samples, session.began, session.ended)
    strict = truth.measure(session.truth, session.samples, session.began, session.ended, finishing=False)
    if os.environ.get("E2E_KEEP"):
        dump(run, session)
    final_info = session.samples[-1].info if session.samples else None
    pending: list[str] = []
    if scenario.hooks_checked:
        checked, pending = check_hooks(harness, session)
        failures += checked
    outcome = Outcome(
        harness.name,
        scenario.name,
        ratio,
        strict,
        truth.said(final_info),
        truth.right("stopped", final_info),
        failures,
        session.ended - session.began,
        os.getloadavg()[0],
    )
    report(outcome, session, scenario, pending)
    return outcome


def report(outcome: Outcome, session: Session, scenario: Scenario, pending: list[str]) -> None:
    origin = session.began
    verdict = verdict_of(outcome)
    print(
        f"{outcome.harness} {outcome.scenario}: ratio {outcome.ratio.ratio:.3f} over {outcome.ratio.judged} "
        f"samples, {outcome.seconds:.1f} s, final {outcome.final} ({verdict}), load {os.getloadavg()[0]:.1f}"
    )
    for a, b, why in session.truth.windows:
        print(f"  window {a - origin:6.2f}-{b - origin:6.2f} s excluded: {why}")
    for line in truth.wrong_stretches(outcome.ratio, origin):
        print(f"  wrong {line}")
    if os.environ.get("E2E_VERBOSE"):
        for record in session.run.records():
            logged = " | ".join(line.split(" [sciontool] ", 1)[-1] for line in record["log"])
            print(
                f"  {record['t0'] - origin:6.2f} {raw_name(record):34} {json.dumps(record['info'])}  {logged}"
            )
    for line in pending:
        print(f"  {line}")
    for line in outcome.failures:
        print(f"  FAIL {line}")
    sys.stdout.flush()


def verdict_of(outcome: Outcome) -> str:
    return "right" if outcome.final_right else "WRONG"


def table(outcomes: list[Outcome]) -> None:
    print(f"\n{'harness':10} {'scenario':18} {'ratio':>6} {'strict':>6} {'load':>5}  final")
    for o in outcomes:
        verdict = verdict_of(o)
        checks = "" if not o.failures else f"  ({len(o.failures)} checks failed)"
        ratios = f"{o.ratio.ratio:6.3f} {o.strict.ratio:6.3f} {o.load:5.1f}"
        print(f"{o.harness:10} {o.scenario:18} {ratios}  {verdict} ({o.final}){checks}")
    print(
        f"agent-info.json polled every {truth.POLL * 1000:.0f} ms; reaction slack {truth.SLACK:g} s per "
        f"transition, {truth.LEAD:g} s before a tool or model request, {truth.EXIT_SLACK:g} s before an exit"
    )


def main(argv: list[str]) -> int:
    only: set[str] = set()
    if "--only" in argv:
        at = argv.index("--only")
        only = set(argv[at + 1].split(","))
        argv = argv[:at] + argv[at + 2 :]
    names = argv or list(HARNESSES)
    unknown = [n for n in names if n not in HARNESSES]
    if unknown:
        raise SystemExit(f"unknown harness: {', '.join(unknown)}; known: {', '.join(HARNESSES)}")
    started = time.monotonic()
    harnesses = [HARNESSES[n] for n in names]
    install_harnesses(harnesses)
    keep = bool(os.environ.get("E2E_KEEP"))  # leave the homes, projects and call records to look at
    tmp = Path(tempfile.mkdtemp(prefix="sciontool-e2e-"))
    outcomes = []
    tmux = shutil.which("tmux") is not None
    if not tmux:
        print("tmux not found: the interactive scenarios are skipped", flush=True)
    try:
        with FakeModel() as model:
            for harness in harnesses:
                for scenario in harness.scenarios(tmux):
                    if not only or scenario.name in only:
                        outcomes.append(play(harness, scenario, model, tmp))
    finally:
        if keep:
            print(f"kept in {tmp}")
        else:
            shutil.rmtree(tmp)
    table(outcomes)
    failed = [o for o in outcomes if o.failures or not o.final_right]
    elapsed = time.monotonic() - started
    print(f"e2e: {len(outcomes) - len(failed)} passed, {len(failed)} failed in {elapsed:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
