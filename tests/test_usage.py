"""Token usage outside Scion (issue 31.1): the real `sciontool hook`, fed each harness's end-of-turn
envelope, reads the transcript the harness really wrote (tests/data/transcripts: captured from
`make e2e` sessions), incrementally and within its bound, and counts each model call once in
Scion's contract; the agent's record, `sciontool agents`, a real OTLP receiver and a real hub
all see the same totals."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_BOUND, Agent, HubServer
from otlp import HttpReceiver
from standin import records
from telemetry.test_cli import closed_port, wait_idle, wait_until

from sciontool_py.dialect.options import USAGE_FORMS
from sciontool_py.receiver.handlers.usage import FORMS, MAX_READ

DATA = Path(__file__).parent / "data"
TRANSCRIPTS = DATA / "transcripts"
CODEX_HOOKS = DATA / "real-envelopes" / "codex-0.171.0" / "exec-tool-call.jsonl"

# harness -> (dialect, end-of-turn event (None: named by the envelope), the envelope's field
# naming the transcript, the transcript, the totals counted by hand from its lines).
CASES: dict[str, tuple[str, str | None, str, str, dict[str, int]]] = {
    # Three assistant lines repeat msg_e2e_1 (one per tool_use block), then msg_e2e_2: 2 calls.
    "claude": (
        "claude",
        None,
        "transcript_path",
        "claude-code-2.1.197-parallel-tools.jsonl",
        {"input": 1800, "output": 60, "calls": 2},
    ),
    # Two gemini messages, the first written twice as it grew (its toolCalls added).
    "gemini": (
        "gemini",
        None,
        "transcript_path",
        "gemini-cli-0.61.0-parallel-tools.jsonl",
        {"input": 1800, "output": 60, "calls": 2},
    ),
    # Two token_count lines: totals 900/30, then 1800/60.
    "codex": (
        "codex",
        None,
        "transcript_path",
        "codex-0.171.0-parallel-tools.jsonl",
        {"input": 1800, "output": 60, "calls": 2},
    ),
    # Two assistant lines with usageMetadata (900 prompt, 30 candidates, 0 cached each).
    "qwen": (
        "qwen-code",
        None,
        "transcript_path",
        "qwen-code-0.24.4-parallel-tools.jsonl",
        {"input": 1800, "output": 60, "calls": 2},
    ),
    # Two session.usage_record lines (900 in, 30 out each).
    "copilot": (
        "copilot",
        "agentStop",
        "transcriptPath",
        "copilot-1.0.102-parallel-tools.jsonl",
        {"input": 1800, "output": 60, "calls": 2},
    ),
    # One call whose 1000 input tokens hold 400 cache reads; 30 out, of which 7 reasoning.
    "copilot-cached": (
        "copilot",
        "agentStop",
        "transcriptPath",
        "copilot-1.0.102-cached.jsonl",
        {"input": 600, "cache_read": 400, "output": 30, "reasoning": 7, "calls": 1},
    ),
}
END = {"claude": "Stop", "gemini": "AfterAgent", "codex": "Stop", "qwen-code": "Stop", "copilot": ""}


def test_every_form_a_dialect_may_name_is_read() -> None:
    assert sorted(FORMS) == list(USAGE_FORMS)


def end_of_turn(agent: Agent, case: str, path: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    dialect, event, field, _, _ = CASES[case]
    envelope: dict[str, object] = {"session_id": "s1", field: str(path)}
    if event is None:
        envelope["hook_event_name"] = END[dialect]
    else:
        envelope["sessionId"] = "s1"
    args = (event,) if event else ()
    result = agent.hook(envelope, *args, f"--dialect={dialect}", **env)
    assert (result.returncode, result.stderr) == (0, b""), result.stderr
    return result


def tokens(agent: Agent) -> dict[str, object]:
    """The tokens of the one agent in HOME (the hooks' harness: this test's process)."""
    [record] = records(agent.home).values()
    found = record.get("tokens", {})
    assert isinstance(found, dict)
    return found


def copy(name: str, home: Path) -> Path:
    path = home / "transcript.jsonl"
    shutil.copyfile(TRANSCRIPTS / name, path)
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_harness_transcript_gives_the_hand_counted_totals(agent: Agent, case: str) -> None:
    path = copy(CASES[case][3], agent.home)
    end_of_turn(agent, case, path)
    assert tokens(agent) == CASES[case][4]
    end_of_turn(agent, case, path)  # the session's end after the turn's: nothing new to count
    assert tokens(agent) == CASES[case][4]


def claude_line(message: str, cache_read: int = 0, cache_write: int = 0) -> bytes:
    """An assistant line in Claude Code's shape (the captured transcript's), with these counts."""
    usage = {
        "input_tokens": 12,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "output_tokens": 80,
    }
    entry = {"type": "assistant", "message": {"id": message, "role": "assistant", "usage": usage}}
    return json.dumps(entry).encode() + b"\n"


def test_claude_counts_cache_reads_and_writes_apart_from_its_input(agent: Agent) -> None:
    # Anthropic's input_tokens already excludes the cache: nothing is taken out of it.
    path = agent.home / "t.jsonl"
    path.write_bytes(claude_line("m1", 5000, 300) * 3 + claude_line("m2", 5300))
    end_of_turn(agent, "claude", path)
    assert tokens(agent) == {"input": 24, "output": 160, "cache_read": 10300, "cache_write": 300, "calls": 2}


def test_the_transcript_is_read_on_from_where_the_last_hook_stopped_never_again(agent: Agent) -> None:
    lines = (TRANSCRIPTS / CASES["claude"][3]).read_bytes().splitlines(keepends=True)
    second = next(i for i, line in enumerate(lines) if b"msg_e2e_2" in line)
    path = agent.home / "t.jsonl"
    path.write_bytes(b"".join(lines[:second]))
    end_of_turn(agent, "claude", path)
    assert tokens(agent) == {"input": 900, "output": 30, "calls": 1}
    with path.open("ab") as out:
        out.write(b"".join(lines[second:]))
    end_of_turn(agent, "claude", path)
    assert tokens(agent) == {"input": 1800, "output": 60, "calls": 2}
    # What was read is changed in place to calls never seen: a hook reading it again would count them.
    data = path.read_bytes()
    path.write_bytes(data.replace(b"msg_e2e_1", b"msg_e2e_7").replace(b"msg_e2e_2", b"msg_e2e_8"))
    end_of_turn(agent, "claude", path)
    assert tokens(agent) == {"input": 1800, "output": 60, "calls": 2}
    [record] = records(agent.home).values()
    assert record["usage"]["offset"] == len(data)  # type: ignore[index]


def test_a_line_still_being_written_is_counted_once_it_is_whole(agent: Agent) -> None:
    line = claude_line("m1")
    path = agent.home / "t.jsonl"
    path.write_bytes(line[:40])
    end_of_turn(agent, "claude", path)
    assert tokens(agent) == {}
    with path.open("ab") as out:
        out.write(line[40:])
    end_of_turn(agent, "claude", path)
    assert tokens(agent) == {"input": 12, "output": 80, "calls": 1}


def test_a_new_transcript_at_the_same_name_is_read_from_its_start(agent: Agent) -> None:
    path = agent.home / "t.jsonl"
    path.write_bytes(claude_line("m1") * 20)
    end_of_turn(agent, "claude", path)
    path.write_bytes(claude_line("m2"))  # shorter than where the last hook stopped
    end_of_turn(agent, "claude", path)
    assert tokens(agent) == {"input": 24, "output": 160, "calls": 2}


# The probe reads the hook's own high-water mark: a child's ru_maxrss counts
# the RSS of the pytest worker it was spawned from (Linux carries the old
# mm's peak across exec), which says nothing about the hook.
_PEAK_PROBE = """
import sys
from sciontool_py.main import main
sys.argv = ["sciontool", "hook", "--dialect=claude"]
try:
    code = main()
finally:
    with open("/proc/self/status") as status, open(sys.argv_peak, "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM:")).split()[1])
sys.exit(code)
"""


def hook_rss(agent: Agent, envelope: dict[str, str]) -> int:
    """One claude hook for ENVELOPE; the peak RSS (KiB) of its process."""
    peak = agent.home.parent / f"peak-{agent.home.name}"
    probe = _PEAK_PROBE.replace("sys.argv_peak", repr(str(peak)))
    done = subprocess.run(
        [sys.executable, "-c", probe],
        input=json.dumps(envelope).encode(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=agent.env,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    return int(peak.read_text())


def test_a_200_mb_transcript_is_read_at_most_max_read_bytes_a_hook(agent: Agent) -> None:
    block = b"".join(claude_line(f"msg_{i:05d}") for i in range(1000))
    path = agent.home / "t.jsonl"
    with path.open("wb") as out:
        for _ in range(200 * 2**20 // len(block) + 1):
            out.write(block)
    envelope = {"hook_event_name": "Stop", "session_id": "s1", "transcript_path": str(path)}
    peaks = [hook_rss(agent, envelope) for _ in range(2)]
    [record] = records(agent.home).values()
    offset = record["usage"]["offset"]  # type: ignore[index]
    assert MAX_READ < offset <= 2 * MAX_READ  # two hooks, each at most MAX_READ further
    with path.open("rb") as read:
        whole = read.read(offset)
    assert whole.endswith(b"\n") and tokens(agent)["calls"] == whole.count(b"\n")
    assert max(peaks) < 100 * 1024  # KiB: a 200 MB file is never held


def test_a_line_longer_than_a_read_is_skipped_and_the_next_counted(agent: Agent) -> None:
    path = agent.home / "t.jsonl"
    path.write_bytes(b'{"type": "assistant", "x": "' + b"a" * (MAX_READ + 10) + b'"}\n' + claude_line("m1"))
    end_of_turn(agent, "claude", path)
    assert tokens(agent) == {}
    end_of_turn(agent, "claude", path)
    assert tokens(agent) == {"input": 12, "output": 80, "calls": 1}


@pytest.mark.parametrize("kind", ["fifo", "symlink", "device", "directory", "missing", "not json"])
def test_a_transcript_that_is_not_a_plain_file_is_never_waited_on_nor_followed(
    agent: Agent, kind: str
) -> None:
    real = copy(CASES["claude"][3], agent.home)
    path = agent.home / "planted"
    if kind == "fifo":
        os.mkfifo(path)  # no writer: an open without O_NONBLOCK, or a read, would wait forever
    elif kind == "symlink":
        path.symlink_to(real)
    elif kind == "device":
        path = Path("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "not json":
        path.write_bytes(b'{"usage": \xff\xfe nonsense\n' * 100 + b"\0\0\0\n")
    envelope = {"hook_event_name": "Stop", "session_id": "s1", "transcript_path": str(path)}
    result = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "hook", "--dialect=claude"],
        input=json.dumps(envelope).encode(),
        capture_output=True,
        env=agent.env,
        timeout=HANG_BOUND,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert tokens(agent) == {}


def codex_hooks() -> Iterator[dict[str, object]]:
    for line in CODEX_HOOKS.read_text().splitlines():
        yield json.loads(line)


def test_usage_the_hooks_say_is_counted_from_them_and_not_again_from_the_rollout(agent: Agent) -> None:
    # Codex 0.171's PostModelRequest says each request's usage; its Stop still names the rollout.
    rollout = copy(CASES["codex"][3], agent.home)
    for envelope in codex_hooks():
        if envelope.get("hook_event_name") == "Stop":
            envelope["transcript_path"] = str(rollout)
        elif envelope.get("transcript_path"):
            envelope["transcript_path"] = str(agent.home / "elsewhere.jsonl")
        result = agent.hook(envelope, "--dialect=codex")
        assert (result.returncode, result.stderr) == (0, b"")
    # Requests: 1200 in (none cached), 25 out (5 reasoning); 1300 in of which 1024 cached, 4 out.
    assert tokens(agent) == {"input": 1476, "cache_read": 1024, "output": 29, "reasoning": 5, "calls": 2}


def test_with_scions_native_usage_source_the_hook_counts_none(agent: Agent) -> None:
    path = copy(CASES["claude"][3], agent.home)
    end_of_turn(agent, "claude", path, SCION_USAGE_SOURCE="native")
    [record] = records(agent.home).values()
    assert "tokens" not in record and "usage" not in record


def test_inside_a_scion_agent_scions_gate_holds_usage_off_by_default(agent: Agent) -> None:
    path = copy(CASES["claude"][3], agent.home)
    end_of_turn(agent, "claude", path, SCION_AGENT_ID="a1")
    assert not records(agent.home)
    state = agent.home / "agent-sessions.json"
    assert not state.exists() or "usage" not in json.loads(state.read_text())


def test_sciontool_agents_shows_the_tokens(agent: Agent) -> None:
    path = copy(CASES["copilot-cached"][3], agent.home)
    end_of_turn(agent, "copilot-cached", path)
    listed = agent.run("agents", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["tokens"] == {"input": 600, "cache_read": 400, "output": 30, "reasoning": 7, "calls": 1}
    table = agent.run("agents", COLUMNS="80")
    head, line = table.stdout.decode().splitlines()
    at = head.index("TOKENS")
    # In: the input with its cache reads (what the model read), out: the output.
    assert line[at - 3 : at + 6].split() == ["1k/30"]


def test_a_real_otlp_receiver_gets_the_transcripts_usage_by_default(agent: Agent) -> None:
    found = HttpReceiver()
    try:
        env = {
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{found.port}",
            "SCION_HARNESS": "claude",
        }
        path = copy(CASES["claude"][3], agent.home)
        agent.hook({"hook_event_name": "SessionStart", "session_id": "s1"}, "--dialect=claude", **env)
        end_of_turn(agent, "claude", path, **env)
        found.wait_for(lambda: len(found.points("scion.usage.tokens")) == 2)
        usage = {p.attributes["token_type"]: p.item.as_int for p in found.points("scion.usage.tokens")}  # type: ignore[attr-defined]
        assert usage == {"input": 1800, "output": 60}
        [calls] = found.points("gen_ai.api.calls")
        assert calls.item.as_int == 2  # type: ignore[attr-defined]
        # The session id leaves hashed (Scion's default), never raw.
        assert b"s1" not in found.raw.replace(hashlib.sha256(b"s1").hexdigest().encode(), b"")
    finally:
        found.close()


def test_the_hubs_session_report_holds_the_transcripts_tokens(agent: Agent, hub: HubServer) -> None:
    # Inside a Scion agent with SCION_USAGE_SOURCE=hooks (Scion's gate), the transcript's usage
    # reaches the session report; where the transcript was read to is kept in agent-sessions.json.
    env = {
        "SCION_AGENT_ID": "agent-7",
        "SCION_HARNESS": "claude",
        "SCION_USAGE_SOURCE": "hooks",
        "SCION_HUB_ENDPOINT": hub.url,
        "SCION_AUTH_TOKEN": "tok-usage",
        "SCION_OTEL_GRPC_PORT": str(closed_port()),  # nothing listens: only the hub report is sent
    }
    path = copy(CASES["claude"][3], agent.home)
    agent.hook({"hook_event_name": "SessionStart", "session_id": "s1"}, "--dialect=claude", **env)
    end_of_turn(agent, "claude", path, **env)
    agent.hook({"hook_event_name": "SessionEnd", "session_id": "s1"}, "--dialect=claude", **env)
    wait_until(lambda: any(r.path.endswith("/metrics") for r in hub.requests))
    wait_idle(agent.home)
    [report] = [json.loads(r.body) for r in hub.requests if r.path.endswith("/metrics")]
    assert report["tokens"]["input"] == 1800 and report["tokens"]["output"] == 60
    state = json.loads((agent.home / "agent-sessions.json").read_text())
    assert state["usage"]["offset"] == path.stat().st_size
    assert not records(agent.home)  # inside Scion: no per-agent record
