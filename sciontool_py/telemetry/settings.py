"""What the environment says about telemetry: on or off, where to, and the values records carry.

Read by the hook after it answered, so nothing here imports more than the
hook already has.  Scion's variables win over the standard OpenTelemetry
ones where both say the same thing (docs/telemetry.md has the table):

- on/off: SCION_TELEMETRY_ENABLED, else OTEL_SDK_DISABLED=true turns it off;
- where: SCION_OTEL_GRPC_PORT (OTLP/gRPC on 127.0.0.1), else any
  OTEL_EXPORTER_OTLP_*ENDPOINT (the exporters read those themselves, with
  OTEL_EXPORTER_OTLP_PROTOCOL, http/protobuf by default as the OTel
  specification says), else Scion's local receiver: OTLP/gRPC on
  127.0.0.1:4317, or OTLP/HTTP on 127.0.0.1:$SCION_OTEL_HTTP_PORT (4318)
  with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Mapping

# Canonical event -> span name (Scion's SpanMapping); an event not here exports nothing.
SPAN_NAMES = {
    "session-start": "agent.session.start",
    "session-end": "agent.session.end",
    "tool-start": "agent.tool.call",
    "tool-end": "agent.tool.result",
    "prompt-submit": "agent.user.prompt",
    "model-start": "gen_ai.api.request",
    "model-end": "gen_ai.api.response",
    "agent-start": "agent.turn.start",
    "agent-end": "agent.turn.end",
    "notification": "agent.notification",
    "response-complete": "agent.response.complete",
    "pre-start": "agent.lifecycle.pre_start",
    "post-start": "agent.lifecycle.post_start",
    "pre-stop": "agent.lifecycle.pre_stop",
}
# The variables a record carries, so a drainer started by another hook labels it as its own hook would.
RECORD_VARIABLES = (
    "SCION_AGENT_ID",
    "SCION_HARNESS",
    "SCION_PROJECT_ID",
    "SCION_MODEL",
    "SCION_USAGE_SOURCE",
)
MODEL_LIMIT = 128  # bytes of a model label
GRPC = "grpc"
HTTP = "http/protobuf"
SCION_GRPC_PORT = 4317
SCION_HTTP_PORT = 4318
LOOPBACK = "127.0.0.1"
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_OTEL_ENDPOINTS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)


def enabled(env: Mapping[str, str]) -> bool:
    """SCION_TELEMETRY_ENABLED when it says yes or no; else off only with OTEL_SDK_DISABLED=true."""
    scion = env.get("SCION_TELEMETRY_ENABLED", "").strip().lower()
    if scion in _TRUE:
        return True
    if scion in _FALSE:
        return False
    return env.get("OTEL_SDK_DISABLED", "").strip().lower() != "true"


class Endpoint:
    """Where the exports go: the protocol, the base URL (None: the exporters read the OTEL_*
    variables themselves) and the loopback (host, port) a cheap connect can probe (None: not
    on this machine, so not probed)."""

    __slots__ = ("probe", "protocol", "url")

    def __init__(self, protocol: str, url: str | None, probe: tuple[str, int] | None) -> None:
        self.protocol = protocol
        self.url = url
        self.probe = probe


def endpoint(env: Mapping[str, str]) -> Endpoint | None:
    """The endpoint the environment names; None for a protocol the exporters do not speak."""
    scion_port = _port(env.get("SCION_OTEL_GRPC_PORT", ""))
    if "SCION_OTEL_GRPC_PORT" in env:
        port = scion_port or SCION_GRPC_PORT
        return Endpoint(GRPC, f"http://{LOOPBACK}:{port}", (LOOPBACK, port))
    standard = next((env[name] for name in _OTEL_ENDPOINTS if env.get(name, "").strip()), "")
    protocol = env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip().lower()
    if standard:
        protocol = protocol or HTTP  # the OTel specification's default
        if protocol not in (GRPC, HTTP):
            return None
        return Endpoint(protocol, None, _loopback(standard.strip(), protocol))
    protocol = protocol or GRPC  # Scion's transport
    if protocol == GRPC:
        return Endpoint(GRPC, f"http://{LOOPBACK}:{SCION_GRPC_PORT}", (LOOPBACK, SCION_GRPC_PORT))
    if protocol == HTTP:
        port = _port(env.get("SCION_OTEL_HTTP_PORT", "")) or SCION_HTTP_PORT
        return Endpoint(HTTP, f"http://{LOOPBACK}:{port}", (LOOPBACK, port))
    return None


def _port(text: str) -> int:
    text = text.strip()
    return int(text) if text.isdigit() and 0 < int(text) < 65536 else 0


def _loopback(url: str, protocol: str) -> tuple[str, int] | None:
    """(address, port) of a URL on this machine; None for any other host (never resolved here)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority = rest.split("/", 1)[0].rpartition("@")[2]
    if authority.startswith("["):
        host, _, tail = authority[1:].partition("]")
        port_text = tail[1:] if tail.startswith(":") else ""
    else:
        host, _, port_text = authority.partition(":")
    host = host.lower()
    if host == "localhost":
        host = LOOPBACK
    if not (host.startswith("127.") or host == "::1"):
        return None
    default = {"https": 443, "http": 80}.get(scheme.lower()) if scheme else None
    if protocol == GRPC and not scheme:
        default = SCION_GRPC_PORT
    port = _port(port_text) or default
    return (host, port) if port else None


def usage_from_hooks(env: Mapping[str, str]) -> bool:
    """The usage gate: gen_ai.api.calls and scion.usage.tokens only with SCION_USAGE_SOURCE=hooks."""
    return env.get("SCION_USAGE_SOURCE", "") == "hooks"


def cut_label(text: str, limit: int = MODEL_LIMIT) -> str:
    """At most limit bytes, never half a character."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def model_label(model: str, env: Mapping[str, str]) -> str:
    """The `model` label of a usage point: the event's model, else SCION_MODEL, else unknown."""
    for value in (model, env.get("SCION_MODEL", "")):
        if value.strip():
            return cut_label(value)
    return "unknown"


def metric_attributes(env: Mapping[str, str]) -> dict[str, str]:
    """agent_id, harness and project_id, each when its variable is set."""
    pairs = (("agent_id", "SCION_AGENT_ID"), ("harness", "SCION_HARNESS"), ("project_id", "SCION_PROJECT_ID"))
    return {key: env[name] for key, name in pairs if env.get(name)}


def resource_attributes(env: Mapping[str, str]) -> dict[str, str]:
    """Scion's resource attributes from SCION_*, each only when set (service.name is separate)."""
    agent = env.get("SCION_AGENT_ID", "")
    pairs = (
        ("scion.agent.slug", "SCION_AGENT_SLUG"),
        ("scion.project.id", "SCION_PROJECT_ID"),
        ("scion.harness", "SCION_HARNESS"),
        ("scion.model", "SCION_MODEL"),
        ("scion.broker.name", "SCION_BROKER_NAME"),
        ("gcp.project_id", "SCION_GCP_PROJECT_ID"),
    )
    found = {"service.instance.id": agent, "scion.agent.id": agent} if agent else {}
    found.update({key: env[name] for key, name in pairs if env.get(name)})
    return found
