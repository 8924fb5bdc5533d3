"""One line of `sciontool doctor`: what was checked, and ok or the problem with its fix."""

from __future__ import annotations

from dataclasses import dataclass

from sciontool_py.console import escape_controls


@dataclass(frozen=True)
class Check:
    subject: str  # what the line is about: a harness, "state folder", "telemetry", "hub", ...
    ok: bool
    text: str  # what holds, or what is wrong
    fix: str = ""  # for a failure: what to do about it

    def line(self) -> str:
        # The text may quote a file or a server: one check stays one line.
        fix = f"; fix: {self.fix}" if self.fix else ""
        return escape_controls(f"{'ok  ' if self.ok else 'FAIL'}  {self.subject}: {self.text}{fix}")


def passed(subject: str, text: str) -> Check:
    return Check(subject, True, text)


def failed(subject: str, text: str, fix: str) -> Check:
    return Check(subject, False, text, fix)
