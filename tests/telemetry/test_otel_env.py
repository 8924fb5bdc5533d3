"""OTel's exporter environment as the specification defines it (issue 31, point 3), against real
OTLP receivers on 127.0.0.1: the OTEL_{TRACES,METRICS,LOGS}_EXPORTER switches, per-signal
endpoint, protocol, headers and timeout over the generic ones; and inside Scion, Scion's
receiver by Scion's rules, with the resource its keys alone."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from conftest import Agent
from otlp import GrpcReceiver, HttpReceiver, Receiver

SESSION = [
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
    {"hook_event_name": "SessionEnd", "session_id": "s1", "reason": "exit"},
]
SPANS, LOGS = 2, 3  # agent.tool.call (paired), agent.session.end; a record for each event
SPOOL = Path(".scion") / "telemetry"


def run(agent: Agent, env: dict[str, str], envelopes: list[dict[str, object]] = SESSION) -> None:
    for envelope in envelopes:
        result = agent.hook(envelope, "--dialect=claude", **env)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), result.stderr


def drained(agent: Agent, found: Receiver) -> None:
    """Until the spool is empty and unlocked: the worker has exported (or dropped) everything."""

    def idle() -> bool:
        folder = agent.home / SPOOL
        if any(not name.startswith(".") for name in os.listdir(folder)):
            return False
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)
        return True

    found.wait_for(idle)


def signals(found: Receiver) -> set[str]:
    return {request.signal for request in found.requests}


def arrive(found: Receiver, signal: str) -> None:
    found.wait_for(lambda: signal in signals(found))


@pytest.mark.parametrize("off", ["traces", "metrics", "logs"])
def test_a_signal_switched_off_is_never_sent(
    agent: Agent, outside: tuple[Receiver, dict[str, str]], off: str
) -> None:
    found, env = outside
    run(agent, {**env, f"OTEL_{off.upper()}_EXPORTER": "none"})
    on = {"traces", "metrics", "logs"} - {off}
    found.wait_for(lambda: signals(found) >= on)
    drained(agent, found)
    assert signals(found) == on
    expected = {"traces": (found.spans, SPANS), "logs": (found.logs, LOGS)}
    for signal in on & set(expected):
        items, count = expected[signal]
        assert len(items()) == count, signal


def test_every_signal_switched_off_spools_nothing(agent: Agent) -> None:
    found = HttpReceiver()
    off = {f"OTEL_{signal}_EXPORTER": "none" for signal in ("TRACES", "METRICS", "LOGS")}
    try:
        run(
            agent,
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{found.port}",
                "SCION_LOG_LEVEL": "debug",
                **off,
            },
        )
    finally:
        found.close()
    assert not (agent.home / SPOOL).exists() and found.requests == []
    assert any(
        "Hook telemetry off: OTEL_TRACES_EXPORTER=none; OTEL_METRICS_EXPORTER=none; OTEL_LOGS_EXPORTER=none"
        in line
        for line in agent.log_lines
    )


def test_per_signal_endpoint_protocol_and_headers_over_the_generic_ones(agent: Agent) -> None:
    """Traces over gRPC with their own headers; logs to their own HTTP URL, as it is; metrics to
    the generic endpoint's base + /v1/metrics; the generic headers wherever a signal has none."""
    traces = GrpcReceiver()
    logs = HttpReceiver(routes={"/collect/my-logs": "logs"})
    generic = HttpReceiver(routes={"/base/v1/metrics": "metrics"})
    env = {
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{generic.port}/base",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-team=all,authorization=Bearer%20generic",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{traces.port}",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-team=traces",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"http://127.0.0.1:{logs.port}/collect/my-logs",
        "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "",  # empty: unset, so the generic headers apply
    }
    try:
        run(agent, env)
        for found, signal in ((traces, "traces"), (logs, "logs"), (generic, "metrics")):
            arrive(found, signal)
        drained(agent, generic)
    finally:
        for found in (traces, logs, generic):
            found.close()
    assert (signals(traces), signals(logs), signals(generic)) == ({"traces"}, {"logs"}, {"metrics"})
    assert {r.path for r in logs.requests} == {"/collect/my-logs"}
    assert {r.path for r in generic.requests} == {"/base/v1/metrics"}
    assert len(traces.spans()) == SPANS and len(logs.logs()) == LOGS
    for request in traces.requests:
        assert request.headers["x-team"] == "traces" and "authorization" not in request.headers
    for request in logs.requests + generic.requests:
        assert (request.headers["x-team"], request.headers["authorization"]) == ("all", "Bearer generic")


def test_timeouts_per_signal_over_the_generic_one(agent: Agent) -> None:
    """gRPC carries the deadline: the receiver sees what the exporter was given. Over HTTP a
    receiver that answers after a second fails the signal given 100 ms, not the one given 8 s."""
    grpc = GrpcReceiver()
    slow = HttpReceiver()
    slow.delay = 1.0
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{slow.port}",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "8000",
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "100",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"http://127.0.0.1:{grpc.port}",
        "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": "3000",
        "SCION_LOG_LEVEL": "debug",
    }
    try:
        run(agent, env)
        arrive(grpc, "metrics")
        slow.wait_for(lambda: len(slow.logs()) == LOGS)
        drained(agent, slow)
    finally:
        grpc.close()
        slow.close()
    assert all(0 < (r.remaining or 0) < 3.5 for r in grpc.requests), [r.remaining for r in grpc.requests]
    assert "traces" in signals(slow)  # reached, and given up on after 100 ms: only spans are dropped
    dropped = [line for line in agent.log_lines if "Hook telemetry export dropped:" in line]
    assert dropped and all(" spans (" in line for line in dropped), dropped


def test_inside_scion_scions_receiver_by_scions_rules(agent: Agent) -> None:
    """SCION_OTEL_GRPC_PORT names Scion's receiver. What Scion's provisioners write for the
    harness's own telemetry (an endpoint, a protocol, traces off) and any OTLP headers or timeout
    are not the hook's: Scion's hook reads none of them (ptone/scion#2992). The
    resource is Scion's keys alone: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME would fail
    its receiver's admission (ptone/scion#2249)."""
    scion = GrpcReceiver()
    elsewhere = HttpReceiver()
    env = {
        "SCION_OTEL_GRPC_PORT": str(scion.port),
        "SCION_AGENT_ID": "agent",
        "SCION_HARNESS": "claude",
        "OTEL_TRACES_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{elsewhere.port}",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-ambient-header=leak",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,host.name=leak,service.name=env-service,scion.agent.id=env-agent",
        "OTEL_SERVICE_NAME": "env-service-name",
    }
    try:
        run(agent, env)
        scion.wait_for(
            lambda: len(scion.spans()) == SPANS and len(scion.logs()) == LOGS and bool(scion.points())
        )
        drained(agent, scion)
    finally:
        scion.close()
        elsewhere.close()
    assert elsewhere.requests == [] and signals(scion) == {"traces", "logs", "metrics"}
    for request in scion.requests:
        assert "x-ambient-header" not in request.headers
        assert 0 < (request.remaining or 0) < 0.5  # Scion's HookExportTimeout, 0.25 s
    resource = {
        "service.name": "sciontool",
        "service.instance.id": "agent",
        "scion.agent.id": "agent",
        "scion.harness": "claude",
    }
    for item in scion.spans() + scion.logs() + scion.points():
        assert item.resource == resource


def test_outside_scion_the_resource_takes_otel_resource_attributes(agent: Agent) -> None:
    found = HttpReceiver()
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{found.port}",
        "SCION_AGENT_ID": "agent",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=dev,scion.agent.id=theirs",
    }
    try:
        run(agent, env, SESSION[:1])
        found.wait_for(lambda: bool(found.logs()))
    finally:
        found.close()
    [log] = found.logs()
    assert log.resource["deployment.environment"] == "dev" and log.resource["scion.agent.id"] == "agent"
