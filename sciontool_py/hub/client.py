"""Scion Hub: report the agent's status over HTTP (only when configured).

Imported only when the hub is configured: http.client costs more to import
than the rest of the hook.  All hub traffic of one hook call shares one
wall-clock deadline, however slowly a server answers; no output carries the
token or a password from the endpoint or proxy URL.  A failure is one ERROR
line in agent.log and never fails the hook.  The HTTP itself (no redirects,
proxies, basic auth) is in transport.
"""

from __future__ import annotations

import os
import threading
import time

from sciontool_py import gojson
from sciontool_py.console import cut, escape_controls, redact
from sciontool_py.errors import HubError, Refused
from sciontool_py.fs import failure, read_bytes
from sciontool_py.hub import transport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.log.writer import AgentLog

BUDGET_SECONDS = 3.0  # all hub traffic of one hook call, retries included
CALL_SECONDS = 5.0  # Scion's timeout of one call, within what is left of the budget
RETRIES = 3
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 5.0
DETAIL_LIMIT = 200  # bytes of what a hub sent (an error body, a bad status line) kept in the log
ERROR_LIMIT = 1000  # bytes of a whole error message
_WHAT = {
    "status": "hub status update",
    "outbound-message": "hub outbound message",
    "metrics": "hub metrics report",
}
_BODY_ORDER = (
    "phase",
    "activity",
    "toolName",
    "status",
    "message",
    "taskSummary",
    "heartbeat",
    "currentTurns",
    "currentModelCalls",
    "startedAt",
    "exitCode",
)


class Hub:
    """One entry point's hub: budget (seconds for all its traffic, retries included) and
    first_backoff are knobs a test may turn; failures go to log."""

    def __init__(
        self,
        endpoint: str,
        agent_id: str,
        token: str,
        log: AgentLog,
        budget: float = BUDGET_SECONDS,
        first_backoff: float = FIRST_BACKOFF,
    ) -> None:
        self.endpoint = endpoint
        self.agent_id = agent_id
        self.token = token
        self.log = log
        self.budget = budget
        self.first_backoff = first_backoff
        self.deadline = time.monotonic() + budget
        from urllib.parse import unquote

        userinfo = endpoint.partition("://")[2].partition("/")[0].rpartition("@")[0]
        password = userinfo.partition(":")[2]
        secrets = {token, password, unquote(password), *transport.proxy_passwords()}
        self.secrets = sorted((s for s in secrets if s), key=len, reverse=True)

    @classmethod
    def from_env(cls, home: str, log: AgentLog, warn: bool = True, **knobs: float) -> Hub | None:
        """The hub the environment configures; warn: log an unusable token file (once per hook is enough)."""
        endpoint = os.environ.get("SCION_HUB_ENDPOINT") or os.environ.get("SCION_HUB_URL")
        agent_id = os.environ.get("SCION_AGENT_ID")
        token = _token(home, log if warn else None)
        if endpoint and agent_id and token:
            return cls(endpoint, agent_id, token, log, **knobs)
        return None

    def scrub(self, text: str) -> str:
        """What a server sent (or an unexpected error said), without the token or a URL password."""
        return redact(text, self.secrets)

    def describe(self, exc: HubError) -> str:
        """The failure in words, with what the server sent scrubbed, then cut."""
        if not exc.reply:
            return str(exc)
        reply = exc.reply.strip()
        if exc.cut and self.secrets:  # a secret may straddle the end of what was read
            reply = reply[: -len(self.secrets[0])]
        return f"{exc}: {cut(self.scrub(reply), DETAIL_LIMIT)}"

    def post(self, path: str, payload: dict[str, object], retries: int = RETRIES) -> None:
        """POST JSON; 5xx, network errors and malformed replies retried with backoff, 3xx and 4xx not.

        Runs in a worker thread that is abandoned at the deadline: a server
        that trickles one byte at a time, or a name that never resolves,
        cannot hold the agent past the budget.
        """
        if time.monotonic() >= self.deadline:
            raise HubError(f"time budget of {self.budget:g}s spent")
        outcome: list[BaseException | None] = []
        worker = threading.Thread(
            target=self._post_capturing, args=(outcome, path, payload, retries), daemon=True
        )
        worker.start()
        worker.join(max(0.0, self.deadline - time.monotonic()))
        if not outcome:
            self.deadline = 0.0  # nothing more for this hub in this call
            raise HubError(f"no complete answer within the time budget of {self.budget:g}s")
        if outcome[0] is not None:
            raise outcome[0]

    def _post_capturing(
        self, outcome: list[BaseException | None], path: str, payload: dict[str, object], retries: int
    ) -> None:
        try:
            self._post_retrying(path, _struct_json(payload).encode(), retries)
            outcome.append(None)
        except HubError as exc:
            outcome.append(exc)
        except Exception as exc:  # never an internal error: the hook only observes
            outcome.append(HubError(f"{type(exc).__name__}: {self.scrub(str(exc))}"))

    def _post_retrying(self, path: str, body: bytes, retries: int) -> None:
        headers = {"Content-Type": "application/json", "X-Scion-Agent-Token": self.token}
        backoff = self.first_backoff
        attempt = 0
        while True:
            attempt += 1
            timeout = min(CALL_SECONDS, self.deadline - time.monotonic())
            try:
                transport.post(self.endpoint, f"{self.agent_id}/{path}", headers, body, timeout)
                return
            except Refused as exc:
                raise HubError(self.describe(exc)) from None
            except HubError as exc:
                problem = self.describe(exc)
            if attempt > retries:
                raise HubError(f"request failed after {attempt} attempts: {problem}")
            if time.monotonic() + backoff >= self.deadline:  # no time left for another attempt
                budget = f"the time budget of {self.budget:g}s"
                raise HubError(f"gave up after {attempt} attempts within {budget}: {problem}")
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    def report(self, event: str, path: str, payload: dict[str, object], retries: int = RETRIES) -> None:
        """post(), with any failure logged as one ERROR line instead of raised."""
        started = time.monotonic()
        try:
            self.post(path, payload, retries)
        except HubError as exc:
            elapsed = int((time.monotonic() - started) * 1000)
            # Scrubbed already where a server's words come in; our own never hold a secret.
            error = escape_controls(cut(str(exc), ERROR_LIMIT))
            line = f"{_WHAT[path]} failed event={event} elapsed_ms={elapsed} error={error}"
            self.log.write("", line, level="ERROR")


def _token(home: str, log: AgentLog | None) -> str:
    try:
        data = read_bytes(home, ".scion/scion-token")
        token = data.decode("utf-8").strip() if data else ""
    except OSError as exc:
        if log is not None:
            log.write("", f"Hub token file not used: {failure(exc)}", level="WARN")
        token = ""
    except UnicodeDecodeError:
        token = ""
    return token or os.environ.get("SCION_AUTH_TOKEN", "")


def _struct_json(payload: dict[str, object]) -> str:
    # Go marshals a struct in field order (gojson.dumps sorts, as for a map).
    return (
        "{" + ",".join(f"{gojson.dumps(key)}:{gojson.dumps(value)}" for key, value in payload.items()) + "}"
    )


def status_body(fields: dict[str, object]) -> dict[str, object]:
    """A StatusUpdate body: Scion's field order, empty fields left out."""
    body = {key: fields[key] for key in _BODY_ORDER if fields.get(key) not in (None, "")}
    if "status" not in body:
        phase = body.get("phase")
        status = body.get("activity") if phase in (None, "running") else phase
        if status:
            body["status"] = status
    return {key: body[key] for key in _BODY_ORDER if key in body}
