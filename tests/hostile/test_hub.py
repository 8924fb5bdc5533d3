"""The hub client against hostile servers on 127.0.0.1: redirects, trickles, garbage, echoed
credentials. The token goes nowhere but the configured hub, the 3 s budget is one wall-clock
deadline, every failure is one ERROR line that never changes the exit status, and no output
carries the token or the endpoint's password."""

from __future__ import annotations

import base64
import re
import socket
import time

import pytest
from conftest import TIMED
from hostile_machine import RETURN_WITHIN, TOKEN, Machine, RawServer, answer, request_headers

pytestmark = TIMED  # every run is bounded in time: never beside the process flood

TOOL_START = {"hook_event_name": "tool-start", "tool_name": "grab"}
FAILED = re.compile(r"\[ERROR\] hub status update failed event=tool-start elapsed_ms=(\d+) error=(.*)")


def serve(servers: list[RawServer], respond: object) -> RawServer:
    server = RawServer(respond)  # type: ignore[arg-type]
    servers.append(server)
    return server


def with_token(machine: Machine, token: str = TOKEN) -> Machine:
    (machine.home / ".scion").mkdir(exist_ok=True)
    (machine.home / ".scion" / "scion-token").write_text(token + "\n")
    machine.env["SCION_AGENT_ID"] = "agent-7"
    return machine


def failures(machine: Machine) -> list[str]:
    """The error= part of each hub ERROR line (there is exactly one line per failed update)."""
    found = [FAILED.fullmatch(line) for line in machine.log() if line.startswith("[ERROR]")]
    assert all(found), machine.log()
    return [m.group(2) for m in found if m]


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_failure_and_the_token_goes_nowhere_else(
    machine: Machine, servers: list[RawServer], code: int
) -> None:
    elsewhere = serve(servers, answer("200 OK"))
    hub = serve(servers, answer(f"{code} Moved", headers=(f"Location: {elsewhere.url}/steal",)))
    run = with_token(machine).hook(TOOL_START, SCION_HUB_ENDPOINT=hub.url)
    assert run.returncode == 0
    assert len(hub.requests) == 1  # not retried
    assert elsewhere.requests == []  # not followed
    assert failures(machine) == [f"hub answered {code} (a redirect, never followed)"]
    machine.settled()


def trickle(head: bytes) -> object:
    def respond(conn: socket.socket, request: bytes) -> None:
        for byte in head:
            conn.sendall(bytes([byte]))
            time.sleep(0.25)

    return respond


def test_a_trickling_hub_is_cut_off_at_the_one_deadline(machine: Machine, servers: list[RawServer]) -> None:
    headers = serve(servers, trickle(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 400))
    body = serve(servers, trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 400\r\n\r\n" + b"b" * 400))
    with_token(machine)
    # Both at once: each is cut off after its own 3 s, so the test waits 3 s, not 6.
    started = [
        machine.start(TOOL_START, "--dialect=core-agent", SCION_HUB_ENDPOINT=s.url) for s in (headers, body)
    ]
    runs = [machine.wait(s) for s in started]
    for run in runs:
        assert run.returncode == 0
        assert 2.8 < run.elapsed < RETURN_WITHIN, run.elapsed  # 3 s of traffic, then cut off
    assert failures(machine) == ["no complete answer within the time budget of 3s"] * 2
    machine.settled()


GARBAGE = {
    "a bad status line": b"garbage\r\n\r\n",
    "an unknown protocol": b"HTTP/9.9 200 OK\r\nContent-Length: 0\r\n\r\n",
    "a 70 KB header line": b"HTTP/1.1 200 OK\r\nX-Big: " + b"h" * 70_000 + b"\r\n\r\n",
    "150 headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(150)) + b"\r\n",
    "a token echoed in the status line": b"HTTP/1.1 " + TOKEN.encode() + b"\r\n\r\n",
}
EXPECTED = {
    "a bad status line": "BadStatusLine: garbage",
    "an unknown protocol": "UnknownProtocol: HTTP/9.9",
    "a 70 KB header line": "LineTooLong: got more than 65536 bytes when reading header line",
    "150 headers": "HTTPException: got more than 100 headers",
    "a token echoed in the status line": "BadStatusLine: HTTP/1.1 [redacted]",
}


def test_malformed_replies_are_one_error_line_each(machine: Machine, servers: list[RawServer]) -> None:
    with_token(machine)
    hubs = {
        name: serve(servers, lambda conn, request, reply=reply: conn.sendall(reply))
        for name, reply in GARBAGE.items()
    }
    started = {
        name: machine.start(TOOL_START, "--dialect=core-agent", SCION_HUB_ENDPOINT=hub.url)
        for name, hub in hubs.items()
    }  # all at once: each retries for 1.5 s
    for run in (machine.wait(s) for s in started.values()):
        assert run.returncode == 0
    errors = failures(machine)
    assert len(errors) == len(GARBAGE)
    for name, expected in EXPECTED.items():
        assert any(
            error.startswith("gave up after 3 attempts") and error.endswith(f"malformed reply: {expected}")
            for error in errors
        ), (name, errors)
    machine.settled()


def test_url_credentials_are_sent_as_basic_auth_and_never_printed(
    machine: Machine, servers: list[RawServer]
) -> None:
    password = "pw-hostile-8c1e"
    hub = serve(servers, answer("403 Forbidden", f"no access for admin:{password} with {TOKEN}".encode()))
    endpoint = hub.url.replace("http://", f"http://admin:{password}@")
    run = with_token(machine).hook(TOOL_START, SCION_HUB_ENDPOINT=endpoint)
    assert run.returncode == 0
    headers = request_headers(hub.requests[0])
    assert headers["authorization"] == "Basic " + base64.b64encode(f"admin:{password}".encode()).decode()
    assert headers["x-scion-agent-token"] == TOKEN
    assert failures(machine) == ["hub returned error 403: no access for admin:[redacted] with [redacted]"]
    assert password.encode() not in run.stderr and password.encode() not in run.stdout
    machine.settled()


def test_a_short_token_is_withheld_without_mangling_the_log(
    machine: Machine, servers: list[RawServer]
) -> None:
    hub = serve(servers, answer("403 Forbidden", b'{"error": "bad token ab"}'))
    run = with_token(machine, "ab").hook(TOOL_START, SCION_HUB_ENDPOINT=hub.url)
    assert run.returncode == 0
    assert failures(machine) == ["hub returned error 403: [withheld: it contains a credential]"]
    assert machine.log()[0] == "[INFO] [executing] Running tool: grab"  # "ab" left alone elsewhere
    machine.settled()


def test_a_one_letter_token_never_hides_the_hooks_own_words(machine: Machine) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    run = with_token(machine, "e").hook(TOOL_START, SCION_HUB_ENDPOINT=f"http://127.0.0.1:{port}")
    assert run.returncode == 0
    [error] = failures(machine)
    assert "Connection refused" in error  # only what a server sends is scrubbed


def test_proxies_from_the_environment_are_used_as_go_uses_them(
    machine: Machine, servers: list[RawServer]
) -> None:
    proxy = serve(servers, answer("200 OK"))
    hub = serve(servers, answer("200 OK"))
    with_token(machine)
    # A name only the proxy knows: the request goes to the proxy, in absolute form.
    run = machine.hook(TOOL_START, SCION_HUB_ENDPOINT="http://hub.invalid:8080", http_proxy=proxy.url)
    assert run.returncode == 0 and failures(machine) == []
    [request] = proxy.requests
    assert request.startswith(b"POST http://hub.invalid:8080/api/v1/agents/agent-7/status HTTP/1.1\r\n")
    assert request_headers(request)["x-scion-agent-token"] == TOKEN
    # NO_PROXY names the hub: straight to it.
    run = machine.hook(TOOL_START, SCION_HUB_ENDPOINT=hub.url, http_proxy=proxy.url, no_proxy="127.0.0.1")
    assert run.returncode == 0 and len(proxy.requests) == 1 and len(hub.requests) == 1
    machine.settled()


def test_an_https_hub_behind_a_proxy_is_reached_through_a_tunnel(
    machine: Machine, servers: list[RawServer]
) -> None:
    proxy = serve(servers, answer("403 Forbidden"))
    run = with_token(machine).hook(
        TOOL_START, SCION_HUB_ENDPOINT="https://hub.invalid:8443", https_proxy=proxy.url
    )
    assert run.returncode == 0
    # CPython 3.12 and later send HTTP/1.1 (and a Host header); earlier ones HTTP/1.0.
    assert re.match(rb"CONNECT hub\.invalid:8443 HTTP/1\.[01]\r\n", proxy.requests[0]), proxy.requests[0]
    assert all(TOKEN.encode() not in request for request in proxy.requests)  # only inside TLS
    [error] = failures(machine)
    # The proxy's 403, or, on a machine loaded enough to spend the 3 s budget first, the budget.
    assert error.endswith(("Tunnel connection failed: 403 Forbidden", "within the time budget of 3s")), error
    machine.settled()
