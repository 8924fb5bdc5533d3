"""Issue 21, item 22: dialect.yaml read as Go's yaml.v3 reads it, at the edges, with the real `sciontool`."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Agent

HEAD = "dialect: edge\nevent_name_field: hook_event_name\nmappings:\n"


def check(agent: Agent, tmp_path: Path, text: str) -> tuple[int, list[str], bytes]:
    path = tmp_path / "edge.yaml"
    path.write_text(text, encoding="utf-8")
    ran = agent.run("dialect", "check", str(path))
    assert b"Traceback" not in ran.stderr and b"internal error" not in ran.stderr, ran.stderr
    return ran.returncode, ran.stdout.decode().splitlines(), ran.stderr


def test_a_surrogate_escape_is_refused_as_yaml_v3_refuses_it(agent: Agent, tmp_path: Path) -> None:
    path = tmp_path / "edge.yaml"
    for text, line in (
        (HEAD + '  "\\ud83d\\ude00": {event: tool-start}\n', 4),
        (HEAD + '  A: {event: tool-start}\nresponses:\n  A: {"\\ud83d\\ude00": 1}\n', 6),
    ):
        code, out, err = check(agent, tmp_path, text)
        assert (code, err) == (1, b"")
        assert out[0].startswith(f"{path}:{line}:") and out[0].endswith(
            "invalid YAML: found invalid Unicode character escape code"
        )
        hooked = agent.hook({"hook_event_name": "A"}, f"--dialect-file={path}")
        assert hooked.returncode == 1 and hooked.stderr.decode().count("\n") == 1


def test_a_binary_key_is_its_decoded_text_as_in_go(agent: Agent, tmp_path: Path) -> None:
    path = tmp_path / "edge.yaml"
    path.write_text(
        HEAD
        + "  !!binary UHJlVG9vbFVzZQ==: {event: tool-start}\n"  # "PreToolUse"
        + "responses:\n  PreToolUse: {x: !!binary aGVsbG8=}\n"  # "hello"
    )
    ran = agent.hook({"hook_event_name": "PreToolUse", "tool_name": "grep"}, f"--dialect-file={path}")
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, b'{"x":"hello"}\n', b"")
    assert agent.info == {"activity": "executing", "toolName": "grep"}


def test_a_slash_escape_is_refused_as_yaml_v3_refuses_it(agent: Agent, tmp_path: Path) -> None:
    code, out, _ = check(agent, tmp_path, HEAD + '  "Pre\\/Tool": {event: tool-start}\n')
    assert code == 1
    assert out[0].endswith(
        "invalid YAML: while scanning a double-quoted scalar found unknown escape character '/'"
    )
    # Outside double quotes it is two characters of text, as in Go.
    code, out, _ = check(
        agent, tmp_path, HEAD + "  'Pre\\/Tool': {event: tool-start}\n  Pre\\/X: {event: tool-end}\n"
    )
    assert code == 0, out


def test_an_explicit_key_wins_over_a_merged_one_as_in_go(agent: Agent, tmp_path: Path) -> None:
    path = tmp_path / "edge.yaml"
    path.write_text(
        HEAD
        + "  PreToolUse: {event: tool-start}\nresponses:\n"
        + "  PreToolUse: {<<: [{decision: block, reason: merged}, {decision: ask, extra: 1}], decision: allow}\n"
    )
    ran = agent.hook({"hook_event_name": "PreToolUse", "tool_name": "grep"}, f"--dialect-file={path}")
    assert (ran.returncode, ran.stderr) == (0, b"")
    assert json.loads(ran.stdout) == {"decision": "allow", "reason": "merged", "extra": 1}
    # A key written twice in the mapping itself stays an error, as in Go.
    code, out, _ = check(agent, tmp_path, HEAD + "  A: {event: tool-start}\nresponses:\n  A: {a: 1, a: 2}\n")
    assert code == 1 and "duplicate key 'a'" in out[0]
