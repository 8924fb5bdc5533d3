"""Dialect files and the dialect cache on a hostile machine: bad characters, a file built to be
slow to reject, a cache another user can write, and JSON that nests deep enough to break
recursive code. Each is one located error line and exit 1, or is ignored; never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import TIMED, sciontool
from hostile_machine import Machine

pytestmark = TIMED  # every run is bounded in time: never beside the process flood

DIALECT = """\
dialect: probe
event_name_field: hook_event_name
mappings:
  PreToolUse: {event: tool-start}
responses:
  PreToolUse: {decision: allow}
"""
PRE_TOOL_USE = {"hook_event_name": "PreToolUse", "tool_name": "grep"}


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x07", "\x7f", "\x85\x9b"[1]])
def test_a_control_character_is_one_located_error(machine: Machine, char: str) -> None:
    path = machine.home / "bad.yaml"
    path.write_text(DIALECT.replace("tool-start}", f"tool-start}}  # x{char}y"), encoding="utf-8")
    where = f"{path}:4:{len('  PreToolUse: {event: tool-start}  # x') + 1}"
    message = f"{where}: invalid YAML: character U+{ord(char):04X} is not allowed in YAML"
    check = sciontool("dialect", "check", str(path))
    assert (check.returncode, check.stderr) == (1, "")
    assert check.stdout.splitlines() == [message, "1 checked, 1 error, 0 warnings"]
    run = machine.run(PRE_TOOL_USE, f"--dialect-file={path}")
    assert run.returncode == 1
    assert run.stderr.decode().splitlines() == [f"sciontool hook: {message}"]


def slow_to_reject(path: Path) -> int:
    """A 1 MiB dialect of nothing but bad mappings (two problems each); returns how many."""
    lines = ["dialect: bad", "event_name_field: hook_event_name", "mappings:"]
    size = sum(len(line) + 1 for line in lines)
    while size < (1 << 20) - 100:
        lines.append(f"  raw{len(lines)}: {{event: tool-strat, fields: {{tool_nme: .x}}}}")
        size += len(lines[-1]) + 1
    path.write_text("\n".join(lines) + "\n")
    return len(lines) - 3


def test_a_dialect_built_to_be_slow_is_rejected_once_then_in_milliseconds(machine: Machine) -> None:
    path = machine.home / "slow.yaml"
    assert slow_to_reject(path) > 17_000
    # Parsing 1 MiB of YAML is CPU work: on a loaded machine its wall time is the machine's,
    # so the cost is asserted in CPU seconds and the hang bound is wider for this one run.
    first = machine.run(PRE_TOOL_USE, f"--dialect-file={path}", measure=True, within=300)
    assert first.cpu < 10, first.cpu  # libyaml, and checking stops after 100 problems
    second = machine.run(PRE_TOOL_USE, f"--dialect-file={path}")  # the cached refusal
    assert first.returncode == second.returncode == 1
    assert first.error == second.error
    assert first.error.startswith(f"sciontool hook: {path}:4:17: mappings.raw3.event: 'tool-strat' is not")
    assert first.error.endswith(" (and more problems: checking stopped after 100)")
    second = machine.run(PRE_TOOL_USE, f"--dialect-file={path}", measure=True)  # measured, warm
    assert second.cpu < first.cpu / 2, (first.cpu, second.cpu)  # no YAML at all: a cache read
    assert first.peak_mib < 150, first.peak_mib
    check = sciontool("dialect", "check", str(path))
    lines = check.stdout.splitlines()
    assert check.returncode == 1 and len(lines) == 102  # 100 problems, where it stopped, the count
    assert lines[-2].endswith(": too many problems: checking stopped after 100")


def cached_entry(machine: Machine, path: Path) -> Path:
    """Run the dialect once so the cache holds its entry; that entry."""
    assert machine.run(PRE_TOOL_USE, f"--dialect-file={path}").stdout == b'{"decision":"allow"}\n'
    [entry] = machine.cache.iterdir()
    return entry


def tamper(entry: Path) -> None:
    """Rewrite the cached spec's response, as someone who can write the entry would."""
    data = json.loads(entry.read_text())
    data["spec"]["responses"]["PreToolUse"] = {"decision": "hijacked"}
    entry.write_text(json.dumps(data))


@pytest.mark.parametrize("how", ["world-writable folder", "entry owned by another user", "own entry"])
def test_a_cache_entry_others_can_write_is_never_used(machine: Machine, how: str) -> None:
    path = machine.home / "probe.yaml"
    path.write_text(DIALECT)
    entry = cached_entry(machine, path)
    assert machine.cache.stat().st_mode & 0o777 == 0o700
    tamper(entry)
    if how == "world-writable folder":
        machine.cache.chmod(0o777)
    elif how == "entry owned by another user":
        if os.geteuid() != 0:
            pytest.skip("chown needs root (CI runs as root)")
        os.chown(entry, 65534, 65534)
    run = machine.run(PRE_TOOL_USE, f"--dialect-file={path}")
    assert run.returncode == 0
    # Only the user's own entry, in a folder only the user can write, is trusted.
    expected = b'{"decision":"hijacked"}\n' if how == "own entry" else b'{"decision":"allow"}\n'
    assert run.stdout == expected


def test_a_fifo_in_the_cache_is_ignored(machine: Machine) -> None:
    path = machine.home / "probe.yaml"
    path.write_text(DIALECT)
    entry = cached_entry(machine, path)
    entry.unlink()
    os.mkfifo(entry)
    assert machine.run(PRE_TOOL_USE, f"--dialect-file={path}").stdout == b'{"decision":"allow"}\n'


def deep_envelope(depth: int) -> str:
    return (
        '{"hook_event_name":"PreToolUse","tool_input":' + '{"a":' * depth + '"x\\ud800"' + "}" * depth + "}"
    )


@pytest.mark.parametrize("depth", [300, 900, 995, 3000])
def test_scaffold_on_deep_or_surrogate_json_is_one_line(tmp_path: Path, depth: int) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(deep_envelope(depth) + "\n")
    result = sciontool("dialect", "scaffold", "probe", "--from", str(log), "--out", str(tmp_path / "out"))
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if result.returncode == 0:  # shallow enough to scaffold from, surrogate and all
        assert sciontool("dialect", "test", str(tmp_path / "out" / "probe")).returncode == 0
    else:
        assert result.returncode == 1
        assert result.stderr in (
            f"sciontool dialect scaffold: {log}:1: invalid JSON: nested too deeply\n",
            f"sciontool dialect scaffold: {log}:1: not JSON: nested too deeply\n",
        )


@pytest.mark.parametrize("depth", [300, 900, 995, 3000])
def test_dialect_test_on_deep_or_surrogate_json_is_a_failure_line(tmp_path: Path, depth: int) -> None:
    fixture = tmp_path / "deep.json"
    expect = '{"name":"tool-start","data":{"tool_name":"\\ud800"}}'
    fixture.write_text('{"envelope":' + deep_envelope(depth) + ',"expect":' + expect + "}")
    result = sciontool("dialect", "test", "--dialect", "claude", str(fixture))
    assert (result.returncode, result.stderr) == (1, "")
    lines = result.stdout.splitlines()
    assert lines[0] == f"FAIL {fixture}" and lines[-1] == "0 passed, 1 failed"
    assert all(line.startswith("    ") for line in lines[1:-1])
