"""Issue 28, item 8: a transcript is read from its end, as far as the turn reaches, whatever its
size. Real 200 MB transcripts in tmp (written a megabyte at a time, or sparse), read by the real
`sciontool` (tests/measured.py: peak RSS and CPU seconds from wait4)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import TIMED, Agent
from measured import measured

MIB = 1 << 20
SIZE = 200 * MIB


def entry(kind: str, content: object) -> bytes:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}}).encode()


USER = entry("user", [{"type": "tool_result", "content": "x" * 800}])
WORKING = entry("assistant", [{"type": "text", "text": "working " * 100}])
TURN = [
    entry("user", "last question"),
    entry("assistant", [{"type": "thinking", "thinking": "hmm"}]),
    b'{"type": "progress"}',
    entry("assistant", [{"type": "text", "text": "All done."}]),
]


def write(path: Path, lines: list[bytes], size: int = SIZE, turn: list[bytes] = TURN) -> None:
    """lines over and over to about size bytes (a megabyte a write), then the turn."""
    chunk = b"\n".join(lines * (MIB // (len(b"\n".join(lines)) + 1))) + b"\n"
    with open(path, "wb") as out:
        for _ in range(size // len(chunk)):
            out.write(chunk)
        out.write(b"\n".join(turn) + b"\n")


def read_turn(
    agent: Agent, tmp_path: Path, transcript: Path, command: str = "normalize"
) -> dict[str, object]:
    """The agent-end's data as `sciontool normalize` gives it (`hook` for what it costs)."""
    stop = tmp_path / "stop.json"
    stop.write_text(
        json.dumps({"hook_event_name": "Stop", "session_id": "s", "transcript_path": str(transcript)})
    )
    env = {**agent.env, "SCION_TELEMETRY_ENABLED": "false"}
    ran = measured([sys.executable, "-m", "sciontool_py", command], stop, env)
    assert (ran.code, ran.stderr) == (0, ""), ran
    assert ran.cpu < 1, ran  # before: 1.9 s for a session of 200 MB, 2.8 s for a turn of 200 MB
    assert ran.rss_mib < 64, ran  # before: 414 MiB for a turn of 200 MB
    return json.loads(ran.stdout)["data"] if command == "normalize" else {}  # type: ignore[no-any-return]


TEXT = {"assistant_text": "All done."}
BLOCKS = {"blocks": [{"type": "thinking", "text": "hmm"}, {"type": "text", "text": "All done."}]}


@TIMED
@pytest.mark.slow
@pytest.mark.parametrize("command", ["normalize", "hook"])
def test_a_200_mb_session_costs_what_its_last_turn_does(agent: Agent, tmp_path: Path, command: str) -> None:
    transcript = tmp_path / "t.jsonl"
    write(transcript, [USER, WORKING])
    data = read_turn(agent, tmp_path, transcript, command)
    if command == "normalize":
        assert data == {"session_id": "s", **TEXT, "assistant_content": BLOCKS}


@TIMED
@pytest.mark.slow
def test_a_turn_of_200_mb_is_read_as_far_as_its_last_4_mib(agent: Agent, tmp_path: Path) -> None:
    # No user entry since the start: the old reader kept every block of all 200 MB.
    transcript = tmp_path / "t.jsonl"
    write(transcript, [WORKING], turn=TURN[1:])
    data = read_turn(agent, tmp_path, transcript)
    with open(transcript, "rb") as source:
        source.seek(-4 * MIB, 2)
        whole = source.read().count(b"\n") - 1  # the lines that end in the last 4 MiB, whole
    content = data["assistant_content"]
    assert isinstance(content, dict)
    blocks = content["blocks"]
    assert blocks[-2:] == BLOCKS["blocks"]
    assert len(blocks) == whole - 3 + 2  # every working entry there, and the turn's two blocks
    assert str(data["assistant_text"]).endswith("working All done.")


@TIMED
@pytest.mark.slow
def test_a_sparse_200_mb_transcript_ends_the_reading_at_its_hole(agent: Agent, tmp_path: Path) -> None:
    # A hole of 200 MB of zero bytes is one line with no end: the reading stops inside it.
    transcript = tmp_path / "t.jsonl"
    with open(transcript, "wb") as out:
        out.write(entry("assistant", "before the hole: never reached") + b"\n")
        out.truncate(SIZE)
        out.seek(SIZE)
        out.write(b"\n" + b"\n".join(TURN) + b"\n")
    assert transcript.stat().st_blocks * 512 < 10 * MIB  # sparse: the test writes almost nothing
    assert read_turn(agent, tmp_path, transcript) == {"session_id": "s", **TEXT, "assistant_content": BLOCKS}
