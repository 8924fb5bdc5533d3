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


@pytest.mark.parametrize(
    ("env", "protocol", "url", "probe"),
    [
        ({}, "grpc", "http://127.0.0.1:4317", ("127.0.0.1", 4317)),
        ({"SCION_OTEL_GRPC_PORT": "5317"}, "grpc", "http://127.0.0.1:5317", ("127.0.0.1", 5317)),
        # Scion's port wins over the standard endpoint and protocol.
        (
            {
                "SCION_OTEL_GRPC_PORT": "5317",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example:443",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            },
            "grpc",
            "http://127.0.0.1:5317",
            ("127.0.0.1", 5317),
        ),
        # The standard endpoint: the exporters read it (url None); http/protobuf by default.
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example:4318"}, "http/protobuf", None, None),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "grpc",
            None,
            ("127.0.0.1", 4317),
        ),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://[::1]:9000/v1/traces"},
            "http/protobuf",
            None,
            ("::1", 9000),
        ),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1"}, "http/protobuf", None, ("127.0.0.1", 80)),
        # Scion's local OTLP/HTTP receiver.
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
            "http/protobuf",
            "http://127.0.0.1:4318",
            ("127.0.0.1", 4318),
        ),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "SCION_OTEL_HTTP_PORT": "6318"},
            "http/protobuf",
            "http://127.0.0.1:6318",
            ("127.0.0.1", 6318),
        ),
    ],
)
def test_where_the_exports_go(
    env: dict[str, str], protocol: str, url: str | None, probe: tuple[str, int] | None
) -> None:
    found = settings.endpoint(env)
    assert found is not None
    assert (found.protocol, found.url, found.probe) == (protocol, url, probe)


def test_a_protocol_the_exporters_do_not_speak_turns_export_off() -> None:
    assert settings.endpoint({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}) is None


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
