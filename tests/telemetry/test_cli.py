"""Telemetry as a harness meets it: real `sciontool hook` processes, one per event, real OTLP
receivers (gRPC and HTTP) and a real hub on 127.0.0.1, the detached worker doing the export."""

from __future__ import annotations

import fcntl
import hashlib
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TIMED, Agent, HubServer
from otlp import GrpcReceiver, HttpReceiver, Receiver

SESSION = [
    {"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup"},
    {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "Fix the failing test"},
    {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": "Bash",
        "tool_input": {"command": "make"},
    },
    {
        "hook_event_name": "PostToolUse",
        "session_id": "s1",
        "tool_name": "Bash",
        "tool_response": {"stdout": "ok"},
    },
    {
        "hook_event_name": "AfterModel",
        "session_id": "s1",
        "usage": {"input_tokens": 120, "output_tokens": 40, "cache_read_input_tokens": 30},
    },
    {"hook_event_name": "Stop", "session_id": "s1"},
    {"hook_event_name": "SessionEnd", "session_id": "s1", "reason": "exit"},
]
SCION = {
    "SCION_AGENT_ID": "agent-7",
    "SCION_AGENT_SLUG": "fixer",
    "SCION_PROJECT_ID": "proj-1",
    "SCION_HARNESS": "claude",
    "SCION_MODEL": "claude-sonnet",
    "SCION_USAGE_SOURCE": "hooks",
}
SCOPE = "github.com/GoogleCloudPlatform/scion/pkg/sciontool/hooks/handlers"
COMMON = {"agent_id": "agent-7", "harness": "claude", "project_id": "proj-1"}


@pytest.fixture(params=["grpc", "http/protobuf"])
def receiver(request: pytest.FixtureRequest) -> Iterator[tuple[Receiver, dict[str, str]]]:
    """A live OTLP receiver and the variables that point the hook at it."""
    if request.param == "grpc":
        found: GrpcReceiver | HttpReceiver = GrpcReceiver()
        env = {"SCION_OTEL_GRPC_PORT": str(found.port)}
    else:
        found = HttpReceiver()
        env = {
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{found.port}",
        }
    yield found, env
    found.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_idle(home: Path, seconds: float = 120.0) -> None:
    """Until no worker drains the spool (its folder unlocked and empty) and no report waits."""
    deadline = time.monotonic() + seconds
    folder = home / ".scion" / "telemetry"
    while time.monotonic() < deadline:
        busy = False
        if folder.is_dir():
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                busy = any(not n.startswith(".") for n in os.listdir(folder))
            except BlockingIOError:
                busy = True
            finally:
                os.close(fd)
        metrics = home / ".scion" / "session-metrics.json"
        if metrics.exists() and json.loads(metrics.read_text()).get("pending"):
            busy = True
        if not busy:
            return
        time.sleep(0.05)
    raise AssertionError(f"the telemetry worker of {home} still busy after {seconds:g}s")


def run_session(agent: Agent, env: dict[str, str], events: list[dict[str, object]] = SESSION) -> None:
    for envelope in events:
        result = agent.hook(envelope, "--dialect=claude", **env)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), result.stderr


def test_a_claude_session_exports_scions_spans_logs_and_metrics(
    agent: Agent, receiver: tuple[Receiver, dict[str, str]]
) -> None:
    found, where = receiver
    run_session(agent, {**SCION, **where})
    # Spans, logs and metrics travel in separate exports: wait for all three.
    found.wait_for(
        lambda: (
            len(found.spans()) == 5 and len(found.logs()) == 6 and bool(found.points("agent.session.count"))
        )
    )
    wait_idle(agent.home)

    spans = sorted(found.spans(), key=lambda s: s.item.start_time_unix_nano)  # type: ignore[attr-defined]
    assert [s.item.name for s in spans] == [  # type: ignore[attr-defined]
        "agent.session.start",  # Scion's privacy defaults: no agent.user.prompt
        "agent.tool.call",  # one span from PreToolUse to PostToolUse
        "gen_ai.api.response",  # no BeforeModel: Scion's unpaired end
        "agent.turn.end",
        "agent.session.end",
    ]
    tool = spans[1]
    start, end = tool.item.start_time_unix_nano, tool.item.end_time_unix_nano  # type: ignore[attr-defined]
    assert end > start and tool.attributes["duration_ms"] == (end - start) // 1_000_000
    # SCION_OTEL_GRPC_PORT names Scion's receiver, which hashes the session id itself.
    session = "s1" if "SCION_OTEL_GRPC_PORT" in where else hashlib.sha256(b"s1").hexdigest()
    assert tool.attributes["tool_name"] == "Bash" and tool.attributes["session_id"] == session
    assert tool.attributes["tool_input"] == tool.attributes["tool_output"] == "[REDACTED]"
    assert (
        tool.attributes["event.name"] == "agent.tool.call"
        and tool.attributes["event.raw_name"] == "PreToolUse"
    )
    assert all("duration_ms" not in s.attributes for s in spans if s is not tool)
    assert {s.scope for s in spans} == {SCOPE}
    assert spans[0].resource == {
        **spans[0].resource,
        "service.name": "sciontool",
        "service.instance.id": "agent-7",
        "scion.agent.id": "agent-7",
        "scion.agent.slug": "fixer",
        "scion.project.id": "proj-1",
        "scion.harness": "claude",
        "scion.model": "claude-sonnet",
    }

    logs = sorted(found.logs(), key=lambda r: r.item.time_unix_nano)  # type: ignore[attr-defined]
    assert [r.item.body.string_value for r in logs] == [  # type: ignore[attr-defined]
        "agent.session.start",
        "agent.tool.call",
        "agent.tool.result",
        "gen_ai.api.response",
        "agent.turn.end",
        "agent.session.end",
    ]
    assert {r.scope for r in logs} == {"sciontool.hooks"}
    assert all(r.item.severity_text == "INFO" for r in logs)  # type: ignore[attr-defined]
    span_ids = [s.item.span_id for s in spans]  # type: ignore[attr-defined]
    log_ids = [r.item.span_id for r in logs]  # type: ignore[attr-defined]
    assert log_ids == span_ids[:2] + span_ids[1:]  # each record correlated; both tool records with the call
    assert logs[3].attributes["gen_ai.usage.input_tokens"] == 120

    usage = {
        p.attributes["token_type"]: (p.item.as_int, p.attributes) for p in found.points("scion.usage.tokens")
    }  # type: ignore[attr-defined]
    model = {"harness": "claude", "model": "claude-sonnet"}
    assert usage == {
        "input": (120, {**model, "token_type": "input"}),
        "output": (40, {**model, "token_type": "output"}),
        "cache_read": (30, {**model, "token_type": "cache_read"}),
    }
    [calls] = found.points("agent.tool.calls")
    assert (calls.item.as_int, calls.attributes) == (1, {**COMMON, "tool_name": "Bash", "status": "success"})  # type: ignore[attr-defined]
    [duration] = found.points("agent.tool.duration")
    assert duration.attributes == {**COMMON, "tool_name": "Bash"}
    assert (duration.item.count, duration.item.sum) == (1, tool.attributes["duration_ms"])  # type: ignore[attr-defined]
    [api] = found.points("gen_ai.api.calls")
    assert api.attributes == {**COMMON, "model": "claude-sonnet", "status": "success"}
    [sessions] = found.points("agent.session.count")
    assert (sessions.item.as_int, sessions.attributes) == (1, {**COMMON, "status": "completed"})  # type: ignore[attr-defined]
    delta = 1  # AGGREGATION_TEMPORALITY_DELTA
    assert found.metric("agent.tool.calls").sum.aggregation_temporality == delta  # type: ignore[attr-defined]
    assert found.metric("agent.tool.duration").histogram.aggregation_temporality == delta  # type: ignore[attr-defined]
    assert found.metric("scion.usage.tokens").unit == "{token}"  # type: ignore[attr-defined]
    assert {p.scope for p in found.points()} == {SCOPE}
    assert not (agent.home / ".scion" / "telemetry").exists() or not os.listdir(
        agent.home / ".scion" / "telemetry"
    )


class MetricsHub(HubServer):
    """A hub that holds its first /metrics answer until `release` is set (a sender to kill meanwhile)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.RequestHandlerClass = _HoldingHandler

    def metrics(self) -> list[dict[str, object]]:
        return [json.loads(r.body) for r in list(self.requests) if r.path.endswith("/metrics")]


class _HoldingHandler(http.server.BaseHTTPRequestHandler):
    server: MetricsHub

    def do_POST(self) -> None:
        from conftest import HubRequest

        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        hub = self.server
        hub.requests.append(HubRequest(self.path, dict(self.headers.items()), body))
        if self.path.endswith("/metrics") and len(hub.metrics()) == 1:
            hub.release.wait(20)
        try:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except OSError:
            pass  # the sender was killed meanwhile

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def metrics_hub() -> Iterator[MetricsHub]:
    server = MetricsHub()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join()


def hub_env(url: str) -> dict[str, str]:
    return {
        **SCION,
        "SCION_HUB_ENDPOINT": url,
        "SCION_AUTH_TOKEN": "tok-telemetry",
        "SCION_OTEL_GRPC_PORT": str(closed_port()),  # nothing listens: only the hub report is sent
    }


def wait_until(ready: object, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not ready():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not within {seconds:g}s"
        time.sleep(0.05)


def test_the_hub_gets_exactly_one_metrics_report_for_the_session(agent: Agent, hub: HubServer) -> None:
    run_session(agent, hub_env(hub.url))
    wait_idle(agent.home)
    reports = [r for r in hub.requests if r.path.endswith("/metrics")]
    assert len(reports) == 1
    [report] = reports
    assert report.path == "/api/v1/agents/agent-7/metrics"
    assert report.headers["X-Scion-Agent-Token"] == "tok-telemetry"
    body = json.loads(report.body)
    assert (body["type"], body["agent_id"]) == ("agent_metrics", "agent-7")
    assert {k: body["session"][k] for k in ("id", "status", "turn_count", "model")} == {
        "id": "s1",
        "status": "completed",
        "turn_count": 1,
        "model": "claude-sonnet",
    }
    assert body["session"]["started_at"] <= body["session"]["ended_at"]
    assert body["tokens"] == {"input": 120, "output": 40, "cached": 30}
    assert body["tools"] == {"Bash": {"calls": 1, "success": 1, "error": 0}}
    assert not (agent.home / ".scion" / "session-metrics.json").exists()  # sent: nothing left


@TIMED
def test_50_concurrent_hooks_of_one_session_count_exactly(agent: Agent, hub: HubServer) -> None:
    env = {**agent.env, **hub_env(hub.url)}
    run_session(agent, env, SESSION[:1])
    tool_end = json.dumps(
        {"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Bash"}
    ).encode()
    hooks = [
        subprocess.Popen(
            [sys.executable, "-m", "sciontool_py", "hook", "--dialect=claude"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for _ in range(50)
    ]
    for process in hooks:
        out, err = process.communicate(tool_end, timeout=120)
        assert (process.returncode, out, err) == (0, b"", b"")
    counted = json.loads((agent.home / ".scion" / "session-metrics.json").read_text())
    assert counted["aggregator"]["tool_calls"] == {"Bash": {"calls": 50, "success": 50, "error": 0}}
    run_session(agent, env, SESSION[-1:])
    wait_until(lambda: [r for r in hub.requests if r.path.endswith("/metrics")])
    wait_idle(agent.home)
    [report] = [json.loads(r.body) for r in hub.requests if r.path.endswith("/metrics")]
    assert report["tools"] == {"Bash": {"calls": 50, "success": 50, "error": 0}}


def test_a_report_whose_sender_was_killed_is_sent_by_the_next_hook(
    agent: Agent, metrics_hub: MetricsHub
) -> None:
    env = hub_env(metrics_hub.url)
    state = agent.home / ".scion" / "session-metrics.json"
    run_session(agent, env, [SESSION[0], SESSION[5], SESSION[6]])
    wait_until(lambda: metrics_hub.metrics())  # the worker is sending, its answer held
    sender = json.loads(state.read_text())["pending"][0]["claim_pid"]
    os.kill(sender, signal.SIGKILL)  # killed mid-send: the report stays, claimed by a dead process
    metrics_hub.release.set()
    pending = json.loads(state.read_text())["pending"]
    assert [p["summary"]["SessionID"] for p in pending] == ["s1"]
    run_session(agent, env, [{"hook_event_name": "SessionStart", "session_id": "s2"}])  # any later hook
    wait_until(lambda: len(metrics_hub.metrics()) == 2)
    wait_idle(agent.home)
    first, second = metrics_hub.metrics()
    assert first["session"] == second["session"] and second["session"]["id"] == "s1"
    assert json.loads(state.read_text())["pending"] == []


RESPONDING = """\
dialect: answering
event_name_fields: [hook_event_name]
mappings:
  PreToolUse: {event: tool-start}
  PostToolUse: {event: tool-end}
  SessionEnd: {event: session-end}
responses:
  PreToolUse: {decision: allow}
"""
FAULT_EVENTS = [SESSION[2], SESSION[3], SESSION[6]]


def _closing_server() -> tuple[socket.socket, threading.Thread]:
    """Accepts each connection and closes it at once."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


def _outcome(agent: Agent, env: dict[str, str], dialect: Path) -> list[tuple[int, bytes, bytes, float]]:
    runs = []
    for envelope in FAULT_EVENTS:
        started = time.monotonic()
        result = agent.hook(envelope, f"--dialect-file={dialect}", **env)
        runs.append((result.returncode, result.stdout, result.stderr, time.monotonic() - started))
    return runs


def _state(agent: Agent) -> tuple[str, list[str]]:
    messages = [line.split(" [sciontool] ", 1)[1] for line in agent.log_lines]
    return (agent.home / "agent-info.json").read_text(), [m.split(" elapsed_ms=")[0] for m in messages]


@pytest.mark.parametrize("fault", ["down", "erroring", "slow", "closing", "damaged-state", "oversized-state"])
def test_faults_change_nothing_the_harness_sees(tmp_path: Path, hub: HubServer, fault: str) -> None:
    dialect = tmp_path / "answering.yaml"
    dialect.write_text(RESPONDING)
    agents = []
    for name in ("on", "off"):
        (tmp_path / name).mkdir()
        agents.append(Agent(tmp_path / name, tmp_path / f"cache-{name}"))
    with_telemetry, without = agents
    env = {**SCION, "SCION_HUB_ENDPOINT": hub.url, "SCION_AUTH_TOKEN": "tok"}
    closer = None
    found: GrpcReceiver | None = None
    if fault in ("erroring", "slow", "damaged-state", "oversized-state"):
        found = GrpcReceiver()
        found.fail = fault == "erroring"
        found.delay = 5.0 if fault == "slow" else 0.0
        env["SCION_OTEL_GRPC_PORT"] = str(found.port)
    elif fault == "closing":
        closer, _ = _closing_server()
        env["SCION_OTEL_GRPC_PORT"] = str(closer.getsockname()[1])
    else:
        env["SCION_OTEL_GRPC_PORT"] = str(closed_port())
    damage = {"damaged-state": b"{\x00 not json", "oversized-state": b"[" + b"0," * (1 << 19) + b"0]"}.get(
        fault
    )
    try:
        for agent in agents:
            if damage:
                (agent.home / ".scion").mkdir()
                (agent.home / ".scion" / "session-metrics.json").write_bytes(damage)
        on = _outcome(with_telemetry, env, dialect)
        off = _outcome(without, {**env, "SCION_TELEMETRY_ENABLED": "false"}, dialect)
        assert [r[:3] for r in on] == [r[:3] for r in off]
        assert on[0][:3] == (0, b'{"decision":"allow"}\n', b"")
        if fault == "slow":  # the hook never waits for the export, nor holds the harness's pipes
            assert all(r[3] < found.delay for r in on), on  # type: ignore[union-attr]
        wait_idle(with_telemetry.home)
        assert _state(with_telemetry) == _state(without)
        if damage:  # started over: the damaged file replaced by sound counts, then reported
            assert not (with_telemetry.home / ".scion" / "session-metrics.json").exists()
    finally:
        if found is not None:
            found.close()
        if closer is not None:
            closer.close()


def test_export_problems_are_debug_lines_in_agent_log(agent: Agent) -> None:
    found = GrpcReceiver()
    found.fail = True
    try:
        run_session(
            agent, {**SCION, "SCION_OTEL_GRPC_PORT": str(found.port), "SCION_LOG_LEVEL": "debug"}, SESSION[:2]
        )
        wait_idle(agent.home)
    finally:
        found.close()
    dropped = [line for line in agent.log_lines if "[DEBUG] Hook telemetry export dropped: " in line]
    assert dropped and all("Traceback" not in line for line in agent.log_lines)


def test_with_nothing_listening_the_hook_creates_nothing_and_starts_nothing(agent: Agent) -> None:
    port = closed_port()
    run_session(agent, {**SCION, "SCION_OTEL_GRPC_PORT": str(port), "SCION_LOG_LEVEL": "debug"}, SESSION[:3])
    assert not (agent.home / ".scion").exists()
    assert agent.log_lines[-1].endswith(
        f"[DEBUG] Hook telemetry: nothing listens on 127.0.0.1:{port}; tool-start not exported"
    )


def _drainers(home: Path) -> int:
    found = 0
    for pid in os.listdir("/proc"):
        try:
            cmdline = (Path("/proc") / pid / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--drain" in cmdline and os.fsencode(home) in cmdline:
            found += 1
    return found


@TIMED
def test_a_burst_of_events_starts_one_drainer_and_loses_none(agent: Agent) -> None:
    found = GrpcReceiver()
    found.delay = 0.2
    env = {**agent.env, **SCION, "SCION_OTEL_GRPC_PORT": str(found.port)}
    most = 0
    stop = threading.Event()

    def watch() -> None:
        nonlocal most
        while not stop.is_set():
            most = max(most, _drainers(agent.home))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        envelope = json.dumps(
            {"hook_event_name": "Notification", "session_id": "s", "message": "hi"}
        ).encode()
        hooks = [
            subprocess.Popen(
                [sys.executable, "-m", "sciontool_py", "hook", "--dialect=claude"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                env=env,
            )
            for _ in range(30)
        ]
        for process in hooks:
            process.communicate(envelope, timeout=120)
            assert process.returncode == 0
        found.wait_for(lambda: len(found.logs()) == 30)
        wait_idle(agent.home)
    finally:
        stop.set()
        watcher.join()
        found.close()
    assert most == 1
    assert len(found.spans()) == 30
