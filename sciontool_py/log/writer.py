"""agent.log: one line per call, in the format Scion's tools write, mirrored to stderr unless quiet."""

from __future__ import annotations

import os
import time

from sciontool_py.console import escape_controls, redact, write_stderr
from sciontool_py.fs import SCION_HOME, append, shared_tmp, typed_mode
from sciontool_py.log import level as log_level

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


TRACEBACK_LIMIT = 8192  # bytes of an internal error's traceback kept in agent.log


def log_folder(home: str) -> str:
    # Scion writes to /home/scion/agent.log whenever that folder exists.
    return SCION_HOME if os.path.isdir(SCION_HOME) else home


def _encode(line: str) -> bytes:
    return line.encode("utf-8", "surrogateescape")


def timestamp(ns: int) -> str:
    """UTC RFC 3339 with nanoseconds, trailing zeros trimmed (Go's time.RFC3339Nano)."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    if fraction:
        stamp += "." + f"{fraction:09d}".rstrip("0")
    return stamp + "Z"


class AgentLog:
    """The agent.log of one agent, as one entry point (hook, status, an agentino register(),
    the telemetry worker) writes it: made once there and passed to whatever logs.

    quiet: no mirror on stderr, which a harness captures (hook and status are quiet, as
    Scion's are). The level spec is read from env when the log is made, as Scion reads
    SCION_LOG_LEVEL once per process.
    """

    __slots__ = ("fell_back", "home", "quiet", "secrets", "spec")

    def __init__(
        self,
        home: str,
        *,
        quiet: bool = False,
        env: Mapping[str, str] | None = None,
        secrets: list[str] | tuple[str, ...] = (),
    ) -> None:
        self.home = home
        self.quiet = quiet
        self.secrets = list(secrets)  # never in a line: each written as [redacted]
        self.spec = log_level.from_env(os.environ if env is None else env)
        # Folders whose agent.log failed for this log: as in Scion (whose logger switches its path
        # to /tmp/agent.log for good), later lines go straight to the fallback, warned about once.
        self.fell_back: set[str] = set()

    def write(self, tag: str, message: str, level: str = "INFO") -> None:
        """Append one line at level (INFO, WARN, ERROR, DEBUG) unless the level spec filters
        it out, and mirror it to stderr unless quiet.

        One call is one line: control characters in the message are escaped.
        agent.log is used only when it is a single-link regular file reached
        without a symlink, else /tmp/agent.log under the same rule, else the line
        is dropped; stderr is written without waiting. Never raises.
        """
        if not log_level.enabled(self.spec, level, tag):
            return
        tag_part = f" [{escape_controls(tag)}]" if tag else ""
        message = escape_controls(redact(message, self.secrets) if self.secrets else message)
        stamp = timestamp(time.time_ns())
        line = _encode(f"{stamp} [sciontool] [{level}]{tag_part} {message}\n")
        folder = log_folder(self.home)
        if folder in self.fell_back:
            try:
                append(shared_tmp(), "agent.log", line, typed_mode(self.home))
            except OSError:
                pass  # as below: with /tmp/agent.log unusable too, the line is dropped
        else:
            self._append_or_fall_back(folder, stamp, line)
        if not self.quiet:
            write_stderr(f"[sciontool] {level}:{tag_part} {message}\n")

    def _append_or_fall_back(self, folder: str, stamp: str, line: bytes) -> None:
        try:
            append(folder, "agent.log", line, typed_mode(self.home))
        except OSError as exc:
            self.fell_back.add(folder)
            fallback = shared_tmp()
            warning = escape_controls(
                f"[sciontool] WARNING: Failed to write to {os.path.join(folder, 'agent.log')}: "
                f"{exc.strerror or exc}. Falling back to {os.path.join(fallback, 'agent.log')}."
            )
            write_stderr(warning + "\n")
            try:
                append(fallback, "agent.log", _encode(f"{stamp} {warning}\n") + line, typed_mode(self.home))
            except OSError:
                pass  # as in Scion: with /tmp/agent.log unusable too, the line is dropped

    def debug(self, message: str) -> None:
        self.write("", message, level="DEBUG")

    def traceback(self, where: str, exc: BaseException) -> None:
        """An internal error's traceback as one DEBUG line (SCION_LOG_LEVEL=debug shows it).

        Bounded to TRACEBACK_LIMIT bytes, the innermost frames kept. It holds
        code locations and the error's own message, which the user's one line
        already shows: never a variable's value.
        """
        if not log_level.enabled(self.spec, "DEBUG", ""):
            return
        import traceback

        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip("\n")
        data = text.encode("utf-8", "surrogateescape")
        if len(data) > TRACEBACK_LIMIT:
            text = "..." + data[-TRACEBACK_LIMIT:].decode("utf-8", "replace")
        self.write("", f"{where}: internal error: {text}", level="DEBUG")
