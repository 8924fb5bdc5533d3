"""Telemetry and session metrics as the newest Scion hook sends them, off the harness's wait path.

`after_answer` is the hook's one call, made once the event is handled and
the response written.  It costs the hook well under a millisecond and
imports none of OpenTelemetry: it counts the event in the session metrics
(when a hub is configured), spools the event when something can receive
it, and starts at most one detached worker (telemetry.worker) that exports
through the OpenTelemetry SDK and sends session reports to the hub; in the
helper (start_later), once its hooks have gone quiet (start_waiting).
Nothing here changes the hook's stdout, exit status or state files; a
problem is a DEBUG line in agent.log.

Modules by job: settings (the environment), record (event -> spool
record), spool (the records waiting), launch (probe, start the worker),
session (session metrics and reports), pairing (open spans across
processes), mapping (record -> spans, logs, metric points), export (the
SDK and exporters) and worker (the detached process).
"""

from __future__ import annotations

import os
import time

from sciontool_py.fs import failure
from sciontool_py.telemetry import settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from sciontool_py.event import CanonicalEvent
    from sciontool_py.log.writer import AgentLog


class _Later:
    """Outside Scion the helper starts the worker once its hooks have gone quiet, not at
    the first hook it answers: the worker's Python start and imports (about 40 ms of CPU) would
    land in the harness's busiest moments, and on two cores cost a one-tool session about 0.02 s
    (issue 30)."""

    def __init__(self) -> None:
        self.on = False  # this process (the helper, or the hook that forks it) starts it later
        self.waiting = False  # what an answered hook left for a worker: spooled records or reports
        self.reports = False
        # The environment of the first hook that left them, which a worker it started would have
        # had: the helper's own is its first session's.
        self.env: dict[str, str] = {}


_later = _Later()


def start_later() -> None:
    """From now on this process leaves the worker to start_waiting (the helper)."""
    _later.on = True


def after_answer(log: AgentLog, event: CanonicalEvent | None) -> None:
    """Telemetry for the event the hook just answered (None: there was none); never raises."""
    env = os.environ
    if event is None or event.name not in settings.SPAN_NAMES or not settings.enabled(env):
        return
    try:
        reports = _hub_configured(log, env) and _count(log, event, env)
        drain_fd = _spool(log, event, env, time.time_ns())
        if drain_fd is None and not reports:
            return
        if _later.on:
            if drain_fd is not None:
                os.close(drain_fd)  # the drain lock: start_waiting takes it again
            if not _later.waiting:
                _later.env = dict(env)
            _later.waiting = True
            _later.reports = _later.reports or reports
            return
        _start(log, drain_fd, reports)
    except OSError as exc:
        log.debug(f"Hook telemetry skipped: {failure(exc)}")
    except Exception as exc:  # an observer's observer: nothing may fail the hook
        log.debug(f"Hook telemetry skipped: {type(exc).__name__}: {exc}")


def start_waiting(log: AgentLog) -> None:
    """Start the worker for what the hooks answered here left (start_later), unless a worker
    already drains the spool; never raises. The helper calls it once its hooks have
    gone quiet, and before it exits."""
    if not _later.waiting:
        return
    reports, env = _later.reports, _later.env
    _later.waiting, _later.reports, _later.env = False, False, {}
    try:
        from sciontool_py.telemetry import spool

        folder, locked = spool.open_locked_or_not(log.home, create=False)
        try:
            drain = folder >= 0 and locked and bool(spool.waiting(folder))
        except OSError:
            os.close(folder)
            raise
        if folder >= 0 and not drain:
            os.close(folder)  # a worker runs, and takes the records; or there are none
        if drain or reports:
            _start(log, folder if drain else None, reports, env)
    except OSError as exc:
        log.debug(f"Hook telemetry skipped: {failure(exc)}")
    except Exception as exc:  # an observer's observer: nothing may fail the helper
        log.debug(f"Hook telemetry skipped: {type(exc).__name__}: {exc}")


def _start(log: AgentLog, drain_fd: int | None, reports: bool, env: Mapping[str, str] | None = None) -> None:
    """Start the worker, handing it the spool's drain lock (DRAIN_FD, closed here) and the
    session reports; ENV: the environment it takes its variables from (this process's)."""
    from sciontool_py.telemetry import launch

    try:
        pid = launch.start_worker(log.home, drain_fd, reports, env)
    finally:
        if drain_fd is not None:
            os.close(drain_fd)  # the worker holds the lock now
    if reports:
        from sciontool_py.telemetry import session

        session.hand_over(log, pid)


def _hub_configured(log: AgentLog, env: Mapping[str, str]) -> bool:
    if not (env.get("SCION_HUB_ENDPOINT") or env.get("SCION_HUB_URL")):
        return False
    from sciontool_py.hub.client import Hub  # imported by the hub handler already

    return Hub.from_env(log.home, log, warn=False) is not None


def _count(log: AgentLog, event: CanonicalEvent, env: Mapping[str, str]) -> bool:
    from sciontool_py.telemetry import session

    return session.count(log, event, env)


def _spool(log: AgentLog, event: CanonicalEvent, env: Mapping[str, str], now_ns: int) -> int | None:
    """Spool the event when a worker runs or something listens; the spool folder, locked, when
    this call must start the worker that drains it (else None)."""
    home = log.home
    where = settings.route(env)
    if not where.signals:
        log.debug(f"Hook telemetry off: {'; '.join(where.problems)}")
        return None
    policy = settings.Policy(env)
    span_name = settings.SPAN_NAMES[event.name]
    if not policy.admits(span_name) and event.name not in settings.BEYOND_OWN_NAME:
        log.debug(f"Hook telemetry: {span_name} is filtered out (SCION_TELEMETRY_FILTER_*); not exported")
        return None
    from sciontool_py.telemetry import launch, spool

    folder, locked = spool.open_locked_or_not(home, create=False)
    try:
        # A running worker takes the record without a probe; otherwise look before starting one.
        # An endpoint elsewhere (no probe) is never probed: it may listen.
        probes = [endpoint.probe for endpoint in where.signals.values()]
        places = sorted({probe for probe in probes if probe is not None})
        if locked and None not in probes and not any(launch.listening(*place) for place in places):
            listed = ", ".join(f"{host}:{port}" for host, port in places)
            log.debug(f"Hook telemetry: nothing listens on {listed}; {event.name} not exported")
            return None
        if folder < 0:
            folder, locked = spool.open_locked_or_not(home, create=True)
        from sciontool_py.telemetry import record

        spool.add(home, now_ns, record.make(event, now_ns, env, policy))
        if not locked:
            return None
        handed, folder = folder, -1  # the worker trims the spool: a long listing is not the hook's
        return handed
    finally:
        if folder >= 0:
            os.close(folder)
