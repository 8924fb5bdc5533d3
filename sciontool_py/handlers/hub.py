"""Scion Hub: report the agent's status over HTTP (only when configured).

Imported only when the hub is configured: urllib costs more to import than
the rest of the hook.  Every failure is logged to agent.log and swallowed;
the token is never written anywhere.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request

from sciontool_py import gojson
from sciontool_py.errors import SciontoolError
from sciontool_py.handlers.agent_log import write_line

BUDGET_SECONDS = 3.0  # all hub traffic of one hook call, retries included
RETRIES = 3
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 5.0
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


class Hub:
    def __init__(self, endpoint: str, agent_id: str, token: str) -> None:
        self.base = f"{endpoint.rstrip('/')}/api/v1/agents/{agent_id}"
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

    def redact(self, text: str) -> str:
        return text.replace(self.token, "[redacted]")

    def _post_once(self, url: str, body: bytes, timeout: float) -> None:
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "X-Scion-Agent-Token": self.token},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read(4096)
        except urllib.error.HTTPError as exc:
            detail = exc.read(512).decode("utf-8", "replace").strip()
            raise _Status(exc.code, detail) from None

    def post(self, path: str, payload: dict[str, object], retries: int = RETRIES) -> None:
        """POST JSON; 5xx and network errors retried with backoff, 4xx not."""
        body = _struct_json(payload).encode()
        backoff = FIRST_BACKOFF
        attempt = 0
        while True:
            attempt += 1
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise HubError(
                    f"gave up after {attempt - 1} attempts: time budget of {BUDGET_SECONDS:g}s spent"
                )
            try:
                self._post_once(f"{self.base}/{path}", body, remaining)
                return
            except _Status as exc:
                if exc.code < 500:
                    raise HubError(f"hub returned error {exc.code}: {exc.detail}") from None
                failure = f"hub returned error {exc.code}: {exc.detail}"
            except (OSError, ValueError) as exc:
                failure = str(getattr(exc, "reason", exc))
            if attempt > retries:
                raise HubError(f"request failed after {attempt} attempts: {failure}")
            pause = min(backoff, self.deadline - time.monotonic())
            if pause <= 0:
                raise HubError(f"request failed after {attempt} attempts: {failure}")
            time.sleep(pause)
            backoff = min(backoff * 2, MAX_BACKOFF)

    def report(
        self, home: str, what: str, path: str, payload: dict[str, object], retries: int = RETRIES
    ) -> None:
        """post(), with any failure logged instead of raised."""
        try:
            self.post(path, payload, retries)
        except HubError as exc:
            write_line(home, "", self.redact(f"{what} failed: {exc}"), level="ERROR")


class _Status(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code, detail)
        self.code = code
        self.detail = detail


def _token(home: str) -> str:
    try:
        with open(os.path.join(home, ".scion", "scion-token"), encoding="utf-8") as handle:
            token = handle.read().strip()
    except (OSError, UnicodeDecodeError):
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
