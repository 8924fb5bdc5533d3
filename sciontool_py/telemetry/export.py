"""The OpenTelemetry SDK and OTLP exporters: only the detached worker imports this module.

Spans, log records and metric points are made through the official SDK
(ids and times set as the spool recorded them) and collected in memory;
`export()` then sends each signal in one OTLP request, through the
official exporter (gRPC, or HTTP with protobuf) of the signal's protocol,
to the signal's endpoint and within its timeout (settings.route); the
exporters retry what they may within that timeout, no longer.  A signal
switched off has no exporter.  Failures are reported through `problem`,
never raised.

The exporters' timeout bounds each read, not the export: a receiver that
answers a byte at a time would hold the worker for minutes.  So each export
also has a wall-clock deadline (twice its timeout, a SIGALRM in the worker's
main thread).  Over HTTP a response's body is never read (the status is the
answer; an endless body costs nothing) and a redirect is neither followed
nor a success.  Headers: OTEL_EXPORTER_OTLP_{SIGNAL}_HEADERS, else
OTEL_EXPORTER_OTLP_HEADERS (an empty one is unset, as the specification
says).  Inside Scion the worker has dropped every OTEL_EXPORTER_OTLP_*
variable before this runs, and the resource is Scion's keys alone.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any, TypeVar

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader, MetricExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)
from opentelemetry.util.re import parse_env_headers

from sciontool_py.telemetry.mapping import Translation
from sciontool_py.telemetry.settings import GRPC, SCION_TIMEOUT, Endpoint, Route, resource_attributes

TYPE_CHECKING = False
if TYPE_CHECKING:  # the name of the exporters' base class since 1.39 (LogExporter before)
    from opentelemetry.sdk._logs.export import LogRecordExporter

SHUTDOWN_SECONDS = SCION_TIMEOUT  # Scion's HookExportTimeout bounds the exporters' shutdown
SCOPE = "github.com/GoogleCloudPlatform/scion/pkg/sciontool/hooks/handlers"
LOG_SCOPE = "sciontool.hooks"
SERVICE_NAME = "sciontool"
# name -> (histogram, unit, description), as Scion's hook creates them
INSTRUMENTS = {
    "agent.tool.calls": (False, "{call}", "Number of tool invocations"),
    "agent.tool.duration": (True, "ms", "Duration of tool invocations"),
    "agent.session.count": (False, "{session}", "Number of agent sessions"),
    "gen_ai.api.calls": (False, "{call}", "Number of LLM API calls"),
    "gen_ai.api.duration": (True, "ms", "Duration of LLM API calls"),
    "scion.usage.tokens": (False, "{token}", "Tokens attributed to model requests, by token_type"),
}
_DELTA: dict[type, AggregationTemporality] = {
    Counter: AggregationTemporality.DELTA,
    Histogram: AggregationTemporality.DELTA,
}


class _GivenIds(IdGenerator):
    """Hands out the ids the spool gave a span (a paired span keeps its start's ids)."""

    def __init__(self) -> None:
        self.ids: tuple[int, int] | None = None
        self._random = RandomIdGenerator()

    def generate_trace_id(self) -> int:
        return self.ids[0] if self.ids else self._random.generate_trace_id()

    def generate_span_id(self) -> int:
        return self.ids[1] if self.ids else self._random.generate_span_id()


def resource(env: Mapping[str, str], scion: bool) -> Resource:
    """Inside Scion, Scion's keys alone (its buildResource: any other key fails its receiver's
    admission, ptone/scion#2249). Elsewhere Scion's attributes over OTEL_RESOURCE_ATTRIBUTES
    (Resource.create reads it); service.name is sciontool unless OTEL_SERVICE_NAME or
    OTEL_RESOURCE_ATTRIBUTES names one."""
    if scion:
        return Resource({"service.name": SERVICE_NAME, **resource_attributes(env)})
    found = Resource.create(resource_attributes(env))
    if str(found.attributes.get("service.name", "")).startswith("unknown_service"):
        found = found.merge(Resource({"service.name": SERVICE_NAME}))
    return found


class Pipeline:
    def __init__(self, env: Mapping[str, str], route: Route, problem: Callable[[str], None]) -> None:
        self.problem = problem
        self.route = route
        found = resource(env, route.scion)
        self._ids = _GivenIds()
        self._spans = InMemorySpanExporter()
        tracer_provider = TracerProvider(resource=found, id_generator=self._ids)
        tracer_provider.add_span_processor(SimpleSpanProcessor(self._spans))
        self._tracer = tracer_provider.get_tracer(SCOPE)
        self._logs = InMemoryLogExporter()  # type: ignore[no-untyped-call]
        logger_provider = LoggerProvider(resource=found)
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self._logs))
        self._logger = logger_provider.get_logger(LOG_SCOPE)
        self._reader = InMemoryMetricReader(preferred_temporality=_DELTA)
        meter = MeterProvider(resource=found, metric_readers=[self._reader]).get_meter(SCOPE)
        self._instruments = {
            name: (meter.create_histogram if histogram else meter.create_counter)(
                name, unit=unit, description=text
            )
            for name, (histogram, unit, text) in INSTRUMENTS.items()
        }
        self._exporters = _exporters(route, env)
        sdk_logger = logging.getLogger("opentelemetry")
        sdk_logger.addHandler(_Forward(problem))
        sdk_logger.propagate = False

    def add(self, out: Translation) -> None:
        for span in out.spans:
            self._ids.ids = (span.trace_id, span.span_id)
            try:
                made = self._tracer.start_span(
                    span.name,
                    context=Context(),
                    attributes=span.attributes,  # type: ignore[arg-type]
                    start_time=span.start_ns,
                )
            finally:
                self._ids.ids = None
            if span.error:
                made.set_status(Status(StatusCode.ERROR, span.error))
            elif span.ok:
                made.set_status(Status(StatusCode.OK))
            made.end(end_time=span.end_ns)
        for log in out.logs:
            context = SpanContext(
                log.ids[0], log.ids[1], is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)
            )
            record = LogRecord(
                timestamp=log.time_ns,
                observed_timestamp=log.time_ns,
                context=set_span_in_context(NonRecordingSpan(context)),
                severity_text="INFO",
                severity_number=SeverityNumber.INFO,
                body=log.body,
                attributes=log.attributes,  # type: ignore[arg-type]
            )
            self._logger.emit(record)
        for point in out.points:
            instrument = self._instruments[point.name]
            if point.histogram:
                instrument.record(point.value, point.attributes)  # type: ignore[union-attr]
            else:
                instrument.add(int(point.value), point.attributes)  # type: ignore[union-attr]

    def export(self) -> None:
        """Send what was added since the last export: one request per signal, each bounded."""
        span_exporter, log_exporter, metric_exporter = self._exporters
        signals = self.route.signals
        spans = self._spans.get_finished_spans()
        self._spans.clear()
        if spans and span_exporter is not None:
            self._send("spans", len(spans), signals["traces"], lambda: span_exporter.export(spans))
        logs = self._logs.get_finished_logs()
        self._logs.clear()
        if logs and log_exporter is not None:
            self._send("log records", len(logs), signals["logs"], lambda: log_exporter.export(logs))
        metrics = self._reader.get_metrics_data()  # read always: what is not sent is not carried over
        if metric_exporter is None or metrics is None or not metrics.resource_metrics:
            return
        points = sum(
            len(m.data.data_points)
            for r in metrics.resource_metrics
            for s in r.scope_metrics
            for m in s.metrics
        )
        if points:
            where = signals["metrics"]
            self._send(
                "metric points",
                points,
                where,
                lambda: metric_exporter.export(metrics, timeout_millis=where.timeout * 1000),
            )

    def _send(self, what: str, count: int, where: Endpoint, export: Callable[[], Any]) -> None:
        """One export, within twice its timeout; anything but success is one problem line."""
        deadline = 2 * where.timeout
        try:
            result = within(deadline, export).name
        except Deadline:
            result = f"no answer within {deadline:g}s"
        except Exception as exc:  # a worker only reports: the next batch goes on
            result = f"{type(exc).__name__}: {exc}"
        if result != "SUCCESS":
            self.problem(f"Hook telemetry export dropped: {count} {what} ({result})")

    def shutdown(self) -> None:
        """The exporters' shutdown, abandoned after SHUTDOWN_SECONDS."""

        def close() -> None:
            for exporter in self._exporters:
                if exporter is None:
                    continue
                try:
                    exporter.shutdown()
                except Exception as exc:  # a worker only reports
                    self.problem(f"Hook telemetry exporter shutdown: {type(exc).__name__}: {exc}")

        closer = threading.Thread(target=close, daemon=True)
        closer.start()
        closer.join(SHUTDOWN_SECONDS)


class Deadline(BaseException):
    """The wall-clock deadline of an export passed (a BaseException: no exporter catches it)."""


_T = TypeVar("_T")


def within(seconds: float, call: Callable[[], _T]) -> _T:
    """call(), interrupted by Deadline once seconds have passed (main thread only: SIGALRM)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise Deadline

    previous = signal.signal(signal.SIGALRM, expire)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            return call()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:  # a Deadline raised between the call's return and the disarm is still raised above
        signal.signal(signal.SIGALRM, previous)


def _exporters(
    route: Route, env: Mapping[str, str]
) -> tuple[SpanExporter | None, LogRecordExporter | None, MetricExporter | None]:
    """The span, log and metric exporters of the signals route exports (None: switched off)."""
    signals = route.signals
    return (
        _exporter("traces", signals.get("traces"), env),
        _exporter("logs", signals.get("logs"), env),
        _exporter("metrics", signals.get("metrics"), env),
    )


def _exporter(signal: str, where: Endpoint | None, env: Mapping[str, str]) -> Any:
    """The official OTLP exporter of signal for where (None: the signal is not exported)."""
    if where is None:
        return None
    options: dict[str, Any] = {"endpoint": where.url, "timeout": where.timeout}
    headers = _headers(signal, env)
    if headers:
        options["headers"] = headers
    if where.protocol == GRPC:
        from opentelemetry.exporter.otlp.proto.grpc import _log_exporter, metric_exporter, trace_exporter

        grpc_classes = {
            "traces": trace_exporter.OTLPSpanExporter,
            "logs": _log_exporter.OTLPLogExporter,
            "metrics": metric_exporter.OTLPMetricExporter,
        }
        return grpc_classes[signal](**options)
    from opentelemetry.exporter.otlp.proto.http import _log_exporter as http_logs
    from opentelemetry.exporter.otlp.proto.http import metric_exporter as http_metrics
    from opentelemetry.exporter.otlp.proto.http import trace_exporter as http_traces

    from sciontool_py.telemetry.http_session import StatusOnly

    http_classes = {
        "traces": http_traces.OTLPSpanExporter,
        "logs": http_logs.OTLPLogExporter,
        "metrics": http_metrics.OTLPMetricExporter,
    }
    return http_classes[signal](session=StatusOnly(), **options)


def _headers(signal: str, env: Mapping[str, str]) -> dict[str, str]:
    """The headers the specification gives signal: its own variable's, else the generic one's.
    (The exporters read a set but empty per-signal variable as no headers at all.)"""
    for name in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"):
        text = env.get(name, "").strip()
        if text:
            return dict(parse_env_headers(text, liberal=True))
    return {}


class _Forward(logging.Handler):
    """What the SDK and exporters log (a refused connection, an error status) as the worker's
    DEBUG lines: the harness never sees them, SCION_LOG_LEVEL=debug shows them in agent.log."""

    def __init__(self, problem: Callable[[str], None]) -> None:
        super().__init__(logging.DEBUG)
        self.problem = problem

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.problem(f"Hook telemetry: {record.name}: {record.getMessage()}")
        except Exception:
            pass
