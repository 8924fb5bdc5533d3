"""`sciontool agents --watch [--notify COMMAND]`: the agents live in the terminal, and alerts.

The view redraws in place on the terminal's alternate screen (rich's Live:
no flicker, no scrollback left behind), one line per agent, cut to the
terminal's width; q or Ctrl-C quits and gives the terminal back as it was.

An alert runs COMMAND (`sh -c`) once when an agent starts waiting for you,
finishes a turn (it was busy and is Ready or Done), or crashes, with the
agent's fields as JSON on its stdin. Each change of an agent is alerted at
most once (an agent's state and the time it changed name the change); what
was true when the view started is not news. Alerts never block the view: at
most MAX_RUNNING commands at once, later ones wait in a queue of MAX_QUEUED
(the oldest dropped, and counted on screen). COMMAND may also come from the
config file, `[agents] notify = "..."` in $XDG_CONFIG_HOME/sciontool-py/config.toml.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections import deque
from typing import Any

from sciontool_py.agents_view import Row, dumps, fit, rows, table
from sciontool_py.errors import SciontoolError

REFRESH_SECONDS = 0.5
MAX_RUNNING = 4
MAX_QUEUED = 32
_BUSY = ("Thinking", "Working")
CONFIG = "sciontool-py/config.toml"


def config_notify() -> str:
    """The notify command of the config file ('' when there is none)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = os.path.join(base, CONFIG)
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 16)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise SciontoolError(f"{path}: {exc.strerror or exc}") from None
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        agents = tomllib.loads(data.decode("utf-8", "replace")).get("agents", {})
    except tomllib.TOMLDecodeError as exc:
        raise SciontoolError(f"{path}: {exc}") from None
    notify = agents.get("notify", "") if isinstance(agents, dict) else ""
    if not isinstance(notify, str):
        raise SciontoolError(f"{path}: [agents] notify must be a string (a shell command)")
    return notify


def alert_of(before: str, now: str) -> str:
    """The alert a change of state from BEFORE to NOW raises ('' for none)."""
    if now == "Waiting for you":
        return "waiting"
    if now.startswith("Crashed"):
        return "crashed"
    if now in ("Ready", "Done") and (before in _BUSY or before.startswith("Running")):
        return "finished"
    return ""


class Notifier:
    """Runs COMMAND once per alerting change, never more than MAX_RUNNING at a time."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.seen: dict[str, tuple[str, float]] = {}  # agent -> (state, since) last looked at
        self.started = False
        self.queue: deque[bytes] = deque(maxlen=MAX_QUEUED)
        self.running: list[subprocess.Popen[bytes]] = []
        self.dropped = 0
        self.sent = 0

    def observe(self, found: list[Row]) -> None:
        for row in found:
            key, mark = row.record.key, (row.state, row.record.since)
            before = self.seen.get(key)
            self.seen[key] = mark
            if not self.started or before is None or before == mark:
                continue  # what was true when the view started, or no change
            kind = alert_of(before[0], row.state)
            if kind:
                if len(self.queue) == self.queue.maxlen:
                    self.dropped += 1
                self.queue.append(dumps({"alert": kind, **row.to_json()}).encode())
        self.started = True
        self.pump()

    def pump(self) -> None:
        """Reap finished commands; start queued ones while there is room."""
        self.running = [p for p in self.running if p.poll() is None]
        while self.queue and len(self.running) < MAX_RUNNING:
            data = self.queue.popleft()
            try:
                # Its own session: a Ctrl-C in the view is not the command's.
                proc = subprocess.Popen(
                    ["sh", "-c", self.command],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError:
                self.dropped += 1
                continue
            assert proc.stdin is not None
            try:
                proc.stdin.write(data)  # a few KiB: within any pipe's buffer, never a wait
            except BrokenPipeError:
                pass  # it did not read: its business
            proc.stdin.close()
            self.running.append(proc)
            self.sent += 1


class Keys:
    """The terminal in cbreak mode while the view runs (a key at a time, no echo)."""

    def __init__(self) -> None:
        self.fd = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else -1
        self.saved: list[Any] | None = None

    def __enter__(self) -> Keys:
        if self.fd >= 0:
            import termios
            import tty

            self.saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def wait(self, seconds: float) -> str:
        """A key pressed within SECONDS ('' for none)."""
        if self.fd < 0:
            time.sleep(seconds)
            return ""
        ready, _, _ = select.select([self.fd], [], [], seconds)
        return os.read(self.fd, 32).decode("utf-8", "replace") if ready else ""


def watch(home: str, notify: str) -> int:
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    console = Console(highlight=False)
    notifier = Notifier(notify) if notify else None

    def screen() -> Text:
        found = rows(home)
        if notifier is not None:
            notifier.observe(found)
        width = console.width
        lines = table(found, width, time.time())
        head = f"sciontool agents: {len(found)} in {home}"
        foot = "q quits"
        if notifier is not None:
            foot += f" · alerts sent {notifier.sent}" + (
                f", dropped {notifier.dropped}" if notifier.dropped else ""
            )
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(fit(head, width) + "\n\n", style="bold")  # HOME's path is as safe as the rest
        text.append("\n".join(lines[:1]) + "\n", style="dim")
        text.append("\n".join(lines[1:]))
        text.append("\n\n" + fit(foot, width), style="dim")
        return text

    try:
        with Keys() as keys, Live(screen(), console=console, screen=True, auto_refresh=False) as live:
            while "q" not in keys.wait(REFRESH_SECONDS):
                live.update(screen(), refresh=True)
    except KeyboardInterrupt:
        pass
    return 0
