"""Which variables turn telemetry on and where it goes: Scion's win over the standard OTel ones."""

from __future__ import annotations

import socket

import pytest

from sciontool_py.telemetry import launch, settings


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, True),  # Scion's default
        ({"SCION_TELEMETRY_ENABLED": "false"}, False),
        ({"SCION_TELEMETRY_ENABLED": "OFF"}, False),
        ({"SCION_TELEMETRY_ENABLED": "0"}, False),
        ({"OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_SDK_DISABLED": "TRUE"}, False),
        ({"OTEL_SDK_DISABLED": "yes"}, True),  # the OTel specification: only "true" disables
        ({"SCION_TELEMETRY_ENABLED": "yes", "OTEL_SDK_DISABLED": "true"}, True),  # Scion wins
        ({"SCION_TELEMETRY_ENABLED": "no", "OTEL_SDK_DISABLED": "false"}, False),
        ({"SCION_TELEMETRY_ENABLED": "maybe", "OTEL_SDK_DISABLED": "true"}, False),  # not a Scion value
    ],
)
def test_on_or_off(env: dict[str, str], on: bool) -> None:
    assert settings.enabled(env) is on


G, H = "grpc", "http/protobuf"
SCION = ("grpc", "http://127.0.0.1:4317", 0.25)


def every(protocol: str, url: str, timeout: float = 10.0) -> dict[str, tuple[str, str, float]]:
    """The same endpoint for every signal; an HTTP url gets /v1/SIGNAL, as from the generic variable."""
    if protocol == G:
        return dict.fromkeys(settings.SIGNALS, (protocol, url, timeout))
    return {s: (protocol, f"{url}/v1/{s}", timeout) for s in settings.SIGNALS}


@pytest.mark.parametrize(
    ("env", "scion", "where"),
    [
        # Outside Scion with nothing set: Scion's address, gRPC, the specification's timeout.
        ({}, False, every(G, "http://127.0.0.1:4317")),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, False, every(H, "http://127.0.0.1:4318")),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "SCION_OTEL_HTTP_PORT": "6318"},
            False,
            every(H, "http://127.0.0.1:6318"),
        ),
        # Inside Scion: Scion's receiver by Scion's rules, whatever the OTEL_* variables say.
        (
            {"SCION_OTEL_GRPC_PORT": "5317"},
            True,
            dict.fromkeys(settings.SIGNALS, (G, "http://127.0.0.1:5317", 0.25)),
        ),
        (
            {
                "SCION_NATIVE_TELEMETRY_POLICY": "enabled",  # what Scion's Claude provisioner writes beside it:
                "OTEL_TRACES_EXPORTER": "none",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:14317",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
            },
            True,
            dict.fromkeys(settings.SIGNALS, SCION),
        ),
        # The generic endpoint: the base of /v1/SIGNAL over HTTP (http/protobuf by default).
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example:4318"},
            False,
            every(H, "https://collector.example:4318"),
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example/otlp/"},
            False,
            {s: (H, f"https://collector.example/otlp/v1/{s}", 10.0) for s in settings.SIGNALS},
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            False,
            every(G, "http://localhost:4317"),
        ),
        # A per-signal endpoint is used as it is; the others fall back to the specification's defaults.
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://[::1]:9000/custom"},
            False,
            {
                "traces": (H, "http://[::1]:9000/custom", 10.0),
                "metrics": (H, "http://localhost:4318/v1/metrics", 10.0),
                "logs": (H, "http://localhost:4318/v1/logs", 10.0),
            },
        ),
        # Per-signal protocol and timeout over the generic ones; an empty value is unset.
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://c:4317",
                "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "",
                "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
                "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "400",
                "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": " ",
            },
            False,
            {
                "traces": (H, "http://c:4318/v1/traces", 0.4),
                "metrics": (H, "http://c:4318/v1/metrics", 2.5),
                "logs": (G, "http://c:4317", 2.5),
            },
        ),
        # Timeouts: milliseconds; 0 (no limit) is the cap; what is not a count of them is ignored.
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "0"}, False, every(G, "http://127.0.0.1:4317", 30.0)),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "99999999"}, False, every(G, "http://127.0.0.1:4317", 30.0)),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "1.5s"}, False, every(G, "http://127.0.0.1:4317")),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "-1", "OTEL_EXPORTER_OTLP_TIMEOUT": "700"},
            False,
            every(G, "http://127.0.0.1:4317", 0.7),
        ),
    ],
)
def test_where_each_signal_goes(
    env: dict[str, str], scion: bool, where: dict[str, tuple[str, str, float]]
) -> None:
    found = settings.route(env)
    assert found.scion is scion and found.problems == []
    assert {s: (e.protocol, e.url, e.timeout) for s, e in found.signals.items()} == where


@pytest.mark.parametrize(
    ("url", "protocol", "probe"),
    [
        ("http://127.0.0.1:4317", G, ("127.0.0.1", 4317)),
        ("http://localhost:4318/v1/traces", H, ("127.0.0.1", 4318)),
        ("http://[::1]:9000/v1/traces", H, ("::1", 9000)),
        ("http://127.0.0.1", H, ("127.0.0.1", 80)),
        ("https://user:pw@127.0.0.2/x", H, ("127.0.0.2", 443)),
        ("127.0.0.1", G, ("127.0.0.1", 4317)),
        ("https://collector.example:4318", H, None),  # elsewhere: never probed (nor resolved)
    ],
)
def test_an_endpoint_on_this_machine_is_probed_and_no_other(
    url: str, protocol: str, probe: tuple[str, int] | None
) -> None:
    assert settings.Endpoint(protocol, url, 1.0).probe == probe


@pytest.mark.parametrize(
    ("env", "exported", "problems"),
    [
        ({"OTEL_TRACES_EXPORTER": "none"}, {"metrics", "logs"}, ["OTEL_TRACES_EXPORTER=none"]),
        ({"OTEL_METRICS_EXPORTER": " NONE "}, {"traces", "logs"}, ["OTEL_METRICS_EXPORTER=none"]),
        (
            {"OTEL_LOGS_EXPORTER": "none", "OTEL_TRACES_EXPORTER": "otlp"},
            {"traces", "metrics"},
            ["OTEL_LOGS_EXPORTER=none"],
        ),
        ({"OTEL_LOGS_EXPORTER": "console,otlp", "OTEL_TRACES_EXPORTER": ""}, set(settings.SIGNALS), []),
        (
            {"OTEL_TRACES_EXPORTER": "zipkin"},
            {"metrics", "logs"},
            ["OTEL_TRACES_EXPORTER=zipkin is not supported (otlp, none)"],
        ),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            set(),
            ["OTEL_EXPORTER_OTLP_PROTOCOL=http/json is not supported (grpc, http/protobuf)"] * 3,
        ),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"},
            {"metrics"},
            ["OTEL_EXPORTER_OTLP_PROTOCOL=http/json is not supported (grpc, http/protobuf)"] * 2,
        ),
        # Inside Scion the switches are the harness's own (Scion's hook reads none of them).
        ({"SCION_OTEL_GRPC_PORT": "", "OTEL_TRACES_EXPORTER": "none"}, set(settings.SIGNALS), []),
    ],
)
def test_the_exporter_switches_and_unsupported_protocols(
    env: dict[str, str], exported: set[str], problems: list[str]
) -> None:
    found = settings.route(env)
    assert (set(found.signals), found.problems) == (exported, problems)


def test_the_probe_tells_a_listener_from_a_closed_port() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert launch.listening("127.0.0.1", port)
    assert not launch.listening("127.0.0.1", port)  # closed now: refused at once


def test_the_model_label_falls_back_to_scion_model_then_unknown() -> None:
    assert settings.model_label("gemini-9", {"SCION_MODEL": "m"}) == "gemini-9"
    assert settings.model_label(" ", {"SCION_MODEL": "m"}) == "m"
    assert settings.model_label("", {}) == "unknown"
    long = "é" * 100  # 200 bytes: cut to 128, never half a character
    assert settings.model_label(long, {}) == "é" * 64


def test_resource_and_metric_attributes_come_from_the_scion_variables_that_are_set() -> None:
    env = {
        "SCION_AGENT_ID": "a1",
        "SCION_AGENT_SLUG": "fixer",
        "SCION_PROJECT_ID": "p1",
        "SCION_HARNESS": "claude",
        "SCION_MODEL": "m",
        "SCION_BROKER_NAME": "b",
        "SCION_GCP_PROJECT_ID": "g",
    }
    assert settings.resource_attributes(env) == {
        "service.instance.id": "a1",
        "scion.agent.id": "a1",
        "scion.agent.slug": "fixer",
        "scion.project.id": "p1",
        "scion.harness": "claude",
        "scion.model": "m",
        "scion.broker.name": "b",
        "gcp.project_id": "g",
    }
    assert settings.resource_attributes({}) == {}
    assert settings.metric_attributes(env) == {"agent_id": "a1", "harness": "claude", "project_id": "p1"}
