"""The checks that reach another program: the telemetry endpoint the hook exports to, and the hub.

Every call runs in a thread abandoned at its deadline, so a name that never
resolves or a server that trickles one byte at a time cannot hold doctor.
The hub's HTTP is hub/transport's (no redirect followed, the proxy rules of
Go's client); what a hub sends back is scrubbed of the token and of any
password in the endpoint or proxy URLs before it is shown. The token itself
is never printed: only where it came from and its `exp` claim.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from sciontool_py.doctor.check import Check, failed, passed
from sciontool_py.errors import HubError, Refused
from sciontool_py.telemetry import settings

if TYPE_CHECKING:
    from sciontool_py.hub.client import Hub

CONNECT_SECONDS = 3.0  # one TCP connect to a telemetry endpoint, the name's lookup included
HTTP_SECONDS = 5.0  # one hub request, whole (Scion's doctor gives each the same)
REFRESH_WINDOW = 2 * 3600  # Scion's doctor warns of a token this close to its expiry
TOKEN_FILE = ".scion/scion-token"
_Result = TypeVar("_Result")


def bounded(seconds: float, call: Callable[[], _Result]) -> _Result:
    """call() in a daemon thread; TimeoutError when it has not returned within seconds."""
    results: list[_Result] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(call())
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if errors:
        raise errors[0]
    if not results:
        raise TimeoutError(f"no complete answer within {seconds:g}s")
    return results[0]


def telemetry(env: Mapping[str, str]) -> Iterator[Check]:
    """Where the hook exports (telemetry/settings.route) and whether anything answers there."""
    if not settings.enabled(env):
        scion = env.get("SCION_TELEMETRY_ENABLED", "").strip()
        off = not settings.enabled({"SCION_TELEMETRY_ENABLED": scion})
        cause = f"SCION_TELEMETRY_ENABLED={scion}" if off else "OTEL_SDK_DISABLED=true"
        yield passed("telemetry", f"off ({cause}): the hook exports nothing")
        return
    where = settings.route(env)
    for problem in where.problems:
        if "not supported" in problem:  # else a signal switched off with `none`, as asked
            variable = problem.partition("=")[0]
            values = "otlp (or none: off)" if variable.endswith("_EXPORTER") else "grpc or http/protobuf"
            yield failed(
                "telemetry", f"{problem}: that signal is not exported", f"set {variable} to {values}"
            )
    signals: dict[tuple[str, str], list[str]] = {}
    for signal, endpoint in where.signals.items():
        signals.setdefault((endpoint.protocol, endpoint.url), []).append(signal)
    if not signals:
        yield passed("telemetry", f"every signal is off ({'; '.join(where.problems)})")
    for (protocol, url), names in signals.items():
        yield _endpoint(protocol, url, names, where.scion, _named_by(env, names[0]))


def _named_by(env: Mapping[str, str], signal: str) -> str:
    """The variable that names the signal's endpoint; '' when it is the default."""
    for name in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        if env.get(name, "").strip():
            return name
    return ""


def _endpoint(protocol: str, url: str, signals: list[str], scion: bool, named_by: str) -> Check:
    origin = "Scion's receiver" if scion else named_by or "the default outside Scion"
    shown = _without_userinfo(url)
    what = f"{', '.join(signals)} over {protocol} to {shown} ({origin})"
    try:
        host, port = _address(url, protocol)
        bounded(CONNECT_SECONDS, lambda: socket.create_connection((host, port), CONNECT_SECONDS).close())
    except ValueError:
        return failed(
            "telemetry", f"{what}: not a URL with a host and port", f"correct {named_by or 'the endpoint'}"
        )
    except ConnectionRefusedError:
        if not scion and not named_by:
            # Outside Scion nothing need listen: the hook probes, finds nothing, exports nothing.
            return passed(
                "telemetry",
                f"{what}: nothing listens, so the hook exports nothing (set OTEL_EXPORTER_OTLP_ENDPOINT "
                "to export, SCION_TELEMETRY_ENABLED=false to stop probing)",
            )
        return failed(
            "telemetry", f"{what}: nothing listens at {host}:{port}", _telemetry_fix(scion, named_by)
        )
    except OSError as exc:  # no such name, unreachable, timed out (TimeoutError is an OSError)
        problem = f"{host}:{port}: {exc.strerror or exc}"
        return failed("telemetry", f"{what}: {problem}", _telemetry_fix(scion, named_by))
    return passed("telemetry", f"{what}: it accepts a connection")


def _telemetry_fix(scion: bool, named_by: str) -> str:
    if scion:
        return "Scion's receiver runs beside the agent: check SCION_OTEL_GRPC_PORT"
    return (
        f"start the OTLP receiver, or correct {named_by or 'OTEL_EXPORTER_OTLP_ENDPOINT'} "
        "(SCION_TELEMETRY_ENABLED=false turns telemetry off)"
    )


def _address(url: str, protocol: str) -> tuple[str, int]:
    """(host, port) an endpoint URL names; ValueError when it names none."""
    scheme, sep, rest = url.partition("://")
    if not sep:  # gRPC takes a bare host:port
        scheme, rest = "", url
    parts = urlsplit("//" + rest.split("/", 1)[0])
    default = {"https": 443, "http": 80}.get(
        scheme.lower(), settings.SCION_GRPC_PORT if protocol == settings.GRPC else 0
    )
    port = parts.port or default
    if not parts.hostname or not port:
        raise ValueError(url)
    return parts.hostname, port


def _without_userinfo(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"


def hub(home: str, env: Mapping[str, str], now: float) -> Iterator[Check]:
    """With a hub configured: the agent's id and token, the token's expiry, /healthz and an
    authenticated heartbeat, as Scion's doctor checks them."""
    endpoint = env.get("SCION_HUB_ENDPOINT") or env.get("SCION_HUB_URL") or ""
    if not endpoint:
        yield passed("hub", "none configured (SCION_HUB_ENDPOINT unset): the hook reports to no hub")
        return
    from sciontool_py.hub.client import Hub
    from sciontool_py.log.writer import AgentLog

    agent = env.get("SCION_AGENT_ID", "")
    token, source, problem = _token(home, env)
    log = AgentLog(home, quiet=True)  # never written: post() raises rather than logs
    scrub = Hub(endpoint, agent, token, log).scrub
    shown = _without_userinfo(endpoint)
    if not agent:
        fix = "set SCION_AGENT_ID to the agent's id on the hub (Scion sets it in the agent's container)"
        yield failed("hub", f"SCION_AGENT_ID is not set: the hook sends {shown} nothing", fix)
    if not token:
        fix = f"put the agent's token in ~/{TOKEN_FILE} or SCION_AUTH_TOKEN (Scion provisions it)"
        yield failed("hub token", problem or f"none in ~/{TOKEN_FILE} nor SCION_AUTH_TOKEN", fix)
    else:
        yield _expiry(token, source, now)
    health = _health(endpoint, shown, scrub)
    yield health
    if health.ok and agent and token:
        yield _heartbeat(Hub(endpoint, agent, token, log, budget=HTTP_SECONDS), agent)


def _token(home: str, env: Mapping[str, str]) -> tuple[str, str, str]:
    """(token, where it came from, why the file gave none), read as the hook reads it."""
    from sciontool_py.fs import read_bytes

    problem = ""
    try:
        data = read_bytes(home, TOKEN_FILE)
        token = data.decode("utf-8").strip() if data else ""
        if token:
            return token, f"~/{TOKEN_FILE}", ""
    except OSError as exc:
        problem = f"~/{TOKEN_FILE} is not used: {exc.strerror or exc}"
    except UnicodeDecodeError:
        problem = f"~/{TOKEN_FILE} is not UTF-8"
    token = env.get("SCION_AUTH_TOKEN", "")
    return token, "SCION_AUTH_TOKEN", problem


def _expiry(token: str, source: str, now: float) -> Check:
    """The JWT's `exp`, read without verifying the signature (the hub does that)."""
    claims = _claims(token)
    if claims is None:
        return passed("hub token", f"from {source}; not a JWT, so no expiry to read")
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):
        return passed("hub token", f"from {source}; a JWT without an expiry (exp)")
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp))
    except (OverflowError, OSError, ValueError):
        return passed("hub token", f"from {source}; expires beyond the calendar ({exp:g})")
    if exp <= now:
        fix = (
            f"a fresh token in ~/{TOKEN_FILE} or SCION_AUTH_TOKEN (inside Scion the hub refreshes it: "
            "restart the agent if it did not)"
        )
        return failed("hub token", f"from {source} expired at {stamp} ({_span(now - exp)} ago)", fix)
    soon = " (within Scion's refresh window)" if exp - now < REFRESH_WINDOW else ""
    return passed("hub token", f"from {source} expires at {stamp} (in {_span(exp - now)}){soon}")


def _claims(token: str) -> dict[str, object] | None:
    import base64
    import binascii
    import json

    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError, RecursionError):
        return None
    return claims if isinstance(claims, dict) else None


def _span(seconds: float) -> str:
    minutes = int(seconds // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {minutes}m" if hours else f"{minutes}m {int(seconds % 60)}s"


def _health(endpoint: str, shown: str, scrub: Callable[[str], str]) -> Check:
    """GET /healthz, unauthenticated (no token goes with it), redirects not followed."""
    url = f"{shown.rstrip('/')}/healthz"
    try:
        status, location = bounded(HTTP_SECONDS, lambda: _get_healthz(endpoint, HTTP_SECONDS))
    except Refused as exc:
        return failed("hub", f"{shown}: {exc}", "set SCION_HUB_ENDPOINT to the hub's http:// or https:// URL")
    except (HubError, TimeoutError) as exc:
        return failed(
            "hub", f"cannot reach {url}: {scrub(str(exc))}", "start the hub, or correct SCION_HUB_ENDPOINT"
        )
    if 300 <= status < 400:
        where = scrub(location or "nowhere")
        text = f"{url} answered {status}, a redirect to {where} (not followed)"
        return failed("hub", text, "point SCION_HUB_ENDPOINT at the hub itself, not at a sign-in proxy")
    if status == 404:  # some platforms (Cloud Run) answer /healthz themselves: the heartbeat decides
        return passed("hub", f"{url} answered 404: reachable; the heartbeat below uses a real route")
    if status >= 400:
        return failed("hub", f"{url} answered {status}", "see the hub's log: it is up but unwell")
    return passed("hub", f"{url} answered {status}")


def _get_healthz(endpoint: str, timeout: float) -> tuple[int, str | None]:
    import http.client

    from sciontool_py.hub import transport

    # transport builds the connection, proxy and basic auth included, for a path under the agents
    # API; /healthz sits at the endpoint's root instead.
    connection, target, headers = transport._request(endpoint, "", {}, timeout)
    target = target.removesuffix("/api/v1/agents/") + "/healthz"
    try:
        connection.request("GET", target, headers=headers)
        response = connection.getresponse()
        response.read(transport.REPLY_READ)
        return response.status, response.getheader("Location")
    except http.client.HTTPException as exc:
        raise HubError(f"malformed reply: {type(exc).__name__}") from None
    except OSError as exc:
        raise HubError(str(exc.strerror or exc)) from None
    finally:
        connection.close()


def _heartbeat(hub: Hub, agent: str) -> Check:
    try:
        hub.post("status", {"heartbeat": True}, retries=0)
    except HubError as exc:  # a refusal (4xx, a redirect) and a failure (5xx, no answer) alike
        fix = "check SCION_AGENT_ID and the token (a 401 or 403 is about them), else see the hub's log"
        return failed("hub heartbeat", f"POST /api/v1/agents/{agent}/status: {exc}", fix)
    return passed("hub heartbeat", f"POST /api/v1/agents/{agent}/status accepted the token")
