"""Scion Hub: report the agent's status over HTTP (only when configured).

Imported only when the hub is configured: http.client costs more to import
than the rest of the hook.  The token goes to the configured hub and nowhere
else: no redirect is followed, and no output carries the token or the
endpoint's credentials.  All hub traffic of one hook call shares one
wall-clock deadline, however slowly a server answers.  A failure is one
ERROR line in agent.log and never fails the hook.
"""

from __future__ import annotations

import http.client
import os
import threading
import time

from sciontool_py import gojson
from sciontool_py.console import cut, escape_controls
from sciontool_py.errors import SciontoolError
from sciontool_py.handlers.agent_log import write_line
from sciontool_py.handlers.files import failure, read_bytes

BUDGET_SECONDS = 3.0  # all hub traffic of one hook call, retries included
CALL_SECONDS = 5.0  # Scion's timeout of one call, within what is left of the budget
RETRIES = 3
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 5.0
REPLY_LIMIT = 64 * 1024
DETAIL_LIMIT = 200  # bytes of what a hub sent (an error body, a bad status line) kept in the log
ERROR_LIMIT = 1000  # bytes of a whole error message
_WHAT = {"status": "hub status update", "outbound-message": "hub outbound message"}
_BODY_ORDER = (
    "phase",
    "activity",
    "toolName",
    "status",
    "message",
    "taskSummary",
    "currentTurns",
    "currentModelCalls",
    "startedAt",
)


class HubError(SciontoolError):
    """The hub could not be told; logged by Hub.report, never fatal to the hook."""


class _Final(HubError):
    """A failure that a retry cannot fix (a 3xx or 4xx answer, a bad endpoint)."""


class Hub:
    def __init__(self, endpoint: str, agent_id: str, token: str) -> None:
        self.endpoint = endpoint
        self.agent_id = agent_id
        self.token = token
        self.deadline = time.monotonic() + BUDGET_SECONDS

    @classmethod
    def from_env(cls, home: str) -> Hub | None:
        endpoint = os.environ.get("SCION_HUB_ENDPOINT") or os.environ.get("SCION_HUB_URL")
        agent_id = os.environ.get("SCION_AGENT_ID")
        token = _token(home)
        if endpoint and agent_id and token:
            return cls(endpoint, agent_id, token)
        return None

    def scrub(self, text: str) -> str:
        """text without the token or the endpoint's password.

        A short secret could match anywhere (a one-letter token is in every
        word), so text that holds one is withheld rather than mangled.
        """
        from urllib.parse import unquote

        userinfo = self.endpoint.partition("://")[2].partition("/")[0].rpartition("@")[0]
        password = userinfo.partition(":")[2]
        for secret in (self.token, password, unquote(password)):
            if secret and secret in text:
                if len(secret) < 8:
                    return "[withheld: it contains a credential]"
                text = text.replace(secret, "[redacted]")
        return text

    def _detail(self, text: str) -> str:
        """What a hub sent, for an error message: scrubbed before it is cut (no half token left)."""
        return cut(self.scrub(text.strip()), DETAIL_LIMIT)

    def post(self, path: str, payload: dict[str, object], retries: int = RETRIES) -> None:
        """POST JSON; 5xx, network errors and malformed replies retried with backoff, 3xx and 4xx not.

        Runs in a worker thread that is abandoned at the deadline: a server
        that trickles one byte at a time, or a name that never resolves,
        cannot hold the agent past the budget.
        """
        if time.monotonic() >= self.deadline:
            raise HubError(f"time budget of {BUDGET_SECONDS:g}s spent")
        outcome: list[BaseException | None] = []
        worker = threading.Thread(
            target=self._post_capturing, args=(outcome, path, payload, retries), daemon=True
        )
        worker.start()
        worker.join(max(0.0, self.deadline - time.monotonic()))
        if not outcome:
            self.deadline = 0.0  # nothing more for this hub in this call
            raise HubError(f"no complete answer within the time budget of {BUDGET_SECONDS:g}s")
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
            outcome.append(HubError(f"{type(exc).__name__}: {exc}"))

    def _post_retrying(self, path: str, body: bytes, retries: int) -> None:
        backoff = FIRST_BACKOFF
        attempt = 0
        while True:
            attempt += 1
            try:
                self._post_once(path, body, min(CALL_SECONDS, self.deadline - time.monotonic()))
                return
            except _Final:
                raise
            except HubError as exc:
                problem = str(exc)
            if attempt > retries:
                raise HubError(f"request failed after {attempt} attempts: {problem}")
            if time.monotonic() + backoff >= self.deadline:  # no time left for another attempt
                budget = f"the time budget of {BUDGET_SECONDS:g}s"
                raise HubError(f"gave up after {attempt} attempts within {budget}: {problem}")
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    def _post_once(self, path: str, body: bytes, timeout: float) -> None:
        connection, target, headers = self._request(path, timeout)
        try:
            connection.request("POST", target, body=body, headers=headers)
            response = connection.getresponse()
            status = response.status
            detail = response.read(4096 if 200 <= status < 300 else 512)
        except http.client.HTTPException as exc:  # a status line, header or body HTTP cannot parse
            raise HubError(f"malformed reply: {type(exc).__name__}: {self._detail(str(exc))}") from None
        except ValueError:  # a token or agent id that HTTP cannot carry; never echo the value
            raise _Final("the token or agent id holds characters HTTP headers cannot carry") from None
        except OSError as exc:  # refused, reset, timed out, TLS
            raise HubError(str(getattr(exc, "strerror", None) or exc)) from None
        finally:
            connection.close()
        if 200 <= status < 300:
            return
        text = self._detail(detail.decode("utf-8", "replace"))
        if 300 <= status < 400:
            # Following it would send the token to wherever the reply points.
            raise _Final(f"hub answered {status} (a redirect, never followed)")
        message = f"hub returned error {status}: {text}"
        raise (HubError if status >= 500 or status < 200 else _Final)(message)

    def _request(self, path: str, timeout: float) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
        from urllib.parse import unquote, urlsplit

        try:
            parts = urlsplit(self.endpoint)
            port = parts.port
        except ValueError:
            raise _Final("the hub endpoint is not a valid URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _Final("the hub endpoint must be an http:// or https:// URL with a host")
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        headers = {"Content-Type": "application/json", "X-Scion-Agent-Token": self.token}
        if parts.username is not None:  # Go's client sends URL credentials as basic auth
            import binascii

            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            headers["Authorization"] = "Basic " + binascii.b2a_base64(pair, newline=False).decode()
        target = f"{parts.path.rstrip('/')}/api/v1/agents/{self.agent_id}/{path}"
        return kind(parts.hostname, port, timeout=timeout), target, headers

    def report(
        self, home: str, event: str, path: str, payload: dict[str, object], retries: int = RETRIES
    ) -> None:
        """post(), with any failure logged as one ERROR line instead of raised."""
        started = time.monotonic()
        try:
            self.post(path, payload, retries)
        except HubError as exc:
            elapsed = int((time.monotonic() - started) * 1000)
            error = escape_controls(cut(self.scrub(str(exc)), ERROR_LIMIT))
            line = f"{_WHAT[path]} failed event={event} elapsed_ms={elapsed} error={error}"
            write_line(home, "", line, level="ERROR")


def _token(home: str) -> str:
    try:
        data = read_bytes(home, ".scion/scion-token")
        token = data.decode("utf-8").strip() if data else ""
    except OSError as exc:
        write_line(home, "", f"Hub token file not used: {failure(exc)}", level="WARN")
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


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def event_update(event_name: str, info: dict[str, object], data_text: dict[str, str]) -> dict[str, object]:
    """The status fields Scion's hub handler sends for an event just applied."""
    activity = info.get("activity")
    tool = data_text.get("tool_name", "")
    fields: dict[str, object] = {"activity": activity, "toolName": info.get("toolName")}
    if event_name == "session-start":
        fields["message"] = "Session started"
    elif event_name == "session-end":
        fields.update(phase="stopped", message="Session ended")
    elif event_name in ("prompt-submit", "agent-start", "model-start"):
        fields["message"] = _truncate(data_text.get("prompt", ""), 100) or "Processing"
    elif event_name == "tool-start":
        if activity == "waiting_for_input":
            fields["message"] = "Waiting for input"
        else:
            fields["message"] = f"Executing: {tool}" if tool else "Executing tool"
    elif event_name == "notification":
        fields["message"] = _truncate(data_text.get("message", ""), 100) or "Waiting for input"
    elif event_name == "response-complete":
        fields["taskSummary"] = _truncate(data_text.get("message", ""), 200) or "Task completed"
    else:
        fields["message"] = "Ready"
    return fields


def reply_body(text: str) -> dict[str, object]:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > REPLY_LIMIT:
        text = data[:REPLY_LIMIT].decode("utf-8", "ignore") + "\n[truncated]"
    return {"msg": text, "type": "assistant-reply", "visibility": "verbose", "metadata": {"source": "hook"}}
