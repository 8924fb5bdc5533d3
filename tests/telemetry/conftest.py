"""Fixtures the telemetry tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from otlp import GrpcReceiver, HttpReceiver, Receiver


@pytest.fixture(params=["grpc", "http/protobuf"])
def outside(request: pytest.FixtureRequest) -> Iterator[tuple[Receiver, dict[str, str]]]:
    """A live receiver and the standard variables that point the hook at it: outside Scion."""
    found: Receiver = GrpcReceiver() if request.param == "grpc" else HttpReceiver()
    env = {
        "OTEL_EXPORTER_OTLP_PROTOCOL": request.param,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{found.port}",  # type: ignore[attr-defined]
    }
    yield found, env
    found.close()  # type: ignore[attr-defined]
