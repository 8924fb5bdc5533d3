"""Scion's privacy defaults wherever the data goes (issue 31, point 2).

Outside Scion this package is the last hop, so the hook applies Scion's policy itself before the
spool: no `agent.user.prompt`, `prompt`, `tool_input`, `tool_output` (and `user.email`) as
[REDACTED], `session_id` hashed as Scion's receiver hashes it; SCION_TELEMETRY_FILTER_EXCLUDE,
SCION_TELEMETRY_REDACT and SCION_TELEMETRY_HASH opt in or out. The end-to-end tests grep the raw
bytes every receiver got and every file spooled; the in-process ones compare with a model of
Scion's receiver written from its telemetry/filter.go and policy.go.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Agent, event
from otlp import GrpcReceiver, HttpReceiver, Receiver

from sciontool_py.telemetry import record, settings
from sciontool_py.telemetry.mapping import Translation, translate
from sciontool_py.telemetry.pairing import OpenSpans
from telemetry.test_otel_env import run

PROMPT = "prompt-secret-Kq7Vw"
TOOL_INPUT = "tool-input-secret-Jm4Xz"
TOOL_OUTPUT = "tool-output-secret-Pw9Ty"
OPEN_INPUT = "open-input-secret-Ln2Rq"  # a tool call that never ends: its start stays in telemetry-spans.json
SESSION = "session-raw-id-QxZ71"  # not hex, so never a substring of a digest
HASHED = hashlib.sha256(SESSION.encode()).hexdigest()
SECRETS = (PROMPT, TOOL_INPUT, TOOL_OUTPUT, OPEN_INPUT)
EVENTS = [
    {"hook_event_name": "SessionStart", "session_id": SESSION, "source": "startup"},
    {"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "prompt": PROMPT},
    {
        "hook_event_name": "PreToolUse",
        "session_id": SESSION,
        "tool_name": "Bash",
        "tool_input": {"command": TOOL_INPUT},
    },
    {
        "hook_event_name": "PostToolUse",
        "session_id": SESSION,
        "tool_name": "Bash",
        "tool_response": {"stdout": TOOL_OUTPUT},
    },
    {
        "hook_event_name": "PreToolUse",
        "session_id": SESSION,
        "tool_name": "Read",
        "tool_input": {"note": OPEN_INPUT},
    },
    {"hook_event_name": "Stop", "session_id": SESSION},
]
LAST = {"hook_event_name": "Notification", "session_id": SESSION, "message": "waiting"}
SPOOL = Path(".scion") / "telemetry"


def spooled_without_a_worker(agent: Agent, env: dict[str, str]) -> list[bytes]:
    """EVENTS through real hooks while this test holds the drainer lock (so no worker takes the
    records away): each spooled file's bytes."""
    folder = agent.home / SPOOL
    folder.mkdir(parents=True, mode=0o700)
    (agent.home / ".scion").chmod(0o700)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        run(agent, env, EVENTS)
        return [path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()]
    finally:
        os.close(fd)  # the next hook starts a worker, which drains them all


def exported(agent: Agent, env: dict[str, str], found: Receiver, spans: int, logs: int) -> None:
    """The last event's hook starts the worker; wait until it has exported everything."""
    run(agent, env, [LAST])
    found.wait_for(lambda: len(found.spans()) == spans and len(found.logs()) == logs and bool(found.points()))
    found.wait_for(lambda: not any(p.name.endswith(".json") for p in (agent.home / SPOOL).iterdir()))


def test_no_secret_and_no_raw_session_id_in_any_byte_received_or_spooled(
    agent: Agent, outside: tuple[Receiver, dict[str, str]]
) -> None:
    found, env = outside
    files = spooled_without_a_worker(agent, env)
    assert len(files) == len(EVENTS) - 1  # the prompt was never spooled
    spool = b"".join(files)
    exported(agent, env, found, spans=4, logs=6)
    received = found.raw
    open_spans = (agent.home / ".scion" / "telemetry-spans.json").read_bytes()
    for where, data in (("spooled", spool), ("received", received), ("telemetry-spans.json", open_spans)):
        for secret in (*SECRETS, SESSION):
            assert secret.encode() not in data, f"{secret} {where}"
        # What was grepped is the telemetry itself: the hashed session id and the redactions are in it.
        assert HASHED.encode() in data and b"[REDACTED]" in data, where
    assert "agent.user.prompt" not in {s.item.name for s in found.spans()}  # type: ignore[attr-defined]
    assert "agent.user.prompt" not in {r.item.body.string_value for r in found.logs()}  # type: ignore[attr-defined]
    [tool] = [s for s in found.spans() if s.item.name == "agent.tool.call"]  # type: ignore[attr-defined]
    assert tool.attributes["session_id"] == HASHED
    assert tool.attributes["tool_input"] == tool.attributes["tool_output"] == "[REDACTED]"
    assert tool.attributes["tool_name"] == "Bash"  # the rest as it was


def test_scions_variables_opt_in(agent: Agent) -> None:
    """SCION_TELEMETRY_FILTER_EXCLUDE, _REDACT and _HASH replace the defaults: spaces are an empty
    list, a list of other fields leaves these as they are."""
    found = HttpReceiver()
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{found.port}",
        "SCION_TELEMETRY_FILTER_EXCLUDE": " ",
        "SCION_TELEMETRY_REDACT": "user.email",
        "SCION_TELEMETRY_HASH": ",",
    }
    try:
        run(agent, env, EVENTS)
        exported(agent, env, found, spans=5, logs=7)
    finally:
        found.close()
    for secret in (*SECRETS[:3], SESSION):
        assert secret.encode() in found.raw, secret
    [prompt] = [s for s in found.spans() if s.item.name == "agent.user.prompt"]  # type: ignore[attr-defined]
    assert (prompt.attributes["prompt"], prompt.attributes["session_id"]) == (PROMPT, SESSION)


def test_inside_scion_the_hook_filters_and_redacts_and_leaves_the_hash_to_scions_receiver(
    agent: Agent,
) -> None:
    found = GrpcReceiver()
    env = {"SCION_OTEL_GRPC_PORT": str(found.port)}
    try:
        spool = b"".join(spooled_without_a_worker(agent, env))
        exported(agent, env, found, spans=4, logs=6)
    finally:
        found.close()
    for data in (spool, found.raw):
        assert not [secret for secret in SECRETS if secret.encode() in data]
        assert SESSION.encode() in data and HASHED.encode() not in data  # Scion's receiver hashes it, once
    [tool] = [s for s in found.spans() if s.item.name == "agent.tool.call"]  # type: ignore[attr-defined]
    assert (tool.attributes["session_id"], tool.attributes["tool_input"]) == (SESSION, "[REDACTED]")


# In process: Scion's rules -------------------------------------------------------------------


def test_scions_defaults_and_how_its_variables_replace_them() -> None:
    policy = settings.Policy({})
    assert policy.exclude == {"agent.user.prompt"} and policy.include == frozenset()
    assert policy.redact == {"prompt", "user.email", "tool_input", "tool_output"}
    assert policy.hashed == {"session_id"}
    custom = settings.Policy(
        {
            "SCION_TELEMETRY_FILTER_INCLUDE": "agent.tool.call, agent.session.start",
            "SCION_TELEMETRY_FILTER_EXCLUDE": "",  # empty: unset, the default stays
            "SCION_TELEMETRY_REDACT": " tool_name ,,",
            "SCION_TELEMETRY_HASH": " , ",  # only spaces and commas: the empty list
        }
    )
    assert (custom.include, custom.exclude) == (
        {"agent.tool.call", "agent.session.start"},
        {"agent.user.prompt"},
    )
    assert (custom.redact, custom.hashed) == ({"tool_name"}, frozenset())
    assert custom.admits("agent.tool.call") and not custom.admits("agent.tool.result")
    assert policy.value("prompt", "x") == "[REDACTED]" and policy.value("source", "x") == "x"
    both = settings.Policy({"SCION_TELEMETRY_HASH": "prompt"})
    assert both.value("prompt", "x") == "[REDACTED]"  # redaction wins, as in Scion


def test_the_hash_is_scions_sha256_hex() -> None:
    assert settings.sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert settings.sha256_hex("é\u2603") == hashlib.sha256("é\u2603".encode()).hexdigest()
    # A lone surrogate (JSON "\ud800") is U+FFFD once Go has decoded it: so is the hash.
    assert settings.sha256_hex("a\ud800") == hashlib.sha256("a\ufffd".encode()).hexdigest()


def test_inside_scion_nothing_is_hashed_here() -> None:
    for env in ({"SCION_OTEL_GRPC_PORT": "4317"}, {"SCION_NATIVE_TELEMETRY_POLICY": "enabled"}):
        policy = settings.Policy(env)
        assert policy.hashed == frozenset() and policy.redact == set(settings.DEFAULT_REDACT)


def test_a_hashed_value_is_hashed_whole_before_the_cut() -> None:
    long = "s" * (record.VALUE_LIMIT * 3)
    made = json.loads(record.make(event("session-start", session_id=long), 1, {}, settings.Policy({})))
    assert made["data"]["session_id"] == hashlib.sha256(long.encode()).hexdigest()


RAW = [
    ("session-start", {"session_id": "s-1", "source": "startup"}),
    ("prompt-submit", {"session_id": "s-1", "prompt": "fix it"}),
    (
        "tool-start",
        {"session_id": "s-1", "tool_name": "Bash", "tool_input": '{"c":"ls"}', "file_path": "/w/a"},
    ),
    ("tool-end", {"session_id": "s-1", "tool_name": "Bash", "tool_output": "a b", "success": True}),
    ("model-end", {"session_id": "s-1", "model": "m", "input_tokens": 5}),
    ("agent-end", {"session_id": "s-1"}),
    ("notification", {"session_id": "s-1", "message": "hi"}),
    ("session-end", {"session_id": "s-1", "reason": "exit"}),
]
NO_POLICY = {
    "SCION_TELEMETRY_FILTER_EXCLUDE": " ",
    "SCION_TELEMETRY_REDACT": " ",
    "SCION_TELEMETRY_HASH": " ",
}


def _scion_list(env: dict[str, str], name: str, default: tuple[str, ...]) -> set[str]:
    """telemetry/config.go: the comma list, trimmed; the default when it is unset or empty."""
    parts = {part.strip() for part in env.get(name, "").split(",") if part.strip()}
    return parts if parts or env.get(name) else set(default)


def scions_receiver(
    items: list[tuple[str, str, dict[str, object]]], env: dict[str, str]
) -> list[tuple[str, str, dict[str, object]]]:
    """What Scion's receiver makes of what it is sent (policy.go, filter.go): spans and log records
    whose name its filter does not admit dropped; every attribute redacted or hashed by its key."""
    include = _scion_list(env, "SCION_TELEMETRY_FILTER_INCLUDE", ())
    exclude = _scion_list(env, "SCION_TELEMETRY_FILTER_EXCLUDE", ("agent.user.prompt",))
    redact = _scion_list(env, "SCION_TELEMETRY_REDACT", ("prompt", "user.email", "tool_output", "tool_input"))
    hashed = _scion_list(env, "SCION_TELEMETRY_HASH", ("session_id",))

    def value(key: str, found: object) -> object:
        if key in redact:
            return "[REDACTED]"
        if key in hashed and isinstance(found, str):
            return hashlib.sha256(found.encode()).hexdigest()
        return found

    kept = []
    for kind, name, attributes in items:
        if kind != "point" and ((include and name not in include) or name in exclude):
            continue
        kept.append((kind, name, {key: value(key, found) for key, found in attributes.items()}))
    return kept


def hook_output(tmp_path: Path, env: dict[str, str]) -> list[tuple[str, str, dict[str, object]]]:
    """RAW as the hook spools it under env and the worker translates it: (kind, name, attributes)."""
    home = tmp_path / f"home-{len(list(tmp_path.iterdir()))}"
    home.mkdir()
    spans, out = OpenSpans(str(home)), Translation()
    for at, (name, data) in enumerate(RAW):
        made = record.make(
            event(name, raw_name=name, dialect="claude", **data), at * 10**6, env, settings.Policy(env)
        )
        translate(json.loads(made), spans, out)
    items = [("span", s.name, s.attributes) for s in out.spans] + [
        ("log", r.body, r.attributes) for r in out.logs
    ]
    items += [("point", p.name, dict(p.attributes)) for p in out.points]
    return sorted(items, key=repr)


@pytest.mark.parametrize(
    "policy",
    [
        {},  # Scion's defaults
        {
            "SCION_TELEMETRY_REDACT": "tool_name,prompt",
            "SCION_TELEMETRY_HASH": "session_id,file_path,message",
            "SCION_TELEMETRY_FILTER_EXCLUDE": "agent.tool.result,agent.turn.end",
        },
        {
            "SCION_TELEMETRY_FILTER_INCLUDE": "agent.tool.call,agent.session.end",
            "SCION_TELEMETRY_HASH": "source",
        },
    ],
)
def test_the_policy_applied_here_and_again_by_scions_receiver_is_scions_receiver_alone(
    tmp_path: Path, policy: dict[str, str]
) -> None:
    """Scion's hook sends raw values and its receiver applies the policy. Inside Scion this hook
    applies it too (not the hash), then the receiver again: the same. Outside, this hook alone:
    the same as the receiver would make of raw values."""
    scions_alone = scions_receiver(hook_output(tmp_path, NO_POLICY), policy)
    twice = scions_receiver(hook_output(tmp_path, {**policy, "SCION_OTEL_GRPC_PORT": "4317"}), policy)
    last_hop = hook_output(tmp_path, policy)
    assert twice == scions_alone
    assert last_hop == scions_alone
    assert len(scions_alone) > 5  # not an empty comparison


def test_the_hook_hashes_without_hashlib(agent: Agent) -> None:
    """Hashing outside Scion loads the SHA-256 C module alone: hashlib would load OpenSSL (4 ms)
    on the hook path. The hook's modules are read from its own process."""
    probe = (
        "import sys; sys.argv = ['sciontool', 'hook', '--dialect=claude']\n"
        "from sciontool_py.main import main\n"
        "code = main()\n"
        "sys.stderr.write(' '.join(sorted(sys.modules)))\n"
    )
    found = GrpcReceiver()
    env = {
        **agent.env,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{found.port}",
    }
    try:
        for _ in range(2):  # the first call builds the dialect cache
            result = subprocess.run(
                [sys.executable, "-c", probe],
                input=json.dumps(EVENTS[0]).encode(),
                capture_output=True,
                env=env,
            )
        found.wait_for(lambda: len(found.spans()) == 2)  # it did hash: the span carries the digest
    finally:
        found.close()
    loaded = set(result.stderr.decode().splitlines()[-1].split())
    assert loaded & {"_sha256", "_sha2"} and not loaded & {"hashlib", "_hashlib"}
    assert all(span.attributes["session_id"] == HASHED for span in found.spans())
