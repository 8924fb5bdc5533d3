"""The public Dispatcher: core-agent's hook dispatcher, fed an agent's events."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterable
from typing import TextIO

from sciontool_py.emitter import envelope, runner
from sciontool_py.emitter.config import HooksConfig
from sciontool_py.emitter.environment import HookEnvironment
from sciontool_py.emitter.firing import Firing, ThinkingWindow
from sciontool_py.emitter.gate import PermissionGate
from sciontool_py.errors import JSONError


def _quote(text: str) -> str:
    """Close to Go's %q: double-quoted, escapes visible, non-ASCII kept."""
    return json.dumps(text, ensure_ascii=False)


def describe_output(output: bytes, truncated: bool) -> str:
    """The captured output as one quoted line (empty when there was none)."""
    text = output.decode("utf-8", errors="replace").rstrip("\n")
    if not text:
        return ""
    return f"(last {len(output)} bytes) {_quote(text)}" if truncated else _quote(text)


class Dispatcher:
    """Runs the configured hook commands for an agent's events, as core-agent does.

    Feed it every agent event with :meth:`on_event` and call
    :meth:`on_turn_end` once when a turn is over. Handlers of one event run
    in order, synchronously; a failure is one line on ``stderr`` and the next
    handler still runs; nothing is ever raised into the agent.

    ``gate`` checks every command before it runs; without one nothing runs
    (fail closed). Variables that look like credentials (see
    ``emitter.environment``) never reach a hook unless named in
    ``passed_env``; those named in ``withheld_env`` never do. ``stderr``
    defaults to ``sys.stderr`` at the time of writing.
    ``model_start_on_final_text`` is an opt-in for non-streaming agents (see
    ThinkingWindow); off matches core-agent.
    """

    def __init__(
        self,
        config: HooksConfig,
        *,
        session_id: str = "",
        gate: PermissionGate | None = None,
        stderr: TextIO | None = None,
        withheld_env: Iterable[str] = (),
        passed_env: Iterable[str] = (),
        model_start_on_final_text: bool = False,
    ) -> None:
        self._config = dict(config)
        self._session_id = session_id
        self._gate = gate
        self._stderr = stderr
        self._environment = HookEnvironment(withheld_env, passed_env)
        self._window = ThinkingWindow(model_start_on_final_text)
        # One event at a time, so hooks fire in the agent's order even when
        # callers feed events from several threads.
        self._lock = threading.Lock()

    @property
    def empty(self) -> bool:
        """True when no event has a handler: feeding events then costs nothing."""
        return not self._config

    def on_event(self, event: object) -> None:
        """Fire the hooks one agent event calls for (ADK Event or its JSON form)."""
        if not self._config:
            return
        with self._lock:
            try:
                for firing in self._window.feed(event):
                    self._fire(firing)
            except Exception as exc:  # an observer must never break the agent
                self._report(f"hooks: internal error: {type(exc).__name__}: {exc}")

    def on_turn_end(self) -> None:
        """The turn is over: fire agent-end (and reopen the thinking window)."""
        if not self._config:
            return
        with self._lock:
            try:
                self._fire(self._window.end_turn())
            except Exception as exc:
                self._report(f"hooks: internal error: {type(exc).__name__}: {exc}")

    def _fire(self, firing: Firing) -> None:
        handlers = self._config.get(firing.event)
        if not handlers:
            return
        try:
            body = envelope.encode(envelope.build(firing.event, self._session_id, firing.extra))
        except JSONError as exc:
            self._report(f"hooks: {firing.event}: marshal envelope: {exc}")
            return
        env = self._environment.build(os.environ)
        for index, handler in enumerate(handlers):
            where = f"hooks: {firing.event} handler #{index} ({_quote(handler.command)})"
            if self._gate is None:
                self._report(f"{where}: refused — no permission gate wired")
                continue
            try:
                refusal = self._gate.check(handler.command)
            except (Exception, SystemExit) as exc:  # a broken gate refuses: fail closed
                refusal = f"gate error: {type(exc).__name__}: {exc}"
            if refusal is not None:
                self._report(f"{where}: permission gate refused: {refusal}")
                continue
            outcome = runner.run(handler.command, body, handler.timeout, env)
            if outcome.error is not None:
                output = describe_output(outcome.output, outcome.truncated)
                self._report(f"{where}: {outcome.error}" + (f": {output}" if output else ""))

    def _report(self, line: str) -> None:
        stream = self._stderr if self._stderr is not None else sys.stderr
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass  # nowhere left to report to; the agent goes on
