"""Bounded work on what an agent can plant in $HOME/.scion/agents: records of any size, number
and shape cost a hook and `sciontool agents` a few milliseconds (measured against the same
command in a clean HOME, with room for a loaded machine), and the exit watcher, rescanning every
second, does not read a record again while its file is unchanged."""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from conftest import Agent

from sciontool_py import gojson, registry
from sciontool_py.receiver import harness_exit

NESTED = b"[" * 1200 + b"]" * 1200  # past the C scanner's depth: Go's slow decoder read it


def plant(agent: Agent) -> None:
    """The attack (twelve 1.09 MiB records nested deep), and the most costly records the caps let
    through: dense numbers and containers just under MAX_VALUES and MAX_BYTES, filling every name
    looked at."""
    folder = agent.home / ".scion" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(12):
        units = b",".join([NESTED] * ((1090 << 10) // len(NESTED)))
        (folder / f"p{4000 + n}-1.json").write_bytes(b'{"info":{},"x":[' + units + b"]}")
    dense = [
        b"[" + b",".join([b"1.7976931348623157"] * 4000) + b"]",  # plain floats
        b"[" + b",".join([b"1e300"] * 4000) + b"]",  # Go's numbers: the slow decoder
        b"[" + b",".join([b"[" * 60 + b"]" * 60] * 60) + b"]",  # containers
        b'"' + b"\\u00e9" * ((90 << 10) // 6) + b'"',  # escapes
    ]
    for n in range(registry.MAX_LISTED):
        (folder / f"p{5000 + n}-1.json").write_bytes(b'{"info":{},"x":' + dense[n % len(dense)] + b"}")


def elapsed(agent: Agent, *args: str, stdin: object = b"") -> float:
    """The median wall time of five runs of the command."""
    times = []
    for _ in range(5):
        began = time.monotonic()
        done = agent.run(*args, stdin=stdin)  # type: ignore[arg-type]
        times.append(time.monotonic() - began)
        assert done.returncode == 0, done.stderr
    return statistics.median(times)


def test_planted_records_cost_agents_and_a_new_agents_hook_little(agent: Agent) -> None:
    # Each hook is a new agent's first (a session key, no harness above: a new record, and the
    # registry pruned): the hook that reads every record.
    def hook(n: int) -> dict[str, object]:
        return {"hook_event_name": "SessionStart", "session_id": f"s{n}", "source": "startup"}

    clean_list = elapsed(agent, "agents")
    clean_hook = elapsed(agent, "hook", "--dialect=claude", stdin=json.dumps(hook(0)))
    for path in (agent.home / ".scion" / "agents").iterdir():
        path.unlink()
    plant(agent)
    planted_list = elapsed(agent, "agents")
    planted_hook = elapsed(agent, "hook", "--dialect=claude", stdin=json.dumps(hook(1)))
    # The requirement is 0.5 s and 50 ms; the planted HOME cost 4.5 s and 4.4 s before.
    assert planted_list - clean_list < 1.5
    assert planted_hook - clean_hook < 0.5


def test_what_write_leaves_reads_back_the_same_by_either_decoder(tmp_path: Path) -> None:
    home = str(tmp_path)
    record = registry.Record("p7-7")
    record.created, record.since, record.updated = 1.5e9, 1_700_000_000.25, 1e-7  # the last: Go's 1e-07
    record.message = 'quote " backslash \\ and \\ud800 as text, 日本'
    record.tokens = {"input": 12, "output": 3}
    record.info = {"phase": "running", "detail": {"message": "x"}}
    registry.write(home, record)
    read = registry.read(home, "p7-7")
    assert read is not None and read.to_value() == record.to_value()
    assert gojson.loads((tmp_path / ".scion/agents/p7-7.json").read_text()) == json.loads(
        gojson.dumps(read.to_value())
    )


def test_a_record_past_its_caps_reads_as_missing(tmp_path: Path) -> None:
    folder = tmp_path / ".scion" / "agents"
    folder.mkdir(parents=True)
    many = b"[" + b",".join([b"0"] * (registry.MAX_VALUES + 1)) + b"]"
    (folder / "p1-1.json").write_bytes(b'{"info":{},"x":' + many + b"}")
    (folder / "p2-2.json").write_bytes(b'{"info":{},"x":"' + b"a" * registry.MAX_BYTES + b'"}')
    (folder / "p3-3.json").write_bytes(b'{"info":{},"x":' + b"1" * 400 + b".5}")  # an infinity
    (folder / "p4-4.json").write_bytes(b'{"info":{},"created":' + b"9" * 30 + b"}")  # out of range
    for key in ("p1-1", "p2-2", "p3-3", "p4-4"):
        assert registry.read(str(tmp_path), key) is None, key


def test_the_watcher_reads_a_record_again_only_once_its_file_changed(tmp_path: Path) -> None:
    home = str(tmp_path)
    me = os.getpid()
    start = int(Path(f"/proc/{me}/stat").read_text().rpartition(")")[2].split()[19])
    record = registry.Record(registry.process_key(me, start))
    record.info = {"phase": "running"}
    registry.write(home, record)
    path = tmp_path / ".scion" / "agents" / f"{record.key}.json"
    assert harness_exit.targets(home) == {(me, start): [record.key]}
    # Rewritten in place to the same size, its mtime put back: the same file to the cache.
    stat = path.stat()
    data = path.read_bytes()
    ended = data.replace(b'"phase":"running"', b'"phase":"stopped"')
    assert len(ended) == len(data)
    with open(path, "r+b") as handle:
        handle.write(ended)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert harness_exit.targets(home) == {(me, start): [record.key]}  # not read again
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert harness_exit.targets(home) == {}  # changed: read, and it ended


def test_what_write_leaves_is_always_read_back_its_state_left_out_past_the_cap(tmp_path: Path) -> None:
    """Every text at MAX_TEXT of characters JSON escapes (6 bytes each) and a full sessions'
    state pass MAX_BYTES: the record leaves the state out (its calls in flight forgotten, as after
    a crash) rather than become one read() refuses, which made the agent's next hook a new agent."""
    home = str(tmp_path)
    record = registry.Record("p8-8")
    record.created, record.since = 1_700_000_000.5, 1_700_000_001.5
    record.message = record.name = record.session = "\x01" * registry.MAX_TEXT
    record.info = {"activity": "executing", "toolName": "Bash"}
    record.state = {
        "open": {
            f"s{n}": [[f"id:{n}-{c}".ljust(256, "t"), "Bash", False] for c in range(32)] for n in range(8)
        }
    }
    assert len(gojson.dumps(record.to_value())) > registry.MAX_BYTES
    registry.write(home, record)
    read = registry.read(home, "p8-8")
    assert read is not None
    assert (read.created, read.since, read.message, read.info) == (
        record.created,
        record.since,
        record.message,
        record.info,
    )
    assert read.state == {}
