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

import agents
import auggie
import claude
import codex
import copilot
import droid
import gemini
import hermes
import lifecycle
import opencode
import qwen
import truth
import vibe
from agents import raw_name
from fake_model import FakeModel
from harness import LOG, Harness, Scenario, Step
from session import CACHE, MAIN, Run, Session

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


# The line of a turn's end whose hook ran after its harness exited, once the exit watcher had
# guessed a crash (opencode hands its last events over as it exits): the agent stopped.
REVISED = "[stopped] Session ended (reason: the turn's end ran after the harness exited)"


def revised(record: dict[str, Any]) -> bool:
    return bool(record["log"]) and record["log"][0].endswith(REVISED)


def follow(records: list[dict[str, Any]], steps: list[Step]) -> list[str]:
    """The steps the calls do not bear out, in order (empty when all hold). A turn's end that
    revised a crash the watcher guessed (REVISED) holds when the agent reads stopped."""
    problems = []
    position = 0
    for event, expected in steps:
        for i in range(position, len(records)):
            if raw_name(records[i]) == event:
                info = records[i]["info"] or {}
                wanted = {k: v for k, v in expected.items() if k != LOG}
                if revised(records[i]):
                    wanted = {"phase": "stopped"}
                if any(info.get(k) != v for k, v in wanted.items()):
                    problems.append(
                        f"{event}: agent-info.json {json.dumps(info)}, expected {json.dumps(wanted)}"
                    )
                log = records[i]["log"][1:] if revised(records[i]) else records[i]["log"]
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
        # One INFO line per call (two for a revision): a WARN or ERROR line is a state file the
        # hook could not handle.
        log = record["log"][1:] if revised(record) else record["log"]
        if len(log) != 1 or " [sciontool] [INFO] " not in log[0]:
            failures.append(f"{raw_name(record)}: agent.log lines {json.dumps(record['log'])}")
    pending = []
    for what, steps in harness.pending:
        problems = follow(records, steps)
        state = "holds: move it to EXPECTED" if not problems else f"not yet: {problems[0]}"
        pending.append(f"PENDING {what}: {state}")
    return failures, pending


@dataclass
class Outcome:
    """One agent of one scenario (the failures are the scenario's, on its first row)."""

    harness: str
    scenario: str
    agent: str
    ratio: truth.Ratio  # of the agent's own record
    strict: truth.Ratio  # the same without the finishing spans
    shown: truth.Ratio  # of agent-info.json, what Scion would show (the scenario's)
    final: str  # what the agent's record said at the end
    final_right: bool
    failures: list[str]
    seconds: float
    load: float  # the 1-minute load average when the scenario ended: ratios drop under load


def dump(run: Run, session: Session) -> None:
    """What the ratios were computed from, to recompute them under another definition."""
    data = {
        "began": session.began,
        "ended": session.ended,
        "truth": vars(session.truth),
        "agents": {a.label: vars(a.truth) for a in session.agents.values() if a.truth.alive},
        "samples": [(s.t, s.info, s.records) for s in session.samples],
    }
    (run.root / "truth.json").write_text(json.dumps(data))


def play(harness: Harness, scenario: Scenario, model: FakeModel, root: Path) -> list[Outcome]:
    run = Run(f"{harness.name}-{scenario.name}", root / harness.name / scenario.name, model.url)
    shutil.copy(TOOL, run.project / "tool.sh")
    env = harness.setup(run)
    if scenario.hooks_checked:
        env["E2E_SERIAL"] = "1"  # each call's agent.log lines apart, for the transition checks
    failures: list[str] = []
    with Session(run, env, model) as session:
        session.load({MAIN: scenario.replies}, scenario.latency)
        try:
            scenario.drive(session, harness)
        except (TimeoutError, subprocess.TimeoutExpired) as error:
            failures.append(f"driver: {error}")
            for screen in session.tuis:
                screen.close(timeout=0)
    if os.environ.get("E2E_VERBOSE"):
        for f in model.flights:
            began, ended = f.start - session.began, (f.end or session.ended) - session.began
            kind = "main" if f.main else "side"
            print(f"  request {began:6.2f}-{ended:6.2f} {kind} {f.agent or '-'} {f.path}")
    failures += session.failures
    agents.fill(session, harness.silent_model, harness.model_hooks, harness.session_end)
    judged, strays = agents.judge(session)
    failures += strays
    shown, shown_final, shown_right = agents.shown(session)
    if not shown_right:
        failures.append(f"agent-info.json ends {shown_final}, not the end of the agent that exited last")
    for j in judged:
        for state, seconds in j.reactions:
            if seconds is None or seconds > truth.REACTION:
                took = "never" if seconds is None else f"after {seconds:.1f} s"
                failures.append(
                    f"{j.agent.label}: {state} said {took}, not within {truth.REACTION:g} s of the exit"
                )
    if os.environ.get("E2E_KEEP"):
        dump(run, session)
    pending: list[str] = []
    if scenario.hooks_checked:
        checked, pending = check_hooks(harness, session)
        failures += checked
    load = os.getloadavg()[0]
    seconds = session.ended - session.began
    outcomes = [
        Outcome(
            harness.name,
            scenario.name,
            j.agent.label,
            j.ratio,
            j.strict,
            shown,
            j.final,
            j.final_right,
            failures if n == 0 else [],
            seconds,
            load,
        )
        for n, j in enumerate(judged)
    ]
    report(outcomes, judged, session, shown, shown_final, pending)
    return outcomes


def report(
    outcomes: list[Outcome],
    judged: list[agents.Judged],
    session: Session,
    shown: truth.Ratio,
    shown_final: str,
    pending: list[str],
) -> None:
    origin = session.began
    head = outcomes[0] if outcomes else None
    if head is None:
        print(f"{session.run.name}: no agent ran")
        return
    print(
        f"{head.harness} {head.scenario}: {head.seconds:.1f} s, load {head.load:.1f}; agent-info.json "
        f"{shown.ratio:.3f} over {shown.judged} samples, final {shown_final}"
    )
    for line in truth.wrong_stretches(shown, origin):
        print(f"  agent-info.json wrong {line}")
    for o, j in zip(outcomes, judged, strict=True):
        ends = "".join(
            f", {state} said {'never' if took is None else f'{took:.1f} s'} after the exit"
            for state, took in j.reactions
        )
        print(
            f"  {o.agent}: record {o.ratio.ratio:.3f} over {o.ratio.judged} samples, final {o.final} "
            f"({verdict_of(o)}){ends}"
        )
        for a, b, why in j.agent.truth.windows:
            print(f"    window {a - origin:6.2f}-{b - origin:6.2f} s excluded: {why}")
        for line in truth.wrong_stretches(o.ratio, origin):
            print(f"    wrong {line}")
    if os.environ.get("E2E_VERBOSE"):
        for record in session.run.records():
            logged = " | ".join(line.split(" [sciontool] ", 1)[-1] for line in record["log"])
            print(
                f"  {record['t0'] - origin:6.2f} {record['agent'] or '-':7} {raw_name(record):34} "
                f"{json.dumps(record['info'])}  {logged}"
            )
    for line in pending:
        print(f"  {line}")
    for line in head.failures:
        print(f"  FAIL {line}")
    sys.stdout.flush()


def verdict_of(outcome: Outcome) -> str:
    return "right" if outcome.final_right else "WRONG"


def table(outcomes: list[Outcome]) -> None:
    heads = f"{'ratio':>6} {'strict':>6} {'shown':>6} {'load':>5}"
    print(f"\n{'harness':10} {'scenario':18} {'agent':7} {heads}  final")
    for o in outcomes:
        checks = "" if not o.failures else f"  ({len(o.failures)} checks failed)"
        ratios = f"{o.ratio.ratio:6.3f} {o.strict.ratio:6.3f} {o.shown.ratio:6.3f} {o.load:5.1f}"
        print(f"{o.harness:10} {o.scenario:18} {o.agent:7} {ratios}  {verdict_of(o)} ({o.final}){checks}")
    print(
        f"ratio: the agent's own record; shown: agent-info.json; polled every {truth.POLL * 1000:.0f} ms; "
        f"reaction slack {truth.SLACK:g} s per transition, {truth.LEAD:g} s before a tool or model request, "
        f"{truth.EXIT_SLACK:g} s before an exit, {truth.REACTION:g} s for an end the harness did not say"
    )


def remove(tmp: Path) -> None:
    """The temp folder, once what a killed harness left behind (an npm install opencode started)
    has stopped writing into it."""
    for _ in range(10):
        try:
            shutil.rmtree(tmp)
            return
        except OSError:
            time.sleep(1.0)
    print(f"could not remove {tmp}: something still writes there", flush=True)


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
                for scenario in harness.scenarios(tmux) + lifecycle.scenarios(harness, tmux):
                    if not only or scenario.name in only:
                        outcomes += play(harness, scenario, model, tmp)
    finally:
        if keep:
            print(f"kept in {tmp}")
        else:
            remove(tmp)
    table(outcomes)
    played = {(o.harness, o.scenario) for o in outcomes}
    failed = {(o.harness, o.scenario) for o in outcomes if o.failures or not o.final_right}
    elapsed = time.monotonic() - started
    print(f"e2e: {len(played) - len(failed)} passed, {len(failed)} failed in {elapsed:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
