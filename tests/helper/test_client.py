"""The relay to the resident helper, with real processes: a stand-in harness (tests/standin.py)
whose hooks, once the HOME's resident runs, hand their work to it over its socket. What the
harness sees and what the files say must be what a hook in its own process gives; a resident
that is gone, declines, or is another user's never costs a hook."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import HANG_BOUND, Agent
from otlp import GrpcReceiver
from standin import StandIn, eventually, holds, info, records, watchers

from sciontool_py import fs
from sciontool_py.helper import client, wire

HOOK = [sys.executable, "-m", "sciontool_py", "hook"]


def claude(name: str, **fields: object) -> dict[str, object]:
    return {"hook_event_name": name, "session_id": "s1", **fields}


SESSION = [
    claude("SessionStart", source="startup"),
    claude("UserPromptSubmit", prompt="list the files"),
    claude("PreToolUse", tool_name="Bash", tool_use_id="t1", tool_input={"command": "ls"}),
    claude("PostToolUse", tool_name="Bash", tool_use_id="t1", tool_response={"stdout": "a b"}),
    claude("PostToolBatch"),
    claude("Stop", last_assistant_message="Two files."),
]


class Harness:
    """A long-lived parent that runs the real hook for each call and keeps what it printed."""

    SCRIPT = """\
import json, os, subprocess, sys
for line in sys.stdin:
    argv, data = json.loads(line)
    done = subprocess.run(argv, input=data.encode(), capture_output=True, timeout=60)
    print(json.dumps([done.returncode, done.stdout.decode(), done.stderr.decode()]), flush=True)
"""

    def __init__(
        self, agent: Agent, tmp_path: Path, prefix: list[str] = HOOK, cwd: Path | None = None, **env: str
    ) -> None:
        self.prefix = prefix  # what each hook runs: the program, then `hook`
        script = tmp_path / "harness.py"
        script.write_text(self.SCRIPT)
        self.proc = subprocess.Popen(
            [sys.executable, str(script)],
            env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on", **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=agent.home if cwd is None else cwd,
        )

    def hook(self, envelope: dict[str, object] | str, *args: str) -> tuple[int, str, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        data = envelope if isinstance(envelope, str) else json.dumps(envelope)
        self.proc.stdin.write(json.dumps([[*self.prefix, *args], data]) + "\n")
        self.proc.stdin.flush()
        code, out, err = json.loads(self.proc.stdout.readline())
        return code, out, err

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=60)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def hook_process(
    agent: Agent, prefix: list[str], stdin: int, stdout: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """The real hook (through PREFIX, `... hook`) as a harness starts it on STDIN, the helper
    wanted; its stderr a pipe."""
    return subprocess.Popen(
        [*prefix, "--dialect=claude"],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
    )


def helper_runs(agent: Agent) -> bool:
    """The HOME's resident runs and listens (it binds its socket a moment after it starts)."""
    sock = client.connect(str(agent.home)) if watchers(agent.home) else None
    if sock is None:
        return False
    sock.close()
    return True


@contextmanager
def started(agent: Agent, tmp_path: Path, ready: Callable[[], bool]) -> Iterator[Harness]:
    """A harness whose first hook started the HOME's resident, and READY once it does."""
    harness = Harness(agent, tmp_path)
    try:
        harness.hook(SESSION[0], "--dialect=claude")
        assert eventually(ready)
        yield harness
    finally:
        harness.close()


@pytest.fixture
def harness(agent: Agent, tmp_path: Path) -> Iterator[Harness]:
    """A harness whose first hook started the HOME's resident, which now listens."""
    with started(agent, tmp_path, lambda: helper_runs(agent)) as ready:
        yield ready


def log_messages(agent: Agent) -> list[str]:
    return [line.split(" ", 1)[1] for line in agent.log_lines]


def session_both_ways(
    agent: Agent, tmp_path: Path, alone_home: Path, relayed: Callable[[Harness], None]
) -> None:
    """SESSION by hooks relayed (in AGENT's HOME, RELAYED readying the harness after the first
    hook) and by hooks in their own processes (ALONE_HOME): the answers and the files are the same."""
    results = {}
    for mode, home in (("relayed", agent.home), ("alone", alone_home)):
        agent_env = Agent(home, tmp_path / f"cache-{mode}")
        harness = Harness(agent_env, tmp_path, SCIONTOOL_EXIT_WATCH="on" if mode == "relayed" else "off")
        try:
            first = harness.hook(SESSION[0], "--dialect=claude")
            if mode == "relayed":
                relayed(harness)  # the resident the first hook started
            answers = [first] + [harness.hook(e, "--dialect=claude") for e in SESSION[1:]]
            results[mode] = (answers, info(home), log_messages(agent_env), (home / "prompt.md").read_text())
        finally:
            harness.close()
    assert results["relayed"] == results["alone"]
    assert results["alone"][0] == [(0, "", "")] * len(SESSION)


def test_a_relayed_session_writes_exactly_what_hooks_in_their_own_process_write(
    agent: Agent, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    def relayed(_: Harness) -> None:
        assert eventually(lambda: helper_runs(agent))  # it listens: the next hooks are relayed

    session_both_ways(agent, tmp_path, tmp_path_factory.mktemp("alone"), relayed)


def test_the_hook_process_loads_only_the_relay_when_the_helper_runs(agent: Agent, harness: Harness) -> None:
    envelope = json.dumps(SESSION[2])
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sciontool_py", "hook", "--dialect=claude"],
        input=envelope.encode(),
        capture_output=True,
        env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
        timeout=60,
    )
    assert done.returncode == 0
    loaded = loaded_modules(done.stderr.decode())
    assert "sciontool_py.helper.client" in loaded
    # Not even the envelope's reader or the argument parser: stdin is handed to the helper.
    assert {m for m in loaded if m.startswith("sciontool_py")} == {
        "sciontool_py",
        "sciontool_py.main",
        "sciontool_py.console",
        "sciontool_py.helper",
        "sciontool_py.helper.client",
        "sciontool_py.helper.wire",
    }
    assert info(agent.home)["activity"] == "executing"  # the resident ran it


def test_the_dialects_response_and_a_failure_come_back_as_the_hook_gives_them(
    agent: Agent, harness: Harness
) -> None:
    antigravity = {"toolCall": {"name": "run"}, "conversationId": "c1"}
    assert harness.hook(antigravity, "--dialect=antigravity", "--event=PreToolUse") == (
        0,
        '{"decision":"allow"}\n',
        "",
    )
    code, out, err = harness.hook("{not json", "--dialect=claude")
    assert (code, out) == (1, "")
    assert err.startswith("sciontool hook: envelope: invalid JSON") and err.count("\n") == 1
    code, out, err = harness.hook(claude("Stop"), "--dialect=no-such-dialect")
    assert code == 1 and err.startswith("sciontool hook: ") and "no-such-dialect" in err


def test_each_hook_is_run_in_its_own_environment(agent: Agent, harness: Harness) -> None:
    env = {**agent.env, "SCIONTOOL_EXIT_WATCH": "on"}
    counts = []
    for level, envelope in (("debug", SESSION[1]), ("info", SESSION[2])):
        done = subprocess.run(
            [*HOOK, "--dialect=claude"],
            input=json.dumps(envelope).encode(),
            env={**env, "SCION_LOG_LEVEL": level},
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0
        if level == "debug":  # its telemetry's debug line is written after the answer
            assert eventually(lambda: any("[DEBUG]" in line for line in agent.log_lines))
        records(agent.home)  # settled: the hook's deferred steps are done
        counts.append(sum("[DEBUG]" in line for line in agent.log_lines))
    assert counts[1] == counts[0]  # debug lines for the first hook only


RUNS_ONE_HOOK = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"  # a harness


def files_held(proc: Path) -> set[str]:
    """What PROC's descriptors name, but sockets and pidfds."""
    found = set()
    for fd in (proc / "fd").iterdir():
        try:
            found.add(os.readlink(fd))
        except FileNotFoundError:
            pass  # closed meanwhile
    return {name for name in found if not name.startswith(("socket:", "anon_inode:[pidfd]"))}


def test_the_first_hook_leaves_the_helper_listening_as_it_exits_and_it_leaves_with_the_harness(
    agent: Agent, tmp_path: Path
) -> None:
    """Codex fires its second hook as the first exits: the helper the first leaves behind (a fork
    of it, its modules loaded) listens, and says where to shells, before that. It holds nothing of
    the hook's: not the harness's pipes (the hook came back), its session, its command line or
    the API key in its environment."""
    harness = Harness(agent, tmp_path, OPENAI_API_KEY="sk-relay-test-key")
    try:
        assert harness.hook(SESSION[0], "--dialect=claude") == (0, "", "")
        sock = client.connect(str(agent.home))  # at once: no waiting for it to come up
        assert sock is not None
        sock.close()
        pid = int((agent.home / ".scion" / "relay").read_text().split()[1])
        assert eventually(lambda: watchers(agent.home) == [pid])  # retitled once it runs
        helper = Path(f"/proc/{pid}")
        assert os.getsid(pid) == pid
        assert (helper / "comm").read_text() == "scion-helper\n"
        assert (helper / "cmdline").read_bytes().rstrip(
            b"\0"
        ) == b"sciontool_py.helper.server --home " + bytes(agent.home)
        assert b"sk-relay-test-key" not in (helper / "environ").read_bytes()
        lock = str(agent.home / ".scion" / "exit-watcher.lock")
        # Besides its sockets and a pidfd on the harness it watches (a file it reads meanwhile
        # comes and goes: looked at again).
        assert eventually(lambda: files_held(helper) == {os.devnull, lock})
        assert harness.hook(SESSION[1], "--dialect=claude") == (0, "", "")
        assert info(agent.home)["activity"] == "thinking"
        assert b"_hashlib" not in (helper / "maps").read_bytes()  # no OpenSSL loaded to serve it
    finally:
        harness.close()
    assert eventually(lambda: not watchers(agent.home))  # its harness gone, its end said
    assert info(agent.home)["phase"] == "error"  # killed with a turn under way: a crash


def signals_blocked(pid: int) -> int:
    """The signals PID has blocked (its /proc status's SigBlk mask)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no SigBlk in /proc/{pid}/status")


def children_running(parent: int, module: bytes) -> list[int]:
    """The live children of PARENT whose command line names MODULE."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
            argv = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(b")") + 2 :].split()
        if int(fields[1]) == parent and fields[0] != b"Z" and module in argv:
            found.append(int(name))
    return found


def test_a_worker_the_helper_starts_for_a_relayed_hook_can_be_stopped(agent: Agent, tmp_path: Path) -> None:
    """The helper holds SIGTERM, SIGINT and SIGHUP back while it runs a hook (it finishes the
    hook first); a telemetry worker it starts then must not inherit that: `kill` would leave it
    running until its export's own bound."""
    silent = socket.socket()  # listens, never accepts: the worker's export waits on it
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    harness = Harness(agent, tmp_path, SCION_OTEL_GRPC_PORT=str(silent.getsockname()[1]))
    try:
        harness.prefix = ["env", "SCION_TELEMETRY_ENABLED=false", *HOOK]  # the first hook starts none
        assert harness.hook(SESSION[0], "--dialect=claude") == (0, "", "")
        assert eventually(lambda: helper_runs(agent))
        [helper] = watchers(agent.home)
        harness.prefix = HOOK
        assert harness.hook(SESSION[2], "--dialect=claude") == (0, "", "")  # relayed: the helper exports it
        assert eventually(lambda: bool(children_running(helper, b"telemetry.worker")))
        workers = children_running(helper, b"telemetry.worker")  # it waits on the silent port
        assert workers
        assert [signals_blocked(worker) for worker in workers] == [0] * len(workers)
    finally:
        harness.close()
        silent.close()
    assert eventually(lambda: not watchers(agent.home))


def exported(receiver: GrpcReceiver) -> list[object]:
    """The raw event names of the log records RECEIVER got, in the order they happened."""
    records = sorted(receiver.logs(), key=lambda r: r.item.time_unix_nano)  # type: ignore[attr-defined]
    return [record.attributes["event.raw_name"] for record in records]


EXPORTED = ["SessionStart", "PreToolUse", "PostToolUse", "PostToolBatch", "Stop"]  # no prompt: private


def test_the_helper_exports_once_its_hooks_go_quiet_and_what_is_left_as_it_leaves(
    agent: Agent, tmp_path: Path
) -> None:
    """Outside Scion the telemetry worker is started by the helper once its hooks have gone quiet,
    not in the middle of a burst (its Python start takes CPU the harness wants): every event is
    exported all the same, and so is the end the helper says when the harness dies, before it
    leaves."""
    receiver = GrpcReceiver()
    harness = Harness(agent, tmp_path, SCION_OTEL_GRPC_PORT=str(receiver.port))
    try:
        for envelope in SESSION:
            assert harness.hook(envelope, "--dialect=claude") == (0, "", "")
        receiver.wait_for(lambda: len(receiver.logs()) == len(EXPORTED))
        assert exported(receiver) == EXPORTED
        [helper] = watchers(agent.home)
        assert eventually(lambda: not children_running(helper, b"telemetry.worker"))  # that one is done
        harness.close()  # killed: the helper says its end, starts a worker for it, and leaves
        assert eventually(lambda: not watchers(agent.home))
        receiver.wait_for(lambda: len(receiver.logs()) == len(EXPORTED) + 1)
        assert exported(receiver) == [*EXPORTED, "harness-exit"]
    finally:
        harness.close()
        receiver.close()


def test_hooks_that_never_go_quiet_are_exported_while_they_come(agent: Agent, tmp_path: Path) -> None:
    """A harness firing a hook every 0.2 s for good never gives the helper a quiet second: it
    starts the worker 5 s after the burst's first hook all the same (server.QUIET_LIMIT_SECONDS),
    and the worker exports while the hooks go on (the spool keeps 1,000 events, not a session's)."""
    receiver = GrpcReceiver()
    harness = Harness(agent, tmp_path, SCION_OTEL_GRPC_PORT=str(receiver.port))
    tool = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    try:
        assert harness.hook(SESSION[0], "--dialect=claude") == (0, "", "")
        deadline = time.monotonic() + 60  # the worker's own wait for a quiet burst is 5 s more
        n = 0
        while not receiver.logs():
            assert time.monotonic() < deadline, "nothing exported while the hooks came"
            n += 1
            start = claude("PreToolUse", tool_use_id=f"t{n}", **tool)
            assert harness.hook(start, "--dialect=claude") == (0, "", "")
            time.sleep(0.2)
        assert exported(receiver)[0] == "SessionStart"
    finally:
        harness.close()
        receiver.close()
    assert eventually(lambda: not watchers(agent.home))


def test_a_lingering_helper_exports_an_end_once_quiet_and_a_sessions_hooks_as_it_says(
    agent: Agent, tmp_path: Path
) -> None:
    """A helper that stays for the HOME's next session exports the end it says for a harness that
    died once quiet, not when it leaves (minutes later). It serves the next session's hooks, and
    starts their worker itself, with the environment of the hook that left the records, not its
    own (its first session's): they go where the next session says."""
    first_receiver, next_receiver = GrpcReceiver(), GrpcReceiver()
    first = Harness(
        agent, tmp_path, SCIONTOOL_HELPER_LINGER="600", SCION_OTEL_GRPC_PORT=str(first_receiver.port)
    )
    second = Harness(
        agent, tmp_path, SCIONTOOL_HELPER_LINGER="600", SCION_OTEL_GRPC_PORT=str(next_receiver.port)
    )
    try:
        for envelope in SESSION:
            assert first.hook(envelope, "--dialect=claude") == (0, "", "")
        first_receiver.wait_for(lambda: len(first_receiver.logs()) == len(EXPORTED))
        [helper] = watchers(agent.home)
        assert eventually(lambda: not children_running(helper, b"telemetry.worker"))
        first.close()  # killed: the helper says its end and stays
        first_receiver.wait_for(lambda: len(first_receiver.logs()) == len(EXPORTED) + 1)
        assert exported(first_receiver) == [*EXPORTED, "harness-exit"] and watchers(agent.home) == [helper]
        # A worker drains the spool to where it was started for: the next session comes after it.
        assert eventually(lambda: not children_running(helper, b"telemetry.worker"))
        for envelope in SESSION:
            assert second.hook({**envelope, "session_id": "s2"}, "--dialect=claude") == (0, "", "")
        next_receiver.wait_for(lambda: len(next_receiver.logs()) == len(EXPORTED))
        assert exported(next_receiver) == EXPORTED
        assert len(first_receiver.logs()) == len(EXPORTED) + 1  # nothing of it went the first's way
        assert watchers(agent.home) == [helper]  # the one helper ran every hook of both
    finally:
        first.close()
        second.close()
        first_receiver.close()
        next_receiver.close()
        (agent.home / ".scion" / "exit-watcher.lock").unlink()  # the helper leaves at once, not in 600 s
    assert eventually(lambda: not watchers(agent.home))


def test_a_hook_that_adds_no_agent_leaves_no_helper_behind(agent: Agent) -> None:
    done = subprocess.run(
        [*HOOK, "--dialect=claude"],
        stdin=subprocess.DEVNULL,  # Scion's no-op: no envelope, no agent
        capture_output=True,
        env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
        timeout=HANG_BOUND,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert eventually(lambda: not watchers(agent.home))  # it stayed only while its starter ran


IMPORTS = [sys.executable, "-X", "importtime", "-m", "sciontool_py", "hook"]  # its stderr names what loaded


def session_ended(agent: Agent, tmp_path: Path, linger: str) -> None:
    """SESSION by a harness whose helper stays LINGER seconds, then the harness gone and its end said."""
    harness = Harness(agent, tmp_path, SCIONTOOL_HELPER_LINGER=linger)
    try:
        for envelope in SESSION:
            assert harness.hook(envelope, "--dialect=claude") == (0, "", "")
    finally:
        harness.close()
    assert eventually(lambda: info(agent.home)["phase"] == "stopped")


def loaded_modules(importtime: str) -> set[str]:
    """The modules `python -X importtime` says it loaded, from its stderr."""
    return {line.split("|")[-1].strip() for line in importtime.splitlines() if "|" in line}


def test_the_helper_stays_for_the_homes_next_session_and_relays_its_first_hook(
    agent: Agent, tmp_path: Path
) -> None:
    """A user's next session comes to the same HOME: the helper that served the last one waits
    for it (SCIONTOOL_HELPER_LINGER), so that session's first hook needs no receiver of its own
    either. It leaves the moment the HOME is removed."""
    session_ended(agent, tmp_path, "600")
    helper = watchers(agent.home)
    assert len(helper) == 1 and helper_runs(agent)
    second = Harness(agent, tmp_path, IMPORTS, SCIONTOOL_HELPER_LINGER="600")
    try:
        code, out, err = second.hook(SESSION[0], "--dialect=claude")
        assert (code, out) == (0, "")
        loaded = loaded_modules(err)
        assert "sciontool_py.helper.client" in loaded and "sciontool_py.receiver.hook" not in loaded
        assert info(agent.home).get("activity") == "working"  # the helper ran it: a new session
    finally:
        second.close()
    assert eventually(lambda: info(agent.home)["phase"] == "stopped")
    assert watchers(agent.home) == helper  # the same helper, still there
    shutil.rmtree(agent.home)
    assert eventually(lambda: not watchers(agent.home))


def gone_is_removed(
    _call: object, _path: str, info: tuple[type[BaseException], BaseException, object]
) -> None:
    """shutil.rmtree's onerror: a file another process removed first is removed all the same."""
    if not issubclass(info[0], FileNotFoundError):
        raise info[1]


def test_a_helper_whose_home_is_replaced_under_its_harness_leaves_and_one_watcher_is_left(
    agent: Agent, tmp_path: Path
) -> None:
    """HOME removed and made anew while its harness runs: the helper watching that harness locks
    a file that is gone. It stops, and the next hook starts the one watcher of the new HOME (before,
    the helper watched on, and each HOME made anew added a watcher beside it: four here)."""
    project = tmp_path / "project"  # the harness's folder, outside HOME: its hooks are relayed
    project.mkdir()
    harness = Harness(agent, tmp_path, cwd=project)
    try:
        assert harness.hook(SESSION[0], "--dialect=claude") == (0, "", "")
        assert eventually(lambda: helper_runs(agent))
        first = watchers(agent.home)
        for envelope in SESSION[1:4]:
            fs.settled(str(agent.home))  # the last hook's files written: answered, it writes on
            # The leaving helper removes its own files meanwhile (.scion/relay): gone is removed.
            shutil.rmtree(agent.home, onerror=gone_is_removed)
            agent.home.mkdir()
            assert harness.hook(envelope, "--dialect=claude") == (0, "", "")
            assert eventually(lambda: len(watchers(agent.home)) == 1)
        assert set(watchers(agent.home)).isdisjoint(first)
        assert eventually(lambda: helper_runs(agent))  # and it relays the new HOME's hooks
        assert harness.hook(SESSION[4], "--dialect=claude") == (0, "", "")
        assert info(agent.home)["activity"] == "thinking"  # the batch ended: written in the new HOME
        assert len(watchers(agent.home)) == 1
    finally:
        harness.close()
    assert eventually(lambda: not watchers(agent.home))


def test_a_lingering_helper_leaves_once_its_time_is_up(agent: Agent, tmp_path: Path) -> None:
    session_ended(agent, tmp_path, "2")
    assert eventually(lambda: not watchers(agent.home))  # 2 s after the end: bounded, not for good


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("", 300.0), ("0", 0.0), ("2.5", 2.5), ("-1", 0.0), ("1e12", 86400.0), ("nan", 300.0), ("soon", 300.0)],
)
def test_the_linger_is_read_from_the_environment_within_its_bounds(
    monkeypatch: pytest.MonkeyPatch, value: str, seconds: float
) -> None:
    from sciontool_py.helper import server

    monkeypatch.setenv("SCIONTOOL_HELPER_LINGER", value)
    assert server.lingering() == seconds


def test_a_resident_killed_leaves_every_hook_to_run_in_its_own_process(
    agent: Agent, harness: Harness
) -> None:
    killed = watchers(agent.home)
    for pid in killed:
        os.kill(pid, signal.SIGKILL)  # started by this test's own hook
    # Gone; its standby (tests/helper/test_standby.py) may be the helper by now, or not yet started.
    assert eventually(lambda: not set(killed) & set(watchers(agent.home)))
    assert harness.hook(SESSION[1], "--dialect=claude") == (0, "", "")
    assert info(agent.home)["activity"] == "thinking"
    assert eventually(lambda: helper_runs(agent))  # that hook started the next one
    assert harness.hook(SESSION[2], "--dialect=claude") == (0, "", "")
    assert info(agent.home)["activity"] == "executing"


def test_a_hostile_client_costs_the_resident_nothing(agent: Agent, harness: Harness) -> None:
    for garbage in (b"", b"\x00" * 3, (10**12).to_bytes(8, "big"), (40).to_bytes(8, "big") + b"x" * 40):
        sock = client.connect(str(agent.home))
        assert sock is not None
        try:
            sock.sendall(garbage)
            sock.shutdown(1)
            wire.read_all(sock)
        except OSError:
            pass
        finally:
            sock.close()
    assert harness.hook(SESSION[1], "--dialect=claude") == (0, "", "")
    assert info(agent.home)["activity"] == "thinking"
    assert helper_runs(agent)


SYSTEM_PYTHON = "/usr/bin/python3"  # one another user may run (pyenv's lives under /root)
SQUATTER = """\
import _socket, sys, time
sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
sock.bind(bytes.fromhex(sys.argv[1]))  # -c: argv[1] is the first argument after the code
sock.listen(8)
sock.settimeout(30)
print("bound", flush=True)
got = 0
try:
    while True:
        fd, _ = sock._accept()
        conn = _socket.socket(fileno=fd)
        conn.settimeout(2)
        try:
            got += len(conn.recv(1 << 20))
        except OSError:
            pass
        print(f"got {got}", flush=True)
except OSError:
    pass
"""


def test_another_users_socket_at_the_name_is_never_sent_a_hook(agent: Agent, tmp_path: Path) -> None:
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip("needs root, setpriv and a system python3, to run the squatter as another user")
    squatter = subprocess.Popen(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            SYSTEM_PYTHON,
            "-c",  # the code itself: another user cannot read this test's folders
            SQUATTER,
            wire.address(str(agent.home)).hex(),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert squatter.stdout is not None and squatter.stdout.readline().strip() == "bound"
        harness = Harness(agent, tmp_path)
        try:
            for envelope in SESSION[:3]:
                assert harness.hook(envelope, "--dialect=claude") == (0, "", "")
            # Every hook ran in its own process (read before the harness goes: its exit watcher
            # would then end the agent).
            assert info(agent.home)["activity"] == "executing"
        finally:
            harness.close()
    finally:
        squatter.kill()  # our own child
        out = squatter.communicate(timeout=HANG_BOUND)[0]
    assert all(line in ("", "got 0") for line in out.splitlines()), out  # it got no byte of a hook


def test_a_hook_in_a_removed_folder_is_declined_and_runs_by_itself(
    agent: Agent, tmp_path: Path, harness: Harness
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f"cd {gone} && rmdir {gone} && {' '.join(HOOK)} --dialect=claude"
    stand_in = StandIn(agent, tmp_path, "claude", wrapper=script)
    try:
        stand_in.send(SESSION[1])
        assert eventually(lambda: any("User prompt: list the files" in line for line in agent.log_lines))
        assert len(records(agent.home)) == 2
    finally:
        stand_in.close()


def test_a_dialect_file_changed_between_relayed_hooks_is_read_anew(
    agent: Agent, harness: Harness, tmp_path: Path
) -> None:
    """The resident keeps each dialect it loaded, by the file's content: an edit is the next hook's."""
    from sciontool_py.dialect.load import packaged_dir

    dialect = tmp_path / "mine.yaml"
    shutil.copy(Path(packaged_dir()) / "claude" / "dialect.yaml", dialect)
    assert harness.hook(SESSION[2], f"--dialect-file={dialect}") == (0, "", "")
    assert info(agent.home)["activity"] == "executing"
    dialect.write_text("dialect: mine\nmappings: [not, a, mapping]\n")
    code, _, err = harness.hook(SESSION[3], f"--dialect-file={dialect}")
    assert code == 1 and str(dialect) in err  # the edit, not the dialect loaded before it
    assert info(agent.home)["activity"] == "executing"


def relayed_hook(agent: Agent, stdin: object, envelope: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The real hook with STDIN as given (a descriptor, a file), under -X importtime: what it
    loaded says whether the helper ran it."""
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sciontool_py", "hook", "--dialect=claude"],
        stdin=stdin,  # type: ignore[arg-type]
        input=envelope or None,
        capture_output=True,
        env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
        timeout=HANG_BOUND,
    )


@pytest.mark.parametrize("kind", ["socket", "file", "devnull"])
def test_a_hooks_stdin_of_any_kind_is_handed_to_the_helper_and_read_there(
    agent: Agent, harness: Harness, tmp_path: Path, kind: str
) -> None:
    """Node harnesses give a socket, a shell redirect a file, a detached run /dev/null: each is
    handed over (SCM_RIGHTS) and read by the helper as the hook would read it."""
    envelope = json.dumps(claude("PreToolUse", tool_name=f"via-{kind}")).encode()
    if kind == "socket":
        ours, theirs = socket.socketpair()
        with ours, theirs:
            ours.sendall(envelope)
            ours.shutdown(socket.SHUT_WR)
            done = relayed_hook(agent, theirs.fileno())
    elif kind == "file":
        path = tmp_path / "envelope.json"
        path.write_bytes(envelope)
        with path.open("rb") as handle:
            done = relayed_hook(agent, handle)
    else:
        done = relayed_hook(agent, subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "sciontool_py.receiver.hook" not in loaded_modules(done.stderr.decode())  # the helper ran it
    if kind == "devnull":
        assert not any("via-" in line for line in agent.log_lines)  # an empty stdin: no event
    else:
        assert agent.log_lines[-1].endswith(f"Running tool: via-{kind}")
        assert info(agent.home)["toolName"] == f"via-{kind}"


def test_a_relayed_hooks_envelope_written_late_holds_no_other_hook(agent: Agent, harness: Harness) -> None:
    envelope = json.dumps(claude("PreToolUse", tool_name="Late")).encode()
    read_end, write_end = os.pipe()
    try:
        late = hook_process(agent, HOOK, read_end)
        os.close(read_end)
        os.write(write_end, envelope[:20])  # then nothing, for now
        helper = watchers(agent.home)[0]
        pipe = os.readlink(f"/proc/self/fd/{write_end}")
        assert eventually(lambda: holds(helper, Path(pipe)))  # handed over, opened anew by the helper
        for n in range(5):
            assert harness.hook(claude("PreToolUse", tool_name=f"other{n}"), "--dialect=claude") == (
                0,
                "",
                "",
            )
        assert late.poll() is None  # all five served while it waits for its bytes
        os.write(write_end, envelope[20:])
        os.close(write_end)
        write_end = -1
        _, err = late.communicate(timeout=HANG_BOUND)
        assert (late.returncode, err) == (0, b"")
        assert agent.log_lines[-1].endswith("Running tool: Late")
    finally:
        if write_end >= 0:
            os.close(write_end)


def test_a_hook_the_helper_took_and_then_could_not_run_gets_its_stdin_back(
    agent: Agent, harness: Harness, tmp_path: Path
) -> None:
    """Its folder removed between `ready` and `go`: the helper has read the envelope, runs
    nothing, and hands back exactly what it read, for the hook to run itself (main._relay)."""
    folder = tmp_path / "going"
    folder.mkdir()
    envelope = json.dumps(claude("PreToolUse", tool_name="Back")).encode()
    sock = client.connect(str(agent.home))
    assert sock is not None
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, envelope)
        os.close(write_end)
        env = [os.fsencode(f"{k}={v}") for k, v in {**agent.env, "SCIONTOOL_EXIT_WATCH": "on"}.items()]
        request = wire.request(str(folder), ["--dialect=claude"], env, wire.HANDED)
        message = len(request).to_bytes(8, "big") + request
        handed = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, read_end.to_bytes(4, sys.byteorder))]
        sock.settimeout(HANG_BOUND)
        sock.sendall(message[sock.sendmsg([message], handed) :])
        assert sock.recv(1) == wire.READY
        folder.rmdir()
        sock.sendall(wire.GO)
        sock.shutdown(socket.SHUT_WR)
        assert wire.decode(wire.read_all(sock)) == [b"", b"", wire.DECLINED, envelope, b""]
    finally:
        os.close(read_end)
        sock.close()
    assert not any("Back" in line for line in agent.log_lines)  # nothing ran there
