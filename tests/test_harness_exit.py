"""The exit watcher with real processes: stand-in harnesses (tests/standin.py) fire the real
`sciontool hook` through `sh -c` or a wrapper, then are killed with SIGKILL or exit without a
session end. The watcher is one process per HOME, bounded by harness processes, and never
signals anything."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_BOUND, REPO, Agent
from standin import StandIn, eventually, info, record_of, records, watchers

from sciontool_py import process, registry
from sciontool_py.dialect.discover import resolve
from sciontool_py.receiver import harness_exit

WATCHER = f"import sys\nfrom {harness_exit.MODULE} import main\nsys.exit(main(sys.argv[1:]))"
SIGNAL_CALLS = "kill,tkill,tgkill,pidfd_send_signal,rt_sigqueueinfo,rt_tgsigqueueinfo"
DIALECTS = sorted(p.name for p in (REPO / "dialects").iterdir() if (p / "dialect.yaml").is_file())


@pytest.fixture
def stand_ins(agent: Agent, tmp_path: Path) -> Iterator[list[StandIn]]:
    """Stand-in harnesses the test starts; each is killed at the end, and the HOME's watcher,
    with nothing left to watch, must then exit by itself."""
    started: list[StandIn] = []
    yield started
    for stand_in in started:
        stand_in.close()
    assert eventually(lambda: not watchers(agent.home)), "the watcher outlived every harness"


def start(stand_ins: list[StandIn], agent: Agent, tmp_path: Path, dialect: str, **kw: str) -> StandIn:
    folder = tmp_path / f"h{len(stand_ins)}"
    folder.mkdir()
    stand_in = StandIn(agent, folder, dialect, **kw)
    stand_ins.append(stand_in)
    return stand_in


def envelope(dialect: str, canonical: str, **values: str) -> dict[str, object]:
    """An envelope of DIALECT for a raw event it maps to CANONICAL, with VALUES (tool_name,
    session_id, ...) where the dialect reads them."""
    spec = resolve(dialect, None)
    raw, mapping = next((r, m) for r, m in spec.mappings.items() if m.event == canonical)
    found: dict[str, object] = {spec.name_fields[0]: raw}
    for field, value in values.items():
        path = mapping.fields.get(field)
        if path:
            target = found
            for key in path[:-1]:
                target = target.setdefault(key, {})  # type: ignore[assignment]
            target[path[-1]] = value
    return found


def claude(name: str, session: str = "s1", **fields: object) -> dict[str, object]:
    return {"hook_event_name": name, "session_id": session, **fields}


# --- 3. an agent's end is always said ---------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_harness_killed_mid_tool_reads_crashed_for_every_dialect(
    agent: Agent, tmp_path: Path, stand_ins: list[StandIn], dialect: str
) -> None:
    harness = start(stand_ins, agent, tmp_path, dialect)
    harness.send(envelope(dialect, "tool-start", tool_name="Bash", session_id="s1"))
    assert info(agent.home).get("activity") in ("executing", "waiting_for_input")
    harness.kill()  # SIGKILL mid-tool: no end hook
    assert eventually(lambda: info(agent.home).get("phase") == "error"), agent.log_lines
    status = info(agent.home)
    assert "activity" not in status and "toolName" not in status
    assert "without a session end" in status["detail"]["message"]  # type: ignore[index]
    [line] = [line for line in agent.log_lines if "[ERROR] [error] Agent exited " in line]
    assert line.endswith(" without a session end")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_harness_gone_between_turns_reads_stopped_for_every_dialect(
    agent: Agent, tmp_path: Path, stand_ins: list[StandIn], dialect: str
) -> None:
    harness = start(stand_ins, agent, tmp_path, dialect)
    spec = resolve(dialect, None)
    mapped = {m.event for m in spec.mappings.values()}
    ending = next(e for e in ("agent-end", "response-complete", "session-start") if e in mapped)
    harness.send(envelope(dialect, ending, session_id="s1"))
    assert harness.exit(0) == 0  # no session end
    assert eventually(lambda: info(agent.home).get("phase") == "stopped"), agent.log_lines
    assert "detail" not in info(agent.home)
    assert sum("Session ended (reason: the harness exited" in line for line in agent.log_lines) == 1


def test_a_crash_is_said_once_and_a_session_end_the_harness_fired_is_not_said_again(
    agent: Agent, tmp_path: Path, stand_ins: list[StandIn]
) -> None:
    harness = start(stand_ins, agent, tmp_path, "claude")
    harness.send(
        claude("SessionStart", source="startup"), claude("Stop"), claude("SessionEnd", reason="exit")
    )
    assert harness.exit(0) == 0
    assert eventually(lambda: not watchers(agent.home))
    assert info(agent.home)["phase"] == "stopped"
    assert sum("Session ended" in line for line in agent.log_lines) == 1  # the harness's own


def test_the_watcher_is_cheap_and_never_signals_anything(agent: Agent, tmp_path: Path) -> None:
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    harness = StandIn(agent, tmp_path, "claude", SCIONTOOL_EXIT_WATCH="off")
    try:
        harness.send(claude("PreToolUse", tool_name="Bash", tool_use_id="t1"))
        trace = tmp_path / "trace"
        # The real watcher, started as the hook starts it, under a spy of every signal call.
        # (-e signal=none: the kernel's SIGCHLD as its standby exits is received, not sent)
        spy_argv = [
            "strace",
            "-f",
            "-qq",
            "-o",
            str(trace),
            "-e",
            f"trace={SIGNAL_CALLS}",
            "-e",
            "signal=none",
        ]
        spy = subprocess.Popen(
            [*spy_argv, sys.executable, "-c", WATCHER, "--home", str(agent.home)],
            env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on"},
        )

        def traced() -> list[int]:
            return [
                p for p in watchers(agent.home) if Path(f"/proc/{p}/comm").read_text().strip() != "strace"
            ]

        assert eventually(lambda: bool(traced()))
        [pid] = traced()
        rss_kib = int(
            next(
                line
                for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if line.startswith("VmRSS")
            ).split()[1]
        )
        assert rss_kib < 40 * 1024, rss_kib  # about 10 MiB: one small Python process for the whole HOME
        harness.kill()
        assert spy.wait(timeout=HANG_BOUND) == 0
        assert info(agent.home)["phase"] == "error"
        assert trace.read_text().strip() == ""  # no signal sent, to anything
    finally:
        harness.close()


# --- 28.1: bounded by harness processes, not by session ids ------------------------------------


def test_one_harness_with_40_session_ids_has_one_watcher(
    agent: Agent, tmp_path: Path, stand_ins: list[StandIn]
) -> None:
    harness = start(stand_ins, agent, tmp_path, "claude")
    for n in range(40):
        harness.send(claude("UserPromptSubmit", session=f"session-{n}", prompt="hi"))
    assert eventually(lambda: len(watchers(agent.home)) == 1)
    time.sleep(1.5)  # a rescan or more: still one
    assert len(watchers(agent.home)) == 1
    assert len(records(agent.home)) == 1  # one agent: the harness process, whatever its sessions
    harness.kill()
    assert eventually(lambda: not watchers(agent.home))


def test_many_harnesses_share_one_watcher_which_drops_an_evicted_one(
    agent: Agent, tmp_path: Path, stand_ins: list[StandIn]
) -> None:
    harnesses = [start(stand_ins, agent, tmp_path, "claude") for _ in range(3)]
    for n, harness in enumerate(harnesses):
        harness.send(claude("PreToolUse", session=f"s{n}", tool_name="Bash", tool_use_id=f"t{n}"))
    assert eventually(lambda: len(watchers(agent.home)) == 1)
    [watcher] = watchers(agent.home)

    def fds() -> int:
        """The pidfds the watcher holds: one per harness process it waits for."""
        found = 0
        for fd in os.listdir(f"/proc/{watcher}/fd"):
            try:
                found += os.readlink(f"/proc/{watcher}/fd/{fd}") == "anon_inode:[pidfd]"
            except OSError:
                pass  # closed while we looked
        return found

    assert eventually(lambda: fds() == 3)
    first = harnesses[0].proc.pid
    [key] = [k for k in records(agent.home) if k.startswith(f"p{first}-")]
    (agent.home / ".scion" / "agents" / f"{key}.json").unlink()  # evicted
    assert eventually(lambda: fds() == 2)  # its pidfd dropped: it waits for it no more
    harnesses[1].kill()
    assert eventually(lambda: fds() == 1)

    def ended() -> bool:
        return record_of(agent.home, harnesses[1].proc.pid)["info"].get("phase") == "error"  # type: ignore[attr-defined]

    assert eventually(ended), agent.log_lines


def test_a_record_naming_a_recycled_pid_ends_at_once(agent: Agent, tmp_path: Path) -> None:
    # A record of a process that is gone, whose pid is now another's (here: this test's own
    # process, with another start time): never waited for, never taken for the harness.
    me = process.stat(os.getpid())
    assert me is not None
    key = registry.process_key(os.getpid(), me[3] + 1)
    folder = agent.home / ".scion" / "agents"
    folder.mkdir(parents=True)
    record = {
        "harness": "claude",
        "session": "s",
        "project": "",
        "created": 1,
        "since": 1,
        "updated": time.time(),
        "message": "Running tool: Bash",
        "turn": True,
        "info": {"activity": "executing", "toolName": "Bash"},
    }
    (folder / f"{key}.json").write_text(json.dumps(record))
    done = subprocess.run(
        [sys.executable, "-c", WATCHER, "--home", str(agent.home)],
        env=agent.env,
        timeout=HANG_BOUND,
    )
    assert done.returncode == 0
    ended = json.loads((folder / f"{key}.json").read_text())
    assert ended["info"]["phase"] == "error"


# --- 28.2: the harness is found through the usual wrappers ------------------------------------

WRAPPERS = {
    "sh -c": "sh -c '{hook}; :'",
    "timeout sh -c": "timeout 30 sh -c '{hook}; :'",
    "flock -c": "flock {lock} -c '{hook}'",
    "nice": "nice -n 1 {hook}; :",
    "env": "env FOO=1 {hook}; :",
    "stdbuf": "stdbuf -o0 {hook}; :",
    "bash -lc": "bash -c '{hook}; :'",
    "fish -c": "fish -c '{hook}; true'",
    "ksh -c": "ksh -c '{hook}; :'",
    "mksh -c": "mksh -c '{hook}; :'",
    "tcsh -c": "tcsh -c '{hook}; true'",
    "timeout nice flock": "timeout 30 nice flock {lock} sh -c '{hook}; :'",
}


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_a_wrapped_hook_finds_the_harness_behind_the_wrapper(
    agent: Agent, tmp_path: Path, stand_ins: list[StandIn], name: str
) -> None:
    wrapper = WRAPPERS[name]
    program = wrapper.split()[0]
    for needed in {program, *(w for w in ("timeout", "flock", "nice") if w in wrapper)}:
        if not shutil.which(needed):
            pytest.skip(f"{needed} is not installed")
    wrapper = wrapper.replace("{lock}", str(tmp_path / "lock"))
    harness = start(stand_ins, agent, tmp_path, "claude", wrapper=wrapper)
    harness.send(claude("PreToolUse", tool_name="Bash", tool_use_id="t1"))
    time.sleep(2.5)  # past the point where a wrapper taken for the harness had exited
    assert info(agent.home) == {"activity": "executing", "toolName": "Bash"}
    [record] = records(agent.home)
    assert record == f"p{harness.proc.pid}-{process.stat(harness.proc.pid)[3]}"  # type: ignore[index]
    harness.send(claude("PostToolUse", tool_name="Bash", tool_use_id="t1"), claude("Stop"))
    harness.kill()  # between turns: a stop, not a crash
    assert eventually(lambda: info(agent.home).get("phase") == "stopped")


# --- inside Scion: only watch_harness_exit, as before ----------------------------------------


def test_inside_scion_a_qwen_exit_is_a_session_end_and_nothing_else(
    agent: Agent, tmp_path: Path, stand_ins: list[StandIn]
) -> None:
    harness = start(stand_ins, agent, tmp_path, "qwen-code", SCION_AGENT_ID="agent-1")
    harness.send(claude("SessionStart", source="startup"), claude("UserPromptSubmit", prompt="hi"))
    harness.send(claude("PreToolUse", tool_name="run_shell_command", tool_use_id="t1"))
    harness.kill()
    assert eventually(lambda: info(agent.home).get("phase") == "stopped"), agent.log_lines
    assert "detail" not in info(agent.home)  # as before: Scion's init says crashes, not the hook
    assert not (agent.home / ".scion" / "agents").exists()
    state = lambda: json.loads((agent.home / "agent-sessions.json").read_text())  # noqa: E731
    assert eventually(lambda: state()["ended"] == ["s1"])  # written just after agent-info.json
    assert "watched" not in state()


def test_inside_scion_a_dialect_without_the_option_starts_no_watcher(agent: Agent, tmp_path: Path) -> None:
    harness = StandIn(agent, tmp_path, "claude", SCION_AGENT_ID="agent-1")
    try:
        harness.send(claude("PreToolUse", tool_name="Bash", tool_use_id="t1"))
        time.sleep(0.5)
        assert watchers(agent.home) == []
        assert not (agent.home / ".scion" / "agents").exists()
        assert sorted(p.name for p in agent.home.iterdir()) == [
            "agent-info.json",
            "agent-sessions.json",
            "agent.log",
        ]
    finally:
        harness.close()


def test_the_switch_turns_the_watcher_off(agent: Agent, tmp_path: Path) -> None:
    harness = StandIn(agent, tmp_path, "claude", SCIONTOOL_EXIT_WATCH="off")
    try:
        harness.send(claude("PreToolUse", tool_name="Bash", tool_use_id="t1"))
        time.sleep(0.5)
        assert watchers(agent.home) == []
    finally:
        harness.close()


def test_a_fifo_or_a_folder_at_the_watchers_lock_starts_none_and_costs_the_hook_nothing(
    agent: Agent, tmp_path: Path
) -> None:
    (agent.home / ".scion").mkdir()
    os.mkfifo(agent.home / ".scion" / "exit-watcher.lock")
    harness = StandIn(agent, tmp_path, "claude")
    try:
        harness.send(claude("PreToolUse", tool_name="Bash", tool_use_id="t1"))  # no hang on the FIFO
        assert info(agent.home)["activity"] == "executing"
        time.sleep(0.5)
        assert watchers(agent.home) == []
    finally:
        harness.close()


def test_the_wait_sees_an_exit_that_is_not_yet_reaped() -> None:
    child = subprocess.Popen(["true"])
    try:
        assert eventually(lambda: (process.stat(child.pid) or (b"", b""))[1] == b"Z")
        found = process.stat(child.pid)
        assert found is not None
        assert not process.alive([child.pid, found[3]])  # a zombie has ended
        assert process.open_pidfd([child.pid, found[3]]) is None
    finally:
        child.wait()


def test_a_hook_whose_wrapper_ended_while_it_was_served_is_no_agent_of_that_wrapper(
    home: Path, tmp_path: Path
) -> None:
    # make e2e gemini question: Gemini CLI exited with its third SessionEnd under way, the e2e
    # recorder (a program named sciontool running `sciontool hook`) was killed and not yet
    # reaped while the helper looked up its hook's harness: the zombie, whose command line
    # /proc no longer gives, was taken for the harness, a second agent of that session.
    from sciontool_py.receiver.handlers import agent_state

    recorder = tmp_path / "sciontool"
    recorder.write_text(f"#!{sys.executable}\n")
    recorder.chmod(0o755)
    wrapper = subprocess.Popen([str(recorder), "hook", "--dialect=gemini"])
    try:
        assert eventually(lambda: (process.stat(wrapper.pid) or (b"", b""))[1] == b"Z")
        assert process.ancestors(wrapper.pid) == []
        record = agent_state.find(str(home), "s1", "gemini", origin=wrapper.pid)
        assert record.key == registry.session_key("s1")  # an orphaned hook's, as with init above it
    finally:
        wrapper.wait()


def test_signal_spy_is_real(tmp_path: Path) -> None:
    # The spy of the no-signal test sees a signal when one is sent (strace's own check).
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    trace = tmp_path / "trace"
    subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            str(trace),
            "-e",
            "trace=kill",
            sys.executable,
            "-c",
            "import os, signal; os.kill(os.getpid(), signal.SIGCONT)",
        ],
        check=True,
        timeout=HANG_BOUND,
    )
    assert f"SIG{signal.SIGCONT.name[3:]}" in trace.read_text()


RESUMERS = [
    "claude",
    "codex",
    "gemini",
    "opencode",
    "copilot",
    "qwen-code",
]  # issue 51: harnesses that resume


def resumed(dialect: str, tool: str, session: str = "s1") -> dict[str, object]:
    """A tool's start in session SESSION, its id where the dialect reads it (or at the top)."""
    return {"session_id": session, **envelope(dialect, "tool-start", tool_name=tool, session_id=session)}


@pytest.mark.parametrize("dialect", RESUMERS)
def test_a_session_resumed_after_a_crash_continues_its_agent_one_row(
    agent: Agent, tmp_path: Path, stand_ins: list[StandIn], dialect: str
) -> None:
    """`claude --resume ID` after a `kill -9`: the new process's hooks name the same session, and
    the agent continues (its start kept, its crash said in `resumed`) instead of a second row
    that read Crashed beside it for an hour."""
    first = start(stand_ins, agent, tmp_path, dialect)
    first.send(resumed(dialect, "Bash"))
    [(old_key, old)] = records(agent.home).items()
    first.kill()
    assert eventually(lambda: info(agent.home).get("phase") == "error"), agent.log_lines
    again = start(stand_ins, agent, tmp_path, dialect)
    again.send(resumed(dialect, "Grep"))
    [(key, record)] = records(agent.home).items()
    assert key != old_key and key.startswith(f"p{again.proc.pid}-")
    assert record["created"] == old["created"] and record["resumed"] == "crashed"
    listed = json.loads(agent.run("agents", "--json").stdout)
    assert [(row["key"], row["live"], row["resumed"]) for row in listed] == [(key, True, "crashed")]
    assert info(agent.home).get("activity") == "executing"


def test_another_session_or_a_live_process_of_it_is_another_agent(
    agent: Agent, tmp_path: Path, stand_ins: list[StandIn]
) -> None:
    first = start(stand_ins, agent, tmp_path, "claude")
    first.send(resumed("claude", "Bash"))
    second = start(stand_ins, agent, tmp_path, "claude")
    second.send(resumed("claude", "Bash"))  # the first lives
    first.kill()
    assert eventually(lambda: any(r["info"].get("phase") == "error" for r in records(agent.home).values()))  # type: ignore[union-attr]
    third = start(stand_ins, agent, tmp_path, "claude")
    third.send(resumed("claude", "Bash", "s2"))  # another session
    assert len(records(agent.home)) == 3
