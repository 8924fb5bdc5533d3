"""The opencode bridge under load, run by node as opencode runs it: how many hooks it starts at
once, what its queues hold and drop, and which processes it signals (issue 28, point 6)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_BOUND, TIMED

from harness.test_cli import DRIVER, run_bridge
from harness.test_merge import harness

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node runs the opencode bridge")

# A stand-in hook, shell builtins only (a thousand of them must be cheap): it records its start
# and its stop, keeps its envelope in a file named by its pid, and holds until the driver says
# every call into the bridge has returned, so that each hook it started is still running then.
# The bridge's count of what it dropped goes on to the real hook, which writes agent.log.
STAND_IN = """\
echo "start $$" >> "$RECORD"
IFS= read -r envelope || :
printf '%s' "$envelope" > "$ENVELOPES/$$"
n=0
until [ -e "$RELEASE" ] || [ "$n" -ge 400 ]; do sleep 0.05; n=$((n + 1)); done
case "$envelope" in
*'"sciontool-bridge dropped '*) printf '%s' "$envelope" | "$PYTHON" -m sciontool_py hook --dialect=opencode ;;
esac
echo "stop $$" >> "$RECORD"
"""
# The same for envelopes of megabytes, which `read` would take a byte at a time; it keeps them only.
BIG_STAND_IN = STAND_IN.replace("IFS= read -r envelope || :\nprintf '%s' \"$envelope\" >", "cat >")
RELEASING_DRIVER = (
    DRIVER
    + """\
import { writeFileSync } from "node:fs";
writeFileSync(process.env.RELEASE, "");
"""
)


class Hooks:
    """What the stand-in hooks recorded: (pid, envelope) in the order they stopped."""

    def __init__(self, tmp_path: Path, script: str = STAND_IN) -> None:
        self.record = tmp_path / "record.txt"
        self.envelopes = tmp_path / "envelopes"
        self.envelopes.mkdir()
        self.home = tmp_path / "hook-home"
        self.home.mkdir()
        self.script = tmp_path / "stand-in.sh"
        self.script.write_text(script)
        self.env = {
            "RECORD": str(self.record),
            "ENVELOPES": str(self.envelopes),
            "RELEASE": str(tmp_path / "released"),
            "PYTHON": sys.executable,
            "HOME": str(self.home),
            "SCION_TELEMETRY_ENABLED": "false",
        }

    def lines(self) -> list[str]:
        return self.record.read_text().splitlines() if self.record.exists() else []

    def wait_for(self, count: int) -> list[tuple[int, dict[str, object]]]:
        """The stopped hooks, once COUNT have stopped (the last ones run after node's exit)."""
        deadline = time.monotonic() + HANG_BOUND * 3  # a hang bound: a thousand hooks, 16 at a time
        while len(self.stops()) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        stops = self.stops()
        assert len(stops) == len(set(stops)), "a pid came twice: the record cannot tell the hooks apart"
        return [(pid, json.loads((self.envelopes / str(pid)).read_text())) for pid in stops]

    def stops(self) -> list[int]:
        return [int(line.split()[1]) for line in self.lines() if line.startswith("stop ")]

    def most_at_once(self) -> int:
        now = peak = 0
        for line in self.lines():
            now += 1 if line.startswith("start ") else -1
            peak = max(peak, now)
        return peak

    def noted_drops(self, stopped: list[tuple[int, dict[str, object]]]) -> list[int]:
        """The counts in the bridge's notes of what it dropped."""
        names = [str(envelope["hook_event_name"]) for _, envelope in stopped]
        return [
            int(n)
            for n in re.findall(
                r"^sciontool-bridge dropped (\d+) envelopes? \(queue full\)$", "\n".join(names), re.M
            )
        ]

    def logged_drops(self) -> list[int]:
        text = (self.home / "agent.log").read_text() if (self.home / "agent.log").exists() else ""
        return [
            int(n)
            for n in re.findall(
                r"Event: sciontool-bridge dropped (\d+) envelopes? \(queue full\)$", text, re.M
            )
        ]


def _bus(kind: str, session: str, **props: object) -> dict[str, object]:
    return {"type": kind, "properties": {"sessionID": session, **props}}


def _created(session: str) -> dict[str, object]:
    return _bus("session.created", session, info={"id": session})


def _error(session: str, text: str) -> dict[str, object]:
    return _bus("session.error", session, error=text)


def _run(tmp_path: Path, hooks: Hooks, steps: list[object]) -> None:
    command = f"sh {hooks.script}"
    run_bridge(tmp_path, tmp_path / "home", command, RELEASING_DRIVER, steps, **hooks.env)


def _by_session(stopped: list[tuple[int, dict[str, object]]]) -> dict[str, list[object]]:
    sessions: dict[str, list[object]] = {}
    for _, envelope in stopped:
        key = str(envelope.get("session_id", ""))
        sessions.setdefault(key, []).append(envelope.get("error") or envelope["hook_event_name"])
    return sessions


@pytest.fixture
def hooks(tmp_path: Path) -> Hooks:
    (tmp_path / "home").mkdir()
    return Hooks(tmp_path)


@TIMED
def test_200_busy_sessions_run_at_most_16_hooks_at_once_each_in_order(tmp_path: Path, hooks: Hooks) -> None:
    # 200 sessions, each created, failing twice and going idle, their events interleaved as a
    # busy opencode publishes them: every hook the bridge starts holds until the last call has
    # returned, so without a bound all 200 sessions' hooks would run at once.
    sessions = [f"ses_{i:03}" for i in range(200)]
    steps: list[object] = [_created(s) for s in sessions]
    steps += [_error(s, f"{s} first") for s in sessions]
    steps += [_error(s, f"{s} second") for s in sessions]
    steps += [_bus("session.idle", s) for s in sessions]
    _run(tmp_path, hooks, steps)
    stopped = hooks.wait_for(801)  # and the instance's disposal, sent on node's exit
    assert hooks.most_at_once() <= 16
    expected = {s: ["session.created", f"{s} first", f"{s} second", "session.idle"] for s in sessions}
    expected["ses_000"].append("server.instance.disposed")
    assert _by_session(stopped) == expected  # none lost, each session's in the order published
    assert hooks.logged_drops() == []


def test_a_flooding_session_keeps_its_newest_and_the_drops_are_counted_in_agent_log(
    tmp_path: Path, hooks: Hooks
) -> None:
    # One session publishes 300 envelopes while its first hook holds: the hook in flight keeps
    # its envelope, the 256 newest wait, the 43 between are dropped, and agent.log says so.
    steps: list[object] = [_created("ses_1")] + [_error("ses_1", f"e{i}") for i in range(299)]
    _run(tmp_path, hooks, steps)
    # The first drop is said at once (a hook was free), the other 42 once that note's hook is done.
    stopped = hooks.wait_for(1 + 256 + 1 + 2)
    sent = _by_session([(p, e) for p, e in stopped if e.get("session_id")])
    assert sent == {
        "ses_1": ["session.created", *(f"e{i}" for i in range(43, 299)), "server.instance.disposed"]
    }
    assert hooks.noted_drops(stopped) == [1, 42]
    assert hooks.logged_drops() == [1, 42]  # each count is a line of agent.log


def test_all_sessions_together_wait_in_at_most_1024_envelopes(tmp_path: Path, hooks: Hooks) -> None:
    # Five sessions of 220 envelopes each: each under its own limit, 1,100 together. One hook
    # runs per session, 1,024 envelopes wait, the other 71 are dropped from the longest queues
    # (their oldest first) and counted; each session's envelopes that went kept their order.
    sessions = [f"ses_{i}" for i in range(5)]
    steps: list[object] = []
    for s in sessions:
        steps += [_created(s)] + [_error(s, f"{s} e{i:03}") for i in range(219)]
    _run(tmp_path, hooks, steps)
    drops = 1100 - 5 - 1024
    stopped = hooks.wait_for(1100 - drops + 1 + 2)  # and two notes of the drops, as above
    sent = _by_session([(p, e) for p, e in stopped if e.get("session_id")])
    assert hooks.logged_drops() == [1, drops - 1]
    for s in sessions:
        published = ["session.created", *(f"{s} e{i:03}" for i in range(219))]
        if s == "ses_0":
            published.append("server.instance.disposed")
        assert sent[s][0] == "session.created"  # its hook was running: never dropped
        assert sent[s] == [e for e in published if e in sent[s]]  # in order
    assert sum(map(len, sent.values())) == 1 + 1100 - drops


def test_waiting_envelopes_are_bounded_in_characters_too(tmp_path: Path) -> None:
    # 30 envelopes of 1 MiB each behind a held hook: 15 fit in the 16 Mi characters that may
    # wait, the oldest 15 are dropped; one of 17 MiB can never wait and is dropped at once.
    (tmp_path / "home").mkdir()
    hooks = Hooks(tmp_path, BIG_STAND_IN)
    big = "x" * (1 << 20)
    steps: list[object] = [_created("ses_1"), _error("ses_1", "y" * (17 << 20))]
    steps += [_error("ses_1", f"e{i:02} {big}") for i in range(30)]
    _run(tmp_path, hooks, steps)
    stopped = hooks.wait_for(1 + 15 + 1 + 2)
    sent = _by_session([(p, e) for p, e in stopped if e.get("session_id")])["ses_1"]
    assert [str(e)[:3] for e in sent] == ["ses", *(f"e{i:02}" for i in range(15, 30)), "ser"]
    assert hooks.noted_drops(stopped) == [1, 15]


# In a pid namespace of its own (pid 1: this script), the bridge's exit watcher dies early and a
# stranger is given its pid; then the instance ends, which stops the watcher. The stranger, a
# signal spy, must live on and receive nothing. Exit 3: this machine cannot set the next pid.
REUSE = """\
import os, signal, subprocess, sys, time
SPY = '''
import signal, sys
def got(number, frame):
    open("spy.txt", "a").write(f"{number}\\\\n")
for number in set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD}:
    signal.signal(number, got)
open("spy-ready", "w").close()
sys.stdin.read()
'''
driver = subprocess.Popen(["node", "driver.mjs"])
deadline = time.monotonic() + 60
while not os.path.exists("watcher.pid") and time.monotonic() < deadline:
    time.sleep(0.02)
pid = int(open("watcher.pid").read())
os.kill(pid, signal.SIGKILL)  # the watcher dies early (it is this script's grandchild)
while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
    time.sleep(0.02)  # until node has reaped it: its pid is free
for attempt in range(50):
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as last:
            last.write(str(pid - 1))
    except OSError:
        sys.exit(3)
    spy = subprocess.Popen([sys.executable, "-c", SPY], stdin=subprocess.PIPE)
    if spy.pid == pid:
        break
    spy.kill()
    spy.wait()
else:
    sys.exit(3)
while not os.path.exists("spy-ready") and time.monotonic() < deadline:
    time.sleep(0.02)
open("go", "w").close()
driver.wait(timeout=60)
time.sleep(0.5)  # a signal sent on the way out has landed
alive = spy.poll() is None
spy.stdin.close()
spy.wait(timeout=60)
print(f"spy alive: {alive}")
"""
REUSE_DRIVER = """\
import { SciontoolBridge } from "./bridge.mjs";
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
const hooks = await SciontoolBridge({});
await hooks.event({ event: { type: "session.created", properties: { sessionID: "ses_1", info: { id: "ses_1" } } } });
const parent = (pid) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1]);
const watcher = readdirSync("/proc").find((pid) => {
  try {
    return parent(pid) === process.pid && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("while read -r _");
  } catch {
    return false;
  }
});
// Whole or absent: the script reads it as soon as it exists.
writeFileSync("watcher.pid.part", String(watcher));
renameSync("watcher.pid.part", "watcher.pid");
while (!existsSync("go")) await new Promise((done) => setTimeout(done, 20));
await hooks.event({ event: { type: "server.instance.disposed", properties: {} } });
"""


def _private_pid_namespace() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, timeout=60
    )
    return probe.returncode == 0


def test_a_watcher_that_died_early_is_not_signalled_through_its_reused_pid(tmp_path: Path) -> None:
    if not _private_pid_namespace():
        pytest.skip("needs root and unshare --pid (a pid namespace of the test's own)")
    home = tmp_path / "home"
    home.mkdir()
    proc = harness(home, "install", "opencode", "--project", str(tmp_path), "--command", "true")
    assert proc.returncode == 0, proc.stderr
    shutil.copy(tmp_path / ".opencode" / "plugins" / "sciontool-bridge.js", tmp_path / "bridge.mjs")
    (tmp_path / "driver.mjs").write_text(REUSE_DRIVER)
    (tmp_path / "reuse.py").write_text(REUSE)
    ran = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "reuse.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if ran.returncode == 3:
        pytest.skip("the next pid cannot be set here (ns_last_pid)")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "spy alive: True"
    assert not (tmp_path / "spy.txt").exists()  # and no catchable signal either


BIGINT_DRIVER = """\
import { SciontoolBridge } from "./bridge.mjs";
import { writeFileSync } from "node:fs";
const hooks = await SciontoolBridge({});
await hooks.event({ event: { type: "session.created", properties: { sessionID: "ses_1", info: { id: "ses_1" } } } });
await hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_1", callID: "c1" }, { args: { n: 1n } });
writeFileSync(process.env.RELEASE, "");
"""


def test_an_envelope_json_cannot_hold_is_counted_and_never_thrown_at_opencode(
    tmp_path: Path, hooks: Hooks
) -> None:
    # A BigInt among a tool's arguments: opencode would take a throw from tool.execute.before
    # for a veto of the call. The driver exits 0 (nothing thrown), and the drop is said.
    run_bridge(tmp_path, tmp_path / "home", f"sh {hooks.script}", BIGINT_DRIVER, [], **hooks.env)
    stopped = hooks.wait_for(3)
    assert [e["hook_event_name"] for _, e in stopped if e.get("session_id")] == [
        "session.created",
        "server.instance.disposed",
    ]
    assert hooks.logged_drops() == [1]
