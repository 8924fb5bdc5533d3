"""The detached worker a hook starts after answering: it sends session reports and drains the spool.

`--reports`: send the session-metrics reports waiting for a sender (hub
rules as for status updates: no redirect, one deadline, the token never
printed, a failure one ERROR line).  `--drain`: fd 3 is the spool folder,
locked by the hook for this process; once the burst of hooks that started
it has passed (QUIET_SECONDS without a new record), export every record in
time order, keep going while hooks add more, and stay a moment (LINGER_SECONDS) for a
burst's next event before letting go of the lock.  On the way out it
unlocks, then looks once more: a record a hook added after its last look
(while the lock kept that hook from starting another worker) is taken up
again here, so none is left behind.  Nothing it does reaches the harness:
its stdio is /dev/null, and problems are DEBUG lines in agent.log, with
every header secret and endpoint password taken out (a receiver may echo
them back).

The spool is the agent's to write, so the drainer trusts none of it: it
trims the spool to spool.MAX_RECORDS, reads at most BATCH records and
BATCH_BYTES bytes per export, moves an entry it cannot read aside once
(one line per batch), and drops a record that cannot become telemetry
alone, never the batch or itself.
"""

from __future__ import annotations

import fcntl
import json
import os
import time

from sciontool_py.console import cut
from sciontool_py.fs import failure
from sciontool_py.log.writer import AgentLog
from sciontool_py.telemetry import credentials, session, settings, spool
from sciontool_py.telemetry.launch import WORKER_FD
from sciontool_py.telemetry.mapping import Translation, translate
from sciontool_py.telemetry.pairing import OpenSpans

LINGER_SECONDS = 1.0
POLL_SECONDS = 0.02
QUIET_SECONDS = 1.0  # no record added for this long: the burst of hooks that started it is over
SETTLE_LIMIT_SECONDS = 5.0  # the longest a burst may hold the first export back
BATCH = 256  # records per export
BATCH_BYTES = 2 << 20  # spool bytes per export (a record may be 1 MiB; a receiver takes 4 MiB a request)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.telemetry.export import Pipeline


def main(argv: list[str]) -> int:
    # Never a credential in a log line: the worker's log redacts them all.
    log = AgentLog(argv[argv.index("--home") + 1], quiet=True, secrets=credentials.secrets(os.environ))
    try:
        if "--reports" in argv:
            send_reports(log)
        if "--drain" in argv:
            Drainer(log, WORKER_FD).run()
    except Exception as exc:  # a worker only reports
        debug(log, f"Hook telemetry worker stopped: {type(exc).__name__}: {exc}")
    return 0


def debug(log: AgentLog, message: str) -> None:
    log.debug(cut(message, 1000))


def send_reports(log: AgentLog) -> None:
    summaries = session.claim(log)
    if not summaries:
        return
    from sciontool_py.hub.client import Hub

    hub = Hub.from_env(log.home, log)
    if hub is None:
        debug(log, "Session metrics: the hub is no longer configured; reports dropped")
    else:
        for attempted, summary in enumerate(summaries):
            if time.monotonic() >= hub.deadline:
                # Never attempted: they stay pending, and the next hook's worker sends them.
                debug(log, f"Session metrics: {len(summaries) - attempted} reports kept: time budget spent")
                summaries = summaries[:attempted]
                break
            hub.report("session-end", "metrics", session.payload(summary, time.time_ns()))
    session.complete(log, [str(s["SessionID"]) for s in summaries])


class Drainer:
    def __init__(self, log: AgentLog, folder_fd: int) -> None:
        self.log = log
        self.home = home = log.home
        self.fd = folder_fd
        self.route = settings.route(os.environ)
        self.pipeline: Pipeline | None = None
        self.unusable = ""  # why nothing can be exported (the records are dropped)
        # Names taken, dropped or set aside: one that could not be removed (another user's, in
        # a sticky spool folder) is never taken again, so the worker always comes to an end.
        self.handled: set[str] = set()
        self.open_spans = OpenSpans(home)
        if self.open_spans.problem:
            debug(log, f"Hook telemetry: open spans forgotten: {self.open_spans.problem}")

    def run(self) -> None:
        spool.sweep_temp_files(self.home, self.fd, time.time())
        self.settle()
        idle_since = time.monotonic()
        while True:
            dropped, names = spool.trim(self.fd, self.waiting())
            self.handled.update(dropped)
            if dropped:
                debug(self.log, f"Hook telemetry: spool full; the {len(dropped)} oldest events dropped")
            if names:
                self.drain(names[:BATCH])
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since < LINGER_SECONDS:
                time.sleep(POLL_SECONDS)
            elif not self.let_go():
                break
        if self.pipeline is not None:
            self.pipeline.shutdown()

    def settle(self) -> None:
        """Wait for the burst of hooks that started this worker to pass (SETTLE_LIMIT_SECONDS at
        most): loading the SDK is most of the worker's CPU, and a harness firing hook after hook
        (a fast model, tool after tool) needs the CPU then. A record added or taken changes the
        spool folder's mtime: one fstat a poll, however large the spool."""
        started = quiet_since = time.monotonic()
        mark = os.fstat(self.fd).st_mtime_ns
        while (
            now := time.monotonic()
        ) - quiet_since < QUIET_SECONDS and now - started < SETTLE_LIMIT_SECONDS:
            time.sleep(POLL_SECONDS)
            if (changed := os.fstat(self.fd).st_mtime_ns) != mark:
                mark, quiet_since = changed, time.monotonic()

    def let_go(self) -> bool:
        """Unlock; True when records came after all and this process took the lock back."""
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        if not self.waiting():
            return False
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # another worker has them
        return True

    def waiting(self) -> list[str]:
        """The records waiting that this worker has not handled already."""
        names = spool.waiting(self.fd)
        self.handled.intersection_update(names)  # only what is still there (stays small)
        return [name for name in names if name not in self.handled]

    def drain(self, names: list[str]) -> None:
        """Export the oldest of names, as many as BATCH_BYTES allow (at least one)."""
        out = Translation()
        unreadable = []
        size = 0
        for name in names:
            if size >= BATCH_BYTES:
                break
            self.handled.add(name)
            try:
                data = spool.read(self.home, name)
                spool.discard(self.home, name)  # taken: a failed export is not retried
            except OSError as exc:
                spool.set_aside(self.fd, name)  # never read again
                unreadable.append(f"{name} ({exc.strerror or exc})")
                continue
            if data is None:
                continue  # gone since the listing
            size += len(data)
            self.take(name, data, out)
        if unreadable:
            debug(
                self.log,
                f"Hook telemetry: {len(unreadable)} spooled entries set aside in "
                f"{spool.FOLDER}/{spool.SET_ASIDE}: {'; '.join(unreadable)}",
            )
        self.open_spans.expire(time.time_ns())
        for entry in self.open_spans.dropped:
            debug(
                self.log,
                f"Hook telemetry: {entry['name']} started at {entry['start_ns']} never ended; dropped",
            )
        self.open_spans.dropped.clear()
        try:
            self.open_spans.save()
        except OSError as exc:
            debug(self.log, f"Hook telemetry: open spans not kept: {failure(exc)}")
        pipeline = self.ready()
        if pipeline is not None:
            pipeline.add(out)
            pipeline.export()
        elif out.spans or out.logs or out.points:
            debug(self.log, f"Hook telemetry export dropped: {self.unusable}")

    def take(self, name: str, data: bytes, out: Translation) -> None:
        """One record into out; a record that cannot be telemetry is one line, and only it is lost."""
        try:
            record = json.loads(data)
        except (ValueError, RecursionError):
            debug(self.log, f"Hook telemetry: spooled event {name} is not JSON; skipped")
            return
        if not isinstance(record, dict):
            debug(self.log, f"Hook telemetry: spooled event {name} is not a JSON object; skipped")
            return
        try:
            translate(record, self.open_spans, out)
        except Exception as exc:  # mapping.Unusable, or what no rule foresaw: this record only
            debug(self.log, f"Hook telemetry: spooled event {name} skipped: {exc}")

    def ready(self) -> Pipeline | None:
        if self.pipeline is None and not self.unusable:
            route = self.route
            if not route.signals:
                self.unusable = "; ".join(route.problems)
                return None
            if route.problems:
                debug(self.log, f"Hook telemetry: not exported: {'; '.join(route.problems)}")
            # Enabled by SCION_TELEMETRY_ENABLED over OTEL_SDK_DISABLED: the SDK must not read it.
            os.environ.pop("OTEL_SDK_DISABLED", None)
            if route.scion:  # the harness's own settings (Scion's provisioners write them): not ours
                for name in [name for name in os.environ if name.startswith("OTEL_EXPORTER_OTLP_")]:
                    del os.environ[name]
            refused = credentials.pin_files(os.environ)
            if refused:
                self.unusable = f"{refused}; nothing is exported"
                return None
            try:
                from sciontool_py.telemetry.export import Pipeline

                self.pipeline = Pipeline(os.environ, route, lambda text: debug(self.log, text))
            except Exception as exc:  # not installed, or a broken install
                self.unusable = f"cannot set up the OpenTelemetry SDK: {type(exc).__name__}: {exc}"
        return self.pipeline
