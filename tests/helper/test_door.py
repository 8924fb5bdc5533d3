"""The door to HOME's resident helper (helper/: relay.bash, client.py, bash.py, server.py), attacked
with real things: another local user who connects first and floods every port and socket it can
see in /proc, a helper stopped (SIGSTOP) or stuck, one told to stop, a burst of hooks. Every hook
must exit as it would, within its bound, and its event land once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_BOUND, Agent
from standin import eventually, watchers

from helper.test_bash import GONE, SHELL, address, started_at
from helper.test_client import HOOK, Harness, claude, helper_runs, started
from sciontool_py.helper import bash, wire

pytestmark = pytest.mark.skipif(not SHELL, reason="the shell relay needs Linux and bash")
BOUND = 5.0  # seconds a stopped or stuck helper may cost a hook in all (docs/receiver.md)
MARGIN = 2.5  # seconds more, for a Python start and a loaded 2-core machine

# Run as the other user: connect to every 127.0.0.1 port and abstract socket of the victim's
# (/proc/net/tcp and /proc/net/unix show them to everyone), holding 40 silent connections and
# sending a forged proof and envelope on others, until killed. Says how many it made.
ATTACK = r"""
import os, socket, sys, time
victim = sys.argv[1]
held, made = [], 0
def targets():
    found = []
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        if f[3] == "0A" and f[7] == victim and f[1].startswith("0100007F:"):
            found.append((socket.AF_INET, ("127.0.0.1", int(f[1][9:], 16))))
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        f = line.split()
        if len(f) > 7 and f[7] == sys.argv[2]:
            found.append((socket.AF_UNIX, "\0" + f[7][1:]))
    return found
while True:
    for family, where in targets():
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(0.2)
        try:
            s.connect(where)
        except OSError:
            s.close()
            continue
        made += 1
        if made % 2:
            try:
                s.send(b"token\n{\"hook_event_name\": \"PreToolUse\", \"tool_name\": \"injected\"}")
            except OSError:
                pass
        held.append(s)
        if len(held) > 40:
            held.pop(0).close()
    print(made, flush=True)
"""


@pytest.fixture
def other_user() -> Iterator[tuple[int, int]]:
    """A second local user, made for the test and removed after it."""
    if os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("setpriv") is None:
        pytest.skip("making a second local user needs root, useradd and setpriv")
    name = f"scionatk{os.getpid()}"
    for _ in range(20):  # another useradd may hold /etc/passwd's lock a moment
        made = subprocess.run(
            ["useradd", "-M", "-N", "-r", "-s", "/usr/sbin/nologin", name], capture_output=True
        )
        if made.returncode == 0:
            break
        time.sleep(0.5)
    else:
        pytest.skip(f"useradd failed: {made.stderr.decode()}")
    try:
        ids = subprocess.run(["id", "-u", name], capture_output=True, text=True, check=True).stdout
        yield int(ids), 65534
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture
def shell(agent: Agent, tmp_path: Path) -> Iterator[Harness]:
    """A harness whose first hook (in its own process) left the HOME's resident listening."""
    with started(agent, tmp_path, lambda: helper_runs(agent) and len(address(agent)) == 5) as ready:
        ready.prefix = [*SHELL, *GONE]
        yield ready


def hook(agent: Agent, program: list[str], tool: str, on_socket: bool = False) -> tuple[int, bytes, float]:
    """One claude PreToolUse hook for TOOL, its stdin a pipe (Codex, Python harnesses) or a unix
    socket (Node harnesses): exit status, stderr, wall time."""
    envelope = json.dumps(claude("PreToolUse", tool_name=tool)).encode()
    env = {**agent.env, "SCIONTOOL_EXIT_WATCH": "on"}
    began = time.monotonic()
    if not on_socket:
        done = subprocess.run(
            [*program, "--dialect=claude"], input=envelope, capture_output=True, env=env, timeout=HANG_BOUND
        )
        return done.returncode, done.stderr, time.monotonic() - began
    ours, theirs = socket.socketpair()
    with ours, theirs:
        proc = subprocess.Popen(
            [*program, "--dialect=claude"], stdin=theirs, stdout=theirs, stderr=subprocess.PIPE, env=env
        )
        theirs.close()
        ours.sendall(envelope)
        ours.shutdown(socket.SHUT_WR)
        _, err = proc.communicate(timeout=HANG_BOUND)
    return proc.returncode, err, time.monotonic() - began


def landed(agent: Agent, tool: str) -> int:
    """How many times agent.log says the PreToolUse of TOOL."""
    return sum(line.endswith(f"Running tool: {tool}") for line in agent.log_lines)


def test_another_user_connecting_first_and_flooding_drops_delays_and_feeds_no_hook(
    agent: Agent, shell: Harness, other_user: tuple[int, int]
) -> None:
    python = "/usr/bin/python3"  # the test's own may sit in a folder the other user cannot enter
    if not os.access(python, os.X_OK):
        pytest.skip("no system python for the other user")
    uid, gid = other_user
    attacker = subprocess.Popen(
        [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            python,
            "-c",
            ATTACK,
            str(os.geteuid()),
            # The victim HOME's own socket: another test's (a squatter run as this same other
            # user, test_client.py) is not this attack's to count.
            "@" + wire.address(str(agent.home))[1:].decode(),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    try:
        assert attacker.stdout is not None
        while int(attacker.stdout.readline()) <= 40:
            pass  # until it holds 40 connections: the flood is on
        walls = []
        for n in range(30):
            code, err, wall = hook(agent, [*SHELL, *GONE], f"t{n}", on_socket=n % 2 == 0)
            assert (code, err) == (0, b""), n  # GONE: only the helper could have run it
            walls.append(wall)
    finally:
        attacker.kill()  # started by this test
        out, _ = attacker.communicate(timeout=HANG_BOUND)
    assert int(out.split()[-1]) > 60  # it went on connecting while the hooks ran
    assert max(walls) < 3.0, walls  # each well under 1 s where nobody waits on its connections
    assert all(landed(agent, f"t{n}") == 1 for n in range(30))
    assert landed(agent, "injected") == 0


def test_a_stopped_helper_costs_a_hook_at_most_5_s_and_no_event_is_lost_or_run_twice(
    agent: Agent, shell: Harness
) -> None:
    assert eventually(lambda: len(watchers(agent.home)) == 1)
    (helper,) = watchers(agent.home)
    ways = {
        "shell, a pipe": ([*SHELL, *HOOK], False),
        "shell, a socket": ([*SHELL, *HOOK], True),
        "python relay": (HOOK, False),
    }
    os.kill(helper, signal.SIGSTOP)  # started by this test's first hook
    try:
        for way, (program, on_socket) in ways.items():
            code, err, wall = hook(agent, program, way, on_socket)
            assert (code, err) == (0, b""), way  # run in its own process
            assert wall < BOUND + MARGIN, (way, wall)
    finally:
        os.kill(helper, signal.SIGCONT)
    # Continued, it finds those hooks' connections, their clients gone on: it runs none of them.
    code, err, _ = hook(agent, [*SHELL, *GONE], "after")
    assert (code, err) == (0, b"")  # the helper ran it
    for way in [*ways, "after"]:
        assert landed(agent, way) == 1, way


class Stuck:
    """A listener that passes for the helper (the address file names this test's process) and
    takes hooks but never answers: before `ready`, or after it (with the helper's token)."""

    def __init__(self, agent: Agent, ready: bool) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.data = socket.create_server(("127.0.0.1", 0))
        self.ready = ready
        self.held: list[socket.socket] = []
        path = agent.home / bash.ADDRESS
        path.parent.mkdir(exist_ok=True)
        me = os.getpid()
        path.write_text(f"{self.sock.getsockname()[1]} {me} {started_at(me)} served token\n")
        threading.Thread(target=self.run, daemon=True).start()

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            if self.ready:
                try:
                    conn.recv(1 << 16)
                    conn.sendall(b"served ready %d\n" % self.data.getsockname()[1])
                except OSError:
                    return  # closed by the test meanwhile

    def close(self) -> None:
        for each in (self.sock, self.data, *self.held):
            each.close()


def test_a_helper_stuck_before_ready_costs_a_hook_2_s_and_it_runs_once_in_its_own_process(
    agent: Agent,
) -> None:
    stuck = Stuck(agent, ready=False)
    try:
        code, err, wall = hook(agent, [*SHELL, *HOOK], "stuck")
    finally:
        stuck.close()
    assert (code, err) == (0, b"")
    assert wall < BOUND + MARGIN
    assert landed(agent, "stuck") == 1


def test_a_helper_stuck_after_it_took_the_envelope_costs_a_hook_at_most_5_s_and_never_a_second_run(
    agent: Agent,
) -> None:
    stuck = Stuck(agent, ready=True)
    try:
        code, err, wall = hook(agent, [*SHELL, *HOOK], "taken")
    finally:
        stuck.close()
    assert code == 1 and err.endswith(b"gave no exit status (it stopped, or took over 5 s)\n")
    assert BOUND - 0.5 < wall < BOUND + MARGIN
    assert landed(agent, "taken") == 0  # the envelope is the helper's: not run here as well


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_helper_told_to_stop_withdraws_its_address_before_it_goes(
    agent: Agent, shell: Harness, stop: signal.Signals
) -> None:
    assert eventually(lambda: len(watchers(agent.home)) == 1)
    (helper,) = watchers(agent.home)
    os.kill(helper, stop)  # started by this test's first hook
    assert eventually(lambda: not watchers(agent.home))
    assert not (agent.home / bash.ADDRESS).exists()


def test_a_burst_of_100_hooks_at_once_loses_none(agent: Agent, shell: Harness) -> None:
    envelopes = [json.dumps(claude("PreToolUse", tool_name=f"b{n}")).encode() for n in range(100)]
    procs = []
    for envelope in envelopes:  # each written as its hook starts, as a harness does
        proc = subprocess.Popen(
            [*SHELL, *HOOK, "--dialect=claude"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
        )
        assert proc.stdin is not None
        proc.stdin.write(envelope)
        proc.stdin.close()
        procs.append(proc)
    for proc in procs:
        proc.wait(timeout=60)
    results = []
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        with proc.stdout, proc.stderr:
            results.append((proc.returncode, proc.stderr.read()))
    # Relayed, or (not taken within 2 s on a loaded machine) run in its own process: never lost.
    assert results == [(0, b"")] * 100
    assert all(landed(agent, f"b{n}") == 1 for n in range(100))


def test_a_client_stopped_after_its_ready_holds_no_other_hook(agent: Agent, shell: Harness) -> None:
    """A hook process of this user stopped (SIGSTOP, a debugger) between the helper's `ready` and
    its `go`: the helper offers the next hooks beside it, and lets it go at its own bound."""
    from sciontool_py.helper import client

    stuck = client.connect(str(agent.home))
    assert stuck is not None
    try:
        envelope = json.dumps(claude("PreToolUse", tool_name="Held")).encode()
        read_end, write_end = os.pipe()
        os.write(write_end, envelope)
        os.close(write_end)
        env = [os.fsencode(f"HOME={agent.home}")]
        request = wire.request(str(agent.home), ["--dialect=claude"], env, wire.HANDED)
        message = len(request).to_bytes(8, "big") + request
        handed = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, read_end.to_bytes(4, sys.byteorder))]
        stuck.sendall(message[stuck.sendmsg([message], handed) :])  # as client.relay sends it
        os.close(read_end)
        assert stuck.recv(1) == wire.READY  # and then nothing: no `go`
        assert shell.hook(claude("PreToolUse", tool_name="Next"), "--dialect=claude") == (0, "", "")
        stuck.setblocking(False)
        with pytest.raises(BlockingIOError):
            stuck.recv(1)  # still offered (not closed, not run) when the next hook was answered
    finally:
        stuck.close()
    assert landed(agent, "Next") == 1 and landed(agent, "Held") == 0
