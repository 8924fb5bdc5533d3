"""State files on a hostile machine: FIFOs, devices, symlinks and hard links planted where the
hook reads and writes, a disk that fills up, SIGTERM mid-write, stderr closed. The hook never
hangs, never follows a link out of HOME, never leaves a state file half written, and loses no
key (see tests/hostile_machine.py for the checks every run makes)."""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

import pytest
from conftest import TIMED
from hostile_machine import SECRET, SEED, Machine, RawServer, answer

pytestmark = TIMED  # every run is bounded in time: never beside the process flood

AGENT_END = {"hook_event_name": "agent-end"}
TOOL_START = {"hook_event_name": "tool-start", "tool_name": "grep"}
PROMPT = {"hook_event_name": "prompt-submit", "prompt": "fix the tests"}


def where(machine: Machine, place: str) -> Path:
    """A state path: HOME-relative, or /tmp/NAME as the hook sees it (the case's private /tmp)."""
    if place.startswith("/tmp/"):
        machine.need_private_tmp()
        return machine.tmp / place.removeprefix("/tmp/")
    return machine.home / place


# path -> (envelope, extra environment) that makes the hook use that path
USES = {
    "prompt.md": (PROMPT, {}),
    "agent.log": (TOOL_START, {}),
    "agent-info.json": (TOOL_START, {}),
    "agent-limits.json": (AGENT_END, {"SCION_MAX_TURNS": "5"}),
    ".scion/scion-token": (TOOL_START, {"SCION_HUB_ENDPOINT": "http://127.0.0.1:9", "SCION_AGENT_ID": "a"}),
    "/tmp/agent.log": (TOOL_START, {}),
    "/tmp/scion-limits-exceeded": (AGENT_END, {"SCION_MAX_TURNS": "1"}),
}


@pytest.mark.parametrize("place", list(USES))
def test_a_fifo_at_a_state_path_never_blocks_the_hook(machine: Machine, place: str) -> None:
    fifo = where(machine, place)
    fifo.parent.mkdir(exist_ok=True)
    fifo.unlink(missing_ok=True)  # the seeded agent-info.json
    os.mkfifo(fifo)
    if place == "/tmp/agent.log":
        os.mkfifo(machine.home / "agent.log")  # so the line falls back to /tmp/agent.log
    envelope, env = USES[place]
    first = machine.hook(envelope, **env)
    second = machine.hook(envelope, **env)  # and no later hook waits behind the first
    assert (first.returncode, second.returncode) == (0, 0), first.stderr
    keys = () if place == "agent-info.json" else ("keep",)  # a FIFO holds no state: it is replaced
    info = machine.settled(keys)
    if place == "prompt.md":
        assert fifo.read_text() == "fix the tests"  # replaced by a regular file
    if place == "agent-limits.json":
        assert json.loads(fifo.read_text())["turn_count"] == 2
    if place == "/tmp/scion-limits-exceeded":
        assert info["activity"] == "limits_exceeded"
        assert fifo.read_text() == "max_turns of 1 exceeded (completed 2)"
    if place == "agent.log":
        assert stat.S_ISFIFO(fifo.lstat().st_mode)  # refused, not replaced: Scion falls back
        if machine.isolated:
            assert "Running tool: grep" in (machine.tmp / "agent.log").read_text()
    if place == ".scion/scion-token":
        assert any("Hub token file not used" in line and "regular file" in line for line in machine.log())


def test_a_fifo_with_a_reader_at_agent_log_gets_nothing(machine: Machine) -> None:
    fifo = machine.home / "agent.log"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # now a writer's open succeeds
    try:
        assert machine.hook(TOOL_START).returncode == 0
        assert os.read(reader, 4096) == b""  # end of file: the hook let go without writing
    finally:
        os.close(reader)
    machine.settled()


# path -> what links there to the secret outside HOME
LINKED = ["prompt.md", "agent-info.json", "agent.log", "/tmp/scion-limits-exceeded"]


@pytest.mark.parametrize("place", LINKED)
def test_a_symlink_out_of_home_is_never_followed(machine: Machine, place: str) -> None:
    link = where(machine, place)
    link.unlink(missing_ok=True)
    link.symlink_to(machine.secret_file)
    envelope, env = {**USES, "agent-info.json": (TOOL_START, {})}.get(place, (TOOL_START, {}))
    assert machine.hook(envelope, **env).returncode == 0
    keys = () if place == "agent-info.json" else ("keep",)
    info = machine.settled(keys)  # the secret is unchanged and nowhere in HOME
    assert "secret" not in info
    if place != "agent.log":  # agent.log is refused (Scion falls back to /tmp); the rest replaced
        assert link.is_file() and not link.is_symlink()
        # prompt.md holds what the user typed: this user's alone outside Scion.
        assert stat.S_IMODE(link.stat().st_mode) == (0o600 if place == "prompt.md" else 0o644)


def test_a_symlinked_folder_on_the_token_path_is_never_followed(machine: Machine) -> None:
    elsewhere = machine.outside / "scion"
    elsewhere.mkdir()
    (elsewhere / "scion-token").write_text(SECRET)
    (machine.home / ".scion").symlink_to(elsewhere)
    machine.protect()
    hub = RawServer(answer("200 OK"))
    try:
        run = machine.hook(TOOL_START, SCION_HUB_ENDPOINT=hub.url, SCION_AGENT_ID="a")
    finally:
        hub.close()
    assert run.returncode == 0
    assert hub.requests == []  # no token read through the link: the hub is not configured
    assert any("Hub token file not used" in line and "symbolic link" in line for line in machine.log())
    machine.settled()


def test_hard_links_to_files_outside_home_are_refused_or_replaced(machine: Machine) -> None:
    target = machine.outside / "target.log"
    target.write_text("outside\n")
    machine.protect()
    (machine.home / "agent-info.json").unlink()
    os.link(machine.secret_file, machine.home / "agent-info.json")
    os.link(target, machine.home / "agent.log")
    assert machine.hook(TOOL_START).returncode == 0
    info = machine.settled(keys=())
    assert "secret" not in info and info["toolName"] == "grep"
    assert target.read_text() == "outside\n"


def test_hard_links_at_the_old_predictable_temp_names_are_never_written(machine: Machine) -> None:
    # The old writer used .agent-info-<pid>.tmp: plant a link at the next few hundred pids.
    last_pid = Path("/proc/sys/kernel/ns_last_pid")
    if not last_pid.exists():
        pytest.skip("needs /proc/sys/kernel/ns_last_pid to know the next pids")
    last = int(last_pid.read_text())
    planted = [f".agent-info-{pid}.tmp" for pid in range(last + 1, last + 300)]
    for name in planted:
        os.link(machine.secret_file, machine.home / name)
    assert machine.hook(TOOL_START).returncode == 0
    assert machine.settled(planted=planted)["toolName"] == "grep"


@pytest.mark.parametrize("place", ["agent-info.json", "agent-limits.json", ".scion/scion-token"])
@pytest.mark.parametrize("kind", ["symlink", "device"])
def test_dev_zero_at_a_state_path_is_not_read(machine: Machine, place: str, kind: str) -> None:
    path = machine.home / place
    path.parent.mkdir(exist_ok=True)
    path.unlink(missing_ok=True)
    if kind == "symlink":
        path.symlink_to("/dev/zero")
    else:
        if os.geteuid() != 0:
            pytest.skip("mknod needs root (CI runs as root)")
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # a real /dev/zero node in HOME
    envelope, env = USES[place] if place != "agent-info.json" else (TOOL_START, {})
    run = machine.hook(envelope, measure=True, **env)
    assert run.returncode == 0
    assert run.peak_mib < 100, run.peak_mib  # reads stop at 1 MiB, and devices are not read at all
    machine.settled(keys=() if place == "agent-info.json" else ("keep",))


def fill(folder: Path, leave_kib: int) -> None:
    """Fill the tmpfs holding folder, then free leave_kib KiB (in 4 KiB pages)."""
    n = 0
    try:
        while True:
            (folder / f"filler-{n}").write_bytes(b"f" * 4096)
            n += 1
    except OSError:
        (folder / f"filler-{n}").unlink(missing_ok=True)
    for i in range(leave_kib // 4):
        (folder / f"filler-{n - 1 - i}").unlink()


def test_a_full_disk_leaves_every_state_file_byte_for_byte(machine: Machine) -> None:
    machine.mount_tmpfs(machine.home, 256)
    big = {**SEED, "pad": "x" * 20_000}  # 20 KiB: more than the 8 KiB left below
    machine.seed(big)
    info_bytes = (machine.home / "agent-info.json").read_bytes()
    limits = b'{\n  "turn_count": 3,\n  "model_call_count": 0,\n  "max_turns": 9,\n  "max_model_calls": 0\n}'
    (machine.home / "agent-limits.json").write_bytes(limits)
    (machine.home / "agent.log").write_text("seeded\n")  # its page has room for a few lines
    filler = machine.home / "filler"
    filler.mkdir()
    fill(filler, leave_kib=8)

    run = machine.hook(TOOL_START)
    assert run.returncode == 1
    assert run.error == (
        f"sciontool hook: cannot update agent state: {machine.home / 'agent-info.json'}: "
        "No space left on device"
    )
    assert (machine.home / "agent-info.json").read_bytes() == info_bytes

    fill(filler, leave_kib=0)  # now nothing fits: prompt.md and the limits file fail too
    run = machine.hook(PROMPT, SCION_MAX_TURNS="9")
    assert run.returncode == 1
    assert f"{machine.home / 'prompt.md'}: No space left on device" in run.error
    assert not (machine.home / "prompt.md").exists()  # not left empty: the next prompt is not "first"
    run = machine.hook(AGENT_END, SCION_MAX_TURNS="9")
    assert any(
        line.startswith("[ERROR] Failed to write agent-limits.json: ") and "No space left" in line
        for line in machine.log()
    )
    assert (machine.home / "agent-limits.json").read_bytes() == limits
    assert (machine.home / "agent-info.json").read_bytes() == info_bytes
    machine.settled(keys=("keep", "pad"))

    for extra in filler.iterdir():  # space again: nothing was lost meanwhile
        extra.unlink()
    assert machine.hook(TOOL_START).returncode == 0
    assert machine.settled(keys=("keep", "pad"))["toolName"] == "grep"


def test_sigterm_mid_write_removes_the_temp_file(machine: Machine) -> None:
    machine.mount_tmpfs(machine.home, 200 * 1024)
    machine.seed()
    prompt = {"hook_event_name": "prompt-submit", "prompt": "p" * (48 << 20)}
    for _ in range(5):  # writing 48 MB takes tens of ms; retry if the signal came too late
        (machine.home / "prompt.md").unlink(missing_ok=True)
        started = machine.start(prompt, "--dialect=core-agent")
        while started.proc.poll() is None:
            if any(name.startswith((".prompt.md", "prompt.md")) for name in os.listdir(machine.home)):
                started.proc.send_signal(signal.SIGTERM)  # the prompt is being written
                break
        started.proc.wait(timeout=30)
        if started.proc.returncode == -signal.SIGTERM:
            break
    else:
        pytest.skip("never caught the hook mid-write")
    assert [name for name in os.listdir(machine.home) if name.endswith(".tmp")] == []
    prompt_md = machine.home / "prompt.md"
    assert not prompt_md.exists() or prompt_md.stat().st_size == 48 << 20  # never a part


@pytest.mark.parametrize("stderr", ["2>&-", "2>/dev/full", "closed pipe"])
def test_every_handler_runs_with_stderr_closed_or_unwritable(machine: Machine, stderr: str) -> None:
    # agent.log unusable: the fallback warning goes to stderr, mid-update (it used to raise there).
    (machine.home / "agent.log").mkdir()
    options: dict[str, object] = {}
    if stderr == "closed pipe":
        read_end, write_end = os.pipe()
        os.close(read_end)
        options["stderr"] = write_end
    else:
        options["redirect"] = stderr
    first = machine.hook(PROMPT, **options)
    run = machine.hook(AGENT_END, SCION_MAX_TURNS="1", **options)
    if "stderr" in options:
        os.close(write_end)
    assert first.returncode == run.returncode == 0
    info = machine.settled()
    assert info["activity"] == "limits_exceeded"  # SCION_MAX_TURNS enforced
    assert json.loads((machine.home / "agent-limits.json").read_text())["turn_count"] == 1
    assert (machine.home / "prompt.md").read_text() == "fix the tests"
    if machine.isolated:
        assert (machine.tmp / "scion-limits-exceeded").read_text() == "max_turns of 1 exceeded (completed 1)"
        log = (machine.tmp / "agent.log").read_text()
        assert log.endswith("[LIMITS_EXCEEDED] Agent stopped: max_turns of 1 exceeded (completed 1)\n")


def nested(depth: int, leaf: str) -> str:
    """JSON text of leaf inside depth arrays (json.dumps itself stops near 1 000)."""
    return "[" * depth + leaf + "]" * depth


def test_a_deep_state_file_with_a_lone_surrogate_is_read_as_go_reads_it(machine: Machine) -> None:
    # Inside Scion, where every hook reads agent-info.json (outside, only an agent's first does:
    # then its own record is its state).
    scion = {"SCION_AGENT_ID": "agent-1"}
    seed = json.dumps(SEED)[:-1]  # the seeded object, left open
    lone = '"\\ud800"'  # a JSON string holding a lone surrogate escape
    (machine.home / "agent-info.json").write_text(seed + ', "deep": ' + nested(5000, lone) + "}")
    limits = '{"turn_count": 4, "model_call_count": 0, "max_turns": 5, "deep": ' + nested(5000, "1") + "}"
    (machine.home / "agent-limits.json").write_text(limits)
    run = machine.hook(AGENT_END, SCION_MAX_TURNS="5", **scion)
    assert run.returncode == 0
    text = (machine.home / "agent-info.json").read_text()
    assert text.count("[") == 5000 and "\ufffd" in text  # kept, the surrogate as Go writes it
    info = machine.settled(keys=("keep",))
    assert info["activity"] == "limits_exceeded"  # the count was read: 4 + 1 reaches the limit
    # Deeper than Go's 10 000 levels: damaged, as Go would find it, and rewritten.
    (machine.home / "agent-info.json").write_text(seed + ', "deep": ' + nested(10_001, "1") + "}")
    assert machine.hook(TOOL_START, **scion).returncode == 0
    assert machine.settled(keys=())["toolName"] == "grep"


def test_a_missing_home_is_not_created(machine: Machine) -> None:
    missing = machine.base / "no-such-home"
    env = {k: v for k, v in machine.env.items() if k != "SCIONTOOL_CACHE_DIR"}  # the default ~/.cache
    machine.env = env
    run = machine.hook(TOOL_START, HOME=str(missing))
    assert run.returncode == 1
    assert run.error.endswith(f"{missing / 'agent-info.json'}: No such file or directory")
    assert not missing.exists()
    # Besides the error, stderr holds Scion's one fallback warning, however many lines the
    # call logs (its event line and its ERROR line both went to the fallback agent.log).
    warning, error = run.stderr.decode().splitlines()
    assert warning.startswith(f"[sciontool] WARNING: Failed to write to {missing / 'agent.log'}: ")
    assert error.startswith("sciontool hook: cannot update agent state: ")
