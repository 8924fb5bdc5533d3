"""Many hooks at once on one HOME: subagents, parallel tools and `status` calls race for real.

200 real `sciontool` processes start together while this test keeps reading
agent-info.json; every read must parse, no key may be lost, every call leaves
exactly one agent.log line and every counted event is counted once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import TIMED

pytestmark = TIMED

SCIONTOOL = Path(sys.executable).with_name("sciontool")
SEED = {"phase": "running", "activity": "working", "harness": "core-agent", "detail": {"message": "seeded"}}
GAVE_UP = re.compile(
    r"\S+ \[sciontool\] \[WARN\] State lock on \S+ still held by another process after 2s; "
    r"updating state without it"
)
LOG_LINE = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z \[sciontool\] \[INFO\] \[[a-z_]+\] \S.*"
)

# (arguments, envelope or None for a status call, expected agent.log message, how many)
CALLS: list[tuple[list[str], dict[str, object] | None, str, int]] = [
    (["hook", "--dialect=core-agent"], {"hook_event_name": "agent-end"}, "Agent turn completed", 40),
    (["hook", "--dialect=core-agent"], {"hook_event_name": "model-end"}, "LLM call completed", 40),
    (
        ["hook", "--dialect=core-agent"],
        {"hook_event_name": "tool-start", "tool_name": "grep", "tool_input": {"q": "x"}},
        "Running tool: grep",
        40,
    ),
    (
        ["hook", "--dialect=core-agent"],
        {"hook_event_name": "tool-end", "tool_name": "grep"},
        "Tool grep completed",
        25,
    ),
    (["hook", "--dialect=core-agent"], {"hook_event_name": "model-start"}, "LLM call started", 25),
    (["status", "ask_user", "which", "one?"], None, "Agent requested input: which one?", 15),
    (["status", "task_completed"], None, "Agent completed task: Task completed", 15),
]


class Watcher(threading.Thread):
    """Reads agent-info.json and agent-limits.json as fast as it can until stopped."""

    def __init__(self, home: Path) -> None:
        super().__init__(daemon=True)
        self.home = home
        self.stop = threading.Event()
        self.reads = 0
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            text = (self.home / "agent-info.json").read_text()  # never missing: rename is atomic
            try:
                info = json.loads(text)
            except ValueError as exc:
                self.failures.append(f"agent-info.json did not parse ({exc}): {text!r}")
                continue
            lost = {k: v for k, v in SEED.items() if k not in ("activity",) and info.get(k) != v}
            if lost:
                self.failures.append(f"seeded keys changed or lost: {lost} in {info}")
            limits = self.home / "agent-limits.json"
            if limits.exists():
                try:
                    json.loads(limits.read_text())
                except ValueError as exc:
                    self.failures.append(f"agent-limits.json did not parse: {exc}")
            self.reads += 1


@pytest.mark.slow
def test_200_concurrent_hooks_and_status_calls_lose_nothing(tmp_path: Path) -> None:
    if os.path.isdir("/home/scion"):
        pytest.skip("/home/scion exists: Scion's rule sends agent.log there")
    home = tmp_path / "home"
    home.mkdir()
    (home / "agent-info.json").write_text(json.dumps(SEED, indent=2))
    cache = tmp_path / "cache"  # cold: the processes also race to compile the dialect
    work = tmp_path / "io"
    work.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SCION")},
        "HOME": str(home),
        "SCIONTOOL_CACHE_DIR": str(cache),
        "SCION_MAX_TURNS": "100000",
        "SCION_MAX_MODEL_CALLS": "100000",
    }
    jobs = [(args, envelope) for args, envelope, _, count in CALLS for _ in range(count)]
    # Interleave the kinds so every kind races every other.
    jobs = [jobs[i] for i in sorted(range(len(jobs)), key=lambda i: (i * 7919) % len(jobs))]
    assert len(jobs) == 200

    watcher = Watcher(home)
    watcher.start()
    started = time.monotonic()
    procs = []
    for n, (args, envelope) in enumerate(jobs):
        stdin_path = work / f"{n}.in"
        stdin_path.write_text(json.dumps(envelope) if envelope else "")
        with open(stdin_path, "rb") as stdin, open(work / f"{n}.err", "wb") as stderr:
            procs.append(
                subprocess.Popen(
                    [str(SCIONTOOL), *args], stdin=stdin, stdout=subprocess.DEVNULL, stderr=stderr, env=env
                )
            )
    codes = [proc.wait(timeout=120) for proc in procs]
    elapsed = time.monotonic() - started
    watcher.stop.set()
    watcher.join()
    print(f"200 processes in {elapsed:.2f}s; agent-info.json read {watcher.reads} times meanwhile")

    failed = [(n, (work / f"{n}.err").read_text()) for n, code in enumerate(codes) if code != 0]
    assert failed == []
    assert watcher.failures == []
    assert watcher.reads > 0

    info = json.loads((home / "agent-info.json").read_text())
    assert {k: info[k] for k in SEED if k != "activity"} == {k: v for k, v in SEED.items() if k != "activity"}

    lines = (home / "agent.log").read_bytes().decode().split("\n")
    assert lines.pop() == ""  # ends with a newline: the last line is complete
    # Outside Scion a hook waits for the lock while its holders are at work (fs.StateLock):
    # none gives up, so no update is made without it.
    assert [line for line in lines if GAVE_UP.fullmatch(line)] == []
    assert [line for line in lines if not LOG_LINE.fullmatch(line)] == []
    messages = Counter(line.split("] ", 3)[3] for line in lines)
    assert messages == Counter({message: count for _, _, message, count in CALLS})

    limits = json.loads((home / "agent-limits.json").read_text())
    assert (limits["turn_count"], limits["model_call_count"]) == (40, 40)

    leftovers = [p for root in (home, cache) for p in root.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
