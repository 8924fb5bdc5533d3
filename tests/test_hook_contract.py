"""Scion's hook contract, relayed: once `sciontool hook` has returned, agent-info.json and agent.log
hold its event for a reader that takes no lock, as when Scion's own hook exits.

Every real-harness capture (tests/data/real-envelopes) and every live session
(tests/data/real-sessions) is replayed twice: by the hook in this process, the reference, and by
a stand-in harness whose hooks the HOME's resident helper serves (through the Python relay, and
through relay.bash as `harness install` wires it). Right after each hook returns, the test reads
agent-info.json and counts agent.log's lines, without any lock: the two replays agree on every
step.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from capture_fixtures import SESSIONS, event_names, lines
from conftest import Agent
from standin import StandIn

from sciontool_py import fastpath
from sciontool_py.helper import RELAY

LIVE = Path(__file__).parent / "data" / "real-sessions"
PREFIXES = {
    "c": "codex",
    "claude": "claude",
    "copilot": "copilot",
    "droid": "droid",
    "gemini": "gemini",
    "o": "opencode",
    "qwen": "qwen-code",
}


def live_dialect(name: str) -> str:
    head = name.split("-")[0]
    return PREFIXES.get(head) or PREFIXES[head.rstrip("0123456789")]


# (name, dialect, envelopes): the captures whose envelopes carry their event (Copilot's capture
# names it on the command line instead, which the stand-in does not pass), and the live sessions.
REPLAYS = [
    (f"{capture}/{session}", dialect, lines(capture, session))
    for capture, session, dialect in SESSIONS
    if event_names(capture, session) is None
] + [
    (path.name, live_dialect(path.name), (path / "envelopes.jsonl").read_text(encoding="utf-8").splitlines())
    for path in sorted(LIVE.iterdir())
    if path.is_dir()
]


def seen(home: Path) -> tuple[str, int]:
    """agent-info.json as it reads now, and agent.log's line count: no lock taken."""
    info = home / "agent-info.json"
    log = home / "agent.log"
    return (
        info.read_text() if info.exists() else "",
        len(log.read_text().splitlines()) if log.exists() else 0,
    )


def in_process(home: Path, dialect: str, envelope: str) -> None:
    """The hook through its real entry point, in this process (no helper: the reference)."""
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(envelope.encode()))
    sys.stdout = sys.stderr = io.TextIOWrapper(io.BytesIO(), write_through=True)
    try:
        fastpath.run("hook", ["--dialect", dialect])
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def reference(
    home: Path, dialect: str, envelopes: list[str], monkeypatch: pytest.MonkeyPatch
) -> list[object]:
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SCIONTOOL_EXIT_WATCH", "off")
    steps: list[object] = []
    for envelope in envelopes:
        in_process(home, dialect, envelope)
        steps.append(_comparable(seen(home)))
    return steps


def _comparable(step: tuple[str, int]) -> object:
    """agent-info.json without what differs between two runs of one session (its timestamps)."""
    text, count = step
    info = json.loads(text) if text else {}
    return ({k: v for k, v in info.items() if k not in ("lastUpdated", "updatedAt")}, count)


@pytest.mark.parametrize("relay", ["python", "shell"])
@pytest.mark.parametrize(("name", "dialect", "envelopes"), REPLAYS, ids=[r[0] for r in REPLAYS])
def test_a_relayed_hook_has_written_its_event_when_it_returns(
    agent: Agent,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    relay: str,
    name: str,
    dialect: str,
    envelopes: list[str],
) -> None:
    expected = reference(tmp_path / "reference", dialect, envelopes, monkeypatch)
    wrapper = "{hook}" if relay == "python" else f"bash {RELAY} {{hook}}"
    harness = StandIn(agent, tmp_path, dialect, wrapper=wrapper, SCIONTOOL_HELPER_LINGER="0")
    try:
        steps = []
        for envelope in envelopes:
            harness.send(json.loads(envelope))
            steps.append(_comparable(seen(agent.home)))
    finally:
        harness.close()
    for at, (got, want) in enumerate(zip(steps, expected, strict=True)):
        assert got == want, (
            f"{name}: after hook {at + 1} ({json.loads(envelopes[at]).get('hook_event_name')})"
        )
