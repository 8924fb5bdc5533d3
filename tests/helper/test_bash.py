"""The shell relay (sciontool_py/helper/relay.bash, helper/bash.py), with real processes: bash hands each
hook to the HOME's resident over 127.0.0.1, and what the harness sees and the files say is what a
hook in its own process gives. A hook whose program cannot even start (GONE) proves it was relayed;
no helper, a stale or planted address, or a listener that cannot prove itself runs the hook as
given, with its envelope sent nowhere."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_BOUND, Agent, wired_in_bash
from standin import eventually, holds, info, watchers

from helper.test_client import (
    HOOK,
    SESSION,
    Harness,
    claude,
    helper_runs,
    hook_process,
    session_both_ways,
    started,
)
from sciontool_py.harness.program import relay_prefix
from sciontool_py.helper import bash

SHELL = shlex.split(relay_prefix())
GONE = ["/nonexistent/sciontool", "hook"]  # fails with 127 unless the helper ran the hook
pytestmark = pytest.mark.skipif(not SHELL, reason="the shell relay needs Linux and bash")


def address(agent: Agent) -> list[str]:
    try:
        return (agent.home / bash.ADDRESS).read_text().split()
    except OSError:
        return []


def started_at(pid: int) -> int:
    """The start time of process PID, as the address file names its helper's."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def through_shell(
    agent: Agent, program: list[str], envelope: object, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """One claude hook as install wires it: relay.bash, then PROGRAM (`... hook`)."""
    return subprocess.run(
        [*SHELL, *program, "--dialect=claude"],
        input=json.dumps(envelope).encode(),
        capture_output=True,
        env={**agent.env, **env},
        timeout=HANG_BOUND,
    )


@pytest.fixture
def shell(agent: Agent, tmp_path: Path) -> Iterator[Harness]:
    """A harness whose first hook (in its own process) started the HOME's resident, which now
    listens for shells; each later hook goes through relay.bash to a program that cannot run."""
    with started(agent, tmp_path, lambda: helper_runs(agent) and len(address(agent)) == 5) as ready:
        ready.prefix = [*SHELL, *GONE]
        yield ready


def test_a_session_through_the_shell_writes_exactly_what_hooks_in_their_own_process_write(
    agent: Agent, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    def through_the_shell(harness: Harness) -> None:
        assert eventually(lambda: len(address(agent)) == 5)  # the first hook started it
        harness.prefix = [*SHELL, *GONE]

    session_both_ways(agent, tmp_path, tmp_path_factory.mktemp("alone"), through_the_shell)


def test_the_response_the_error_and_the_status_come_back_byte_for_byte(agent: Agent, shell: Harness) -> None:
    antigravity = {"toolCall": {"name": "run"}, "conversationId": "c1"}
    assert shell.hook(antigravity, "--dialect=antigravity", "--event=PreToolUse") == (
        0,
        '{"decision":"allow"}\n',
        "",
    )
    code, out, err = shell.hook('{"tool_name": "caf\u00e9', "--dialect=claude")
    assert (code, out) == (1, "")
    assert err.startswith("sciontool hook: envelope: invalid JSON") and err.count("\n") == 1
    assert shell.hook("", "--dialect=claude")[0] == 0  # an empty stdin, as the hook takes it
    assert shell.hook(SESSION[2], "--dialect=claude", "--help")[0] == 127  # help: the program's own


def test_an_envelope_on_a_socket_as_node_harnesses_give_it_is_relayed_whole(
    agent: Agent, shell: Harness
) -> None:
    """Claude Code and Gemini CLI give a hook unix sockets, not pipes, for stdin and stdout."""
    output = "x" * (4 << 20)
    envelope = json.dumps(claude("PostToolUse", tool_name="Bash", tool_use_id="t9", tool_response=output))
    ours, theirs = socket.socketpair()
    with ours, theirs:
        proc = subprocess.Popen(
            [*SHELL, *GONE, "--dialect=claude"],
            stdin=theirs,
            stdout=theirs,
            stderr=subprocess.PIPE,
            env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
        )
        theirs.close()
        ours.sendall(envelope.encode())
        ours.shutdown(socket.SHUT_WR)
        _, err = proc.communicate(timeout=HANG_BOUND)
    assert (proc.returncode, err) == (0, b"")
    assert info(agent.home)["activity"] == "working"  # what a PostToolUse says
    assert agent.log_lines[-1].endswith("Tool Bash completed")


def test_codex_notify_as_install_wires_it_is_relayed_with_its_json_argument(
    agent: Agent, shell: Harness
) -> None:
    """Codex runs notify as a program, the turn's JSON its last argument, and waits for it."""
    installed = subprocess.run(
        [*HOOK[:-1], "harness", "install", "codex", "--user"], capture_output=True, env=agent.env, timeout=60
    )
    assert installed.returncode == 0, installed.stderr
    config = (agent.home / ".codex" / "config.toml").read_text()
    notify = json.loads(next(line for line in config.splitlines() if line.startswith("notify = "))[9:])
    assert notify[:2] == SHELL and notify[-2:] == ["hook", "--dialect=codex"]  # PROGRAM between
    shell.prefix = [*SHELL, GONE[0], "hook"]  # the program as installed, but one that cannot run
    turn = {
        "type": "agent-turn-complete",
        "thread-id": "s1",
        "turn-id": "t1",
        "last-assistant-message": "Done.",
    }
    assert shell.hook("", "--dialect=codex", json.dumps(turn)) == (0, "", "")
    assert info(agent.home)["activity"] == "completed"
    assert agent.log_lines[-1].endswith("[completed] Agent completed task")


def test_no_helper_or_a_stale_or_planted_address_runs_the_hook_itself(agent: Agent, tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    target = tmp_path / "elsewhere"
    target.write_text(f"1 {os.getpid()} a b\n")
    plants = {
        "none": None,
        "a helper that is gone": f"1 {dead.pid} 1 served token\n",
        "a pid that is another process": f"1 {os.getpid()} 1 served token\n",
        "garbage": "\x00\xff" * 1000,
        "a huge line": "9" * (1 << 20),
        "a symlink": target,
        "a FIFO": "fifo",
        "a folder": "folder",
    }
    path = agent.home / bash.ADDRESS
    for name, plant in plants.items():
        path.parent.mkdir(exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        elif path.exists() or path.is_symlink():
            path.unlink()
        if isinstance(plant, Path):
            path.symlink_to(plant)
        elif plant == "fifo":
            os.mkfifo(path)
        elif plant == "folder":
            path.mkdir()
        elif plant is not None:
            path.write_text(plant)
        began = time.monotonic()
        done = through_shell(agent, HOOK, claude("PreToolUse", tool_name=name), SCIONTOOL_EXIT_WATCH="off")
        assert (done.returncode, done.stderr) == (0, b""), name
        assert info(agent.home)["toolName"] == name  # the hook ran, in its own process
        assert time.monotonic() - began < HANG_BOUND, name


class Impostor:
    """A listener on 127.0.0.1 that answers as a helper would, without the helper's token."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.data = socket.create_server(("127.0.0.1", 0))
        self.got = b""
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.settimeout(HANG_BOUND)
            self.got += conn.recv(1 << 16)
            port = self.data.getsockname()[1]
            conn.sendall(b"forged ready %d\nforged 0 0 0\n" % port)
            self.data.settimeout(2.0)
            try:
                stream, _ = self.data.accept()
                with stream:
                    self.got += stream.recv(1 << 20)
            except OSError:
                pass


def test_a_listener_that_cannot_prove_itself_gets_no_envelope(agent: Agent) -> None:
    impostor = Impostor()
    with impostor.sock, impostor.data:
        path = agent.home / bash.ADDRESS
        path.parent.mkdir()
        path.write_text(
            f"{impostor.sock.getsockname()[1]} {os.getpid()} {started_at(os.getpid())} served token\n"
        )
        done = through_shell(
            agent, HOOK, claude("UserPromptSubmit", prompt="my secret plan"), SCIONTOOL_EXIT_WATCH="off"
        )
        impostor.thread.join(HANG_BOUND)
    assert (done.returncode, done.stderr) == (0, b"")
    assert info(agent.home)["activity"] == "thinking"  # run by the hook itself
    assert impostor.got.startswith(b"relay2\0token\0")  # the hello, and nothing of the envelope
    assert b"secret" not in impostor.got


def test_a_hello_without_the_token_or_a_stalled_one_gets_nothing_and_costs_the_next_hook_nothing(
    agent: Agent, shell: Harness
) -> None:
    port = int(address(agent)[0])
    hellos = [
        b"relay2\0wrong\0%d\0002\0x\0hook\0" % os.getpid(),
        b"relay2\0" + address(agent)[4].encode() + b"\0",
        # an older relay.bash, mid-upgrade: it would read the answer line as relay1's
        b"relay1\0" + address(agent)[4].encode() + b"\0%d\0002\0x\0hook\0" % os.getpid(),
        b"\0" * (2 << 20),
        b"",  # connects and says nothing
    ]
    for hello in hellos:
        with socket.create_connection(("127.0.0.1", port), timeout=HANG_BOUND) as sock:
            try:
                sock.sendall(hello)
                assert sock.recv(64) == b""  # closed: no `ready`, no token
            except ConnectionResetError:
                pass
    assert shell.hook(SESSION[2], "--dialect=claude") == (0, "", "")
    assert info(agent.home)["activity"] == "executing"


def test_the_helper_takes_its_address_away_when_it_stops(agent: Agent, shell: Harness) -> None:
    assert shell.hook(SESSION[1], "--dialect=claude") == (0, "", "")
    shell.close()  # the harness goes: the watcher says its end, and nothing is left to watch
    assert eventually(lambda: not watchers(agent.home))
    assert not (agent.home / bash.ADDRESS).exists()
    done = through_shell(agent, GONE, SESSION[2])
    assert done.returncode == 127  # no helper: the shell ran the program it was given


def test_install_wires_the_relay_and_no_relay_leaves_it_out(agent: Agent, tmp_path: Path) -> None:
    # A user's own settings name this machine's relay (a project's name none: harness/test_portable.py).
    settings = agent.home / ".claude" / "settings.json"

    def commands() -> list[str]:
        hooks = json.loads(settings.read_text())["hooks"]
        return [h["command"] for groups in hooks.values() for group in groups for h in group["hooks"]]

    for extra, expected in (
        ([], [*SHELL, "sciontool"]),
        (["--no-relay"], ["sciontool"]),
        ([], [*SHELL, "sciontool"]),
    ):
        done = agent.run("harness", "install", "claude", "--user", "--command", "sciontool", *extra)
        assert done.returncode == 0, done.stderr
        assert {tuple(shlex.split(c)) for c in commands()} == {(*expected, "hook", "--dialect=claude")}
    assert len(commands()) == len(json.loads(settings.read_text())["hooks"])  # one of ours per event


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_an_envelope_on_a_pipe_is_read_by_the_helper_itself_and_the_shell_starts_nothing(
    agent: Agent, shell: Harness, tmp_path: Path
) -> None:
    """Codex and Python harnesses give a hook a pipe: the helper opens it through /proc, so bash
    forks no cat and makes one connection, where a socket (above) takes a cat and two."""
    trace = tmp_path / "trace"
    done = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-e",
            "trace=execve,connect",
            "-o",
            str(trace),
            *SHELL,
            *GONE,
            "--dialect=claude",
        ],
        input=json.dumps(SESSION[2]).encode(),
        capture_output=True,
        env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
        timeout=HANG_BOUND,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert info(agent.home)["activity"] == "executing"
    lines = trace.read_text().splitlines()
    started = [line for line in lines if "execve(" in line]
    assert len(started) == 1 and "bash" in started[0], started  # bash alone: no cat, no hook process
    assert len([line for line in lines if "connect(" in line and "AF_INET" in line]) == 1, lines


def test_a_stdin_its_harness_never_closes_leaves_no_cat_waiting_on_it(agent: Agent, shell: Harness) -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, json.dumps(SESSION[2]).encode())
        proc = hook_process(agent, [*SHELL, *GONE], read_end, subprocess.PIPE)
        os.close(read_end)
        _, err = proc.communicate(timeout=HANG_BOUND)
        assert (proc.returncode, err) == (0, b"")  # the object, taken once the writer paused
        assert info(agent.home)["activity"] == "executing"
        pipe = os.readlink(f"/proc/self/fd/{write_end}")

        def holders() -> list[str]:
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                if int(pid) == os.getpid():
                    continue
                try:
                    fds = os.listdir(f"/proc/{pid}/fd")
                    if any(os.readlink(f"/proc/{pid}/fd/{fd}") == pipe for fd in fds):
                        found.append(pid)
                except OSError:
                    continue
            return found

        assert eventually(lambda: not holders())  # the shell's cat stopped, nothing else holds it
    finally:
        os.close(write_end)


def test_a_helper_gone_once_it_took_the_envelope_is_one_line_and_exit_1_never_a_second_run(
    agent: Agent,
) -> None:
    """Past `ready` the event is the helper's: the shell must not run it again (GONE would say 127)."""
    helper, data = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def dies_after_taking_it() -> None:
        conn, _ = helper.accept()
        with conn:
            conn.recv(1 << 16)
            conn.sendall(b"served ready %d\n" % data.getsockname()[1])
            stream, _ = data.accept()
            with stream:
                got.append(stream.recv(1 << 16))
        # gone: no status

    thread = threading.Thread(target=dies_after_taking_it, daemon=True)
    thread.start()
    with helper, data:
        path = agent.home / bash.ADDRESS
        path.parent.mkdir()
        path.write_text(f"{helper.getsockname()[1]} {os.getpid()} {started_at(os.getpid())} served token\n")
        done = through_shell(agent, GONE, SESSION[2])
        thread.join(HANG_BOUND)
    assert done.returncode == 1
    assert done.stderr == (
        b"sciontool hook: the resident helper took the hook but gave no exit status "
        b"(it stopped, or took over 5 s)\n"
    )
    assert got and got[0].startswith(b"token\n")  # the shell's proof, then its envelope


def test_a_helper_told_to_stop_finishes_the_hook_it_took_first(agent: Agent, shell: Harness) -> None:
    """SIGTERM while the helper serves a hook (here waiting for HOME's state lock, which this
    test holds): it answers and writes that hook, then stops. Killed at once, it would leave
    the shell exit 1 and the event unwritten, and the harness would not run it again."""
    assert eventually(lambda: len(watchers(agent.home)) == 1)  # a second one started meanwhile leaves
    (helper,) = watchers(agent.home)
    held = os.open(agent.home, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        hook = subprocess.Popen(
            [*SHELL, *GONE, "--dialect=claude"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
        )
        assert hook.stdin is not None
        hook.stdin.write(json.dumps(SESSION[2]).encode())
        hook.stdin.close()
        assert eventually(lambda: holds(helper, agent.home))
        os.kill(helper, signal.SIGTERM)  # started by this test's first hook
    finally:
        os.close(held)  # the lock goes with it
    assert hook.wait(timeout=HANG_BOUND) == 0
    assert hook.stdout is not None and hook.stderr is not None
    with hook.stdout, hook.stderr:
        assert (hook.stdout.read(), hook.stderr.read()) == (b"", b"")
    assert eventually(lambda: not watchers(agent.home))
    assert info(agent.home)["activity"] == "executing"


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
@pytest.mark.parametrize("shell_program", ["bash", "sh"])
def test_a_line_read_into_the_harnesss_bash_starts_no_second_bash_and_any_other_shell_the_relays(
    agent: Agent, shell: Harness, tmp_path: Path, shell_program: str
) -> None:
    """Codex's line (Scope.bash_hook_command) run as Codex runs it, `bash -c`, and by sh: relayed
    both ways (the program cannot start); under bash, bash is exec'd once, the shell itself."""
    line = wired_in_bash(shlex.join([*GONE, "--dialect=claude"]))
    trace = tmp_path / "execs"
    done = subprocess.run(
        ["strace", "-f", "-s", "512", "-e", "trace=execve", "-o", str(trace), shell_program, "-c", line],
        input=json.dumps(SESSION[2]).encode(),
        capture_output=True,
        env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
        timeout=HANG_BOUND,
    )
    assert (done.returncode, done.stdout) == (0, b""), done.stderr
    assert any(line.endswith("[executing] Running tool: Bash") for line in agent.log_lines)
    bashes = [
        row for row in trace.read_text().splitlines() if "execve(" in row and "bash" in row.split('"')[1]
    ]
    if shell_program == "bash":
        assert len(bashes) == 1, bashes  # `bash -c` itself
    elif os.path.basename(os.path.realpath(shutil.which("sh") or "")) != "bash":
        assert len(bashes) == 1 and "relay.bash" in bashes[0], bashes  # the relay's own bash


def test_a_line_read_into_the_harnesss_bash_with_no_helper_runs_the_hook_itself(agent: Agent) -> None:
    line = wired_in_bash(shlex.join([*HOOK, "--dialect=claude"]))
    done = subprocess.run(
        ["bash", "-c", line],
        input=json.dumps(SESSION[2]).encode(),
        capture_output=True,
        env={**agent.env, "SCIONTOOL_EXIT_WATCH": "off"},
        timeout=HANG_BOUND,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert any(line.endswith("[executing] Running tool: Bash") for line in agent.log_lines)


def children(pid: int) -> list[str]:
    """The programs process PID's children run."""
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [Path(f"/proc/{child}/comm").read_text().strip() for child in found]
    except OSError:
        return []


@pytest.mark.parametrize("given", ["pipe", "socket"])
def test_an_envelope_its_harness_writes_late_holds_no_other_hook(
    agent: Agent, shell: Harness, given: str
) -> None:
    """A harness of this user that stops mid-envelope (a slow writer, a SIGSTOPped one): the helper
    took that hook, and reads its envelope as it comes, never waiting on it, so the hooks of
    another harness are served meanwhile; the late one lands once its envelope is whole."""
    envelope = json.dumps(
        claude("PostToolUse", tool_name="Grep", tool_use_id="t7", tool_response="x")
    ).encode()
    if given == "pipe":
        theirs, ours = os.pipe()  # the hook reads, the test writes
    else:
        pair = socket.socketpair()
        ours, theirs = pair[0].detach(), pair[1].detach()
    try:
        late = hook_process(agent, [*SHELL, *GONE], theirs)
        os.close(theirs)
        os.write(ours, envelope[:20])  # then nothing, for now
        # Taken: the helper reads the pipe itself; a socket's bytes come through the shell's cat.
        helper = int(address(agent)[1])
        if given == "pipe":
            pipe = os.readlink(f"/proc/self/fd/{ours}")
            assert eventually(lambda: holds(helper, Path(pipe)))
        else:
            assert eventually(lambda: "cat" in children(late.pid))
        for _ in range(5):
            assert shell.hook(SESSION[2], "--dialect=claude") == (0, "", "")
        assert late.poll() is None  # all five served while the late one still waits for its bytes
        assert info(agent.home)["activity"] == "executing"
        os.write(ours, envelope[20:])
        os.close(ours)
        ours = -1
        _, err = late.communicate(timeout=HANG_BOUND)
        assert (late.returncode, err) == (0, b"")
        assert info(agent.home)["activity"] == "working"
        assert agent.log_lines[-1].endswith("Tool Grep completed")
    finally:
        if ours >= 0:
            os.close(ours)
