"""What the environment says about telemetry: on or off, where each signal goes, what may leave.

Read by the hook after it answered, so nothing here imports more than the
hook already has, but for the SHA-256 C module when a value is to be hashed
(docs/telemetry.md has the tables):

- on/off: SCION_TELEMETRY_ENABLED, else OTEL_SDK_DISABLED=true turns it off;
- where (`route`): inside Scion (SCION_OTEL_GRPC_PORT or
  SCION_NATIVE_TELEMETRY_POLICY set) Scion's receiver, OTLP/gRPC on
  127.0.0.1:$SCION_OTEL_GRPC_PORT (4317), by Scion's rules: every OTEL_*
  exporter variable there is the harness's own (Scion's provisioners write
  them for its native telemetry) and is ignored, as Scion's hook does.
  Elsewhere this package is the last hop and follows the OpenTelemetry
  specification per signal: OTEL_{TRACES,METRICS,LOGS}_EXPORTER, the
  per-signal and generic OTEL_EXPORTER_OTLP_*{ENDPOINT,PROTOCOL,TIMEOUT}
  (headers in export.py); with no endpoint named, Scion's address
  127.0.0.1:4317 (gRPC) or 127.0.0.1:$SCION_OTEL_HTTP_PORT (4318, with
  OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf);
- what may leave (`Policy`): Scion's privacy defaults and its
  SCION_TELEMETRY_FILTER_{INCLUDE,EXCLUDE}, SCION_TELEMETRY_REDACT and
  SCION_TELEMETRY_HASH, parsed as Scion's telemetry/config.go does.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
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
# Events that export more than their own span and log record: an end closes its start's span, and
# tool-end, model-end and session-end count metrics. A filter that drops their name keeps the rest.
BEYOND_OWN_NAME = ("tool-end", "model-end", "agent-end", "session-end")
# The variables a record carries, so a drainer started by another hook treats it as its own hook would.
RECORD_VARIABLES = (
    "SCION_AGENT_ID",
    "SCION_HARNESS",
    "SCION_PROJECT_ID",
    "SCION_MODEL",
    "SCION_USAGE_SOURCE",
    "SCION_TELEMETRY_FILTER_INCLUDE",
    "SCION_TELEMETRY_FILTER_EXCLUDE",
)
MODEL_LIMIT = 128  # bytes of a model label
GRPC = "grpc"
HTTP = "http/protobuf"
SCION_GRPC_PORT = 4317
SCION_HTTP_PORT = 4318
LOOPBACK = "127.0.0.1"
SIGNALS = ("traces", "metrics", "logs")
SCION_TIMEOUT = 0.25  # seconds: Scion's HookExportTimeout, on Scion's receiver
OTEL_TIMEOUT = 10.0  # the specification's default
MAX_TIMEOUT = 30.0  # what a worker waits at most (0, "no limit" in the specification, means this)
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_ENDPOINT_VARIABLES = tuple(f"OTEL_EXPORTER_OTLP_{s}ENDPOINT" for s in ("", "TRACES_", "METRICS_", "LOGS_"))
# Scion's defaults (telemetry/config.go), each replaced by its variable when that is not empty.
DEFAULT_EXCLUDE = ("agent.user.prompt",)
DEFAULT_REDACT = ("prompt", "user.email", "tool_output", "tool_input")
DEFAULT_HASH = ("session_id",)
REDACTED = "[REDACTED]"


def enabled(env: Mapping[str, str]) -> bool:
    """SCION_TELEMETRY_ENABLED when it says yes or no; else off only with OTEL_SDK_DISABLED=true."""
    scion = env.get("SCION_TELEMETRY_ENABLED", "").strip().lower()
    if scion in _TRUE:
        return True
    if scion in _FALSE:
        return False
    return env.get("OTEL_SDK_DISABLED", "").strip().lower() != "true"


def inside_scion(env: Mapping[str, str]) -> bool:
    """Whether the exports go to Scion's receiver: SCION_OTEL_GRPC_PORT names it, and Scion's
    provisioners set SCION_NATIVE_TELEMETRY_POLICY for every harness they start."""
    return "SCION_OTEL_GRPC_PORT" in env or bool(env.get("SCION_NATIVE_TELEMETRY_POLICY"))


class Endpoint:
    """Where one signal goes: the protocol, the URL, the export's timeout (seconds) and the
    loopback (host, port) a cheap connect can probe (None: not on this machine, never probed)."""

    __slots__ = ("probe", "protocol", "timeout", "url")

    def __init__(self, protocol: str, url: str, timeout: float) -> None:
        self.protocol = protocol
        self.url = url
        self.timeout = timeout
        self.probe = _loopback(url, protocol)


class Route:
    """Where the exports go. scion: to Scion's receiver, by Scion's rules (its resource, no
    OTEL_EXPORTER_OTLP_* settings, the hash left to it). signals: each signal exported, and where.
    problems: why a signal is not exported, for a DEBUG line."""

    __slots__ = ("problems", "scion", "signals")

    def __init__(self, scion: bool, signals: dict[str, Endpoint], problems: list[str]) -> None:
        self.scion = scion
        self.signals = signals
        self.problems = problems


def route(env: Mapping[str, str]) -> Route:
    """Where each signal goes, as the environment says (the module's docstring has the rules)."""
    if inside_scion(env):
        port = _port(env.get("SCION_OTEL_GRPC_PORT", "")) or SCION_GRPC_PORT
        scion = Endpoint(GRPC, f"http://{LOOPBACK}:{port}", SCION_TIMEOUT)
        return Route(True, dict.fromkeys(SIGNALS, scion), [])
    named = any(_value(env, name) for name in _ENDPOINT_VARIABLES)
    signals: dict[str, Endpoint] = {}
    problems: list[str] = []
    for signal in SIGNALS:
        upper = signal.upper()
        off = _switched_off(env, f"OTEL_{upper}_EXPORTER")
        if off is not None:
            problems.append(off)
            continue
        variable = _first_set(env, f"OTEL_EXPORTER_OTLP_{upper}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
        protocol = _value(env, variable).lower() if variable else HTTP if named else GRPC
        if protocol not in (GRPC, HTTP):
            problems.append(f"{variable}={env[variable]} is not supported (grpc, http/protobuf)")
            continue
        signals[signal] = Endpoint(protocol, _url(env, signal, protocol, named), _timeout(env, upper))
    return Route(False, signals, problems)


def _value(env: Mapping[str, str], name: str) -> str:
    """A variable's value, stripped: empty is unset, as the specification says."""
    return env.get(name, "").strip()


def _first_set(env: Mapping[str, str], *names: str) -> str:
    """The first of names that is set (not empty); '' for none."""
    return next((name for name in names if _value(env, name)), "")


def _switched_off(env: Mapping[str, str], name: str) -> str | None:
    """None when OTEL_{SIGNAL}_EXPORTER leaves the signal on (unset, or naming otlp); else why not."""
    text = _value(env, name)
    names = {part.strip().lower() for part in text.split(",")} - {""}
    if not names or "otlp" in names:
        return None
    if names == {"none"}:
        return f"{name}=none"
    return f"{name}={text} is not supported (otlp, none)"


def _url(env: Mapping[str, str], signal: str, protocol: str, named: bool) -> str:
    """The specification's rules: a per-signal endpoint as it is; the generic one as the base of
    v1/SIGNAL over HTTP (as it is over gRPC); else its defaults, or Scion's address when no
    endpoint variable is set at all."""
    own = _value(env, f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    if own:
        return own
    base = _value(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
    if not base:
        host = "localhost" if named else LOOPBACK
        if protocol == GRPC:
            return f"http://{host}:{SCION_GRPC_PORT}"
        port = SCION_HTTP_PORT if named else _port(env.get("SCION_OTEL_HTTP_PORT", "")) or SCION_HTTP_PORT
        base = f"http://{host}:{port}"
    if protocol == GRPC:
        return base
    return f"{base}{'' if base.endswith('/') else '/'}v1/{signal}"


def _timeout(env: Mapping[str, str], upper: str) -> float:
    """OTEL_EXPORTER_OTLP_{SIGNAL}_TIMEOUT, else OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds; a value
    that is not one is ignored, as the specification says), at most MAX_TIMEOUT; else 10 s."""
    for name in (f"OTEL_EXPORTER_OTLP_{upper}_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
        text = _value(env, name)
        if text.isascii() and text.isdigit():
            milliseconds = int(text)
            return min(milliseconds / 1000, MAX_TIMEOUT) if milliseconds else MAX_TIMEOUT
    return OTEL_TIMEOUT


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


class Policy:
    """What may leave, by Scion's rules: the events (span and log record names) admitted, the
    fields replaced by REDACTED, and the fields this package hashes (SHA-256, lowercase hex).
    Inside Scion the hash is left to Scion's receiver, which applies the same policy again:
    filtering and redacting twice change nothing, hashing twice would."""

    __slots__ = ("exclude", "hashed", "include", "redact")

    def __init__(self, env: Mapping[str, str]) -> None:
        self.include = _fields(env, "SCION_TELEMETRY_FILTER_INCLUDE", ())  # empty: every event
        self.exclude = _fields(env, "SCION_TELEMETRY_FILTER_EXCLUDE", DEFAULT_EXCLUDE)
        self.redact = _fields(env, "SCION_TELEMETRY_REDACT", DEFAULT_REDACT)
        hashed = _fields(env, "SCION_TELEMETRY_HASH", DEFAULT_HASH)
        self.hashed = frozenset() if inside_scion(env) else hashed

    def admits(self, name: str) -> bool:
        return (not self.include or name in self.include) and name not in self.exclude

    def value(self, field: str, text: str) -> str:
        """text as it may leave under the key field (redaction wins over hashing, as in Scion);
        an empty text stays empty (it is not exported)."""
        if not text:
            return text
        if field in self.redact:
            return REDACTED
        if field in self.hashed:
            return sha256_hex(text)
        return text


def _fields(env: Mapping[str, str], name: str, default: tuple[str, ...]) -> frozenset[str]:
    """A comma-separated list; the default only when the variable is unset or empty (so a value
    of spaces or commas alone is the empty list: the way to turn a default off)."""
    text = env.get(name, "")
    if not text:
        return frozenset(default)
    return frozenset(part.strip() for part in text.split(",") if part.strip())


def sha256_hex(text: str) -> str:
    """Scion's HashValue: SHA-256 of the text's UTF-8 bytes as 64 lowercase hex digits (a lone
    surrogate counts as U+FFFD, as Go decodes one)."""
    # The C module alone (0.2 ms, loaded only to hash): hashlib would load OpenSSL, 4 ms.
    if sys.version_info >= (3, 12):
        from _sha2 import sha256  # type: ignore[import-not-found]
    else:
        from _sha256 import sha256  # type: ignore[import-not-found]
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text).encode("utf-8")
    return str(sha256(data).hexdigest())


def usage_from_hooks(env: Mapping[str, str]) -> bool:
    """The usage gate: gen_ai.api.calls and scion.usage.tokens with SCION_USAGE_SOURCE=hooks, and by
    default outside Scion (no deriver of Scion's there to count the harness's own telemetry);
    SCION_USAGE_SOURCE=native leaves usage to that deriver. Inside a Scion agent (its id set,
    its receiver named) Scion's gate alone."""
    source = env.get("SCION_USAGE_SOURCE", "")
    if source or env.get("SCION_AGENT_ID") or inside_scion(env):
        return source == "hooks"
    return True


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
