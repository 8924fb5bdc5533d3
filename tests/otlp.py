"""Real OTLP receivers on 127.0.0.1 for the tests (and `make bench`): gRPC through grpcio with
opentelemetry-proto's service definitions, and HTTP with protobuf bodies through http.server.

Each keeps the decoded requests; `spans()`, `logs()` and `points()` flatten them, with the
resource and scope each item came under.  Each also keeps every request as it came: its signal,
path, headers (gRPC metadata), the time the client left it (gRPC's deadline) and its raw bytes
(`raw`), so a test can grep what arrived, not what decoding made of it.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable
from concurrent import futures

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def value(any_value: AnyValue) -> object:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(pairs: list[KeyValue]) -> dict[str, object]:
    return {pair.key: value(pair.value) for pair in pairs}


class Item:
    """One span, log record or data point, with the resource and scope it came under."""

    def __init__(self, resource: dict[str, object], scope: str, item: object, name: str = "") -> None:
        self.resource = resource
        self.scope = scope
        self.item = item
        self.name = name  # a data point's metric name

    @property
    def attributes(self) -> dict[str, object]:
        return attributes(self.item.attributes)  # type: ignore[attr-defined]


class Request:
    """One export request as it arrived."""

    def __init__(
        self, signal: str, path: str, headers: dict[str, str], remaining: float | None, raw: bytes
    ) -> None:
        self.signal = signal  # traces, logs or metrics ("" for a path the receiver does not serve)
        self.path = path
        self.headers = headers  # names in lowercase
        self.remaining = remaining  # seconds the client's deadline left (gRPC only)
        self.raw = raw


# signal -> (request type, response type, gRPC service)
SERVICES = {
    "traces": (
        trace_service_pb2.ExportTraceServiceRequest,
        trace_service_pb2.ExportTraceServiceResponse,
        "opentelemetry.proto.collector.trace.v1.TraceService",
    ),
    "logs": (
        logs_service_pb2.ExportLogsServiceRequest,
        logs_service_pb2.ExportLogsServiceResponse,
        "opentelemetry.proto.collector.logs.v1.LogsService",
    ),
    "metrics": (
        metrics_service_pb2.ExportMetricsServiceRequest,
        metrics_service_pb2.ExportMetricsServiceResponse,
        "opentelemetry.proto.collector.metrics.v1.MetricsService",
    ),
}


class Receiver:
    """What both transports keep: the decoded export requests, and every request as it came."""

    def __init__(self) -> None:
        self.traces: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.logs_requests: list[logs_service_pb2.ExportLogsServiceRequest] = []
        self.metrics: list[metrics_service_pb2.ExportMetricsServiceRequest] = []
        self.requests: list[Request] = []
        self.delay = 0.0  # seconds before each answer: a slow receiver
        self.fail = False  # answer each export with an error
        self.silent = False  # answer nothing until closed (at most a minute)
        self.released = threading.Event()

    @property
    def raw(self) -> bytes:
        """Every byte of every request body received, one after another."""
        return b"".join(request.raw for request in list(self.requests))

    def kept(self, signal: str) -> list[object]:
        return {"traces": self.traces, "logs": self.logs_requests, "metrics": self.metrics}[signal]  # type: ignore[return-value]

    def spans(self) -> list[Item]:
        return [
            Item(attributes(rs.resource.attributes), ss.scope.name, span)
            for request in list(self.traces)
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]

    def logs(self) -> list[Item]:
        return [
            Item(attributes(rl.resource.attributes), sl.scope.name, record)
            for request in list(self.logs_requests)
            for rl in request.resource_logs
            for sl in rl.scope_logs
            for record in sl.log_records
        ]

    def points(self, name: str | None = None) -> list[Item]:
        found = []
        for request in list(self.metrics):
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        kind = metric.WhichOneof("data")
                        for point in getattr(metric, kind).data_points:
                            found.append(
                                Item(attributes(rm.resource.attributes), sm.scope.name, point, metric.name)
                            )
        return [p for p in found if name is None or p.name == name]

    def metric(self, name: str) -> object:
        """The first metric of that name (its unit, temporality, kind)."""
        for request in list(self.metrics):
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        if metric.name == name:
                            return metric
        raise KeyError(name)

    # Generous: a worker that never exports fails it; a loaded machine only delays the export.
    def wait_for(self, ready: Callable[[], bool], seconds: float = 120.0) -> None:
        """Poll until ready() (the detached worker exports on its own time), at most seconds."""
        deadline = time.monotonic() + seconds
        while not ready():
            if time.monotonic() > deadline:
                raise AssertionError(f"not received within {seconds:g}s")
            time.sleep(0.05)

    def _answer(self, context: grpc.ServicerContext | None = None) -> bool:
        time.sleep(self.delay)
        if self.silent:
            self.released.wait(60)
        if self.fail and context is not None:
            context.abort(grpc.StatusCode.INTERNAL, "the receiver refuses")
        return not self.fail


class GrpcReceiver(Receiver):
    def __init__(self) -> None:
        super().__init__()
        handlers = [self._service(signal, *found) for signal, found in SERVICES.items()]
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=handlers)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _service(
        self, signal: str, request_type: type, response_type: type, name: str
    ) -> grpc.GenericRpcHandler:
        def export(raw: bytes, context: grpc.ServicerContext) -> object:
            headers = {key.lower(): str(value) for key, value in context.invocation_metadata()}
            method = f"/{name}/Export"
            self.requests.append(Request(signal, method, headers, context.time_remaining(), raw))
            self._answer(context)
            self.kept(signal).append(request_type.FromString(raw))  # type: ignore[attr-defined]
            return response_type()

        # The request's bytes are kept as they came: decoded in export(), after they are recorded.
        handler = grpc.unary_unary_rpc_method_handler(
            export,
            request_deserializer=bytes,
            response_serializer=response_type.SerializeToString,  # type: ignore[attr-defined]
        )
        return grpc.method_handlers_generic_handler(name, {"Export": handler})

    def close(self) -> None:
        self.released.set()
        self.server.stop(grace=None)


class HttpReceiver(Receiver):
    """OTLP/HTTP with protobuf: POST /v1/traces, /v1/logs, /v1/metrics, or the paths of routes
    (path -> signal); any other path is answered 404 (and recorded)."""

    def __init__(self, routes: dict[str, str] | None = None) -> None:
        super().__init__()
        receiver = self
        paths = routes or {f"/v1/{signal}": signal for signal in SERVICES}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                signal = paths.get(self.path, "")
                headers = {key.lower(): value for key, value in self.headers.items()}
                receiver.requests.append(Request(signal, self.path, headers, None, body))
                ok = receiver._answer()
                if ok and signal and self.headers.get("Content-Type") == "application/x-protobuf":
                    receiver.kept(signal).append(SERVICES[signal][0].FromString(body))
                self.send_response((200 if signal else 404) if ok else 500)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
